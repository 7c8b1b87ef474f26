/* early_reduce: the root of a reduction arrives early and waits for the others.
 *
 * 4 ranks, N iterations.  Each iteration: ranks 1, 2, 3 spin 2U, the root (rank 0)
 * spins nothing; then MPI_Reduce of 1 KiB (128 doubles, sum) to rank 0.
 *
 * Problem:   an early root: the work sits on the non-roots, the root idles.
 * Culprits:  ranks 1, 2, 3 (they reach the reduction late).
 * Waiting:   rank 0 waits 2U per iteration in MPI_Reduce.
 * Fix:       rebalance, total conserved ((P - 1) x 2U = 6U = 4 x 1.5U): every rank
 *            spins 1.5U.
 * Saving:    an iteration lasts the longest spin: 2U unfixed, 1.5U fixed (the root
 *            takes nothing off the others' path: 1 KiB is sent eagerly): 0.5U.
 */
#include "diag.h"

#define COUNT 128 /* doubles: 1 KiB */

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    diag_t d = diag_options(argc, argv, 150);
    diag_ranks(&d, 4);
    double U = d.unit, x[COUNT] = {0}, y[COUNT];
    for (long i = 0; i < d.iters; i++) {
        work(d.fixed ? 1.5 * U : d.rank == 0 ? 0 : 2 * U);
        x[0] = (double)i;
        MPI_Reduce(x, y, COUNT, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
