/* late_scatter: the root prepares every rank's chunk before it can scatter them.
 *
 * 4 ranks, N iterations.  Each iteration: rank 0 prepares all chunks (spins 3U), then
 * MPI_Scatter of 16 KiB per rank from rank 0, then every rank spins U.
 *
 * Problem:   a late root: the scatter cannot start before the root is done.
 * Culprit:   rank 0.
 * Waiting:   ranks 1, 2, 3 wait 3U per iteration in MPI_Scatter.
 * Fix:       every rank prepares its own chunk (3U / 4 = 0.75U); no scatter at all.
 * Saving:    unfixed 3U + U = 4U per iteration, fixed 0.75U + U = 1.75U: 2.25U (plus the
 *            scatter's own cost, a few microseconds).
 */
#include "diag.h"

#define CHUNK (16 * 1024)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    diag_t d = diag_options(argc, argv, 80);
    diag_ranks(&d, 4);
    double U = d.unit;
    static char all[4 * CHUNK], mine[CHUNK];
    for (long i = 0; i < d.iters; i++) {
        if (!d.fixed) {
            if (d.rank == 0) {
                work(3 * U);
                memset(all, (int)i, sizeof all);
            }
            MPI_Scatter(all, CHUNK, MPI_BYTE, mine, CHUNK, MPI_BYTE, 0, MPI_COMM_WORLD);
        } else {
            work(3 * U / d.size);
            memset(mine, (int)i, CHUNK);
        }
        work(U);
    }
    MPI_Finalize();
    return 0;
}
