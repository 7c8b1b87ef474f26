/* thread_imbalance: one OpenMP thread of every rank has more work than the other.
 *
 * 2 ranks x 2 OpenMP threads, N iterations.  Each iteration: #pragma omp parallel where
 * thread 0 spins 3U and thread 1 spins U; then the master thread does MPI_Sendrecv of
 * 4 KiB with the other rank.
 *
 * Problem:   load imbalance between the threads of a rank.
 * Culprits:  both ranks (their thread 0).
 * Waiting:   thread 1 of each rank waits 2U per iteration at the region's closing
 *            (implicit) barrier; MPI sees nothing of it (the Sendrecv pairs ranks
 *            that are equally late).
 * Fix:       balance the threads: both spin 2U (the same 4U of work per rank).
 * Saving:    a region lasts its slowest thread: 3U unfixed, 2U fixed: U per iteration.
 */
#include "diag.h"

#include <omp.h>

#define COUNT 512 /* doubles: 4 KiB */

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    diag_t d = diag_options(argc, argv, 80);
    diag_ranks(&d, 2);
    double U = d.unit;
    static double out[COUNT], in[COUNT];
    int other = 1 - d.rank;
    for (long i = 0; i < d.iters; i++) {
#pragma omp parallel num_threads(2)
        work(d.fixed ? 2 * U : omp_get_thread_num() == 0 ? 3 * U : U);
        out[0] = (double)i;
        MPI_Sendrecv(out, COUNT, MPI_DOUBLE, other, 0, in, COUNT, MPI_DOUBLE, other, 0,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return 0;
}
