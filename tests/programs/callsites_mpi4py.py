"""mpi4py program for `commscope profile --callsites` (tests/test_profile_callsites.py):
every MPI call is marked ``SITE: name``; the expected site of a call is that line.

2 ranks.  exchange(5): rank 0 Sends 5 x 800 B to rank 1 (which Recvs them), then both
Isend, Recv and Wait 5 x 800 B; two Barriers; a pickled send through mpi4py.util.pkl5
(mpi4py's own Python code, between the line and the MPI call: the site is still the
line here).
"""

from mpi4py import MPI  # SITE: init
from mpi4py.util import pkl5

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
buf = bytearray(800)


def exchange(n):
    for _ in range(n):
        if rank == 0:
            comm.Send(buf, dest=1, tag=3)  # SITE: send
        else:
            comm.Recv(buf, source=0, tag=3)  # SITE: recv
        req = comm.Isend(buf, dest=1 - rank)  # SITE: isend
        comm.Recv(buf, source=1 - rank)  # SITE: recv2
        req.Wait()  # SITE: wait


exchange(5)  # SITE: exchange
comm.Barrier()  # SITE: barrier_a
comm.Barrier()  # SITE: barrier_b
pcomm = pkl5.Intracomm(comm)
if rank == 0:
    pcomm.send({"x": 1}, dest=1, tag=7)  # SITE: pkl5_send
else:
    pcomm.recv(source=0, tag=7)  # SITE: pkl5_recv
