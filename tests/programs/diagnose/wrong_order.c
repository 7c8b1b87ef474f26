/* wrong_order: messages received in a fixed order that is not their arrival order.
 *
 * 3 ranks, N iterations.  Each iteration: rank 1 spins 2U, then MPI_Send (1 KiB) to
 * rank 0; rank 2 spins 0.2U, MPI_Send (1 KiB) to rank 0, then spins 1.8U; rank 0
 * MPI_Recv from 1, spins U (processing it), MPI_Recv from 2, spins U; then
 * MPI_Barrier.  1 KiB is sent eagerly: rank 2's send returns at once.
 *
 * Problem:   receives in the wrong order.
 * Culprit:   rank 1 (its message comes first in rank 0's order but arrives last).
 * Waiting:   rank 0 waits 2U in MPI_Recv (from rank 1) while rank 2's message has been
 *            there since 0.2U.
 * Fix:       rank 0 receives in arrival order: MPI_Recv with MPI_ANY_SOURCE twice,
 *            processing each message (U) as it comes.
 * Saving:    unfixed, rank 0 gets rank 1's message at 2U, processes it to 3U, finds
 *            rank 2's, processes it to 4U: 4U per iteration (ranks 1 and 2 wait in the
 *            barrier from 2U).  Fixed, it takes rank 2's at 0.2U, processes it to 1.2U,
 *            rank 1's at 2U, processes it to 3U: 3U.  U per iteration.
 */
#include "diag.h"

#define BYTES 1024

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    diag_t d = diag_options(argc, argv, 60);
    diag_ranks(&d, 3);
    double U = d.unit;
    static char x[BYTES], y[BYTES];
    for (long i = 0; i < d.iters; i++) {
        if (d.rank == 0) {
            for (int k = 1; k <= 2; k++) {
                MPI_Recv(k == 1 ? x : y, BYTES, MPI_BYTE, d.fixed ? MPI_ANY_SOURCE : k, 0,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                work(U);
            }
        } else if (d.rank == 1) {
            work(2 * U);
            MPI_Send(x, BYTES, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        } else {
            work(0.2 * U);
            MPI_Send(y, BYTES, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
            work(1.8 * U);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
