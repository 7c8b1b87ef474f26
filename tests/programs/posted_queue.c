/* Known queue contents at marked points, for checking counters against MPI_T.
 *
 * Rank 0 posts K receives (argv[1], default 25) from rank 1 with tags 0..K-1 and
 * marks the point with MPI_Pcontrol(2) (commscope takes a snapshot there): K receives
 * are posted and none has matched.  After a barrier rank 1 sends the K messages,
 * rank 0 waits for them all and marks the point again: nothing is posted.
 */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, k = argc > 1 ? atoi(argv[1]) : 25;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t)k);
    int *buf = calloc((size_t)k, sizeof(int));
    if (rank == 0) {
        for (int i = 0; i < k; i++) MPI_Irecv(&buf[i], 1, MPI_INT, 1, i, MPI_COMM_WORLD, &reqs[i]);
        MPI_Pcontrol(2);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1)
        for (int i = 0; i < k; i++) MPI_Send(&buf[i], 1, MPI_INT, 0, i, MPI_COMM_WORLD);
    else {
        MPI_Waitall(k, reqs, MPI_STATUSES_IGNORE);
        MPI_Pcontrol(2);
    }
    MPI_Finalize();
    return 0;
}
