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

/* Everything the phases of a run share: the checked options, which methods
 * run and why not, the clock relation, the buffers and the open tables. */
typedef struct {
    int rank, provided;
    int threads, runs, warmup, dist, mode;
    double compute, sigma;
    long long *sizes, max_size; /* sizes: the options' own array, rounded in place */
    int nsizes, first_size;     /* a resumed sweep skips measured sizes */
    unsigned long long seed;
    const char *out;
    int want[M_COUNT], run_m[M_COUNT];
    const char *note[M_COUNT];
    MPI_Comm comm;
    cs_place_t places[2];
    const char *clock_kind;
    double offset, measured_offset, uncertainty, best_rtt;
    unsigned char *buf;
    double *req_s, *ready, *call, *arrived;
    MPI_Request *reqs;
    MPI_Status *stats;
    int *idx;
    FILE *samples, *ctab;
} bench_t;

/* One (size, method) point. */
typedef struct {
    int si, m;
    long long size, part;
    MPI_Request preq; /* the persistent partitioned request, M_PART only */
} point_t;

/* One measured run as the sender saw it, with the receiver's result. */
typedef struct {
    int r;
    double t0, t_first, t_last, t_f;
    result_t res;
} run_t;

/* A point's elapsed times over its measured runs. */
typedef struct {
    double sum_el, min_el, max_el, sum_bw;
} summary_t;

/* Copy the parsed options, check them, and round every size down to equal
 * partitions. */
static void take_options(bench_t *b, cs_partitioned_options_t *o, int nranks)
{
    b->threads = (int)o->threads, b->runs = (int)o->runs_per_size, b->warmup = (int)o->warmup;
    b->dist = o->dist, b->mode = o->compute_mode;
    b->compute = o->compute_s, b->sigma = o->sigma_s;
    b->sizes = o->sizes;
    b->nsizes = o->sizes_count, b->first_size = (int)o->from_size;
    b->seed = (unsigned long long)o->seed;
    for (int i = 0; i < o->methods_count; i++)
        b->want[o->methods[i]] = 1;
    b->out = o->out;
    if (nranks != 2)
        cs_die("needs exactly 2 ranks (sender and receiver), got %d", nranks);
    if (b->compute <= 0)
        cs_die("--compute: must be > 0 seconds");
    if (isnan(b->sigma))                                         /* --sigma not given */
        b->sigma = b->compute * o->variability * o->variability; /* Algorithm 1/2 convention */
    int threads = b->threads;
    long long *sizes = b->sizes;
    for (int i = 0; i < b->nsizes; i++) {
        long long s = sizes[i] - sizes[i] % threads; /* equal partitions */
        if (s < threads)
            cs_die("--sizes: %lld bytes is smaller than %d partitions", sizes[i], threads);
        if (s > INT_MAX)
            cs_die("--sizes: %lld bytes is above the 2 GiB a single MPI_Isend count allows", sizes[i]);
        if (s != sizes[i] && b->rank == 0)
            printf("# size %lld rounded down to %lld (a multiple of %d partitions)\n", sizes[i], s, threads);
        sizes[i] = s;
        b->max_size = s > b->max_size ? s : b->max_size;
    }
}

/* Which methods can run, and why not. */
static void choose_methods(bench_t *b)
{
    for (int m = 0; m < M_COUNT; m++) {
        b->note[m] = "";
        b->run_m[m] = b->want[m];
    }
    if (!b->want[M_PART])
        b->note[M_PART] = "not requested";
    if (!b->want[M_ISEND])
        b->note[M_ISEND] = "not requested";
    if (!b->want[M_SINGLE])
        b->note[M_SINGLE] = "not requested";
#ifndef COMMSCOPE_HAVE_PARTITIONED
    if (b->want[M_PART]) {
        b->run_m[M_PART] = 0;
        b->note[M_PART] = "MPI-4 partitioned calls unavailable: mpi.h lacks MPI_Psend_init "
                          "(built without COMMSCOPE_HAVE_PARTITIONED)";
    }
#else
    if (b->want[M_PART] && !cs_partitioned_accepted(b->comm, b->rank, TAG_SYNC)) {
        b->run_m[M_PART] = 0;
        b->note[M_PART] = "MPI-4 partitioned calls refused at run time (MPI_Psend_init/MPI_Precv_init failed)";
    }
#endif
    if (b->provided < MPI_THREAD_MULTIPLE)
        for (int m = M_PART; m <= M_ISEND; m++)
            if (b->run_m[m]) {
                b->run_m[m] = 0;
                b->note[m] = "needs MPI_THREAD_MULTIPLE (threads call MPI themselves); the library provided less";
            }
}

/* Clock relation between the ranks (see header). */
static void relate_clocks(bench_t *b)
{
    MPI_Comm comm = b->comm;
    int same_host = strcmp(b->places[0].host, b->places[1].host) == 0;
    double offset = 0, best_rtt = INFINITY;
    for (int i = 0; i < 32; i++) {
        if (b->rank == 0) {
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
    b->clock_kind = same_host ? "shared-monotonic" : "pingpong-offset";
    b->measured_offset = offset;
    b->best_rtt = best_rtt;
    b->offset = same_host ? 0 : offset; /* one CLOCK_MONOTONIC for every process of the host */
    b->uncertainty = same_host ? 0 : best_rtt / 2;
}

static void allocate_buffers(bench_t *b)
{
    int threads = b->threads;
    b->buf = malloc(b->max_size);
    if (!b->buf)
        cs_die("cannot allocate %lld bytes", b->max_size);
    memset(b->buf, 0, b->max_size); /* touch the pages before timing */
    b->req_s = malloc(sizeof(double) * threads), b->ready = malloc(sizeof(double) * threads);
    b->reqs = malloc(sizeof(MPI_Request) * threads);
    b->stats = malloc(sizeof(MPI_Status) * threads);
    b->call = calloc(threads, sizeof(double)), b->arrived = calloc(threads, sizeof(double));
    b->idx = malloc(sizeof(int) * threads);
}

/* Rank 0: placement and methods tables, samples.csv and compute.csv opened. */
static void open_tables(bench_t *b)
{
    cs_write_placement(b->out, b->places, 2);
    FILE *mt = cs_open_table(b->out, "methods.csv", "method,status,note");
    for (int m = 0; m < M_COUNT; m++)
        cs_row(mt, "%s,%s,\"%s\"\n", METHOD_NAME[m],
               b->run_m[m] ? "run" : (b->want[m] ? "skipped" : "not-requested"), b->note[m]);
    cs_close_table(mt);
    b->samples = cs_open_table(b->out, "samples.csv",
                               "method,size_bytes,partitions,partition_bytes,run,elapsed_s,"
                               "effective_bandwidth_Bps,sender_elapsed_s,last_ready_s,"
                               "first_ready_s,bytes_received,mismatches,threads,dist,compute_s,"
                               "sigma_s,compute_mode,clock,clock_uncertainty_s");
    b->ctab = cs_open_table(b->out, "compute.csv", "run,method,size_bytes,thread,requested_s,actual_s,"
                                                   "call_s,arrived_s");
}

/* Rank 0: the run's description and the column heads on stdout. */
static void print_header(const bench_t *b)
{
    const cs_place_t *places = b->places;
    char t_compute[24], t_sigma[24];
    printf("# commscope partitioned (Dominguez-Trujillo 2021, Algorithm 2): %d threads/partitions, %s compute "
           "mean %s sd %s (%s), %d runs, %d warm-up\n",
           b->threads, DIST_NAME[b->dist], cs_time_text(b->compute, t_compute, sizeof t_compute),
           cs_time_text(b->sigma, t_sigma, sizeof t_sigma), MODE_NAME[b->mode], b->runs, b->warmup);
    printf("# rank 0 (%s cpu %d) -> rank 1 (%s cpu %d): %s; MPI thread level %d\n",
           places[0].node, places[0].cpu, places[1].node, places[1].cpu,
           cs_locality(&places[0], &places[1]), b->provided);
    char t_off[24], t_rt[24];
    printf("# clock: %s (ping-pong offset %s, best round trip %s)\n", b->clock_kind,
           cs_time_text(b->measured_offset, t_off, sizeof t_off),
           cs_time_text(b->best_rtt, t_rt, sizeof t_rt));
    for (int m = 0; m < M_COUNT; m++)
        if (b->want[m] && !b->run_m[m])
            printf("# method %s skipped: %s\n", METHOD_NAME[m], b->note[m]);
    printf("%-12s %-12s %16s %16s %16s %14s %6s\n", "# Size", "Method", "Avg elapsed",
           "Min elapsed", "Max elapsed", "Avg BW(MB/s)", "Runs");
    fflush(stdout);
}

/* Receiver: clear the buffer and post the receives of one run. */
static void post_receives(bench_t *b, point_t *p)
{
    memset(b->buf, 0, p->size);
    if (p->m == M_PART)
        CHECK(MPI_Start(&p->preq));
    else if (p->m == M_ISEND)
        for (int t = 0; t < b->threads; t++)
            CHECK(MPI_Irecv(b->buf + t * p->part, (int)p->part, MPI_BYTE, 0, t, b->comm, &b->reqs[t]));
    else
        CHECK(MPI_Irecv(b->buf, (int)p->size, MPI_BYTE, 0, 0, b->comm, &b->reqs[0]));
}

/* Receiver: wait for the data, noting when each partition arrived.  Poll it
 * (MPI_Parrived, MPI_Testsome) as MPI_Wait would spin anyway: the early-bird
 * overlap is whether a partition arrives before the slowest thread is ready. */
static void await_partitions(bench_t *b, point_t *p)
{
    int threads = b->threads;
    double *arrived = b->arrived;
    if (p->m == M_PART) {
#ifdef COMMSCOPE_HAVE_PARTITIONED
        for (int t = 0; t < threads; t++)
            arrived[t] = -1;
        for (int left = threads; left > 0;)
            for (int t = 0; t < threads; t++) {
                int flag = 0;
                if (arrived[t] >= 0)
                    continue;
                CHECK(MPI_Parrived(p->preq, t, &flag));
                if (flag)
                    arrived[t] = cs_clock(), left--;
            }
#endif
        CHECK(MPI_Wait(&p->preq, &b->stats[0]));
    } else if (p->m == M_ISEND) {
        for (int left = threads; left > 0;) {
            int outcount = 0;
            CHECK(MPI_Testsome(threads, b->reqs, &outcount, b->idx, b->stats + (threads - left)));
            double now = cs_clock();
            for (int k = 0; k < outcount && outcount != MPI_UNDEFINED; k++)
                arrived[b->idx[k]] = now;
            left -= outcount == MPI_UNDEFINED ? left : outcount;
        }
    } else {
        CHECK(MPI_Waitall(1, b->reqs, b->stats));
    }
}

/* Receiver: one run, then its result and arrival times back to the sender. */
static void receive_run(bench_t *b, point_t *p, uint64_t salt)
{
    int nreq = p->m == M_ISEND ? b->threads : 1;
    await_partitions(b, p);
    result_t res;
    res.t_done = cs_clock();
    if (p->m == M_SINGLE)
        for (int t = 0; t < b->threads; t++)
            b->arrived[t] = res.t_done;
    res.mismatches = (double)count_mismatches(b->buf, p->size, salt);
    res.bytes = 0;
    if (p->m == M_PART) {
        res.bytes = (double)p->size; /* a partitioned status carries no count we rely on */
    } else {
        for (int q = 0; q < nreq; q++) {
            int cnt = 0;
            MPI_Get_count(&b->stats[q], MPI_BYTE, &cnt);
            res.bytes += cnt;
        }
    }
    CHECK(MPI_Send(&res, 3, MPI_DOUBLE, 0, TAG_RESULT, b->comm));
    CHECK(MPI_Send(b->arrived, b->threads, MPI_DOUBLE, 0, TAG_RESULT, b->comm));
}

/* Sender, Algorithm 2: every thread fills its partition, computes from a
 * common start t0, then marks the partition ready.  Returns t0. */
static double compute_and_ready(bench_t *b, const point_t *p, uint64_t salt)
{
    int threads = b->threads, m = p->m;
    long long part = p->part;
    double t0 = 0;
    int got_threads = 0;
#pragma omp parallel num_threads(threads)
    {
        int t = omp_get_thread_num();
        prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); /* wake-ups on time */
        fill(b->buf, (size_t)t * part, (size_t)(t + 1) * part, salt);
#pragma omp barrier
#pragma omp single
        {
            got_threads = omp_get_num_threads();
            t0 = cs_clock();
        } /* implicit barrier: everyone starts from the same t0 */
        if (got_threads == threads) {
            wait_until(t0 + b->req_s[t], b->mode);
            b->ready[t] = cs_clock();
#ifdef COMMSCOPE_HAVE_PARTITIONED
            if (m == M_PART)
                CHECK(MPI_Pready(t, p->preq));
#endif
            if (m == M_ISEND)
                CHECK(MPI_Isend(b->buf + t * part, (int)part, MPI_BYTE, 1, t, b->comm, &b->reqs[t]));
            b->call[t] = cs_clock() - b->ready[t]; /* the Pready (or Isend) call itself */
        }
    }
    if (got_threads != threads)
        cs_die("asked OpenMP for %d threads, got %d", threads, got_threads);
    return t0;
}

/* Sender: one run, through to the receiver's result. */
static void send_run(bench_t *b, point_t *p, uint64_t salt, run_t *run)
{
    double *ready = b->ready;
    run->t0 = compute_and_ready(b, p, salt);
    run->t_last = ready[0], run->t_first = ready[0];
    for (int t = 1; t < b->threads; t++) {
        run->t_last = ready[t] > run->t_last ? ready[t] : run->t_last;
        run->t_first = ready[t] < run->t_first ? ready[t] : run->t_first;
    }
    if (p->m == M_SINGLE) {
        CHECK(MPI_Isend(b->buf, (int)p->size, MPI_BYTE, 1, 0, b->comm, &b->reqs[0]));
        CHECK(MPI_Wait(&b->reqs[0], MPI_STATUS_IGNORE));
    } else if (p->m == M_ISEND) {
        CHECK(MPI_Waitall(b->threads, b->reqs, MPI_STATUSES_IGNORE));
    } else {
        CHECK(MPI_Wait(&p->preq, MPI_STATUS_IGNORE));
    }
    run->t_f = cs_clock();
    CHECK(MPI_Recv(&run->res, 3, MPI_DOUBLE, 1, TAG_RESULT, b->comm, MPI_STATUS_IGNORE));
    CHECK(MPI_Recv(b->arrived, b->threads, MPI_DOUBLE, 1, TAG_RESULT, b->comm, MPI_STATUS_IGNORE));
}

/* Sender: a measured run into the summary, its rows, and its data check.
 * Returns 1 when the receiver found wrong or missing bytes. */
static int record_run(bench_t *b, const point_t *p, const run_t *run, summary_t *s)
{
    const result_t *res = &run->res;
    int m = p->m, threads = b->threads;
    double elapsed = (res->t_done - b->offset) - run->t_last;
    double bw = (double)p->size / elapsed;
    s->sum_el += elapsed, s->sum_bw += bw;
    s->min_el = elapsed < s->min_el ? elapsed : s->min_el;
    s->max_el = elapsed > s->max_el ? elapsed : s->max_el;
    if (b->samples) {
        cs_row(b->samples, "%s,%lld,%d,%lld,%d,%.9e,%.9e,%.9e,%.9e,%.9e,%.0f,%.0f,%d,%s,%.9e,%.9e,%s,%s,%.3e\n",
               METHOD_NAME[m], p->size, threads, p->part, run->r, elapsed, bw, run->t_f - run->t_last,
               run->t_last - run->t0, run->t_first - run->t0, res->bytes, res->mismatches, threads,
               DIST_NAME[b->dist], b->compute, b->sigma, MODE_NAME[b->mode], b->clock_kind, b->uncertainty);
        for (int t = 0; t < threads; t++)
            cs_row(b->ctab, "%d,%s,%lld,%d,%.9e,%.9e,%.9e,%.9e\n", run->r, METHOD_NAME[m], p->size, t,
                   b->req_s[t], b->ready[t] - run->t0, m == M_SINGLE ? NAN : b->call[t],
                   b->arrived[t] < 0 ? NAN : b->arrived[t] - b->offset - run->t0);
    }
    if (res->mismatches > 0 || res->bytes != (double)p->size) {
        fprintf(stderr, "commscope native: %s, %lld bytes, run %d: receiver found "
                        "%.0f mismatched bytes and %.0f of %lld bytes\n",
                METHOD_NAME[m], p->size, run->r,
                res->mismatches, res->bytes, p->size);
        return 1;
    }
    return 0;
}

/* All runs of one (size, method) point, warm-up first; returns how many
 * measured runs failed the data check (counted on the sender only). */
static long long measure_point(bench_t *b, point_t *p, summary_t *s)
{
    long long failures = 0;
    int threads = b->threads, warmup = b->warmup;
    for (int r = -warmup; r < b->runs; r++) {
        /* Same draws for every method at this size and run. */
        uint64_t st = stream_state(b->seed, (uint64_t)p->si, (uint64_t)(r + warmup + 1));
        uint64_t salt = (uint64_t)(r + warmup + 1) * 0xD6E8FEB86659FD93ull ^ (uint64_t)p->m << 56;
        if (b->rank == 0) {
            for (int t = 0; t < threads; t++)
                b->req_s[t] = b->dist == D_STAGGER
                                  ? b->compute + (threads > 1 ? b->sigma * (2.0 * t / (threads - 1) - 1.0) : 0)
                                  : draw(b->dist, b->compute, b->sigma, &st);
        } else {
            post_receives(b, p);
        }
        if (b->rank == 0 && p->m == M_PART)
            CHECK(MPI_Start(&p->preq));
        CHECK(MPI_Barrier(b->comm)); /* receives are posted before anything is sent */
        if (b->rank == 1) {
            receive_run(b, p, salt);
            continue;
        }
        run_t run = {.r = r};
        send_run(b, p, salt, &run);
        if (r >= 0)
            failures += record_run(b, p, &run, s);
    }
    return failures;
}

/* Rank 0: a point's summary line on stdout and the progress line. */
static void echo_point(const bench_t *b, const point_t *p, const summary_t *s, long done, long total)
{
    int runs = b->runs;
    char t_avg[24], t_lo[24], t_hi[24];
    printf("%-12lld %-12s %16s %16s %16s %14.2f %6d\n", p->size, METHOD_NAME[p->m],
           cs_time_text(s->sum_el / runs, t_avg, sizeof t_avg),
           cs_time_text(s->min_el, t_lo, sizeof t_lo), cs_time_text(s->max_el, t_hi, sizeof t_hi),
           1e-6 * s->sum_bw / runs, runs);
    fflush(stdout);
    cs_progress(done, total, METHOD_NAME[p->m]);
}

/* Every size and method that runs; dies at the first point whose data check
 * failed, after echoing it. */
static void sweep(bench_t *b)
{
    long total = 0, done = 0;
    for (int m = 0; m < M_COUNT; m++)
        total += b->run_m[m] ? b->nsizes - b->first_size : 0;
    long long failures = 0;
    /* the size index seeds the draws, so a resumed sweep draws what the full one would */
    for (int si = b->first_size; si < b->nsizes; si++) {
        for (int m = 0; m < M_COUNT; m++) {
            if (!b->run_m[m])
                continue;
            point_t p = {si, m, b->sizes[si], b->sizes[si] / b->threads, MPI_REQUEST_NULL};
#ifdef COMMSCOPE_HAVE_PARTITIONED
            if (m == M_PART) {
                if (b->rank == 0)
                    CHECK(MPI_Psend_init(b->buf, b->threads, (MPI_Count)p.part, MPI_BYTE, 1, 0, b->comm,
                                         MPI_INFO_NULL, &p.preq));
                else
                    CHECK(MPI_Precv_init(b->buf, b->threads, (MPI_Count)p.part, MPI_BYTE, 0, 0, b->comm,
                                         MPI_INFO_NULL, &p.preq));
            }
#endif
            summary_t s = {0, INFINITY, 0, 0};
            failures += measure_point(b, &p, &s);
#ifdef COMMSCOPE_HAVE_PARTITIONED
            if (p.preq != MPI_REQUEST_NULL)
                MPI_Request_free(&p.preq);
#endif
            if (b->rank == 0)
                echo_point(b, &p, &s, ++done, total);
            MPI_Bcast(&failures, 1, MPI_LONG_LONG, 0, b->comm);
            if (failures)
                cs_die("data check failed (%lld runs with wrong or missing bytes); "
                       "the rows are in samples.csv (mismatches, bytes_received)",
                       failures);
        }
    }
}

static void tear_down(bench_t *b)
{
    if (b->samples)
        cs_close_table(b->samples), cs_close_table(b->ctab);
    free(b->buf), free(b->req_s), free(b->ready), free(b->reqs), free(b->stats), free(b->call),
        free(b->arrived), free(b->idx);
    MPI_Comm_free(&b->comm);
}

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
    bench_t b = {.rank = rank, .provided = provided};
    take_options(&b, &o, nranks);
    omp_set_dynamic(0);

    MPI_Comm_dup(MPI_COMM_WORLD, &b.comm);
    MPI_Comm_set_errhandler(b.comm, MPI_ERRORS_RETURN);
    cs_place_allgather(b.comm, b.places);
    choose_methods(&b);
    relate_clocks(&b);
    allocate_buffers(&b);
    if (rank == 0) {
        if (b.out)
            open_tables(&b);
        print_header(&b);
    }
    sweep(&b);
    tear_down(&b);
    MPI_Finalize();
    return 0;
}
