/* late_broadcast: the root prepares alone what everybody could prepare together.
 *
 * 4 ranks, N iterations.  Each iteration: rank 0 prepares the data (spins 3U), then
 * MPI_Bcast of 64 KiB from rank 0, then every rank spins U (uses the data).
 *
 * Problem:   a late root: the broadcast cannot start before the root is done.
 * Culprit:   rank 0.
 * Waiting:   ranks 1, 2, 3 wait 3U per iteration in MPI_Bcast.
 * Fix:       every rank prepares its quarter (spins 3U / 4 = 0.75U) and MPI_Allgather
 *            assembles the same 64 KiB on every rank; then every rank spins U.
 * Saving:    unfixed an iteration lasts 3U + U = 4U, fixed 0.75U + U = 1.75U (the
 *            64 KiB moved cost about the same): 2.25U per iteration.
 */
#include "diag.h"

#define BYTES (64 * 1024)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    diag_t d = diag_options(argc, argv, 80);
    diag_ranks(&d, 4);
    double U = d.unit;
    static char data[BYTES];
    int part = BYTES / d.size;
    for (long i = 0; i < d.iters; i++) {
        if (!d.fixed) {
            if (d.rank == 0) {
                work(3 * U);
                memset(data, (int)i, BYTES);
            }
            MPI_Bcast(data, BYTES, MPI_BYTE, 0, MPI_COMM_WORLD);
        } else {
            work(3 * U / d.size);
            memset(data + d.rank * part, (int)i, part);
            MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, part, MPI_BYTE,
                          MPI_COMM_WORLD);
        }
        work(U);
    }
    MPI_Finalize();
    return 0;
}
