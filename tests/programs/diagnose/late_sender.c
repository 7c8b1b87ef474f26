/* late_sender: a send made after work it does not depend on.
 *
 * 2 ranks, N iterations.  Each iteration: rank 0 spins 2U, then MPI_Send(x, 4 KiB) to
 * rank 1; rank 1 MPI_Recv(x), then spins 2U (uses x); then MPI_Allreduce of one double.
 *
 * Problem:   a late sender.
 * Culprit:   rank 0 (x is ready before its work, but sent after it).
 * Waiting:   rank 1 waits 2U per iteration in MPI_Recv; then rank 0 waits 2U in
 *            MPI_Allreduce for rank 1, which only started its work when x came: a wait
 *            propagated from the late send.
 * Fix:       rank 0 sends x first, then spins 2U.
 * Saving:    unfixed an iteration lasts 2U (rank 0) + 2U (rank 1) = 4U; fixed both
 *            spin at once: 2U.  2U per iteration.
 */
#include "diag.h"

#define COUNT 512 /* doubles: 4 KiB */

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    diag_t d = diag_options(argc, argv, 60);
    diag_ranks(&d, 2);
    double U = d.unit;
    static double x[COUNT];
    for (long i = 0; i < d.iters; i++) {
        if (d.rank == 0) {
            x[0] = (double)i;
            if (!d.fixed)
                work(2 * U);
            MPI_Send(x, COUNT, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
            if (d.fixed)
                work(2 * U);
        } else {
            MPI_Recv(x, COUNT, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            work(2 * U);
        }
        double r = x[0], sum;
        MPI_Allreduce(&r, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
