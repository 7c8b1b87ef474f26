/* Persistent collectives (MPI-4 *_init) next to a blocking and a nonblocking one,
 * on 2 ranks (MPI_Init).
 *
 *   family_pcoll
 *
 * INT is MPI_INT (4 bytes), DBL MPI_DOUBLE (8 bytes).  Every rank:
 *  1. A = MPI_Allreduce_init(4 DBL, MPI_SUM); 5 x (MPI_Start(A), MPI_Wait(A))
 *  2. B = MPI_Bcast_init(10 INT, root 0);       3 x (MPI_Start(B), MPI_Wait(B))
 *  3. C = MPI_Barrier_init;                     2 x (MPI_Start(C), MPI_Wait(C))
 *  4. D = MPI_Allgather_init(MPI_IN_PLACE, receive 2 INT from each rank);
 *                                               2 x (MPI_Start(D), MPI_Wait(D))
 *  5. 2 x (MPI_Startall of {A, B, C}, MPI_Waitall of the 3)
 *  6. MPI_Request_free of A, B, C, D
 *  7. MPI_Iallreduce(2 INT, MPI_SUM) + MPI_Wait; MPI_Allreduce(1 DBL, MPI_SUM)
 * The program checks every result.
 *
 * What that implies on each rank (tests/test_profile_families.py derives the same):
 *   collective_bytes: each start or call counts the send count x type size, at the
 *   start, not at the init (MPI_IN_PLACE: the receive count, 2 INT):
 *     A 5 x 32, B 3 x 40, C 0, D 2 x 8, Startall 2 x (32 + 40 + 0), Iallreduce 8,
 *     Allreduce 8  =  160 + 120 + 16 + 144 + 8 + 8 = 456
 *   requests: 5 + 3 + 2 + 2 + 2 x 3 + 1 = 19 started and completed, none freed (the
 *   persistent requests are inactive when freed); no point-to-point messages.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int rank;

#define CHECK(cond, what)                                                     \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "rank %d: %s failed\n", rank, what);              \
            MPI_Abort(MPI_COMM_WORLD, 1);                                     \
        }                                                                     \
    } while (0)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 2, "2 ranks");
    MPI_Request A, B, C, D;

    /* 1 */
    double in[4], out[4];
    MPI_Allreduce_init(in, out, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &A);
    for (int k = 0; k < 5; k++) {
        for (int j = 0; j < 4; j++) in[j] = rank + k + j;
        MPI_Start(&A);
        MPI_Wait(&A, MPI_STATUS_IGNORE);
        for (int j = 0; j < 4; j++) CHECK(out[j] == 1 + 2 * (k + j), "MPI_Allreduce_init");
    }

    /* 2 */
    int bbuf[10];
    MPI_Bcast_init(bbuf, 10, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &B);
    for (int k = 0; k < 3; k++) {
        for (int j = 0; j < 10; j++) bbuf[j] = rank == 0 ? 10 * k + j : -1;
        MPI_Start(&B);
        MPI_Wait(&B, MPI_STATUS_IGNORE);
        for (int j = 0; j < 10; j++) CHECK(bbuf[j] == 10 * k + j, "MPI_Bcast_init");
    }

    /* 3 */
    MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &C);
    for (int k = 0; k < 2; k++) {
        MPI_Start(&C);
        MPI_Wait(&C, MPI_STATUS_IGNORE);
    }

    /* 4 */
    int gbuf[4];
    MPI_Allgather_init(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, gbuf, 2, MPI_INT, MPI_COMM_WORLD,
                       MPI_INFO_NULL, &D);
    for (int k = 0; k < 2; k++) {
        gbuf[2 * rank] = 100 * rank + k;
        gbuf[2 * rank + 1] = 100 * rank + k + 1;
        MPI_Start(&D);
        MPI_Wait(&D, MPI_STATUS_IGNORE);
        for (int r = 0; r < 2; r++) CHECK(gbuf[2 * r] == 100 * r + k, "MPI_Allgather_init");
    }

    /* 5 */
    MPI_Request abc[3] = {A, B, C};
    for (int k = 0; k < 2; k++) {
        for (int j = 0; j < 4; j++) in[j] = 1;
        for (int j = 0; j < 10; j++) bbuf[j] = rank == 0 ? 7 : -1;
        MPI_Startall(3, abc);
        MPI_Waitall(3, abc, MPI_STATUSES_IGNORE);
        CHECK(out[0] == 2 && bbuf[9] == 7, "MPI_Startall");
    }

    /* 6 */
    MPI_Request_free(&abc[0]);
    MPI_Request_free(&abc[1]);
    MPI_Request_free(&abc[2]);
    MPI_Request_free(&D);

    /* 7 */
    int iin[2] = {rank, rank + 1}, iout[2];
    MPI_Request r;
    MPI_Iallreduce(iin, iout, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    CHECK(iout[0] == 1 && iout[1] == 3, "MPI_Iallreduce");
    double x = rank + 0.5, y;
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    CHECK(y == 2.0, "MPI_Allreduce");

    if (rank == 0) printf("family_pcoll: done\n");
    MPI_Finalize();
    return 0;
}
