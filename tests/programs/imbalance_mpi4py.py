"""mpi4py program with a planted load imbalance (tests/test_diagnose_python.py): rank 1
computes 3 x as long as rank 0 between Allreduce calls, so rank 0 waits there.

Usage: imbalance_mpi4py.py [ITERATIONS [WORK_MS]] (default 30 and 3 ms): rank 0 busy
loops WORK_MS, rank 1 three times that, then both call Allreduce (the line marked
``SITE: allreduce``).
"""

import sys
import time

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 30
work_s = (float(sys.argv[2]) if len(sys.argv) > 2 else 3.0) / 1e3
value = bytearray(8)
total = bytearray(8)


def work(seconds):
    end = time.perf_counter() + seconds  # a busy loop: the rank keeps its core
    while time.perf_counter() < end:
        pass


for _ in range(iterations):
    work(work_s * (3 if rank == 1 else 1))
    comm.Allreduce(value, total, op=MPI.SUM)  # SITE: allreduce
