/* late_receiver: a synchronous send that waits for a receive posted late.
 *
 * 2 ranks, N iterations.  Each iteration: rank 0 MPI_Ssend(x, 1 KiB) to rank 1, then
 * spins U (work independent of the send); rank 1 spins U, then MPI_Recv(x); then
 * MPI_Allreduce of one double.
 *
 * Problem:   a late receiver (MPI_Ssend completes only once the receive is matched).
 * Culprit:   rank 1 (posts its receive after its work).
 * Waiting:   rank 0 waits U per iteration in MPI_Ssend (then rank 1 waits U in
 *            MPI_Allreduce for rank 0's work, which started only when the send ended).
 * Fix:       rank 0 uses MPI_Issend, spins U, then MPI_Wait: its work overlaps the wait.
 * Saving:    unfixed an iteration lasts U (rank 0 in Ssend) + U (its work) = 2U; fixed
 *            both spin at once: U.  U per iteration.
 */
#include "diag.h"

#define BYTES 1024

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    diag_t d = diag_options(argc, argv, 120);
    diag_ranks(&d, 2);
    double U = d.unit;
    static char x[BYTES];
    for (long i = 0; i < d.iters; i++) {
        if (d.rank == 0) {
            x[0] = (char)i;
            if (!d.fixed) {
                MPI_Ssend(x, BYTES, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                work(U);
            } else {
                MPI_Request req;
                MPI_Issend(x, BYTES, MPI_BYTE, 1, 0, MPI_COMM_WORLD, &req);
                work(U);
                MPI_Wait(&req, MPI_STATUS_IGNORE);
            }
        } else {
            work(U);
            MPI_Recv(x, BYTES, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        double r = x[0], sum;
        MPI_Allreduce(&r, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
