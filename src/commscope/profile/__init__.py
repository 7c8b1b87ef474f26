"""The instrument half: `commscope profile` (counters of any MPI program), `top`."""
