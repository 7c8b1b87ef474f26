/* queue_search: messages that arrive in the reverse of the order their receives were
 * posted, so each one searches the whole posted-receive queue.
 *
 * 2 ranks, N iterations.  Each iteration: rank 1 pre-posts M = 2000 MPI_Irecv of 8 B
 * with tags 0..M-1 in that order, then tells rank 0 (a zero-byte message, tag M); rank 0
 * sends the M messages with tags M-1 down to 0; rank 1 MPI_Waitall; both spin U.
 *
 * Problem:   long posted-receive-queue searches: the message with tag M-1-j arrives
 *            when M-j receives are posted and matches the last one, so an iteration
 *            costs M + (M-1) + ... + 1 = M(M+1)/2 (about 2 million) comparisons instead
 *            of M (each message matches the head of the queue).
 * Culprit:   the pair 0 -> 1 (rank 0 sends in the reverse of the posted order).
 * Waiting:   rank 1, in MPI_Waitall (where its MPI matches the arriving messages).
 * Fix:       rank 0 sends tags 0..M-1, the posted order.
 * Saving:    (M(M+1)/2 - M) x the cost of one comparison per iteration: it depends
 *            on the MPI's queue (a list in ob1 and MPICH) and the machine: measured.
 */
#include "diag.h"

#define M 2000

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    diag_t d = diag_options(argc, argv, 50);
    diag_ranks(&d, 2);
    double U = d.unit;
    static double buf[M];
    static MPI_Request req[M];
    for (long i = 0; i < d.iters; i++) {
        if (d.rank == 1) {
            for (int t = 0; t < M; t++)
                MPI_Irecv(&buf[t], 1, MPI_DOUBLE, 0, t, MPI_COMM_WORLD, &req[t]);
            MPI_Send(NULL, 0, MPI_BYTE, 0, M, MPI_COMM_WORLD);
            MPI_Waitall(M, req, MPI_STATUSES_IGNORE);
        } else {
            MPI_Recv(NULL, 0, MPI_BYTE, 1, M, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int k = 0; k < M; k++) {
                int t = d.fixed ? k : M - 1 - k;
                MPI_Send(&buf[t], 1, MPI_DOUBLE, 1, t, MPI_COMM_WORLD);
            }
        }
        work(U);
    }
    MPI_Finalize();
    return 0;
}
