/* MPI-4 large-count (_c) functions, on 2 ranks (MPI_Init).  Needs an MPI that has
 * them (MPICH; the Open MPI 5 wheel does not).
 *
 *   family_bigcount
 *
 * Rank r works with o = 1 - r.  INT is MPI_INT (4 bytes), DBL MPI_DOUBLE (8 bytes);
 * every count below is an MPI_Count.
 *  1. rank 0: MPI_Send_c 1000 INT to 1 (tag 1); rank 1: MPI_Recv_c of it (4000 bytes).
 *  2. rank 1: MPI_Isend_c 300 DBL to 0 (tag 2) + MPI_Wait;
 *     rank 0: MPI_Irecv_c of up to 512 DBL from 1 (tag 2) + MPI_Wait (2400 bytes).
 *  3. MPI_Sendrecv_c: 7 INT to o, 7 INT from o (tag 3).
 *  4. MPI_Bcast_c 50 DBL from root 0 (400 bytes on each rank).
 *  5. MPI_Allreduce_c 6 INT, MPI_SUM (24 bytes); MPI_Iallreduce_c 3 DBL, MPI_SUM +
 *     MPI_Wait (24 bytes).
 *  6. MPI_Allgatherv_c: 2 + r INT from each rank (recvcounts {2, 3}): rank r sends
 *     (2 + r) x 4 bytes.
 *  7. W = MPI_Win_allocate_c (16 DBL, disp_unit 8); MPI_Win_fence; MPI_Put_c 5 DBL to o
 *     (40 bytes), MPI_Get_c 3 DBL from o (24 bytes); MPI_Win_fence; MPI_Win_free.
 * The program checks what it receives.
 *
 * What that implies (tests/test_profile_families.py derives the same):
 *   rank 0: messages sent 1 + 1 = 2 of 4000 + 28 bytes, received 1 + 1 = 2 of 2400 + 28;
 *   rank 1: sent 1 + 1 = 2 of 2400 + 28, received 2 of 4000 + 28;
 *   collective_bytes: 400 + 24 + 24 + (2 + r) x 4 (rank 0: 456, rank 1: 460);
 *   rma_bytes_put 40, rma_bytes_got 24, all with o;
 *   requests: 1 (the Isend_c or Irecv_c) + 1 (Iallreduce_c) started and completed.
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
    int o = 1 - rank;
    MPI_Status st;
    MPI_Count n;

    /* 1 */
    static int big[1000];
    if (rank == 0) {
        for (int i = 0; i < 1000; i++) big[i] = i;
        MPI_Send_c(big, 1000, MPI_INT, 1, 1, MPI_COMM_WORLD);
    } else {
        MPI_Recv_c(big, 1000, MPI_INT, 0, 1, MPI_COMM_WORLD, &st);
        MPI_Get_count_c(&st, MPI_INT, &n);
        CHECK(n == 1000 && big[999] == 999, "MPI_Recv_c");
    }

    /* 2 */
    static double d[512];
    MPI_Request r;
    if (rank == 1) {
        for (int i = 0; i < 300; i++) d[i] = i;
        MPI_Isend_c(d, 300, MPI_DOUBLE, 0, 2, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
        MPI_Irecv_c(d, 512, MPI_DOUBLE, 1, 2, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, &st);
        MPI_Get_count_c(&st, MPI_DOUBLE, &n);
        CHECK(n == 300 && d[299] == 299, "MPI_Irecv_c");
    }

    /* 3 */
    int s7[7], r7[7];
    for (int i = 0; i < 7; i++) s7[i] = 10 * rank + i;
    MPI_Sendrecv_c(s7, 7, MPI_INT, o, 3, r7, 7, MPI_INT, o, 3, MPI_COMM_WORLD, &st);
    CHECK(r7[6] == 10 * o + 6, "MPI_Sendrecv_c");

    /* 4 */
    double b[50];
    for (int i = 0; i < 50; i++) b[i] = rank == 0 ? i : -1;
    MPI_Bcast_c(b, 50, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    CHECK(b[49] == 49, "MPI_Bcast_c");

    /* 5 */
    int a6[6], s6[6];
    for (int i = 0; i < 6; i++) a6[i] = rank + i;
    MPI_Allreduce_c(a6, s6, 6, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(s6[5] == 11, "MPI_Allreduce_c");
    double x3[3] = {1, 2, 3}, y3[3];
    MPI_Iallreduce_c(x3, y3, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    CHECK(y3[2] == 6, "MPI_Iallreduce_c");

    /* 6 */
    int mine[3] = {rank, rank, rank}, all[5];
    MPI_Count counts[2] = {2, 3};
    MPI_Aint displs[2] = {0, 2};
    MPI_Allgatherv_c(mine, 2 + rank, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD);
    CHECK(all[0] == 0 && all[1] == 0 && all[2] == 1 && all[4] == 1, "MPI_Allgatherv_c");

    /* 7 */
    double *w, five[5] = {1, 2, 3, 4, 5}, three[3];
    MPI_Win W;
    MPI_Win_allocate_c(16 * sizeof(double), 8, MPI_INFO_NULL, MPI_COMM_WORLD, &w, &W);
    for (int i = 0; i < 16; i++) w[i] = 100 * rank + i;
    MPI_Win_fence(0, W);
    MPI_Put_c(five, 5, MPI_DOUBLE, o, 0, 5, MPI_DOUBLE, W);
    MPI_Get_c(three, 3, MPI_DOUBLE, o, 8, 3, MPI_DOUBLE, W);
    MPI_Win_fence(0, W);
    CHECK(three[0] == 100 * o + 8 && w[4] == 5, "MPI_Put_c / MPI_Get_c");
    MPI_Win_free(&W);

    if (rank == 0) printf("family_bigcount: done\n");
    MPI_Finalize();
    return 0;
}
