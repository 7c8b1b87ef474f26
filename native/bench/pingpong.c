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

int main(int argc, char **argv)
{
    int rank, size, provided;
    cs_pingpong_options_t o;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    cs_check_world();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int status = cs_pingpong_parse_options(argc, argv, &o, rank);
    if (status >= 0)
        return status;
    long long min_size = o.min_size, max_size = o.max_size;
    int iters = (int)o.iters, warmup = (int)o.warmup;
    int large_iters = (int)o.large_iters, large_warmup = (int)o.large_warmup;
    const char *out = o.out;
    int hugepages = o.hugepages;
    if (size < 2 || size % 2)
        cs_die("needs an even number of ranks, got %d", size);

    int pairs = size / 2, half = pairs;
    int peer = rank < half ? rank + half : rank - half;
    int is_sender = rank < half;
    cs_place_t *places = malloc(sizeof(cs_place_t) * size);
    cs_place_allgather(MPI_COMM_WORLD, places);

    char *sbuf = alloc_buffer(max_size, hugepages);
    char *rbuf = alloc_buffer(max_size, hugepages);
    int max_iters = iters > large_iters ? iters : large_iters;
    double *times = malloc(sizeof(double) * max_iters);
    double *all = rank == 0 ? malloc(sizeof(double) * max_iters * half) : NULL;

    FILE *samples = NULL;
    long nsizes = 0;
    for (long long s = min_size; s <= max_size; s = s ? s * 2 : 1)
        nsizes++;
    if (rank == 0) {
        if (out) {
            cs_write_placement(out, places, size);
            samples = cs_open_table(out, "samples.csv", "size_bytes,pair,rep,time_s,locality,pairs");
        }
        printf("# commscope ping-pong (OSU style), %d pair(s), one-way latency\n", pairs);
        for (int p = 0; p < pairs; p++)
            printf("# pair %d: rank %d (%s cpu %d) <-> rank %d (%s cpu %d): %s\n", p, p,
                   places[p].node, places[p].cpu, p + half, places[p + half].node,
                   places[p + half].cpu, cs_locality(&places[p], &places[p + half]));
        printf("%-12s %14s %14s %14s %10s\n", "# Size", "Avg Lat(us)", "Min Lat(us)",
               "Max Lat(us)", "Iterations");
        fflush(stdout);
    }

    long done = 0;
    for (long long s = min_size; s <= max_size; s = s ? s * 2 : 1) {
        int n = s > CS_PINGPONG_LARGE_MESSAGE ? large_iters : iters;
        int w = s > CS_PINGPONG_LARGE_MESSAGE ? large_warmup : warmup;
        MPI_Barrier(MPI_COMM_WORLD);
        for (int r = -w; r < n; r++) {
            double t0 = MPI_Wtime();
            if (is_sender) {
                MPI_Send(sbuf, (int)s, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
                MPI_Recv(rbuf, (int)s, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(rbuf, (int)s, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(sbuf, (int)s, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
            }
            if (r >= 0)
                times[r] = (MPI_Wtime() - t0) / 2.0;
        }
        /* Senders hold the pair's samples; gather them on rank 0 (a sub-range
         * of MPI_COMM_WORLD: the first half of the ranks). */
        if (rank == 0) {
            memcpy(all, times, sizeof(double) * n);
            for (int p = 1; p < half; p++)
                MPI_Recv(all + (size_t)p * n, n, MPI_DOUBLE, p, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            double sum, lo, hi;
            cs_sum_min_max(all, (size_t)n * half, &sum, &lo, &hi);
            printf("%-12lld %14.2f %14.2f %14.2f %10d\n", s, 1e6 * sum / ((double)n * half),
                   1e6 * lo, 1e6 * hi, n);
            fflush(stdout);
            if (samples)
                for (int p = 0; p < half; p++) {
                    const char *loc = cs_locality(&places[p], &places[p + half]);
                    for (int r = 0; r < n; r++)
                        cs_row(samples, "%lld,%d,%d,%.9e,%s,%d\n", s, p, r,
                               all[(size_t)p * n + r], loc, pairs);
                }
            cs_progress(++done, nsizes, "size");
        } else if (is_sender) {
            MPI_Send(times, n, MPI_DOUBLE, 0, 2, MPI_COMM_WORLD);
        }
    }
    if (samples)
        cs_close_table(samples);
    free(sbuf);
    free(rbuf);
    free(times);
    free(all);
    free(places);
    MPI_Finalize();
    return 0;
}
