/* Every way a request can end, under many threads, on 2 ranks (MPI_THREAD_MULTIPLE).
 *
 *   ledger_threads [T [N]]     (default T = 500 threads, N = 100 messages per thread)
 *
 * 1. T threads per rank: on rank 0 each does N x (MPI_Isend 8 B to rank 1, tag t,
 *    MPI_Wait); on rank 1 each does N x (MPI_Irecv from 0, tag t, MPI_Wait).
 *    Then MPI_Barrier and MPI_Pcontrol(2) (a quiet point: a snapshot).
 * 2. Each rank sends itself 6 messages of 4 B (Irecv + Isend pairs): 2 pairs completed
 *    by MPI_Testall, 2 by MPI_Testany, 2 by MPI_Testsome (each polled until done).
 * 3. Each rank posts one MPI_Irecv that nothing matches, cancels it (MPI_Cancel,
 *    MPI_Wait) and checks MPI_Test_cancelled: a cancelled receive, not a message.
 * 4. Rank 0 sends 5 messages of 16 B to rank 1 (MPI_Send); rank 1 takes 3 with
 *    MPI_Mprobe + MPI_Mrecv and 2 with MPI_Improbe (polled) + MPI_Imrecv + MPI_Wait.
 * 5. Rank 0 MPI_Isend's 32 B to rank 1 and MPI_Request_free's the active request;
 *    rank 1 MPI_Recv's it.
 * 6. Persistent: rank 0 MPI_Send_init (64 B) + 3 x (MPI_Start, MPI_Wait) +
 *    MPI_Request_free; rank 1 the same with MPI_Recv_init.
 * 7. Each rank: MPI_Grequest_start, MPI_Grequest_complete, MPI_Wait.
 * Then MPI_Barrier, MPI_Pcontrol(2), MPI_Finalize.
 *
 * What that implies per rank (tests/test_profile_ledger.py derives the same):
 *   rank 0: started T*N + 12 + 1 + 1 + 3 + 1, completed T*N + 12 + 3 + 1, cancelled 1,
 *           freed 1; messages sent T*N + 6 + 5 + 1 + 3, received 6.
 *   rank 1: started T*N + 12 + 1 + 2 + 3 + 1, completed T*N + 12 + 2 + 3 + 1, cancelled 1,
 *           freed 0; messages sent 6, received T*N + 6 + 5 + 1 + 3.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int rank, T = 500, N = 100;

#define CHECK(cond, what)                                                     \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "rank %d: %s failed\n", rank, what);              \
            MPI_Abort(MPI_COMM_WORLD, 1);                                     \
        }                                                                     \
    } while (0)

static void *worker(void *arg)
{
    int t = (int)(long)arg;
    long long buf = t;
    for (int i = 0; i < N; i++) {
        MPI_Request r;
        if (rank == 0)
            MPI_Isend(&buf, 1, MPI_LONG_LONG, 1, t, MPI_COMM_WORLD, &r);
        else
            MPI_Irecv(&buf, 1, MPI_LONG_LONG, 0, t, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    return 0;
}

static int query(void *extra, MPI_Status *status)
{
    (void)extra;
    MPI_Status_set_elements(status, MPI_BYTE, 0);
    MPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    return MPI_SUCCESS;
}
static int free_fn(void *extra) { (void)extra; return MPI_SUCCESS; }
static int cancel_fn(void *extra, int complete) { (void)extra; (void)complete; return MPI_SUCCESS; }

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE");
    if (argc > 1) T = atoi(argv[1]);
    if (argc > 2) N = atoi(argv[2]);
    int other = 1 - rank;

    /* 1 */
    pthread_t *th = malloc(sizeof *th * (size_t)T);
    for (int t = 0; t < T; t++) CHECK(pthread_create(&th[t], 0, worker, (void *)(long)t) == 0, "pthread_create");
    for (int t = 0; t < T; t++) pthread_join(th[t], 0);
    free(th);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Pcontrol(2);

    /* 2 */
    int in[6], out[6];
    for (int k = 0; k < 6; k += 2) {
        MPI_Request r[4];
        for (int j = 0; j < 2; j++) {
            out[k + j] = k + j;
            MPI_Irecv(&in[k + j], 1, MPI_INT, rank, 100 + k + j, MPI_COMM_WORLD, &r[2 * j]);
            MPI_Isend(&out[k + j], 1, MPI_INT, rank, 100 + k + j, MPI_COMM_WORLD, &r[2 * j + 1]);
        }
        int flag = 0, left = 4, idx, n, idxs[4];
        if (k == 0)
            while (!flag) MPI_Testall(4, r, &flag, MPI_STATUSES_IGNORE);
        else if (k == 2)
            while (left) {
                MPI_Testany(4, r, &idx, &flag, MPI_STATUS_IGNORE);
                if (flag && idx != MPI_UNDEFINED) left--;
            }
        else
            while (left) {
                MPI_Testsome(4, r, &n, idxs, MPI_STATUSES_IGNORE);
                if (n != MPI_UNDEFINED) left -= n;
            }
    }

    /* 3 */
    {
        MPI_Request r;
        MPI_Status st;
        int never, cancelled = 0;
        MPI_Irecv(&never, 1, MPI_INT, other, 999, MPI_COMM_WORLD, &r);
        MPI_Cancel(&r);
        MPI_Wait(&r, &st);
        MPI_Test_cancelled(&st, &cancelled);
        CHECK(cancelled, "cancelling a receive nothing matches");
    }

    /* 4 */
    char msg[16] = {0};
    if (rank == 0) {
        for (int i = 0; i < 5; i++) MPI_Send(msg, 16, MPI_CHAR, 1, 200 + i, MPI_COMM_WORLD);
    } else {
        for (int i = 0; i < 3; i++) {
            MPI_Message m;
            MPI_Mprobe(0, 200 + i, MPI_COMM_WORLD, &m, MPI_STATUS_IGNORE);
            MPI_Mrecv(msg, 16, MPI_CHAR, &m, MPI_STATUS_IGNORE);
        }
        for (int i = 3; i < 5; i++) {
            MPI_Message m;
            MPI_Request r;
            int flag = 0;
            while (!flag) MPI_Improbe(0, 200 + i, MPI_COMM_WORLD, &flag, &m, MPI_STATUS_IGNORE);
            MPI_Imrecv(msg, 16, MPI_CHAR, &m, &r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
    }

    /* 5 */
    char big[64] = {0};
    if (rank == 0) {
        MPI_Request r;
        MPI_Isend(big, 32, MPI_CHAR, 1, 300, MPI_COMM_WORLD, &r);
        MPI_Request_free(&r);
    } else {
        MPI_Recv(big, 32, MPI_CHAR, 0, 300, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* the freed send has arrived before `big` is reused */

    /* 6 */
    {
        MPI_Request r;
        if (rank == 0) MPI_Send_init(big, 64, MPI_CHAR, 1, 400, MPI_COMM_WORLD, &r);
        else MPI_Recv_init(big, 64, MPI_CHAR, 0, 400, MPI_COMM_WORLD, &r);
        for (int i = 0; i < 3; i++) {
            MPI_Start(&r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
        MPI_Request_free(&r);
    }

    /* 7 */
    {
        MPI_Request r;
        MPI_Grequest_start(query, free_fn, cancel_fn, 0, &r);
        MPI_Grequest_complete(r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Pcontrol(2);
    if (rank == 0) printf("ledger_threads: %d threads x %d messages done\n", T, N);
    MPI_Finalize();
    return 0;
}
