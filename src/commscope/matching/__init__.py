"""Message-matching engines, their search costs and trace replay (002 Sec. 2.1, 004 Sec. 4.1).

:mod:`engines` runs the native matching simulator; :mod:`replay` and :mod:`analysis`
replay a profile's trace through it; :mod:`whatif` predicts a stencil's matching cost;
:mod:`pvars` holds MPI_T queue lengths against the simulator.  The pure-Python queue
model is :mod:`commscope.models.queue_sim`, the trace reader
:mod:`commscope.collect.trace`.
"""
