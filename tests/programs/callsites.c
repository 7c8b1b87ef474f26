/* Call sites with known lines (tests/test_profile_callsites.py reads the lines of the
 * comments marked SITE: from this file, so moving code keeps the test right).
 *
 * Rank 0 sends N_A messages of 8 ints from send_a and N_B of 1 int from send_b (a
 * helper called from two places, for --callsite-depth 2); rank 1 receives them all
 * in recv_all.  Then each of 2 threads per rank makes N_T barriers on its own
 * duplicate of MPI_COMM_WORLD, from one line.  argv[1] changes nothing but the
 * binary's build id (the "rebuilt after the run" test). */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define N_A 7
#define N_B 5
#define N_T 11

static MPI_Comm tcomm[2];

__attribute__((noinline)) static void send_a(int *buf)
{
    for (int i = 0; i < N_A; i++)
        MPI_Send(buf, 8, MPI_INT, 1, 1, MPI_COMM_WORLD); /* SITE: send_a */
}

__attribute__((noinline)) static void send_b(int *buf)
{
    MPI_Send(buf, 1, MPI_INT, 1, 2, MPI_COMM_WORLD); /* SITE: send_b */
}

__attribute__((noinline)) static void first_b(int *buf)
{
    for (int i = 0; i < 2; i++) send_b(buf); /* SITE: first_b */
}

__attribute__((noinline)) static void second_b(int *buf)
{
    for (int i = 0; i < N_B - 2; i++) send_b(buf); /* SITE: second_b */
}

__attribute__((noinline)) static void recv_all(int *buf)
{
    for (int i = 0; i < N_A; i++)
        MPI_Recv(buf, 8, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* SITE: recv_a */
    for (int i = 0; i < N_B; i++)
        MPI_Recv(buf, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* SITE: recv_b */
}

static void *worker(void *arg)
{
    MPI_Comm c = tcomm[(long)arg];
    for (int i = 0; i < N_T; i++) MPI_Barrier(c); /* SITE: thread_barrier */
    return 0;
}

int main(int argc, char **argv)
{
    int provided, rank, buf[8] = {0};
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided); /* SITE: init */
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (provided < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "needs MPI_THREAD_MULTIPLE\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    if (rank == 0) {
        send_a(buf);
        first_b(buf);
        second_b(buf);
    } else if (rank == 1) {
        recv_all(buf);
    }
    for (int t = 0; t < 2; t++) MPI_Comm_dup(MPI_COMM_WORLD, &tcomm[t]); /* SITE: dup */
    pthread_t th[2];
    for (long t = 0; t < 2; t++) pthread_create(&th[t], 0, worker, (void *)t);
    for (int t = 0; t < 2; t++) pthread_join(th[t], 0);
    for (int t = 0; t < 2; t++) MPI_Comm_free(&tcomm[t]); /* SITE: free */
    if (argc > 1) printf("%s\n", argv[1]);
    MPI_Finalize(); /* SITE: finalize */
    return 0;
}
