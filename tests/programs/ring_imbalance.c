/* A bulk-synchronous ring with known imbalance, for profile and report tests.
 *
 * Every rank r, for ITERS iterations (argv[1], default 20): sleeps (r + 1) x UNIT
 * microseconds (argv[2], default 2000) as its "work", then MPI_Sendrecv of 1 KiB to
 * r+1 / from r-1 (periodic) and an MPI_Allreduce of one double.
 * Loads are proportional to r + 1, so eq. 4.1 gives (N - (N+1)/2) / ((N+1)/2) x 100 %
 * (60 % on 4 ranks).
 */
#include <mpi.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, iters = argc > 1 ? atoi(argv[1]) : 20, unit = argc > 2 ? atoi(argv[2]) : 2000;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char out[1024] = {0}, in[1024];
    for (int i = 0; i < iters; i++) {
        usleep((useconds_t)((rank + 1) * unit));
        MPI_Sendrecv(out, 1024, MPI_CHAR, (rank + 1) % size, 7, in, 1024, MPI_CHAR,
                     (rank + size - 1) % size, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        double x = rank, y;
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
