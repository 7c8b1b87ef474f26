/* early_gather: the root of a gather arrives early and waits for the others.
 *
 * 4 ranks, N iterations.  Each iteration: ranks 1, 2, 3 spin 2U, the root (rank 0)
 * spins nothing; then MPI_Gather of 1 KiB per rank to rank 0.
 *
 * Problem:   an early root: the work sits on the non-roots, the root idles.
 * Culprits:  ranks 1, 2, 3 (they reach the gather late).
 * Waiting:   rank 0 waits 2U per iteration in MPI_Gather.
 * Fix:       rebalance, total conserved (3 x 2U = 4 x 1.5U): every rank spins 1.5U.
 * Saving:    2U unfixed, 1.5U fixed per iteration: 0.5U.
 */
#include "diag.h"

#define BYTES 1024

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    diag_t d = diag_options(argc, argv, 150);
    diag_ranks(&d, 4);
    double U = d.unit;
    static char mine[BYTES], all[4 * BYTES];
    for (long i = 0; i < d.iters; i++) {
        work(d.fixed ? 1.5 * U : d.rank == 0 ? 0 : 2 * U);
        mine[0] = (char)i;
        MPI_Gather(mine, BYTES, MPI_BYTE, all, BYTES, MPI_BYTE, 0, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
