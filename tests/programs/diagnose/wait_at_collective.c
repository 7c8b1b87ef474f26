/* wait_at_collective: a barrier the program does not need.
 *
 * P ranks (4), N iterations.  Each iteration: rank (i mod P) spins 3U, the others U;
 * then MPI_Barrier.  At the very end one MPI_Allreduce (the result).  The heavy rank
 * rotates, so over the run every rank does the same work.
 *
 * Problem:   an unneeded barrier turns a transient imbalance into waiting.
 * Culprit:   rotating: every rank in turn (the one that spins 3U).
 * Waiting:   the P - 1 others wait 2U per iteration in MPI_Barrier.
 * Fix:       no barrier in the loop (the final Allreduce stays).
 * Saving:    unfixed, every iteration lasts 3U: N x 3U.  Fixed, nothing ties the ranks
 *            until the end, so the run lasts the largest total work of a rank:
 *            N/P x 3U + (N - N/P) x U = N (U + 2U/P) (N a multiple of P).
 *            Per iteration 3U - (U + 2U/P) = 2U (1 - 1/P) = 1.5U at P = 4.
 */
#include "diag.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    diag_t d = diag_options(argc, argv, 80);
    double U = d.unit;
    for (long i = 0; i < d.iters; i++) {
        work(d.rank == i % d.size ? 3 * U : U);
        if (!d.fixed)
            MPI_Barrier(MPI_COMM_WORLD);
    }
    double result = d.rank, sum;
    MPI_Allreduce(&result, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
