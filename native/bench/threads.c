/* commscope threads: thread-arrival times of an OpenMP compute phase with a known,
 * controllable imbalance (Marts et al. 2023, Sec. 3.1 and 4).
 *
 * Every rank runs trials x iterations bulk-synchronous steps.  A step is one OpenMP
 * parallel region timed exactly as the paper's Listing 1 (barrier, per-thread start
 * time, `omp for nowait` loop, per-thread end time) through commscope_threadtiming.h,
 * followed by an MPI_Barrier standing in for the communication phase.  The loop has
 * one item per thread (schedule(static,1)), so thread t runs item t: a busy spin
 * for its intended time
 *
 *     intended = max(0, draw(dist; mean = --compute, sd = --sd)) + laggard * --laggard-extra
 *
 * where laggard is 1 with probability --laggard-prob.  Draws come from a counter-based
 * hash of (seed, trial, rank, iteration, thread), so a run is reproducible and rank 0
 * can write the ground truth of every rank (table injected) without communication.
 *
 * Compute model: a clock-polling spin (CLOCK_MONOTONIC, polled until the deadline),
 * not a calibrated loop: its error is the clock read (~20-50 ns) plus whatever time
 * the OS takes the core away; a calibrated loop would stretch by that too, and would
 * also drift with frequency changes.  --compute-mode sleep sleeps to the deadline instead
 * (clock_nanosleep): it frees the core, so oversubscribed runs (threads > cores)
 * still give arrivals close to the intended ones.
 *
 * Tables (in --out DIR): compute.csv (trial,rank,iteration,region,thread,start_s,
 * end_s,compute_time_s: written by the header at the end of every trial) and
 * injected.csv (trial,rank,iteration,thread,intended_time_s,laggard).
 */
#define _GNU_SOURCE
#include "cs_common.h"
#include "commscope_threadtiming.h"
#include "cs_threads_options.h" /* generated from src/commscope/benchspec/threads.py */

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

enum dist { DIST_CONSTANT,
            DIST_NORMAL,
            DIST_UNIFORM,
            DIST_EXPONENTIAL };
#define dist_names cs_threads_dist_names       /* the descriptor's names, in this order */
#define compute_names cs_threads_compute_names /* index = sleep_mode */

typedef struct {
    enum dist dist;
    double work, sd, lag_prob, lag_extra;
    uint64_t seed;
} imbalance_t;

/* splitmix64 as a pure function of its input: a good 64-bit mixer for
 * counter-based draws (x is a copy, so no stream state is kept). */
static uint64_t mix(uint64_t x)
{
    return cs_splitmix64(&x);
}

/* Uniform in [0, 1) for one (seed, trial, rank, iteration, thread, stream). */
static double unif(uint64_t seed, int trial, int rank, int it, int th, int stream)
{
    uint64_t h = mix(seed);
    h = mix(h ^ (uint64_t)(uint32_t)trial);
    h = mix(h ^ (uint64_t)(uint32_t)rank);
    h = mix(h ^ (uint64_t)(uint32_t)it);
    h = mix(h ^ (uint64_t)(uint32_t)th);
    h = mix(h ^ (uint64_t)(uint32_t)stream);
    return (double)(h >> 11) * 0x1.0p-53;
}

/* The intended compute time of one thread-step and whether it is a laggard. */
static double intended(const imbalance_t *im, int trial, int rank, int it, int th, int *laggard)
{
    double u1 = unif(im->seed, trial, rank, it, th, 1);
    double u2 = unif(im->seed, trial, rank, it, th, 2);
    double t = im->work;
    switch (im->dist) {
    case DIST_CONSTANT: break;
    case DIST_NORMAL: /* Box-Muller; 1 - u1 lies in (0, 1] */
        t += im->sd * sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * M_PI * u2);
        break;
    case DIST_UNIFORM: t += im->sd * sqrt(3.0) * (2.0 * u1 - 1.0); break;
    case DIST_EXPONENTIAL: t += im->sd * (-log(1.0 - u1) - 1.0); break;
    }
    if (t < 0)
        t = 0;
    *laggard = unif(im->seed, trial, rank, it, th, 3) < im->lag_prob;
    return t + (*laggard ? im->lag_extra : 0.0);
}

/* Spin polling the clock, or sleep, until `seconds` after now. */
static void compute(double seconds, int sleep_mode)
{
    if (!sleep_mode) {
        cs_spin(seconds);
        return;
    }
    struct timespec ts;
#if defined(__linux__) && defined(PR_SET_TIMERSLACK)
    /* Linux delays sleeping threads' wake-ups by up to 50 us (timer slack) to batch
     * them; 1 ns keeps the arrival close to the deadline.  Per thread, cheap. */
    static _Thread_local int slack_set = 0;
    if (!slack_set) {
        prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
        slack_set = 1;
    }
#endif
    clock_gettime(CLOCK_MONOTONIC, &ts);
    long long ns = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec + (long long)(seconds * 1e9);
    ts.tv_sec = ns / 1000000000LL;
    ts.tv_nsec = ns % 1000000000LL;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
        ; /* EINTR: sleep again to the same deadline */
}

/* One step: Listing 1 with the timing calls when tt != NULL (warm-up steps pass NULL). */
static int step(cs_tt_t *tt, int region, int it, const double *work, int nthreads, int sleep_mode)
{
    int team = 0;
#pragma omp parallel num_threads(nthreads)
    {
        if (tt)
            cs_tt_begin(tt, region, it);
        else {
#pragma omp barrier
        }
#pragma omp for schedule(static, 1) nowait
        for (int n = 0; n < nthreads; n++)
            compute(work[n], sleep_mode);
        if (tt)
            cs_tt_end(tt);
#pragma omp single nowait
        team = omp_get_num_threads();
    }
    return team;
}

/* What the phases of a run share. */
typedef struct {
    int rank, size, nthreads, iters, trials, warmup, sleep_mode, region;
    imbalance_t im;
    cs_tt_t tt;
    FILE *injected; /* rank 0 with --out: what each thread was meant to compute */
    double *work;
} bench_t;

/* The compute table (every rank) and, on rank 0, placement.csv and injected.csv. */
static void open_outputs(bench_t *b, const char *out, const cs_place_t *places)
{
    b->injected = NULL;
    if (!out) {
        cs_tt_set_output(&b->tt, "/dev/null");
        return;
    }
    if (cs_mkdir_p(out) != 0)
        cs_die("cannot create --out directory '%s'", out);
    char path[4096];
    snprintf(path, sizeof path, "%s/compute.csv", out);
    cs_tt_set_output(&b->tt, path);
    if (b->rank == 0) {
        cs_write_placement(out, places, b->size);
        b->injected = cs_open_table(out, "injected.csv",
                                    "trial,rank,iteration,thread,intended_time_s,laggard");
    }
}

static void print_header(const bench_t *b)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const imbalance_t *im = &b->im;
    printf("# commscope threads: %d rank(s) x %d thread(s), %d trial(s) x %d iteration(s)\n",
           b->size, b->nthreads, b->trials, b->iters);
    char t_work[24], t_sd[24], t_lag[24];
    printf("# work %s mean %s sd %s, laggard p=%.3g extra %s, seed %llu, "
           "compute=%s\n",
           dist_names[im->dist], cs_time_text(im->work, t_work, sizeof t_work),
           cs_time_text(im->sd, t_sd, sizeof t_sd), im->lag_prob,
           cs_time_text(im->lag_extra, t_lag, sizeof t_lag), (unsigned long long)im->seed,
           b->sleep_mode ? "sleep" : "spin");
    if ((long)b->nthreads * b->size > cores)
        printf("# oversubscribed: %d ranks x %d threads on %ld cores (if on one node)\n",
               b->size, b->nthreads, cores);
    printf("%-6s %9s %12s %12s %12s %13s %13s %9s\n", "# Trial", "Samples", "Mean", "Min",
           "Max", "MeanErr", "MaxErr", "Laggards");
    fflush(stdout);
}

/* The warm-up and timed iterations of one trial: compute, then the barrier that stands
 * for the step's communication phase. */
static void run_iterations(bench_t *b, int trial, long *done)
{
    cs_tt_set_trial(&b->tt, trial);
    for (int it = -b->warmup; it < b->iters; it++) {
        int lag;
        for (int t = 0; t < b->nthreads; t++)
            b->work[t] = intended(&b->im, trial, b->rank, it < 0 ? -1 - it : it, t, &lag);
        int team = step(it >= 0 ? &b->tt : NULL, b->region, it, b->work, b->nthreads,
                        b->sleep_mode);
        if (team != b->nthreads)
            cs_die("OpenMP gave a team of %d threads, asked for %d", team, b->nthreads);
        MPI_Barrier(MPI_COMM_WORLD);
        if (it >= 0 && b->rank == 0)
            cs_progress(++*done, (long)b->trials * b->iters, "iteration");
    }
}

/* Sums (compute time, error vs intended, samples) and extremes (-min time, max time, max
 * error) over every rank's records of the trial, taken before the flush empties them. */
static void trial_statistics(bench_t *b, int trial, double sum[3], double ext[3])
{
    sum[0] = sum[1] = sum[2] = 0;
    ext[0] = ext[1] = ext[2] = -1e300;
    for (int t = 0; t < b->nthreads; t++)
        for (long k = 0; k < b->tt.thr[t].count; k++) {
            const cs_tt_record_t *r = &b->tt.rec[(size_t)t * (size_t)b->tt.capacity + (size_t)k];
            int lag;
            double ct = r->end - r->start;
            double err = ct - intended(&b->im, trial, b->rank, r->iteration, t, &lag);
            sum[0] += ct;
            sum[1] += err;
            sum[2] += 1;
            ext[0] = -ct > ext[0] ? -ct : ext[0];
            ext[1] = ct > ext[1] ? ct : ext[1];
            ext[2] = err > ext[2] ? err : ext[2];
        }
    MPI_Allreduce(MPI_IN_PLACE, sum, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, ext, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
}

/* Rank 0: every thread's intended time of the trial (injected.csv) and its echo row. */
static void report_trial(const bench_t *b, int trial, const double sum[3], const double ext[3])
{
    long laggards = 0;
    for (int r = 0; r < b->size; r++)
        for (int it = 0; it < b->iters; it++)
            for (int t = 0; t < b->nthreads; t++) {
                int lag;
                double w = intended(&b->im, trial, r, it, t, &lag);
                laggards += lag;
                if (b->injected)
                    cs_row(b->injected, "%d,%d,%d,%d,%.9e,%d\n", trial, r, it, t, w, lag);
            }
    char t_mean[24], t_lo[24], t_hi[24], e_mean[24], e_max[24];
    printf("%-7d %9.0f %12s %12s %12s %13s %13s %9ld\n", trial, sum[2],
           cs_time_text(sum[0] / sum[2], t_mean, sizeof t_mean),
           cs_time_text(-ext[0], t_lo, sizeof t_lo), cs_time_text(ext[1], t_hi, sizeof t_hi),
           cs_time_text(sum[1] / sum[2], e_mean, sizeof e_mean),
           cs_time_text(ext[2], e_max, sizeof e_max), laggards);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int provided;
    cs_threads_options_t o;
    bench_t b;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    cs_check_world();
    MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &b.size);
    int status = cs_threads_parse_options(argc, argv, &o, b.rank);
    if (status >= 0)
        return status;
    b.iters = (int)o.iterations;
    b.trials = (int)o.trials;
    b.warmup = (int)o.warmup;
    b.sleep_mode = o.compute;
    b.im = (imbalance_t){(enum dist)o.dist, o.work, o.sd, o.laggard_prob,
                         o.laggard_extra, (uint64_t)o.seed};
    if (!(b.im.lag_prob >= 0 && b.im.lag_prob <= 1))
        cs_die("--laggard-prob must lie in [0, 1], got %g", b.im.lag_prob);
    if (provided < MPI_THREAD_FUNNELED)
        cs_die("MPI provides thread level %d, need MPI_THREAD_FUNNELED", provided);

    b.nthreads = omp_get_max_threads();
    cs_place_t *places = malloc(sizeof(cs_place_t) * b.size);
    cs_place_allgather(MPI_COMM_WORLD, places);
    if (cs_tt_init(&b.tt, b.iters, b.nthreads) != 0)
        cs_die("out of memory for %d x %d timing records", b.iters, b.nthreads);
    b.region = cs_tt_region(&b.tt, o.region);
    open_outputs(&b, o.out, places);
    if (b.rank == 0)
        print_header(&b);

    b.work = malloc(sizeof(double) * b.nthreads);
    long done = 0;
    for (int trial = 0; trial < b.trials; trial++) {
        double sum[3], ext[3];
        run_iterations(&b, trial, &done);
        trial_statistics(&b, trial, sum, ext);
        if (cs_tt_flush(&b.tt) != 0)
            cs_die("cannot write the compute table %s", b.tt.out);
        if (b.rank == 0)
            report_trial(&b, trial, sum, ext);
    }
    if (cs_tt_finalize(&b.tt) != 0)
        cs_die("cannot write the compute table %s", b.tt.out);
    if (b.injected)
        cs_close_table(b.injected);
    free(b.work);
    free(places);
    MPI_Finalize();
    return 0;
}
