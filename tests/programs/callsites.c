/* Call sites with known lines (tests/test_profile_callsites.py reads the lines of the
 * comments marked SITE: from this file, so moving code keeps the test right).
 *
 * Rank 0 sends N_A messages of 8 ints from send_a and N_B of 1 int from send_b (a
 * helper called from two places, for --callsite-depth 2); rank 1 receives them all
 * in recv_all.  Then each of 2 threads per rank makes N_T barriers on its own
 * duplicate of MPI_COMM_WORLD, from one line.  Then (exchange) rank 0 sends N_C
 * messages of 4 ints with MPI_Isend, rank 1 posts them with MPI_Irecv, and both
 * complete them with one MPI_Waitall; and (persistent) rank 0 starts an MPI_Send_init
 * request of 2 ints N_P times, rank 1 an MPI_Recv_init one, each start waited for
 * with MPI_Wait, then freed.  argv[1] changes nothing but the binary's build id (the
 * "rebuilt after the run" test). */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define N_A 7
#define N_B 5
#define N_T 11
#define N_C 3
#define N_P 4

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

__attribute__((noinline)) static void exchange(int rank, int *buf)
{
    int in[N_C][4];
    MPI_Request req[N_C];
    for (int i = 0; i < N_C; i++) {
        if (rank == 0)
            MPI_Isend(buf, 4, MPI_INT, 1, 3, MPI_COMM_WORLD, &req[i]); /* SITE: isend */
        else
            MPI_Irecv(in[i], 4, MPI_INT, 0, 3, MPI_COMM_WORLD, &req[i]); /* SITE: irecv */
    }
    MPI_Waitall(N_C, req, MPI_STATUSES_IGNORE); /* SITE: waitall */
}

__attribute__((noinline)) static void persistent(int rank, int *buf)
{
    MPI_Request req;
    if (rank == 0)
        MPI_Send_init(buf, 2, MPI_INT, 1, 4, MPI_COMM_WORLD, &req); /* SITE: send_init */
    else
        MPI_Recv_init(buf, 2, MPI_INT, 0, 4, MPI_COMM_WORLD, &req); /* SITE: recv_init */
    for (int i = 0; i < N_P; i++) {
        MPI_Start(&req); /* SITE: start */
        MPI_Wait(&req, MPI_STATUS_IGNORE); /* SITE: pwait */
    }
    MPI_Request_free(&req); /* SITE: pfree */
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
    if (rank < 2) {
        exchange(rank, buf);
        persistent(rank, buf);
    }
    if (argc > 1) printf("%s\n", argv[1]);
    MPI_Finalize(); /* SITE: finalize */
    return 0;
}
