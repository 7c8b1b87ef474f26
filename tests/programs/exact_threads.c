/* A program whose MPI calls are known exactly, for `commscope profile` tests.
 *
 * Two ranks, T threads each (MPI_THREAD_MULTIPLE, default 8).  Thread t of each
 * rank, with peer = the other rank:
 *   1. blocking:    rank 0 sends 100+t messages of 8(t+1) bytes (tag t); rank 1 receives them
 *   2. nonblocking: posts 10+t receives (MPI_ANY_SOURCE when t is odd) and 10+t sends of
 *                   64(t+1) bytes (tag 100+t), then one MPI_Waitall ignoring the statuses
 *   3. persistent:  Send_init + Recv_init of 16(t+1) bytes, 5 x (Start both, Wait both), free
 *   4. collectives: 3 Allreduce of t+1 doubles and 1 Barrier on its own duplicate of WORLD
 * The main thread does Init_thread, T Comm_dup, T Comm_free and Finalize.
 * tests/test_profile.py derives every expected count from this description.
 *
 * CRASH_AFTER_PHASE1=1 makes rank 1 kill itself (SIGKILL) after phase 1.
 */
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, peer, nthreads = 8;
static MPI_Comm comms[64];
static pthread_barrier_t phase1_done;

static void *work(void *arg)
{
    int t = (int)(long)arg;
    char *buf = calloc(64 * 8 * 64, 1);
    /* 1 */
    for (int i = 0; i < 100 + t; i++) {
        if (rank == 0) MPI_Send(buf, 8 * (t + 1), MPI_BYTE, peer, t, MPI_COMM_WORLD);
        else MPI_Recv(buf, 8 * (t + 1), MPI_BYTE, peer, t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    pthread_barrier_wait(&phase1_done);
    /* 2 */
    int k = 10 + t;
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * 2 * (size_t)k);
    char *rbuf = calloc((size_t)k, 64 * (t + 1));
    for (int i = 0; i < k; i++)
        MPI_Irecv(rbuf + (size_t)i * 64 * (t + 1), 64 * (t + 1), MPI_BYTE, t % 2 ? MPI_ANY_SOURCE : peer,
                  100 + t, MPI_COMM_WORLD, &reqs[i]);
    for (int i = 0; i < k; i++)
        MPI_Isend(buf, 64 * (t + 1), MPI_BYTE, peer, 100 + t, MPI_COMM_WORLD, &reqs[k + i]);
    MPI_Waitall(2 * k, reqs, MPI_STATUSES_IGNORE);
    /* 3 */
    MPI_Request p[2];
    MPI_Send_init(buf, 16 * (t + 1), MPI_BYTE, peer, 200 + t, MPI_COMM_WORLD, &p[0]);
    MPI_Recv_init(rbuf, 16 * (t + 1), MPI_BYTE, peer, 200 + t, MPI_COMM_WORLD, &p[1]);
    for (int i = 0; i < 5; i++) {
        MPI_Start(&p[1]);
        MPI_Start(&p[0]);
        MPI_Wait(&p[0], MPI_STATUS_IGNORE);
        MPI_Wait(&p[1], MPI_STATUS_IGNORE);
    }
    MPI_Request_free(&p[0]);
    MPI_Request_free(&p[1]);
    /* 4 */
    double in[64] = {0}, out[64];
    for (int i = 0; i < 3; i++) MPI_Allreduce(in, out, t + 1, MPI_DOUBLE, MPI_SUM, comms[t]);
    MPI_Barrier(comms[t]);
    free(reqs);
    free(rbuf);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "exact_threads: MPI_THREAD_MULTIPLE not provided\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    if (argc > 1) nthreads = atoi(argv[1]);
    if (nthreads < 1 || nthreads > 64) nthreads = 8;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    peer = 1 - rank;
    for (int t = 0; t < nthreads; t++) MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
    pthread_barrier_init(&phase1_done, 0, (unsigned)nthreads + 1);
    pthread_t th[64];
    for (int t = 0; t < nthreads; t++) pthread_create(&th[t], 0, work, (void *)(long)t);
    pthread_barrier_wait(&phase1_done);
    if (rank == 1 && getenv("CRASH_AFTER_PHASE1")) raise(SIGKILL);
    for (int t = 0; t < nthreads; t++) pthread_join(th[t], 0);
    for (int t = 0; t < nthreads; t++) MPI_Comm_free(&comms[t]);
    if (rank == 0) printf("exact_threads: %d threads per rank done\n", nthreads);
    MPI_Finalize();
    return 0;
}
