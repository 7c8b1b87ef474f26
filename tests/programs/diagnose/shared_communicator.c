/* shared_communicator: threads that share one communicator for independent traffic.
 *
 * 2 ranks x 4 threads (pthreads, MPI_THREAD_MULTIPLE), W windows (--iters).  Thread t
 * of rank 0 sends windows of 64 messages of 64 B (MPI_Isend, tag t, then MPI_Waitall)
 * to thread t of rank 1, which posts the window's 64 MPI_Irecv, MPI_Waitall, and sends
 * back a zero-byte ack (tag t) that thread t of rank 0 receives before its next window.
 * (The window protocol of commscope's `bench multirate`, native/bench/multirate.c.)
 * --unit is not used.
 *
 * Problem:   every thread uses MPI_COMM_WORLD: the threads share one matching context
 *            and one sequence of message numbers per peer, so they contend for the
 *            same lock and queues, and messages of one thread can arrive out of
 *            sequence behind another's.
 * Culprit:   every thread of both ranks (the communicator they share).
 * Waiting:   in MPI_Waitall (where the messages are matched) on both ranks.
 * Fix:       every thread uses its own MPI_Comm_dup of MPI_COMM_WORLD.
 * Saving:    depends on the MPI's threading (locks, per-communicator matching): measured.
 */
#include "diag.h"

#include <pthread.h>

#define T 4
#define WINDOW 64
#define BYTES 64

static diag_t d;
static MPI_Comm comm[T];

static void *thread_main(void *arg)
{
    int t = (int)(long)arg;
    static char buf[T][WINDOW][BYTES];
    MPI_Request req[WINDOW];
    for (long w = 0; w < d.iters; w++) {
        for (int k = 0; k < WINDOW; k++) {
            if (d.rank == 0)
                MPI_Isend(buf[t][k], BYTES, MPI_BYTE, 1, t, comm[t], &req[k]);
            else
                MPI_Irecv(buf[t][k], BYTES, MPI_BYTE, 0, t, comm[t], &req[k]);
        }
        MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
        if (d.rank == 0)
            MPI_Recv(NULL, 0, MPI_BYTE, 1, t, comm[t], MPI_STATUS_IGNORE);
        else
            MPI_Send(NULL, 0, MPI_BYTE, 0, t, comm[t]);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    d = diag_options(argc, argv, 1000);
    diag_ranks(&d, 2);
    if (provided < MPI_THREAD_MULTIPLE) {
        diag_rank0_say("shared_communicator needs MPI_THREAD_MULTIPLE, which this MPI does "
                       "not provide", NULL);
        diag_stop(2);
    }
    for (int t = 0; t < T; t++) {
        if (d.fixed)
            MPI_Comm_dup(MPI_COMM_WORLD, &comm[t]);
        else
            comm[t] = MPI_COMM_WORLD;
    }
    pthread_t th[T];
    for (int t = 0; t < T; t++)
        pthread_create(&th[t], NULL, thread_main, (void *)(long)t);
    for (int t = 0; t < T; t++)
        pthread_join(th[t], NULL);
    for (int t = 0; t < T && d.fixed; t++)
        MPI_Comm_free(&comm[t]);
    MPI_Finalize();
    return 0;
}
