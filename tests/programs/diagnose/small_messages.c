/* small_messages: many tiny messages where one would do.
 *
 * 2 ranks, N iterations.  Each iteration: rank 0 sends K = 4000 messages of 8 B to
 * rank 1 (one MPI_Send each), rank 1 receives them (one MPI_Recv each); then both spin U.
 *
 * Problem:   per-message overhead: K messages pay K times the per-message cost
 *            (the call, matching, the shared-memory queue) for 32,000 bytes.
 * Culprit:   the pair 0 -> 1 (rank 0's sends).
 * Waiting:   rank 1, in MPI_Recv (each receive waits for the next send).
 * Fix:       one message of K x 8 B (one MPI_Send, one MPI_Recv).
 * Saving:    about (K - 1) x the per-message cost per iteration; that cost depends
 *            on the MPI and the machine (and on the profiler, a few tens of ns per
 *            call): measured, not designed.
 */
#include "diag.h"

#define K 4000

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    diag_t d = diag_options(argc, argv, 60);
    diag_ranks(&d, 2);
    double U = d.unit;
    static double x[K];
    for (long i = 0; i < d.iters; i++) {
        if (d.fixed) {
            if (d.rank == 0)
                MPI_Send(x, K, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
            else
                MPI_Recv(x, K, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            for (int k = 0; k < K; k++) {
                if (d.rank == 0)
                    MPI_Send(&x[k], 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
                else
                    MPI_Recv(&x[k], 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        }
        work(U);
    }
    MPI_Finalize();
    return 0;
}
