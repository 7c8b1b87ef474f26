/* Two ranks, one thread each, one of every kind of traced call, for `commscope export`.
 *
 * Rank r, peer = 1 - r:
 *   1. MPI_Sendrecv of 16 bytes with the peer, tag 1 (a send and a receive in one call)
 *   2. rank 0: MPI_Send of 32 bytes, tag 2; rank 1: MPI_Probe(MPI_ANY_SOURCE, 2), MPI_Recv
 *   3. 4 MPI_Irecv (tag 3), 4 MPI_Isend of 64 bytes, then MPI_Waitany 8 times
 *   4. an MPI_Irecv (tag 99) that nothing matches: MPI_Cancel, MPI_Wait (cancelled)
 *   5. on a duplicate of MPI_COMM_WORLD: rank 0 sends 3 messages of 8 bytes (tag 0),
 *      rank 1 receives them
 *   6. MPI_Barrier (collectives are counted, not traced)
 * Traced calls: rank 0 1+1+8+8+2+3 = 23, rank 1 1+2+8+8+2+3 = 24; messages 2+1+8+3 = 14.
 * tests/test_export.py derives its expectations from this description.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int peer = 1 - rank;
    char sbuf[64] = {0}, rbuf[8][64];
    MPI_Status st;
    /* 1 */
    MPI_Sendrecv(sbuf, 16, MPI_BYTE, peer, 1, rbuf[0], 16, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &st);
    /* 2 */
    if (rank == 0) {
        MPI_Send(sbuf, 32, MPI_BYTE, 1, 2, MPI_COMM_WORLD);
    } else {
        MPI_Probe(MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &st);
        MPI_Recv(rbuf[0], 32, MPI_BYTE, st.MPI_SOURCE, 2, MPI_COMM_WORLD, &st);
    }
    /* 3 */
    MPI_Request req[8];
    for (int i = 0; i < 4; i++) MPI_Irecv(rbuf[i], 64, MPI_BYTE, peer, 3, MPI_COMM_WORLD, &req[i]);
    for (int i = 0; i < 4; i++) MPI_Isend(sbuf, 64, MPI_BYTE, peer, 3, MPI_COMM_WORLD, &req[4 + i]);
    for (int i = 0; i < 8; i++) {
        int which;
        MPI_Waitany(8, req, &which, MPI_STATUS_IGNORE);
    }
    /* 4 */
    MPI_Request lone;
    MPI_Irecv(rbuf[5], 64, MPI_BYTE, peer, 99, MPI_COMM_WORLD, &lone);
    MPI_Cancel(&lone);
    MPI_Wait(&lone, &st);
    /* 5 */
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    for (int i = 0; i < 3; i++) {
        if (rank == 0) MPI_Send(sbuf, 8, MPI_BYTE, 1, 0, dup);
        else MPI_Recv(rbuf[i], 8, MPI_BYTE, 0, 0, dup, MPI_STATUS_IGNORE);
    }
    MPI_Comm_free(&dup);
    /* 6 */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("export_mix: done\n");
    MPI_Finalize();
    return 0;
}
