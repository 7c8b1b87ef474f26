/* request_reply: a request sent after work it does not depend on.
 *
 * 2 ranks, N iterations.  Each iteration: rank 0 spins 4U, then MPI_Send(request, 8 B)
 * to rank 1 and MPI_Recv(reply) from it; rank 1 MPI_Recv(request), spins 3U to make
 * the reply, then MPI_Send(reply, 8 B).
 *
 * Problem:   a late sender whose culprit also has more work (4U against 3U): balancing
 *            the work saves nothing (the two ranks work one after the other), sending
 *            the request first saves the overlap.
 * Culprit:   rank 0 (the request is ready before its work, but sent after it).
 * Waiting:   rank 1 waits 4U per iteration in MPI_Recv for the request; rank 0 then
 *            waits 3U in MPI_Recv for the reply: a wait passed on from the late request.
 * Fix:       rank 0 sends the request first, then spins 4U, then receives the reply.
 * Saving:    unfixed an iteration lasts 4U + 3U = 7U; fixed the two spins overlap: 4U.
 *            3U per iteration.
 */
#include "diag.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    diag_t d = diag_options(argc, argv, 40);
    diag_ranks(&d, 2);
    double U = d.unit, request = 0, reply = 0;
    for (long i = 0; i < d.iters; i++) {
        if (d.rank == 0) {
            request = (double)i;
            if (!d.fixed)
                work(4 * U);
            MPI_Send(&request, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
            if (d.fixed)
                work(4 * U);
            MPI_Recv(&reply, 1, MPI_DOUBLE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&request, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            work(3 * U);
            reply = request + 1;
            MPI_Send(&reply, 1, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD);
        }
    }
    MPI_Finalize();
    return 0;
}
