/* load_imbalance: one rank has more work than the others (MPI + OpenMP).
 *
 * 4 ranks x 2 OpenMP threads, N iterations.  Each iteration: an OpenMP parallel region
 * where every thread spins U (rank 2's threads: 3U); MPI_Allreduce of one double (a
 * residual); a 1-D periodic halo exchange (MPI_Irecv x2, MPI_Isend x2 of 4 KiB to both
 * neighbours, MPI_Waitall).
 *
 * Problem:   load imbalance across ranks.
 * Culprit:   rank 2 (its region lasts 3U, the others' U).
 * Waiting:   ranks 0, 1 and 3 wait 2U per iteration in MPI_Allreduce.
 * Fix:       rebalance, total conserved (2 threads x (3 x U + 3U) = 12U per iteration
 *            over the job, 4 ranks x 2 threads x 1.5U = 12U): every thread spins 1.5U.
 * Saving:    an iteration lasts max over ranks of the region: 3U unfixed, 1.5U fixed
 *            (the Allreduce and halo cost the same in both): 1.5U per iteration.
 */
#include "diag.h"

#include <omp.h>

#define HALO 512 /* doubles: 4 KiB */

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    diag_t d = diag_options(argc, argv, 80);
    diag_ranks(&d, 4);
    double U = d.unit, mine = d.fixed ? 1.5 * U : (d.rank == 2 ? 3 * U : U);
    int left = (d.rank + d.size - 1) % d.size, right = (d.rank + 1) % d.size;
    static double send[2][HALO], recv[2][HALO];
    for (long i = 0; i < d.iters; i++) {
#pragma omp parallel
        work(mine);
        double residual = d.rank + i, sum;
        MPI_Allreduce(&residual, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Request req[4];
        MPI_Irecv(recv[0], HALO, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &req[0]);
        MPI_Irecv(recv[1], HALO, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req[1]);
        MPI_Isend(send[0], HALO, MPI_DOUBLE, right, 0, MPI_COMM_WORLD, &req[2]);
        MPI_Isend(send[1], HALO, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &req[3]);
        MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
    }
    MPI_Finalize();
    return 0;
}
