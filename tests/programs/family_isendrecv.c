/* MPI-4 MPI_Isendrecv and MPI_Isendrecv_replace, with the blocking forms beside them,
 * on 2 ranks (MPI_Init).
 *
 *   family_isendrecv
 *
 * Rank r exchanges with o = 1 - r (world ranks).  INT is MPI_INT (4 bytes), CHAR
 * MPI_CHAR, DBL MPI_DOUBLE (8 bytes).
 *  1. MPI_Isendrecv: send 5 INT to o, receive 5 INT from o (tag 1); MPI_Wait.
 *  2. MPI_Isendrecv: send 7 CHAR (rank 0) or 9 CHAR (rank 1) to o, receive into a
 *     16-CHAR buffer from o (tag 2): rank 0 receives 9 bytes, rank 1 receives 7.
 *     MPI_Isendrecv_replace: 6 DBL with o (tag 3).
 *     Both completed by 2 calls of MPI_Waitany.
 *  3. MPI_Isendrecv_replace: 2 DBL with o (tag 4).
 *     MPI_Isendrecv with MPI_PROC_NULL on one side (tag 5): rank 0 sends 4 INT to 1 and
 *     receives from MPI_PROC_NULL; rank 1 sends to MPI_PROC_NULL and receives 4 INT
 *     from 0.  Both completed by one MPI_Waitall.
 *  4. MPI_Isendrecv: send 2 INT to o (tag 6), receive 2 INT from MPI_ANY_SOURCE with
 *     MPI_ANY_TAG (every earlier message has been received: only o's tag-6 one can
 *     match); one MPI_Waitsome on that one request.
 *  5. MPI_Sendrecv 3 INT with o (tag 7); MPI_Sendrecv_replace 5 CHAR with o (tag 8).
 * The program checks what it receives, sizes included: by the data for the nonblocking
 * forms (it does not read their statuses), by the status for the blocking ones.
 *
 * What that implies (tests/test_profile_families.py derives the same):
 *   rank 0: sends 1 + 1 + 2 + 1 + 1 + 2 = 8 messages of 20 + 7 + 48 + 16 + 16 + 8 + 12
 *           + 5 = 132 bytes; receives 1 + 1 + 2 + 0 + 1 + 2 = 7 of 20 + 9 + 48 + 16 + 8
 *           + 12 + 5 = 118 bytes;
 *   rank 1: the mirror image (sends 7 of 118 bytes, receives 8 of 132);
 *   all of them to and from the other rank; 1 receive from MPI_ANY_SOURCE and 1 with
 *   MPI_ANY_TAG per rank; requests: 6 started and completed per rank.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank;

#define CHECK(cond, what)                                                     \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "rank %d: %s failed\n", rank, what);              \
            MPI_Abort(MPI_COMM_WORLD, 1);                                     \
        }                                                                     \
    } while (0)

static int count_of(const MPI_Status *st, MPI_Datatype t)
{
    int n = -1;
    MPI_Get_count(st, t, &n);
    return n;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 2, "2 ranks");
    int o = 1 - rank;
    MPI_Status st, sts[2];
    MPI_Request r[2];

    /* 1 */
    int s5[5], r5[5];
    for (int i = 0; i < 5; i++) s5[i] = 10 * rank + i;
    MPI_Isendrecv(s5, 5, MPI_INT, o, 1, r5, 5, MPI_INT, o, 1, MPI_COMM_WORLD, &r[0]);
    MPI_Wait(&r[0], &st);
    CHECK(r5[0] == 10 * o && r5[4] == 10 * o + 4, "MPI_Isendrecv 1");

    /* 2 */
    char sc[16], rc[16];
    memset(sc, 'a' + rank, sizeof sc);
    memset(rc, '-', sizeof rc);
    double d6[6];
    for (int i = 0; i < 6; i++) d6[i] = 100 * rank + i;
    MPI_Isendrecv(sc, rank ? 9 : 7, MPI_CHAR, o, 2, rc, 16, MPI_CHAR, o, 2, MPI_COMM_WORLD, &r[0]);
    MPI_Isendrecv_replace(d6, 6, MPI_DOUBLE, o, 3, o, 3, MPI_COMM_WORLD, &r[1]);
    int seen[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        int idx;
        MPI_Waitany(2, r, &idx, &st);
        CHECK(idx == 0 || idx == 1, "MPI_Waitany index");
        seen[idx]++;
    }
    CHECK(seen[0] == 1 && seen[1] == 1, "MPI_Waitany completes each once");
    int n = rank ? 7 : 9; /* what o sent */
    CHECK(rc[0] == 'a' + o && rc[n - 1] == 'a' + o && rc[n] == '-', "MPI_Isendrecv 2");
    CHECK(d6[5] == 100 * o + 5, "MPI_Isendrecv_replace 3");

    /* 3 */
    double d2[2] = {rank, rank};
    int s4[4] = {1, 2, 3, 4}, r4[4] = {0, 0, 0, 0};
    MPI_Isendrecv_replace(d2, 2, MPI_DOUBLE, o, 4, o, 4, MPI_COMM_WORLD, &r[0]);
    MPI_Isendrecv(s4, 4, MPI_INT, rank ? MPI_PROC_NULL : 1, 5, r4, 4, MPI_INT,
                  rank ? 0 : MPI_PROC_NULL, 5, MPI_COMM_WORLD, &r[1]);
    MPI_Waitall(2, r, sts);
    CHECK(d2[0] == o, "MPI_Isendrecv_replace 4");
    CHECK(r4[0] == (rank ? 1 : 0) && r4[3] == (rank ? 4 : 0), "MPI_Isendrecv with MPI_PROC_NULL");

    /* 4 */
    int s2[2] = {rank, rank}, r2[2] = {-1, -1}, outcount = 0, idx[1];
    MPI_Isendrecv(s2, 2, MPI_INT, o, 6, r2, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &r[0]);
    MPI_Waitsome(1, r, &outcount, idx, sts);
    CHECK(outcount == 1 && idx[0] == 0 && r2[0] == o && r2[1] == o, "MPI_Isendrecv from MPI_ANY_SOURCE");

    /* 5 */
    int s3[3] = {rank, rank, rank}, r3[3];
    MPI_Sendrecv(s3, 3, MPI_INT, o, 7, r3, 3, MPI_INT, o, 7, MPI_COMM_WORLD, &st);
    CHECK(r3[2] == o && count_of(&st, MPI_INT) == 3 && st.MPI_SOURCE == o && st.MPI_TAG == 7,
          "MPI_Sendrecv");
    char c5[5];
    memset(c5, 'x' + rank, sizeof c5);
    MPI_Sendrecv_replace(c5, 5, MPI_CHAR, o, 8, o, 8, MPI_COMM_WORLD, &st);
    CHECK(c5[0] == 'x' + o && count_of(&st, MPI_CHAR) == 5 && st.MPI_SOURCE == o,
          "MPI_Sendrecv_replace");

    if (rank == 0) printf("family_isendrecv: done\n");
    MPI_Finalize();
    return 0;
}
