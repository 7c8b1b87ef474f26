/* The all-to-all program of issue 23's measurements: 20 MPI_Alltoall of 16 ints per
 * peer and 10 MPI_Barrier, on any number of ranks. */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int n;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int *s = calloc((size_t)n, 64), *r = calloc((size_t)n, 64);
    for (int i = 0; i < 20; i++) {
        MPI_Alltoall(s, 16, MPI_INT, r, 16, MPI_INT, MPI_COMM_WORLD);
        if (i % 2) MPI_Barrier(MPI_COMM_WORLD);
    }
    free(s), free(r);
    MPI_Finalize();
    return 0;
}
