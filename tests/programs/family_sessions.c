/* The MPI-4 sessions model only: never MPI_Init, on 2 ranks.
 *
 *   family_sessions
 *
 *  1. MPI_Session_init (session A); MPI_Group_from_session_pset(A, "mpi://WORLD");
 *     MPI_Comm_create_from_group of that group with its ranks reversed (MPI_Group_incl
 *     {1, 0}: communicator rank 0 is world rank 1), tag "commscope.family.a" -> comm CA.
 *  2. MPI_Session_init (session B); MPI_Group_from_session_pset(B, "mpi://WORLD");
 *     MPI_Comm_create_from_group of that group as it is, tag "commscope.family.b" -> CB.
 *  3. On CB: world rank 0 sends 3 messages of 10 INT (MPI_Send) to world rank 1, which
 *     receives them (MPI_Recv).  MPI_Allreduce of 2 INT on CB.
 *     MPI_Comm_free(CB), MPI_Session_finalize(B): session A is still open.
 *  4. On CA (ranks reversed): each rank MPI_Isend's 4 DBL to the other and MPI_Irecv's
 *     4 DBL from it, MPI_Waitall of the 2; then CA rank 0 (world rank 1) sends 1 INT
 *     (MPI_Send) to CA rank 1 (world rank 0), which receives it (MPI_Recv).
 *     MPI_Barrier on CA.  MPI_Comm_free(CA), MPI_Session_finalize(A).
 * INT is MPI_INT (4 bytes), DBL MPI_DOUBLE (8 bytes).  (MPI_Group_incl, MPI_Group_free
 * and MPI_Comm_rank are not profiled functions.)  The program checks what it receives.
 *
 * What that implies, profiling from the first MPI_Session_init to the last
 * MPI_Session_finalize, every peer a world rank (tests/test_profile_families.py
 * derives the same):
 *   world rank 0: sends 3 + 1 messages of 120 + 32 bytes to world rank 1, receives
 *                 1 + 1 of 32 + 4 bytes from world rank 1;
 *   world rank 1: sends 1 + 1 of 32 + 4 bytes, receives 3 + 1 of 120 + 32 bytes;
 *   collective_bytes 8 (the Allreduce; the Barrier moves none);
 *   requests: 2 started and completed per rank.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int wrank = -1;

#define CHECK(cond, what)                                                     \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "world rank %d: %s failed\n", wrank, what);       \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

int main(void)
{
    MPI_Session A, B;
    MPI_Group ga, gb, rev;
    MPI_Comm CA, CB;

    /* 1 */
    CHECK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &A) == MPI_SUCCESS, "MPI_Session_init A");
    CHECK(MPI_Group_from_session_pset(A, "mpi://WORLD", &ga) == MPI_SUCCESS, "mpi://WORLD");
    int n = 0;
    MPI_Group_size(ga, &n);
    MPI_Group_rank(ga, &wrank);
    CHECK(n == 2, "2 processes");
    int reversed[2] = {1, 0};
    MPI_Group_incl(ga, 2, reversed, &rev);
    CHECK(MPI_Comm_create_from_group(rev, "commscope.family.a", MPI_INFO_NULL, MPI_ERRORS_RETURN, &CA)
              == MPI_SUCCESS, "MPI_Comm_create_from_group A");
    MPI_Group_free(&rev);
    MPI_Group_free(&ga);

    /* 2 */
    CHECK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &B) == MPI_SUCCESS, "MPI_Session_init B");
    CHECK(MPI_Group_from_session_pset(B, "mpi://WORLD", &gb) == MPI_SUCCESS, "mpi://WORLD of B");
    CHECK(MPI_Comm_create_from_group(gb, "commscope.family.b", MPI_INFO_NULL, MPI_ERRORS_RETURN, &CB)
              == MPI_SUCCESS, "MPI_Comm_create_from_group B");
    MPI_Group_free(&gb);

    /* 3 */
    int rb, ten[10];
    MPI_Comm_rank(CB, &rb);
    CHECK(rb == wrank, "CB keeps the world order");
    for (int k = 0; k < 3; k++) {
        if (rb == 0) {
            for (int i = 0; i < 10; i++) ten[i] = 10 * k + i;
            MPI_Send(ten, 10, MPI_INT, 1, k, CB);
        } else {
            MPI_Recv(ten, 10, MPI_INT, 0, k, CB, MPI_STATUS_IGNORE);
            CHECK(ten[9] == 10 * k + 9, "MPI_Recv on CB");
        }
    }
    int two[2] = {wrank, 1}, sum[2];
    MPI_Allreduce(two, sum, 2, MPI_INT, MPI_SUM, CB);
    CHECK(sum[0] == 1 && sum[1] == 2, "MPI_Allreduce on CB");
    MPI_Comm_free(&CB);
    MPI_Session_finalize(&B);

    /* 4 */
    int ra;
    MPI_Comm_rank(CA, &ra);
    CHECK(ra == 1 - wrank, "CA reverses the world order");
    double out[4] = {wrank, wrank, wrank, wrank}, in[4];
    MPI_Request r[2];
    MPI_Irecv(in, 4, MPI_DOUBLE, 1 - ra, 5, CA, &r[0]);
    MPI_Isend(out, 4, MPI_DOUBLE, 1 - ra, 5, CA, &r[1]);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    CHECK(in[3] == 1 - wrank, "MPI_Irecv on CA");
    int one = 42;
    if (ra == 0) {
        MPI_Send(&one, 1, MPI_INT, 1, 6, CA);
    } else {
        MPI_Recv(&one, 1, MPI_INT, 0, 6, CA, MPI_STATUS_IGNORE);
        CHECK(one == 42, "MPI_Recv on CA");
    }
    MPI_Barrier(CA);
    MPI_Comm_free(&CA);
    MPI_Session_finalize(&A);
    if (wrank == 0) printf("family_sessions: done\n");
    return 0;
}
