/* Shared by the `commscope diagnose` test programs (the .c files beside it).
 *
 *   work(seconds)     a timed spin: real arithmetic on a volatile accumulator until a
 *                     CLOCK_MONOTONIC deadline.  Never a sleep: to MPI (and to the
 *                     profiler) a rank in work() is busy, never waiting.  Being a
 *                     deadline, it lasts its wall time even when the rank shares a
 *                     core (it yields the core every few microseconds, see below).
 *                     With --blocked, a sleep to the deadline instead: a thread
 *                     blocked on I/O or an accelerator, its core free (the progress
 *                     probe's "blocked" compute kind, docs/progress.md).
 *   diag_options()    --fixed (the variant with the problem removed), --iters N,
 *                     --unit S (the work unit U in seconds, default 0.002) and
 *                     --blocked; --help.
 *   diag_ranks()      stop (status 2, one line from rank 0) unless the job has the
 *                     ranks the program is written for.
 *
 * Every program: P ranks, N iterations, amounts of work in units U, and a header
 * comment with the problem, who causes it, where the others wait, the fix and the
 * saving per iteration the program's own logic implies.
 */
#ifndef DIAG_H
#define DIAG_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sched.h>

static inline double diag_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Busy for `seconds` of wall time (nothing for <= 0).  Every few microseconds it offers
 * the core to another runnable thread (sched_yield: the rank stays runnable, it never
 * sleeps), so that on an oversubscribed machine (4 ranks on 2 cores) a spin ends within
 * microseconds of its deadline, not a scheduler time slice (milliseconds) after it,
 * when the spinner happens to be off the core at its deadline.  DIAG_YIELD=0 in the
 * environment turns the yield off (to compare). */
static int diag_blocked; /* --blocked: work() sleeps */

static inline void work(double seconds)
{
    if (seconds <= 0)
        return;
    if (diag_blocked) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double ns = (double)ts.tv_nsec + seconds * 1e9;
        ts.tv_sec += (time_t)(ns / 1e9);
        ts.tv_nsec = (long)(ns - 1e9 * (double)(time_t)(ns / 1e9));
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ; /* interrupted by a signal: sleep on to the same deadline */
        return;
    }
    static int yield = -1;
    if (yield < 0)
        yield = getenv("DIAG_YIELD") ? atoi(getenv("DIAG_YIELD")) : 1;
    volatile double acc = 1.0;
    double deadline = diag_now() + seconds;
    do {
        for (int k = 0; k < 2048; k++)
            acc = acc * 1.000000001 + 1e-9;
        if (yield)
            sched_yield();
    } while (diag_now() < deadline);
}

typedef struct {
    int fixed;   /* --fixed: the variant without the problem */
    long iters;  /* --iters N */
    double unit; /* --unit S: the work unit U in seconds */
    int rank, size;
} diag_t;

static inline int diag_rank0_say(const char *msg, const char *arg)
{
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        fprintf(stderr, "%s%s\n", msg, arg ? arg : "");
    return rank;
}

static inline void diag_stop(int status)
{
    MPI_Finalize();
    exit(status);
}

/* Parse the common options (call after MPI_Init): defaults iters = default_iters,
 * U = 0.002 s.  A bad option stops every rank with status 2. */
static inline diag_t diag_options(int argc, char **argv, long default_iters)
{
    diag_t d = {0, default_iters, 0.002, 0, 1};
    MPI_Comm_rank(MPI_COMM_WORLD, &d.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &d.size);
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        if (!strcmp(argv[i], "--fixed")) {
            d.fixed = 1;
        } else if (!strcmp(argv[i], "--blocked")) {
            diag_blocked = 1;
        } else if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
            d.iters = strtol(argv[++i], &end, 10);
            if (*end || d.iters < 1) {
                diag_rank0_say("--iters: expected a whole number >= 1, got ", argv[i]);
                diag_stop(2);
            }
        } else if (!strcmp(argv[i], "--unit") && i + 1 < argc) {
            d.unit = strtod(argv[++i], &end);
            if (*end || !(d.unit >= 0 && d.unit <= 10)) {
                diag_rank0_say("--unit: expected seconds from 0 to 10, got ", argv[i]);
                diag_stop(2);
            }
        } else {
            if (strcmp(argv[i], "--help"))
                diag_rank0_say("unknown option (or missing value): ", argv[i]);
            diag_rank0_say("usage: PROGRAM [--fixed] [--blocked] [--iters N] [--unit SECONDS]", NULL);
            diag_stop(strcmp(argv[i], "--help") ? 2 : 0);
        }
    }
    return d;
}

/* A program's own options, taken out of argv before diag_options() sees it (call after
 * MPI_Init): diag_take_flag() removes every `name` and says whether there was one;
 * diag_take_number() removes `name VALUE` and returns VALUE (else `fallback`), stopping
 * every rank with status 2 when VALUE is not a number from `lo` to `hi`. */
static inline void diag_drop_args(int *argc, char **argv, int at, int n)
{
    for (int j = at; j + n <= *argc; j++)
        argv[j] = argv[j + n];
    *argc -= n;
}

static inline int diag_take_flag(int *argc, char **argv, const char *name)
{
    int seen = 0;
    for (int i = 1; i < *argc;) {
        if (!strcmp(argv[i], name)) {
            seen = 1;
            diag_drop_args(argc, argv, i, 1);
        } else {
            i++;
        }
    }
    return seen;
}

static inline double diag_take_number(int *argc, char **argv, const char *name, double fallback,
                                      double lo, double hi)
{
    double value = fallback;
    for (int i = 1; i < *argc;) {
        if (strcmp(argv[i], name)) {
            i++;
            continue;
        }
        char *end = NULL;
        if (i + 1 >= *argc || ((value = strtod(argv[i + 1], &end)), *end) || !(value >= lo && value <= hi)) {
            char msg[160];
            snprintf(msg, sizeof msg, "%s: expected a number from %g to %g, got ", name, lo, hi);
            diag_rank0_say(msg, i + 1 < *argc ? argv[i + 1] : "nothing");
            diag_stop(2);
        }
        diag_drop_args(argc, argv, i, 2);
    }
    return value;
}

/* Stop unless the job has `want` ranks. */
static inline void diag_ranks(const diag_t *d, int want)
{
    if (d->size != want) {
        char msg[96];
        snprintf(msg, sizeof msg, "this program needs exactly %d ranks, got %d", want, d->size);
        diag_rank0_say(msg, NULL);
        diag_stop(2);
    }
}

#endif
