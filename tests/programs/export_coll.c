/* Two ranks, two threads each: point-to-point and collectives of every traced kind, for
 * `commscope export` (tests/test_export_collectives.py derives its expectations from
 * this description).
 *
 * MPI_THREAD_MULTIPLE.  The main thread duplicates MPI_COMM_WORLD once per thread (not
 * traced), starts the threads and joins them.  Thread t of rank r, peer = 1 - r, on its
 * own duplicate c_t (so the two threads' collectives never mix):
 *   1. blocking:      rank 0 MPI_Send x 3 of 8 bytes (tag t) on WORLD; rank 1 MPI_Recv x 3
 *   2. nonblocking:   2 MPI_Irecv + 2 MPI_Isend of 64 bytes (tag 10 + t) on WORLD,
 *                     one MPI_Waitall of the 4
 *   3. collectives on c_t (bytes this rank sent / received):
 *        MPI_Bcast     root 0, 100 B          rank 0: 100 / 0;  rank 1: 0 / 100
 *        MPI_Reduce    root 1, 4 doubles      both send 32; rank 1 receives 32
 *        MPI_Allreduce 2 ints                 8 / 8
 *        MPI_Gather    root 0, 8 B each       both send 8; rank 0 receives 16
 *        MPI_Barrier                          0 / 0
 *   4. nonblocking:   MPI_Iallreduce of 4 ints (16 / 16) + MPI_Wait;
 *                     MPI_Ibcast root 1, 32 B (rank 1: 32 / 0; rank 0: 0 / 32) + MPI_Wait
 *   5. persistent:    MPI_Allreduce_init of 1 double, 2 x (MPI_Start + MPI_Wait) (8 / 8
 *                     each), MPI_Request_free
 * Per thread and rank: 21 traced calls (3 + 2 + 2 + 1 + 5 + 4 + 4), 24 trace records
 * (3 + 4 + 4 + 5 + 4 + 4).
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define T 2
static int rank, peer;
static MPI_Comm comms[T];

static void *work(void *arg)
{
    int t = (int)(long)arg;
    MPI_Comm c = comms[t];
    char sbuf[128] = {0}, rbuf[4][128];
    /* 1 */
    for (int i = 0; i < 3; i++) {
        if (rank == 0) MPI_Send(sbuf, 8, MPI_BYTE, 1, t, MPI_COMM_WORLD);
        else MPI_Recv(rbuf[0], 8, MPI_BYTE, 0, t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    /* 2 */
    MPI_Request r[4];
    for (int i = 0; i < 2; i++) MPI_Irecv(rbuf[i], 64, MPI_BYTE, peer, 10 + t, MPI_COMM_WORLD, &r[i]);
    for (int i = 0; i < 2; i++) MPI_Isend(sbuf, 64, MPI_BYTE, peer, 10 + t, MPI_COMM_WORLD, &r[2 + i]);
    MPI_Waitall(4, r, MPI_STATUSES_IGNORE);
    /* 3 */
    double d[4] = {1, 2, 3, 4}, dout[4];
    int iv[4] = {1, 2, 3, 4}, iout[4];
    char gath[16];
    MPI_Bcast(sbuf, 100, MPI_BYTE, 0, c);
    MPI_Reduce(d, dout, 4, MPI_DOUBLE, MPI_SUM, 1, c);
    MPI_Allreduce(iv, iout, 2, MPI_INT, MPI_SUM, c);
    MPI_Gather(sbuf, 8, MPI_BYTE, gath, 8, MPI_BYTE, 0, c);
    MPI_Barrier(c);
    /* 4 */
    MPI_Request q;
    MPI_Iallreduce(iv, iout, 4, MPI_INT, MPI_SUM, c, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    MPI_Ibcast(sbuf, 32, MPI_BYTE, 1, c, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    /* 5 */
    double x = 1, y;
    MPI_Allreduce_init(&x, &y, 1, MPI_DOUBLE, MPI_SUM, c, MPI_INFO_NULL, &q);
    for (int i = 0; i < 2; i++) {
        MPI_Start(&q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
    }
    MPI_Request_free(&q);
    return 0;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "export_coll: MPI_THREAD_MULTIPLE not provided\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    peer = 1 - rank;
    for (int t = 0; t < T; t++) MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
    pthread_t th[T];
    for (int t = 0; t < T; t++) pthread_create(&th[t], 0, work, (void *)(long)t);
    for (int t = 0; t < T; t++) pthread_join(th[t], 0);
    for (int t = 0; t < T; t++) MPI_Comm_free(&comms[t]);
    if (rank == 0) printf("export_coll: done\n");
    MPI_Finalize();
    return 0;
}
