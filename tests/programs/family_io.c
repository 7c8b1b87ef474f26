/* MPI-IO, every access family, on 2 ranks (MPI_Init).
 *
 *   family_io DIR
 *
 * Files: DIR/family_io.dat (both ranks, "the shared file") and DIR/family_io.self.R.dat
 * (rank R alone).  INT is MPI_INT (4 bytes), CHAR MPI_CHAR, BYTE MPI_BYTE.  Rank r:
 *
 *  1. MPI_File_open(MPI_COMM_WORLD, the shared file, CREATE | RDWR)
 *  2. MPI_File_write_at      16 INT at byte r*64                 write 64
 *  3. MPI_File_read_at       16 INT at byte r*64                 read 64
 *  4. MPI_File_write_at_all   8 INT at byte 128 + r*32           write 32
 *  5. MPI_File_read_at_all    8 INT at byte 128 + r*32           read 32
 *  6. MPI_File_set_view(disp 256 + r*40, INT, INT); MPI_File_write 10 INT (write 40);
 *     MPI_File_seek(0, SET); MPI_File_read 10 INT (read 40)
 *  7. MPI_File_set_view(disp 0, BYTE, BYTE)
 *     split collectives: MPI_File_write_at_all_begin 4 INT at 512 + r*16 (write 16) +
 *     MPI_File_write_at_all_end; MPI_File_read_at_all_begin (same) +
 *     MPI_File_read_at_all_end (read 16);
 *     MPI_File_seek(600 + r*8, SET), MPI_File_write_all_begin 2 INT (write 8) +
 *     MPI_File_write_all_end; MPI_File_seek(600 + r*8, SET), MPI_File_read_all_begin
 *     2 INT + MPI_File_read_all_end (read 8)
 *  8. MPI_File_iwrite_at 6 INT at 700 + r*24 (write 24) + MPI_Wait;
 *     MPI_File_iread_at (same) + MPI_Wait (read 24).
 *     The shared file is now 748 bytes long (rank 1's bytes 724..747).
 *  9. MPI_File_set_view(disp 400, BYTE, BYTE) (the same view on both ranks: shared pointer)
 *     MPI_File_write_shared 12 CHAR (write 12); MPI_File_sync, MPI_Barrier, MPI_File_sync;
 *     MPI_File_seek_shared(0, SET); MPI_File_read_shared 12 CHAR (read 12);
 *     MPI_File_seek_shared(24, SET); MPI_File_write_ordered 8*(r+1) CHAR (write 8(r+1));
 *     MPI_File_seek_shared(24, SET); MPI_File_read_ordered 8*(r+1) CHAR (read 8(r+1)).
 *     Each of these reads asks for bytes well inside the 748 (the shared pointer could
 *     not pass 96 even if every seek were lost), so it gets them all in whatever order
 *     the ranks take turns.  (MPICH's ROMIO sometimes loses an MPI_File_seek_shared here,
 *     unprofiled too: the byte counts do not depend on it, and no content is checked.)
 * 10. MPI_File_close.
 * 11. MPI_File_open(MPI_COMM_SELF, its own file, CREATE | RDWR): MPI_File_write_at
 *     100 BYTE at 0 (write 100), MPI_File_read_at 50 BYTE at 10 (read 50), MPI_File_close.
 * 12. MPI_File_open(MPI_COMM_WORLD, the shared file, RDONLY) again: MPI_File_read_at
 *     16 INT at r*64 (read 64), MPI_File_read_at 64 BYTE at 740 (read 8: the end of the
 *     file), MPI_File_get_size (748 bytes; counted: IOR calls it), MPI_File_close.
 * 13. MPI_File_delete of its own file; MPI_Finalize.
 * The program checks every read returns the bytes it expects.
 *
 * What that implies on rank r (tests/test_profile_families.py derives the same):
 *   the shared file (first opened: file 0): 8 writes of 64 + 32 + 40 + 12 + 8(r+1) + 16
 *     + 8 + 24 bytes, 10 reads of 64 + 32 + 40 + 12 + 8(r+1) + 16 + 8 + 24 + 64 + 8 bytes;
 *   its own file (file 1): 1 write of 100 bytes, 1 read of 50 bytes;
 *   io_bytes_written and io_bytes_read: the sums over both files;
 *   requests: 2 started, 2 completed; no messages.
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

static void got(MPI_Status *st, int bytes, const char *what)
{
    int n = -1;
    MPI_Get_count(st, MPI_BYTE, &n);
    if (n != bytes) {
        fprintf(stderr, "rank %d: %s: %d bytes, not %d\n", rank, what, n, bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    CHECK(argc == 2, "usage: family_io DIR");
    char shared[4096], own[4096];
    snprintf(shared, sizeof shared, "%s/family_io.dat", argv[1]);
    snprintf(own, sizeof own, "%s/family_io.self.%d.dat", argv[1], rank);
    int a[16], b[16];
    for (int i = 0; i < 16; i++) a[i] = 100 * rank + i;
    char c[16], d[16];
    memset(c, 'a' + rank, sizeof c);
    memset(d, 'A' + rank, sizeof d);
    MPI_File fh;
    MPI_Status st;
    MPI_Request req;

    MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_ARE_FATAL); /* not counted: not wrapped */

    /* 1-5 */
    MPI_File_open(MPI_COMM_WORLD, shared, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_File_write_at(fh, rank * 64, a, 16, MPI_INT, &st);
    MPI_File_read_at(fh, rank * 64, b, 16, MPI_INT, &st);
    got(&st, 64, "MPI_File_read_at");
    CHECK(!memcmp(a, b, 64), "MPI_File_read_at data");
    MPI_File_write_at_all(fh, 128 + rank * 32, a, 8, MPI_INT, MPI_STATUS_IGNORE);
    MPI_File_read_at_all(fh, 128 + rank * 32, b, 8, MPI_INT, &st);
    got(&st, 32, "MPI_File_read_at_all");

    /* 6 */
    MPI_File_set_view(fh, 256 + rank * 40, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
    MPI_File_write(fh, a, 10, MPI_INT, MPI_STATUS_IGNORE);
    MPI_File_seek(fh, 0, MPI_SEEK_SET);
    MPI_File_read(fh, b, 10, MPI_INT, &st);
    got(&st, 40, "MPI_File_read");

    /* 7 */
    MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    MPI_File_write_at_all_begin(fh, 512 + rank * 16, a, 4, MPI_INT);
    MPI_File_write_at_all_end(fh, a, &st);
    MPI_File_read_at_all_begin(fh, 512 + rank * 16, b, 4, MPI_INT);
    MPI_File_read_at_all_end(fh, b, &st);
    got(&st, 16, "MPI_File_read_at_all_end");
    MPI_File_seek(fh, 600 + rank * 8, MPI_SEEK_SET);
    MPI_File_write_all_begin(fh, a, 2, MPI_INT);
    MPI_File_write_all_end(fh, a, MPI_STATUS_IGNORE);
    MPI_File_seek(fh, 600 + rank * 8, MPI_SEEK_SET);
    MPI_File_read_all_begin(fh, b, 2, MPI_INT);
    MPI_File_read_all_end(fh, b, &st);
    got(&st, 8, "MPI_File_read_all_end");

    /* 8 */
    MPI_File_iwrite_at(fh, 700 + rank * 24, a, 6, MPI_INT, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_File_iread_at(fh, 700 + rank * 24, b, 6, MPI_INT, &req);
    MPI_Wait(&req, &st);
    got(&st, 24, "MPI_File_iread_at");
    CHECK(!memcmp(a, b, 24), "MPI_File_iread_at data");

    /* 9 */
    MPI_File_set_view(fh, 400, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    MPI_File_write_shared(fh, c, 12, MPI_CHAR, &st);
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_sync(fh);
    MPI_File_seek_shared(fh, 0, MPI_SEEK_SET);
    char c2[16];
    MPI_File_read_shared(fh, c2, 12, MPI_CHAR, &st);
    got(&st, 12, "MPI_File_read_shared");
    MPI_File_seek_shared(fh, 24, MPI_SEEK_SET);
    MPI_File_write_ordered(fh, d, 8 * (rank + 1), MPI_CHAR, &st);
    MPI_File_seek_shared(fh, 24, MPI_SEEK_SET);
    char d2[16];
    MPI_File_read_ordered(fh, d2, 8 * (rank + 1), MPI_CHAR, &st);
    got(&st, 8 * (rank + 1), "MPI_File_read_ordered");

    /* 10 */
    MPI_File_close(&fh);

    /* 11 */
    char buf[100];
    memset(buf, 'x', sizeof buf);
    MPI_File_open(MPI_COMM_SELF, own, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_File_write_at(fh, 0, buf, 100, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_File_read_at(fh, 10, buf, 50, MPI_BYTE, &st);
    got(&st, 50, "MPI_File_read_at of its own file");
    MPI_File_close(&fh);

    /* 12 */
    MPI_File_open(MPI_COMM_WORLD, shared, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    MPI_File_read_at(fh, rank * 64, b, 16, MPI_INT, &st);
    got(&st, 64, "MPI_File_read_at after reopening");
    CHECK(!memcmp(a, b, 64), "MPI_File_read_at data after reopening");
    char tail[64];
    MPI_File_read_at(fh, 740, tail, 64, MPI_BYTE, &st);
    got(&st, 8, "MPI_File_read_at at the end of the file");
    MPI_Offset size = -1;
    MPI_File_get_size(fh, &size);
    CHECK(size == 748, "MPI_File_get_size");
    MPI_File_close(&fh);

    /* 13 */
    MPI_File_delete(own, MPI_INFO_NULL);
    if (rank == 0) printf("family_io: done\n");
    MPI_Finalize();
    return 0;
}
