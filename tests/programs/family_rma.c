/* One-sided communication, every synchronisation mode, on 2 ranks (MPI_Init).
 *
 *   family_rma
 *
 * Each rank r targets the other rank o = 1 - r (world ranks).  LL is MPI_LONG_LONG
 * (8 bytes), INT is MPI_INT (4 bytes); every window has disp_unit 8.
 *
 * 1. Fence epoch on W1 = MPI_Win_create (32 LL on each rank):
 *    MPI_Win_fence(MPI_MODE_NOPRECEDE), then to o:
 *      MPI_Put               5 INT  at disp 0        put 20
 *      MPI_Get               3 LL   from disp 4      got 24
 *      MPI_Accumulate        2 LL   SUM at disp 8    accumulated 16
 *      MPI_Get_accumulate    4 LL   SUM at disp 12, result 4 LL: accumulated 32, got 32
 *      MPI_Get_accumulate    2 LL   MPI_NO_OP at 16, result 2 LL: accumulated 0, got 16
 *      MPI_Fetch_and_op      LL     SUM at disp 20:  accumulated 8, got 8
 *      MPI_Fetch_and_op      LL     MPI_NO_OP at 21: accumulated 0, got 8
 *      MPI_Compare_and_swap  LL     at disp 22:      accumulated 8, got 8
 *    and to MPI_PROC_NULL (no effect, not counted): MPI_Put 7 LL, MPI_Get 9 LL;
 *    then MPI_Win_fence(MPI_MODE_NOSUCCEED).
 * 2. PSCW epoch on W1 (each rank exposes its window to o and accesses o's):
 *    MPI_Win_post(group {o}), MPI_Win_start(group {o}), MPI_Put 2 LL at disp 24 (put 16),
 *    MPI_Get 1 LL from disp 26 (got 8), MPI_Win_complete, MPI_Win_wait.
 * 3. Passive target on W2 = MPI_Win_allocate (32 LL), after one MPI_Barrier (the
 *    windows are initialised):
 *    MPI_Win_lock(MPI_LOCK_SHARED, o), MPI_Rput 6 LL at 0 (put 48), MPI_Rget 2 LL from
 *    8 (got 16), MPI_Raccumulate 3 LL SUM at 12 (accumulated 24), MPI_Rget_accumulate
 *    2 LL SUM at 16, result 2 LL (accumulated 16, got 16), MPI_Waitall on the 4
 *    requests, MPI_Win_unlock(o).
 *    MPI_Win_lock_all, MPI_Put 1 LL at 20 (put 8), MPI_Win_flush(o), MPI_Win_flush_all,
 *    MPI_Win_unlock_all.
 * 4. W3 = MPI_Win_allocate_shared (4 LL) on MPI_COMM_SELF: MPI_Win_lock(EXCLUSIVE, 0),
 *    MPI_Accumulate 1 LL SUM to rank 0 of W3, which is this rank itself (accumulated 8
 *    to its own world rank), MPI_Win_unlock(0).
 * 5. W4 = MPI_Win_create_dynamic: MPI_Win_attach and MPI_Win_detach of 64 bytes.
 * 6. MPI_Win_free of W1..W4 (4 calls), MPI_Finalize.
 * The program checks the data it got and what was written into its own W1.
 *
 * What that implies on each rank (tests/test_profile_families.py derives the same):
 *   rma_bytes_put         20 + 16 + 48 + 8 = 92, all to o
 *   rma_bytes_got         24 + 32 + 16 + 8 + 8 + 8 + 8 + 16 + 16 = 136, all from o
 *   rma_bytes_accumulated 16 + 32 + 8 + 8 + 24 + 16 = 104 to o, + 8 to itself = 112
 *   requests: 4 started, 4 completed, none outstanding; no messages, no collective bytes.
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

#define LL MPI_LONG_LONG

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 2, "2 ranks");
    int o = 1 - rank;

    /* 1. fence epoch */
    long long w1[32];
    for (int i = 0; i < 32; i++) w1[i] = 1000 * rank + i;
    MPI_Win W1;
    MPI_Win_create(w1, sizeof w1, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &W1);
    int ints5[5] = {1, 2, 3, 4, 5};
    long long get3[3], acc2[2] = {7, 7}, ga4[4] = {1, 1, 1, 1}, res4[4], ga2[2] = {9, 9}, res2[2];
    long long one = 1, fres = 0, fres2 = 0, newv = -5, cmp = 1000 * o + 22, cres = 0, junk[9] = {0};
    MPI_Win_fence(MPI_MODE_NOPRECEDE, W1);
    MPI_Put(ints5, 5, MPI_INT, o, 0, 5, MPI_INT, W1);
    MPI_Get(get3, 3, LL, o, 4, 3, LL, W1);
    MPI_Accumulate(acc2, 2, LL, o, 8, 2, LL, MPI_SUM, W1);
    MPI_Get_accumulate(ga4, 4, LL, res4, 4, LL, o, 12, 4, LL, MPI_SUM, W1);
    MPI_Get_accumulate(ga2, 2, LL, res2, 2, LL, o, 16, 2, LL, MPI_NO_OP, W1);
    MPI_Fetch_and_op(&one, &fres, LL, o, 20, MPI_SUM, W1);
    MPI_Fetch_and_op(&one, &fres2, LL, o, 21, MPI_NO_OP, W1);
    MPI_Compare_and_swap(&newv, &cmp, &cres, LL, o, 22, W1);
    MPI_Put(junk, 7, LL, MPI_PROC_NULL, 0, 7, LL, W1);
    MPI_Get(junk, 9, LL, MPI_PROC_NULL, 0, 9, LL, W1);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, W1);
    for (int j = 0; j < 3; j++) CHECK(get3[j] == 1000 * o + 4 + j, "MPI_Get");
    for (int j = 0; j < 4; j++) CHECK(res4[j] == 1000 * o + 12 + j, "MPI_Get_accumulate");
    for (int j = 0; j < 2; j++) CHECK(res2[j] == 1000 * o + 16 + j, "MPI_Get_accumulate NO_OP");
    CHECK(fres == 1000 * o + 20 && fres2 == 1000 * o + 21, "MPI_Fetch_and_op");
    CHECK(cres == 1000 * o + 22, "MPI_Compare_and_swap");
    const int *mine = (const int *)w1;
    for (int j = 0; j < 5; j++) CHECK(mine[j] == j + 1, "MPI_Put into my window");
    CHECK(w1[8] == 1000 * rank + 8 + 7 && w1[12] == 1000 * rank + 12 + 1, "accumulates into my window");
    CHECK(w1[16] == 1000 * rank + 16 && w1[20] == 1000 * rank + 21 && w1[21] == 1000 * rank + 21,
          "NO_OP leaves my window alone");
    CHECK(w1[22] == -5, "MPI_Compare_and_swap into my window");

    /* 2. PSCW epoch */
    MPI_Group wg, og;
    MPI_Win_get_group(W1, &wg);
    MPI_Group_incl(wg, 1, &o, &og);
    long long two[2] = {42, 43}, g1 = 0;
    MPI_Win_post(og, 0, W1);
    MPI_Win_start(og, 0, W1);
    MPI_Put(two, 2, LL, o, 24, 2, LL, W1);
    MPI_Get(&g1, 1, LL, o, 26, 1, LL, W1);
    MPI_Win_complete(W1);
    MPI_Win_wait(W1);
    CHECK(g1 == 1000 * o + 26, "MPI_Get in PSCW");
    CHECK(w1[24] == 42 && w1[25] == 43, "MPI_Put in PSCW into my window");
    MPI_Group_free(&og);
    MPI_Group_free(&wg);

    /* 3. passive target */
    long long *w2;
    MPI_Win W2;
    MPI_Win_allocate(32 * sizeof(long long), 8, MPI_INFO_NULL, MPI_COMM_WORLD, &w2, &W2);
    for (int i = 0; i < 32; i++) w2[i] = 2000 * rank + i;
    MPI_Barrier(MPI_COMM_WORLD);
    long long six[6] = {1, 2, 3, 4, 5, 6}, r2[2], r3[3] = {1, 1, 1}, ra2[2] = {3, 3}, rres[2], v = 77;
    MPI_Request reqs[4];
    MPI_Win_lock(MPI_LOCK_SHARED, o, 0, W2);
    MPI_Rput(six, 6, LL, o, 0, 6, LL, W2, &reqs[0]);
    MPI_Rget(r2, 2, LL, o, 8, 2, LL, W2, &reqs[1]);
    MPI_Raccumulate(r3, 3, LL, o, 12, 3, LL, MPI_SUM, W2, &reqs[2]);
    MPI_Rget_accumulate(ra2, 2, LL, rres, 2, LL, o, 16, 2, LL, MPI_SUM, W2, &reqs[3]);
    MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE);
    MPI_Win_unlock(o, W2);
    CHECK(r2[0] == 2000 * o + 8 && r2[1] == 2000 * o + 9, "MPI_Rget");
    CHECK(rres[0] == 2000 * o + 16 && rres[1] == 2000 * o + 17, "MPI_Rget_accumulate");
    MPI_Win_lock_all(0, W2);
    MPI_Put(&v, 1, LL, o, 20, 1, LL, W2);
    MPI_Win_flush(o, W2);
    MPI_Win_flush_all(W2);
    MPI_Win_unlock_all(W2);

    /* 4. a shared-memory window of this rank alone */
    long long *w3;
    MPI_Win W3;
    MPI_Win_allocate_shared(4 * sizeof(long long), 8, MPI_INFO_NULL, MPI_COMM_SELF, &w3, &W3);
    w3[0] = 5;
    long long three = 3;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, W3);
    MPI_Accumulate(&three, 1, LL, 0, 0, 1, LL, MPI_SUM, W3);
    MPI_Win_unlock(0, W3);
    CHECK(w3[0] == 8, "MPI_Accumulate into my shared window");

    /* 5. a dynamic window */
    char dyn[64];
    MPI_Win W4;
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &W4);
    MPI_Win_attach(W4, dyn, sizeof dyn);
    MPI_Win_detach(W4, dyn);

    /* 6. */
    MPI_Win_free(&W1);
    MPI_Win_free(&W2);
    MPI_Win_free(&W3);
    MPI_Win_free(&W4);
    if (rank == 0) printf("family_rma: done\n");
    MPI_Finalize();
    return 0;
}
