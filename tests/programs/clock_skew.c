/* Messages between rank 0 and every other rank, for the trace's clock alignment
 * (tests/test_profile.py): each of N_ITER rounds, rank 0 sends a 4 MiB message to
 * every rank r > 0 (MPI_Send), which sends it back (MPI_Send after MPI_Recv); then
 * every rank r > 0 posts an MPI_Irecv of 4 MiB from rank 0 and sends it one with
 * MPI_Isend, both completed by MPI_Waitall, and rank 0 does the mirror image.
 * A 4 MiB message takes hundreds of microseconds to copy, so its receive ends that long
 * after its send began on any clock, far beyond the error of the clock alignment.
 * Between rounds every rank sleeps 2 ms, so the run lasts about N_ITER x 2 ms. */
#include <mpi.h>
#include <stdlib.h>
#include <time.h>

#define N_ITER 10
#define BYTES (4 << 20)

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char *out = calloc(1, BYTES), *in = calloc(1, BYTES);
    for (int it = 0; it < N_ITER; it++) {
        if (rank == 0) {
            for (int r = 1; r < size; r++) {
                MPI_Send(out, BYTES, MPI_BYTE, r, 1, MPI_COMM_WORLD);
                MPI_Recv(in, BYTES, MPI_BYTE, r, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
            for (int r = 1; r < size; r++) {
                MPI_Request req[2];
                MPI_Irecv(in, BYTES, MPI_BYTE, r, 3, MPI_COMM_WORLD, &req[0]);
                MPI_Isend(out, BYTES, MPI_BYTE, r, 3, MPI_COMM_WORLD, &req[1]);
                MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
            }
        } else {
            MPI_Recv(in, BYTES, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(in, BYTES, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
            MPI_Request req[2];
            MPI_Irecv(in, BYTES, MPI_BYTE, 0, 3, MPI_COMM_WORLD, &req[0]);
            MPI_Isend(out, BYTES, MPI_BYTE, 0, 3, MPI_COMM_WORLD, &req[1]);
            MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        }
        nanosleep(&(struct timespec){0, 2000000}, 0);
    }
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}
