/* commscope ping-pong: OSU-style latency test that keeps every repetition.
 *
 * Ranks are split in two halves: rank i (i < P/2) plays ping-pong with rank
 * i + P/2, so P ranks give K = P/2 concurrent pairs (the ppn of the max-rate
 * model when the halves sit on two nodes, or K pairs sharing one node).  All
 * pairs run the same size at the same time, started together by a barrier.
 * Each repetition's one-way time (round trip / 2) is kept, labelled with the
 * pair's locality taken from where the ranks actually run.
 */
#include "cs_common.h"
#include "cs_pingpong_options.h" /* generated from src/commscope/benchspec/pingpong.py */

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Page-aligned buffer, as OSU allocates; with hugepages, ask for transparent huge
 * pages (numpy does so for arrays of 4 MiB and more, which is why mpi4py's bench
 * moves multi-MiB messages faster on machines whose THP mode is "madvise"). */
static char *alloc_buffer(size_t n, int hugepages)
{
    size_t align = hugepages ? (2u << 20) : 4096;
    size_t len = (n + align - 1) / align * align;
    void *p = NULL;
    if (posix_memalign(&p, align, len ? len : align) != 0)
        cs_die("cannot allocate %zu bytes", n);
#ifdef MADV_HUGEPAGE
    if (hugepages)
        madvise(p, len, MADV_HUGEPAGE);
#endif
    memset(p, 'a', len ? len : align);
    return p;
}

/* What the phases of a run share. */
typedef struct {
    int rank, pairs, peer, is_sender;
    const cs_place_t *places;
    char *sbuf, *rbuf;
    double *times; /* this rank's one-way times of the current size */
    double *all;   /* rank 0: every pair's, pair-major */
    FILE *samples; /* rank 0 with --out */
} bench_t;

static void print_header(const bench_t *b)
{
    const cs_place_t *pl = b->places;
    int half = b->pairs;
    printf("# commscope ping-pong (OSU style), %d pair(s), one-way latency\n", b->pairs);
    for (int p = 0; p < b->pairs; p++)
        printf("# pair %d: rank %d (%s cpu %d) <-> rank %d (%s cpu %d): %s\n", p, p, pl[p].node,
               pl[p].cpu, p + half, pl[p + half].node, pl[p + half].cpu,
               cs_locality(&pl[p], &pl[p + half]));
    printf("%-12s %14s %14s %14s %10s\n", "# Size", "Avg Lat(us)", "Min Lat(us)",
           "Max Lat(us)", "Iterations");
    fflush(stdout);
}

/* w warm-up and n timed round trips of s bytes; one-way time = round trip / 2. */
static void exchange(bench_t *b, long long s, int n, int w)
{
    MPI_Barrier(MPI_COMM_WORLD);
    for (int r = -w; r < n; r++) {
        double t0 = MPI_Wtime();
        if (b->is_sender) {
            MPI_Send(b->sbuf, (int)s, MPI_CHAR, b->peer, 1, MPI_COMM_WORLD);
            MPI_Recv(b->rbuf, (int)s, MPI_CHAR, b->peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(b->rbuf, (int)s, MPI_CHAR, b->peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(b->sbuf, (int)s, MPI_CHAR, b->peer, 1, MPI_COMM_WORLD);
        }
        if (r >= 0)
            b->times[r] = (MPI_Wtime() - t0) / 2.0;
    }
}

/* Senders hold the pair's samples; rank 0 gathers them (a sub-range of MPI_COMM_WORLD:
 * the first half of the ranks), echoes the OSU row and writes every sample. */
static void report_size(bench_t *b, long long s, int n)
{
    int half = b->pairs;
    if (b->rank != 0) {
        if (b->is_sender)
            MPI_Send(b->times, n, MPI_DOUBLE, 0, 2, MPI_COMM_WORLD);
        return;
    }
    memcpy(b->all, b->times, sizeof(double) * n);
    for (int p = 1; p < half; p++)
        MPI_Recv(b->all + (size_t)p * n, n, MPI_DOUBLE, p, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    double sum, lo, hi;
    cs_sum_min_max(b->all, (size_t)n * half, &sum, &lo, &hi);
    printf("%-12lld %14.2f %14.2f %14.2f %10d\n", s, 1e6 * sum / ((double)n * half), 1e6 * lo,
           1e6 * hi, n);
    fflush(stdout);
    if (b->samples)
        for (int p = 0; p < half; p++) {
            const char *loc = cs_locality(&b->places[p], &b->places[p + half]);
            for (int r = 0; r < n; r++)
                cs_row(b->samples, "%lld,%d,%d,%.9e,%s,%d\n", s, p, r, b->all[(size_t)p * n + r],
                       loc, b->pairs);
        }
}

int main(int argc, char **argv)
{
    int size, provided;
    cs_pingpong_options_t o;
    bench_t b;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    cs_check_world();
    MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int status = cs_pingpong_parse_options(argc, argv, &o, b.rank);
    if (status >= 0)
        return status;
    if (size < 2 || size % 2)
        cs_die("needs an even number of ranks, got %d", size);

    /* rank i plays with rank i + P/2 */
    b.pairs = size / 2;
    b.peer = b.rank < b.pairs ? b.rank + b.pairs : b.rank - b.pairs;
    b.is_sender = b.rank < b.pairs;
    cs_place_t *places = malloc(sizeof(cs_place_t) * size);
    cs_place_allgather(MPI_COMM_WORLD, places);
    b.places = places;

    b.sbuf = alloc_buffer(o.max_size, o.hugepages);
    b.rbuf = alloc_buffer(o.max_size, o.hugepages);
    long max_iters = o.iters > o.large_iters ? o.iters : o.large_iters;
    b.times = malloc(sizeof(double) * max_iters);
    b.all = b.rank == 0 ? malloc(sizeof(double) * max_iters * b.pairs) : NULL;
    b.samples = NULL;
    long nsizes = 0;
    for (long long s = o.min_size; s <= o.max_size; s = s ? s * 2 : 1)
        nsizes++;
    if (b.rank == 0) {
        if (o.out) {
            cs_write_placement(o.out, places, size);
            b.samples =
                cs_open_table(o.out, "samples.csv", "size_bytes,pair,rep,time_s,locality,pairs");
        }
        print_header(&b);
    }

    long done = 0;
    for (long long s = o.min_size; s <= o.max_size; s = s ? s * 2 : 1) {
        int large = s > CS_PINGPONG_LARGE_MESSAGE; /* OSU: fewer repetitions above 8 KiB */
        int n = (int)(large ? o.large_iters : o.iters);
        exchange(&b, s, n, (int)(large ? o.large_warmup : o.warmup));
        report_size(&b, s, n);
        if (b.rank == 0)
            cs_progress(++done, nsizes, "size");
    }
    if (b.samples)
        cs_close_table(b.samples);
    free(b.sbuf);
    free(b.rbuf);
    free(b.times);
    free(b.all);
    free(places);
    MPI_Finalize();
    return 0;
}
