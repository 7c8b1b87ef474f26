/* commscope partitioned: early-bird (partitioned) sends against a single send
 * (Dominguez-Trujillo 2021, Chapter 4, Algorithm 2 and eq. 4.3).
 *
 * Two ranks.  Rank 0 (sender) runs T OpenMP threads; each thread owns 1/T of
 * the buffer, "computes" for a time drawn from a distribution, then marks its
 * partition ready.  Rank 1 receives.  Three ways of sending, in the same run,
 * with the same thread-time draws (common random numbers) for a given size
 * and run index:
 *   partitioned  MPI-4 MPI_Psend_init/MPI_Precv_init, MPI_Pready from each
 *                thread as it finishes, MPI_Wait on both sides (skipped, and
 *                said so, when mpi.h lacks MPI_Psend_init or the library
 *                refuses the calls at run time);
 *   isend        one MPI_Isend per partition from the thread that finished it
 *                (needs MPI_THREAD_MULTIPLE: every thread calls MPI itself, no
 *                funnelling), receiver pre-posts one MPI_Irecv per partition;
 *   single       the baseline: threads join, then one MPI_Isend of the buffer.
 *
 * Measured per run: t_last, the clock time at which the slowest thread became
 * ready (an OpenMP max over the threads' ready stamps), and the time at which
 * the RECEIVER's wait returned (all data arrived).  elapsed = t_recv_done -
 * t_last, effective bandwidth = size / elapsed (eq. 4.3).  Clock relation:
 * both ranks read CLOCK_MONOTONIC; on one host it is the same clock for every
 * process, so no correction is needed ("shared-monotonic").  Across hosts the
 * receiver's clock is mapped onto the sender's with the offset of the
 * minimum-round-trip ping among 32 pings at start-up ("pingpong-offset", whose
 * uncertainty, half that round trip, is recorded).  The thesis's own measure,
 * at the sender (t_f after MPI_Wait - t_last), is kept as sender_elapsed_s:
 * with eager messages the sender's wait may return before the data arrived.
 *
 * Compute: by default a sleep to an absolute deadline (clock_nanosleep, timer
 * slack 1 ns) as in the thesis; --compute-mode spin polls the clock (steals
 * the CPU MPI progress needs when threads outnumber cores), hybrid sleeps to
 * 200 us before the deadline and spins the rest.  Requested and actual compute
 * times of every thread are recorded in compute.csv.
 *
 * Every byte carries a pattern that depends on its position in the buffer and
 * on the run, so misplaced, stale or missing partitions show up; the receiver
 * counts mismatched bytes, the sender records them and aborts when any.
 *
 * Per partition (compute.csv): call_s, how long the thread's MPI_Pready (or
 * MPI_Isend) call took, and arrived_s, when the receiver saw that partition
 * complete (it polls MPI_Parrived or MPI_Testsome where it would spin in
 * MPI_Wait; the single send's partitions all arrive with the whole buffer),
 * on the sender's clock relative to the threads' common start: a partition
 * that arrived before the slowest thread was ready was an early bird.
 *
 * Tables: samples.csv (one row per method, size and run), compute.csv (one row
 * per thread of each recorded run), methods.csv (which methods ran or why
 * not), placement.csv.
 */
#define _GNU_SOURCE
#include "cs_common.h"
#include "cs_partitioned_options.h" /* generated from src/commscope/benchspec/partitioned.py */

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

enum { M_PART,
       M_ISEND,
       M_SINGLE,
       M_COUNT };
#define METHOD_NAME cs_partitioned_methods_names /* the descriptor's names, in this order */
enum { D_NORMAL,
       D_UNIFORM,
       D_EXPONENTIAL,
       D_CONSTANT,
       D_STAGGER,
       D_COUNT };
#define DIST_NAME cs_partitioned_dist_names
enum { C_SLEEP,
       C_SPIN,
       C_HYBRID };
#define MODE_NAME cs_partitioned_compute_mode_names

#define TAG_RESULT 1000000 /* above any partition tag */
#define TAG_SYNC 1000001
#define HYBRID_SPIN_S 200e-6

#define CHECK(call) \
    do { \
        int rc_ = (call); \
        if (rc_ != MPI_SUCCESS) { \
            char msg_[MPI_MAX_ERROR_STRING]; \
            int len_ = 0; \
            MPI_Error_string(rc_, msg_, &len_); \
            cs_die("%s failed: %s", #call, msg_); \
        } \
    } while (0)

/* ---- random draws (splitmix64: tiny, seedable, good enough for this) ---- */

/* A well-mixed state from (seed, size index, run): chained splitmix outputs, so
 * that nearby inputs give unrelated streams. */
static uint64_t stream_state(uint64_t seed, uint64_t size_index, uint64_t run)
{
    uint64_t s = seed;
    s = cs_splitmix64(&s) ^ size_index;
    s = cs_splitmix64(&s) ^ run;
    return cs_splitmix64(&s);
}

/* Mean mu, standard deviation sigma for every distribution; the shapes match
 * commscope.models.partitioned.thread_time_distribution.  Negative draws
 * (possible for normal/exponential with large sigma) are clipped to 0. */
static double draw(int dist, double mu, double sigma, uint64_t *s)
{
    double x = mu;
    switch (dist) {
    case D_NORMAL: {
        /* Box-Muller as in cs_normal, but not through it: sigma multiplies before
         * the cosine here, which rounds differently and would change the draws. */
        double u1 = cs_uniform01(s), u2 = cs_uniform01(s);
        x = mu + sigma * sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
        break;
    }
    case D_UNIFORM: x = mu + sigma * sqrt(12.0) * (cs_uniform01(s) - 0.5); break;
    case D_EXPONENTIAL: x = mu - sigma - sigma * log(cs_uniform01(s)); break;
    default: break;
    }
    return x < 0 ? 0 : x;
}

/* ---- data pattern: byte i of the buffer in run `salt` ---- */
static inline uint64_t pattern_word(uint64_t k, uint64_t salt)
{
    uint64_t z = (k + 1) * 0x9E3779B97F4A7C15ull ^ salt;
    return z ^ (z >> 29);
}

static inline unsigned char pattern_byte(size_t i, uint64_t salt)
{
    uint64_t w = pattern_word(i / 8, salt);
    return ((unsigned char *)&w)[i % 8];
}

static void fill(unsigned char *buf, size_t lo, size_t hi, uint64_t salt)
{
    size_t i = lo;
    for (; i < hi && i % 8; i++)
        buf[i] = pattern_byte(i, salt);
    for (; i + 8 <= hi; i += 8) {
        uint64_t w = pattern_word(i / 8, salt);
        memcpy(buf + i, &w, 8);
    }
    for (; i < hi; i++)
        buf[i] = pattern_byte(i, salt);
}

static long long count_mismatches(const unsigned char *buf, size_t n, uint64_t salt)
{
    long long bad = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w = pattern_word(i / 8, salt), got;
        memcpy(&got, buf + i, 8);
        if (got != w)
            for (int b = 0; b < 8; b++)
                bad += buf[i + b] != ((unsigned char *)&w)[b];
    }
    for (; i < n; i++)
        bad += buf[i] != pattern_byte(i, salt);
    return bad;
}

/* ---- compute ---- */
static void wait_until(double deadline, int mode)
{
    if (mode != C_SPIN) {
        double target = mode == C_HYBRID ? deadline - HYBRID_SPIN_S : deadline;
        struct timespec ts;
        ts.tv_sec = (time_t)target;
        ts.tv_nsec = (long)((target - (double)ts.tv_sec) * 1e9);
        if (ts.tv_nsec >= 1000000000L)
            ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        if (target > 0)
            while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                ;
        if (mode == C_SLEEP)
            return;
    }
    while (cs_clock() < deadline)
        ;
}

/* Result the receiver sends back after each run. */
typedef struct {
    double t_done;
    double mismatches;
    double bytes;
} result_t;

int main(int argc, char **argv)
{
    cs_partitioned_options_t o;
    int rank, nranks, provided;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    cs_check_world();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    int status = cs_partitioned_parse_options(argc, argv, &o, rank);
    if (status >= 0)
        return status;
    int threads = (int)o.threads, runs = (int)o.runs_per_size, warmup = (int)o.warmup;
    int dist = o.dist, mode = o.compute_mode;
    double compute = o.compute_s, variability = o.variability, sigma = o.sigma_s;
    long long *sizes = o.sizes;
    int nsizes = o.sizes_count, first_size = (int)o.from_size; /* a resumed sweep skips measured sizes */
    unsigned long long seed = (unsigned long long)o.seed;
    int want[M_COUNT] = {0};
    for (int i = 0; i < o.methods_count; i++)
        want[o.methods[i]] = 1;
    const char *out = o.out;
    if (nranks != 2)
        cs_die("needs exactly 2 ranks (sender and receiver), got %d", nranks);
    if (compute <= 0)
        cs_die("--compute: must be > 0 seconds");
    if (isnan(sigma))                                /* --sigma not given */
        sigma = compute * variability * variability; /* Algorithm 1/2 convention */
    long long max_size = 0;
    for (int i = 0; i < nsizes; i++) {
        long long s = sizes[i] - sizes[i] % threads; /* equal partitions */
        if (s < threads)
            cs_die("--sizes: %lld bytes is smaller than %d partitions", sizes[i], threads);
        if (s > INT_MAX)
            cs_die("--sizes: %lld bytes is above the 2 GiB a single MPI_Isend count allows", sizes[i]);
        if (s != sizes[i] && rank == 0)
            printf("# size %lld rounded down to %lld (a multiple of %d partitions)\n", sizes[i], s, threads);
        sizes[i] = s;
        max_size = s > max_size ? s : max_size;
    }
    omp_set_dynamic(0);

    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);

    cs_place_t places[2];
    cs_place_allgather(comm, places);
    int same_host = strcmp(places[0].host, places[1].host) == 0;

    /* Which methods can run, and why not. */
    const char *note[M_COUNT] = {"", "", ""};
    int run_m[M_COUNT];
    for (int m = 0; m < M_COUNT; m++)
        run_m[m] = want[m];
    if (!want[M_PART])
        note[M_PART] = "not requested";
    if (!want[M_ISEND])
        note[M_ISEND] = "not requested";
    if (!want[M_SINGLE])
        note[M_SINGLE] = "not requested";
#ifndef COMMSCOPE_HAVE_PARTITIONED
    if (want[M_PART]) {
        run_m[M_PART] = 0;
        note[M_PART] = "MPI-4 partitioned calls unavailable: mpi.h lacks MPI_Psend_init "
                       "(built without COMMSCOPE_HAVE_PARTITIONED)";
    }
#else
    if (want[M_PART]) { /* the header has them; does the library accept them? */
        /* A one-byte transfer; a partitioned request freed without ever being
         * started upsets Open MPI's part/persist component, so go all the way. */
        MPI_Request probe = MPI_REQUEST_NULL;
        char dummy[1] = {0};
        int ok = rank == 0 ? MPI_Psend_init(dummy, 1, 1, MPI_BYTE, 1, TAG_SYNC, comm, MPI_INFO_NULL, &probe)
                           : MPI_Precv_init(dummy, 1, 1, MPI_BYTE, 0, TAG_SYNC, comm, MPI_INFO_NULL, &probe);
        int good = ok == MPI_SUCCESS, all_good;
        MPI_Allreduce(&good, &all_good, 1, MPI_INT, MPI_MIN, comm);
        if (all_good) {
            good = MPI_Start(&probe) == MPI_SUCCESS;
            if (good && rank == 0)
                good = MPI_Pready(0, probe) == MPI_SUCCESS;
            if (good)
                good = MPI_Wait(&probe, MPI_STATUS_IGNORE) == MPI_SUCCESS;
            MPI_Allreduce(&good, &all_good, 1, MPI_INT, MPI_MIN, comm);
        }
        if (probe != MPI_REQUEST_NULL)
            MPI_Request_free(&probe);
        if (!all_good) {
            run_m[M_PART] = 0;
            note[M_PART] = "MPI-4 partitioned calls refused at run time (MPI_Psend_init/MPI_Precv_init failed)";
        }
    }
#endif
    if (provided < MPI_THREAD_MULTIPLE)
        for (int m = M_PART; m <= M_ISEND; m++)
            if (run_m[m]) {
                run_m[m] = 0;
                note[m] = "needs MPI_THREAD_MULTIPLE (threads call MPI themselves); the library provided less";
            }

    /* Clock relation between the ranks (see header). */
    double offset = 0, uncertainty = 0, best_rtt = INFINITY;
    for (int i = 0; i < 32; i++) {
        if (rank == 0) {
            double ta = cs_clock(), tb;
            CHECK(MPI_Send(NULL, 0, MPI_BYTE, 1, TAG_SYNC, comm));
            CHECK(MPI_Recv(&tb, 1, MPI_DOUBLE, 1, TAG_SYNC, comm, MPI_STATUS_IGNORE));
            double tc = cs_clock();
            if (tc - ta < best_rtt)
                best_rtt = tc - ta, offset = tb - 0.5 * (ta + tc);
        } else {
            CHECK(MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_SYNC, comm, MPI_STATUS_IGNORE));
            double tb = cs_clock();
            CHECK(MPI_Send(&tb, 1, MPI_DOUBLE, 0, TAG_SYNC, comm));
        }
    }
    const char *clock_kind = same_host ? "shared-monotonic" : "pingpong-offset";
    double measured_offset = offset;
    if (same_host)
        offset = 0; /* one CLOCK_MONOTONIC for every process of the host */
    else
        uncertainty = best_rtt / 2;

    unsigned char *buf = malloc(max_size);
    if (!buf)
        cs_die("cannot allocate %lld bytes", max_size);
    memset(buf, 0, max_size); /* touch the pages before timing */
    double *req_s = malloc(sizeof(double) * threads), *ready = malloc(sizeof(double) * threads);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * threads);
    MPI_Status *stats = malloc(sizeof(MPI_Status) * threads);
    double *call = calloc(threads, sizeof(double)), *arrived = calloc(threads, sizeof(double));
    int *idx = malloc(sizeof(int) * threads);

    FILE *samples = NULL, *ctab = NULL;
    if (rank == 0) {
        if (out) {
            cs_write_placement(out, places, 2);
            FILE *mt = cs_open_table(out, "methods.csv", "method,status,note");
            for (int m = 0; m < M_COUNT; m++)
                cs_row(mt, "%s,%s,\"%s\"\n", METHOD_NAME[m],
                       run_m[m] ? "run" : (want[m] ? "skipped" : "not-requested"), note[m]);
            cs_close_table(mt);
            samples = cs_open_table(out, "samples.csv",
                                    "method,size_bytes,partitions,partition_bytes,run,elapsed_s,"
                                    "effective_bandwidth_Bps,sender_elapsed_s,last_ready_s,"
                                    "first_ready_s,bytes_received,mismatches,threads,dist,compute_s,"
                                    "sigma_s,compute_mode,clock,clock_uncertainty_s");
            ctab = cs_open_table(out, "compute.csv", "run,method,size_bytes,thread,requested_s,actual_s,"
                                                     "call_s,arrived_s");
        }
        char t_compute[24], t_sigma[24];
        printf("# commscope partitioned (Dominguez-Trujillo 2021, Algorithm 2): %d threads/partitions, %s compute "
               "mean %s sd %s (%s), %d runs, %d warm-up\n",
               threads, DIST_NAME[dist], cs_time_text(compute, t_compute, sizeof t_compute),
               cs_time_text(sigma, t_sigma, sizeof t_sigma), MODE_NAME[mode], runs, warmup);
        printf("# rank 0 (%s cpu %d) -> rank 1 (%s cpu %d): %s; MPI thread level %d\n",
               places[0].node, places[0].cpu, places[1].node, places[1].cpu,
               cs_locality(&places[0], &places[1]), provided);
        char t_off[24], t_rt[24];
        printf("# clock: %s (ping-pong offset %s, best round trip %s)\n", clock_kind,
               cs_time_text(measured_offset, t_off, sizeof t_off),
               cs_time_text(best_rtt, t_rt, sizeof t_rt));
        for (int m = 0; m < M_COUNT; m++)
            if (want[m] && !run_m[m])
                printf("# method %s skipped: %s\n", METHOD_NAME[m], note[m]);
        printf("%-12s %-12s %16s %16s %16s %14s %6s\n", "# Size", "Method", "Avg elapsed",
               "Min elapsed", "Max elapsed", "Avg BW(MB/s)", "Runs");
        fflush(stdout);
    }

    long total = 0, done = 0;
    for (int m = 0; m < M_COUNT; m++)
        total += run_m[m] ? nsizes - first_size : 0;
    long long failures = 0;

    /* the size index seeds the draws, so a resumed sweep draws what the full one would */
    for (int si = first_size; si < nsizes; si++) {
        long long size = sizes[si];
        long long part = size / threads;
        for (int m = 0; m < M_COUNT; m++) {
            if (!run_m[m])
                continue;
            MPI_Request preq = MPI_REQUEST_NULL;
#ifdef COMMSCOPE_HAVE_PARTITIONED
            if (m == M_PART) {
                if (rank == 0)
                    CHECK(MPI_Psend_init(buf, threads, (MPI_Count)part, MPI_BYTE, 1, 0, comm, MPI_INFO_NULL, &preq));
                else
                    CHECK(MPI_Precv_init(buf, threads, (MPI_Count)part, MPI_BYTE, 0, 0, comm, MPI_INFO_NULL, &preq));
            }
#endif
            double sum_el = 0, min_el = INFINITY, max_el = 0, sum_bw = 0;
            for (int r = -warmup; r < runs; r++) {
                /* Same draws for every method at this size and run. */
                uint64_t st = stream_state(seed, (uint64_t)si, (uint64_t)(r + warmup + 1));
                uint64_t salt = (uint64_t)(r + warmup + 1) * 0xD6E8FEB86659FD93ull ^ (uint64_t)m << 56;
                if (rank == 0) {
                    for (int t = 0; t < threads; t++)
                        req_s[t] = dist == D_STAGGER
                                       ? compute + (threads > 1 ? sigma * (2.0 * t / (threads - 1) - 1.0) : 0)
                                       : draw(dist, compute, sigma, &st);
                } else {
                    memset(buf, 0, size);
                    if (m == M_PART)
                        CHECK(MPI_Start(&preq));
                    else if (m == M_ISEND)
                        for (int t = 0; t < threads; t++)
                            CHECK(MPI_Irecv(buf + t * part, (int)part, MPI_BYTE, 0, t, comm, &reqs[t]));
                    else
                        CHECK(MPI_Irecv(buf, (int)size, MPI_BYTE, 0, 0, comm, &reqs[0]));
                }
                if (rank == 0 && m == M_PART)
                    CHECK(MPI_Start(&preq));
                CHECK(MPI_Barrier(comm)); /* receives are posted before anything is sent */

                if (rank == 1) {
                    int nreq = m == M_ISEND ? threads : 1;
                    /* When did each partition arrive?  Poll it (MPI_Parrived, MPI_Testsome)
                     * as MPI_Wait would spin anyway: the early-bird overlap is whether a
                     * partition arrives before the slowest thread is ready. */
                    if (m == M_PART) {
#ifdef COMMSCOPE_HAVE_PARTITIONED
                        for (int t = 0; t < threads; t++)
                            arrived[t] = -1;
                        for (int left = threads; left > 0;)
                            for (int t = 0; t < threads; t++) {
                                int flag = 0;
                                if (arrived[t] >= 0)
                                    continue;
                                CHECK(MPI_Parrived(preq, t, &flag));
                                if (flag)
                                    arrived[t] = cs_clock(), left--;
                            }
#endif
                        CHECK(MPI_Wait(&preq, &stats[0]));
                    } else if (m == M_ISEND) {
                        for (int left = threads; left > 0;) {
                            int outcount = 0;
                            CHECK(MPI_Testsome(threads, reqs, &outcount, idx, stats + (threads - left)));
                            double now = cs_clock();
                            for (int k = 0; k < outcount && outcount != MPI_UNDEFINED; k++)
                                arrived[idx[k]] = now;
                            left -= outcount == MPI_UNDEFINED ? left : outcount;
                        }
                    } else {
                        CHECK(MPI_Waitall(nreq, reqs, stats));
                    }
                    result_t res;
                    res.t_done = cs_clock();
                    if (m == M_SINGLE)
                        for (int t = 0; t < threads; t++)
                            arrived[t] = res.t_done;
                    res.mismatches = (double)count_mismatches(buf, size, salt);
                    res.bytes = 0;
                    if (m == M_PART) {
                        res.bytes = (double)size; /* a partitioned status carries no count we rely on */
                    } else {
                        for (int q = 0; q < nreq; q++) {
                            int cnt = 0;
                            MPI_Get_count(&stats[q], MPI_BYTE, &cnt);
                            res.bytes += cnt;
                        }
                    }
                    CHECK(MPI_Send(&res, 3, MPI_DOUBLE, 0, TAG_RESULT, comm));
                    CHECK(MPI_Send(arrived, threads, MPI_DOUBLE, 0, TAG_RESULT, comm));
                    continue;
                }

                /* Sender: Algorithm 2. */
                double t0 = 0;
                int got_threads = 0;
#pragma omp parallel num_threads(threads)
                {
                    int t = omp_get_thread_num();
                    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); /* wake-ups on time */
                    fill(buf, (size_t)t * part, (size_t)(t + 1) * part, salt);
#pragma omp barrier
#pragma omp single
                    {
                        got_threads = omp_get_num_threads();
                        t0 = cs_clock();
                    } /* implicit barrier: everyone starts from the same t0 */
                    if (got_threads == threads) {
                        wait_until(t0 + req_s[t], mode);
                        ready[t] = cs_clock();
#ifdef COMMSCOPE_HAVE_PARTITIONED
                        if (m == M_PART)
                            CHECK(MPI_Pready(t, preq));
#endif
                        if (m == M_ISEND)
                            CHECK(MPI_Isend(buf + t * part, (int)part, MPI_BYTE, 1, t, comm, &reqs[t]));
                        call[t] = cs_clock() - ready[t]; /* the Pready (or Isend) call itself */
                    }
                }
                if (got_threads != threads)
                    cs_die("asked OpenMP for %d threads, got %d", threads, got_threads);
                double t_last = ready[0], t_first = ready[0];
                for (int t = 1; t < threads; t++) {
                    t_last = ready[t] > t_last ? ready[t] : t_last;
                    t_first = ready[t] < t_first ? ready[t] : t_first;
                }
                if (m == M_SINGLE) {
                    CHECK(MPI_Isend(buf, (int)size, MPI_BYTE, 1, 0, comm, &reqs[0]));
                    CHECK(MPI_Wait(&reqs[0], MPI_STATUS_IGNORE));
                } else if (m == M_ISEND) {
                    CHECK(MPI_Waitall(threads, reqs, MPI_STATUSES_IGNORE));
                } else {
                    CHECK(MPI_Wait(&preq, MPI_STATUS_IGNORE));
                }
                double t_f = cs_clock();
                result_t res;
                CHECK(MPI_Recv(&res, 3, MPI_DOUBLE, 1, TAG_RESULT, comm, MPI_STATUS_IGNORE));
                CHECK(MPI_Recv(arrived, threads, MPI_DOUBLE, 1, TAG_RESULT, comm, MPI_STATUS_IGNORE));
                if (r < 0)
                    continue;
                double elapsed = (res.t_done - offset) - t_last;
                double bw = (double)size / elapsed;
                sum_el += elapsed, sum_bw += bw;
                min_el = elapsed < min_el ? elapsed : min_el;
                max_el = elapsed > max_el ? elapsed : max_el;
                if (samples) {
                    cs_row(samples, "%s,%lld,%d,%lld,%d,%.9e,%.9e,%.9e,%.9e,%.9e,%.0f,%.0f,%d,%s,%.9e,%.9e,%s,%s,%.3e\n",
                           METHOD_NAME[m], size, threads, part, r, elapsed, bw, t_f - t_last,
                           t_last - t0, t_first - t0, res.bytes, res.mismatches, threads,
                           DIST_NAME[dist], compute, sigma, MODE_NAME[mode], clock_kind, uncertainty);
                    for (int t = 0; t < threads; t++)
                        cs_row(ctab, "%d,%s,%lld,%d,%.9e,%.9e,%.9e,%.9e\n", r, METHOD_NAME[m], size, t,
                               req_s[t], ready[t] - t0, m == M_SINGLE ? NAN : call[t],
                               arrived[t] < 0 ? NAN : arrived[t] - offset - t0);
                }
                if (res.mismatches > 0 || res.bytes != (double)size) {
                    fprintf(stderr, "commscope native: %s, %lld bytes, run %d: receiver found "
                                    "%.0f mismatched bytes and %.0f of %lld bytes\n",
                            METHOD_NAME[m], size, r,
                            res.mismatches, res.bytes, size);
                    failures++;
                }
            }
#ifdef COMMSCOPE_HAVE_PARTITIONED
            if (preq != MPI_REQUEST_NULL)
                MPI_Request_free(&preq);
#endif
            if (rank == 0) {
                char t_avg[24], t_lo[24], t_hi[24];
                printf("%-12lld %-12s %16s %16s %16s %14.2f %6d\n", size, METHOD_NAME[m],
                       cs_time_text(sum_el / runs, t_avg, sizeof t_avg),
                       cs_time_text(min_el, t_lo, sizeof t_lo), cs_time_text(max_el, t_hi, sizeof t_hi),
                       1e-6 * sum_bw / runs, runs);
                fflush(stdout);
                cs_progress(++done, total, METHOD_NAME[m]);
            }
            MPI_Bcast(&failures, 1, MPI_LONG_LONG, 0, comm);
            if (failures)
                cs_die("data check failed (%lld runs with wrong or missing bytes); "
                       "the rows are in samples.csv (mismatches, bytes_received)",
                       failures);
        }
    }
    if (samples)
        cs_close_table(samples), cs_close_table(ctab);
    free(buf), free(req_s), free(ready), free(reqs), free(stats), free(call), free(arrived), free(idx);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
