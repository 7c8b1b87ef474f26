/* commscope_threadtiming.h: per-thread compute times of OpenMP regions, header only.
 *
 * Times an OpenMP work-sharing loop exactly as Marts et al. (2023), Listing 1, do:
 *
 *     #pragma omp parallel
 *     {
 *         cs_tt_begin(&tt, region, iter);   // #pragma omp barrier; start = now
 *         #pragma omp for nowait
 *         for (int n = 0; n < nsteps; n++) { ... work ... }
 *         cs_tt_end(&tt);                   // end = now
 *     }                                     // threads join here
 *
 * compute_time = end - start of each thread: a difference of two readings on the
 * same thread, so it stays meaningful where CLOCK_MONOTONIC is not synchronised
 * across cores (the paper's reason for using compute time, not raw end times).
 *
 * Storage: one preallocated record array per thread (no allocation, locking or I/O
 * between begin and end; each thread writes only its own slice).  cs_tt_flush()
 * writes the records to a CSV file and empties the buffers; with MPI it is
 * collective over the communicator (records are gathered to its rank 0, which
 * writes one file for all ranks).  Records that do not fit are counted as dropped
 * and reported at the next flush.
 *
 * CSV columns: trial,rank,iteration,region,thread,start_s,end_s,compute_time_s
 *   start_s/end_s: seconds since cs_tt_init on that rank (CLOCK_MONOTONIC);
 *   compare them within one rank only.
 *
 * Output file: cs_tt_set_output(), else $COMMSCOPE_THREADTIMING_OUT, else
 * "commscope_threadtiming.csv" in the working directory.  Trial number:
 * cs_tt_set_trial(), else $COMMSCOPE_TRIAL, else 0.
 *
 * Without MPI (compile with -DCS_TT_NO_MPI, or MPI not initialised when flushing)
 * every process writes its own records with rank 0.
 *
 * See docs/thread-timing.md for a complete example.
 */
#ifndef COMMSCOPE_THREADTIMING_H
#define COMMSCOPE_THREADTIMING_H

#include <errno.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifndef CS_TT_NO_MPI
#include <mpi.h>
#endif

#define CS_TT_MAX_REGIONS 64
#define CS_TT_NAME_MAX 64
#define CS_TT_ALIGN 64 /* one cache line: per-thread counters never share one */

typedef struct {
    double start, end;
    int region, iteration;
} cs_tt_record_t;

typedef struct {
    long count;   /* committed records */
    long dropped; /* records that did not fit */
    char pad[CS_TT_ALIGN - 2 * sizeof(long)];
} cs_tt_thread_t;

typedef struct {
    int max_threads;
    long capacity;        /* records per thread */
    cs_tt_record_t *rec;  /* max_threads x capacity */
    cs_tt_thread_t *thr;  /* max_threads, cache-line padded */
    long dropped_threads; /* begin/end from a thread id >= max_threads */
    int nregions;
    char regions[CS_TT_MAX_REGIONS][CS_TT_NAME_MAX];
    int trial;
    double t0;
    char out[4096];
    FILE *fh; /* open on the writing rank after the first flush */
#ifndef CS_TT_NO_MPI
    MPI_Comm comm;
#endif
} cs_tt_t;

/* Seconds, CLOCK_MONOTONIC (the paper's timer); omp_get_wtime() when a strict
 * -std=c11 build hides POSIX clocks (define _POSIX_C_SOURCE=199309L to get them). */
static inline double cs_tt_now(void)
{
#ifdef CLOCK_MONOTONIC
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
#else
    return omp_get_wtime();
#endif
}

/* Allocate room for max_records timed regions per thread (e.g. regions x
 * iterations between flushes).  max_threads <= 0 means omp_get_max_threads().
 * Call outside parallel regions.  Returns 0, or -1 if memory is short. */
static inline int cs_tt_init(cs_tt_t *tt, long max_records, int max_threads)
{
    memset(tt, 0, sizeof *tt);
    tt->max_threads = max_threads > 0 ? max_threads : omp_get_max_threads();
    tt->capacity = max_records > 0 ? max_records : 1;
    size_t nrec = (size_t)tt->max_threads * (size_t)tt->capacity;
    tt->rec = (cs_tt_record_t *)malloc(nrec * sizeof(cs_tt_record_t));
    tt->thr = (cs_tt_thread_t *)aligned_alloc(CS_TT_ALIGN,
                                              (size_t)tt->max_threads * sizeof(cs_tt_thread_t));
    if (!tt->rec || !tt->thr) {
        free(tt->rec);
        free(tt->thr);
        tt->rec = NULL;
        tt->thr = NULL;
        return -1;
    }
    memset(tt->thr, 0, (size_t)tt->max_threads * sizeof(cs_tt_thread_t));
    /* Touch the buffer now so page faults do not land inside timed regions. */
    memset(tt->rec, 0, nrec * sizeof(cs_tt_record_t));
    const char *trial = getenv("COMMSCOPE_TRIAL");
    tt->trial = trial ? atoi(trial) : 0;
    const char *out = getenv("COMMSCOPE_THREADTIMING_OUT");
    snprintf(tt->out, sizeof tt->out, "%s", out && *out ? out : "commscope_threadtiming.csv");
#ifndef CS_TT_NO_MPI
    tt->comm = MPI_COMM_WORLD;
#endif
    tt->t0 = cs_tt_now();
    return 0;
}

/* Name a region; returns its id for cs_tt_begin (the same name gives the same id).
 * Call outside timed code. Returns -1 when CS_TT_MAX_REGIONS are in use. */
static inline int cs_tt_region(cs_tt_t *tt, const char *name)
{
    for (int r = 0; r < tt->nregions; r++)
        if (strncmp(tt->regions[r], name, CS_TT_NAME_MAX - 1) == 0)
            return r;
    if (tt->nregions >= CS_TT_MAX_REGIONS)
        return -1;
    snprintf(tt->regions[tt->nregions], CS_TT_NAME_MAX, "%s", name);
    return tt->nregions++;
}

static inline void cs_tt_set_output(cs_tt_t *tt, const char *path)
{
    snprintf(tt->out, sizeof tt->out, "%s", path);
}

static inline void cs_tt_set_trial(cs_tt_t *tt, int trial) { tt->trial = trial; }

#ifndef CS_TT_NO_MPI
/* Communicator whose ranks are gathered at flush (default MPI_COMM_WORLD). */
static inline void cs_tt_set_comm(cs_tt_t *tt, MPI_Comm comm) { tt->comm = comm; }
#endif

/* Inside a parallel region, called by every thread: barrier, then start time.
 * An orphaned barrier binds to the enclosing parallel region, as in Listing 1. */
static inline void cs_tt_begin(cs_tt_t *tt, int region, int iteration)
{
#pragma omp barrier
    double now = cs_tt_now();
    int t = omp_get_thread_num();
    if (t >= tt->max_threads) {
#pragma omp atomic
        tt->dropped_threads++;
        return;
    }
    cs_tt_thread_t *th = &tt->thr[t];
    if (th->count >= tt->capacity)
        return; /* counted as dropped in cs_tt_end */
    cs_tt_record_t *r = &tt->rec[(size_t)t * (size_t)tt->capacity + (size_t)th->count];
    r->start = now;
    r->region = region;
    r->iteration = iteration;
}

/* Inside the same parallel region, after the `omp for nowait` loop: end time. */
static inline void cs_tt_end(cs_tt_t *tt)
{
    double now = cs_tt_now();
    int t = omp_get_thread_num();
    if (t >= tt->max_threads)
        return;
    cs_tt_thread_t *th = &tt->thr[t];
    if (th->count >= tt->capacity) {
        th->dropped++;
        return;
    }
    tt->rec[(size_t)t * (size_t)tt->capacity + (size_t)th->count].end = now;
    th->count++;
}

/* Macro spelling of the same calls. */
#define CS_TT_INIT(tt, max_records, max_threads) cs_tt_init((tt), (max_records), (max_threads))
#define CS_TT_REGION_BEGIN(tt, region, iteration) cs_tt_begin((tt), (region), (iteration))
#define CS_TT_REGION_END(tt) cs_tt_end(tt)

/* Records held by this process (all threads), as 6 doubles each:
 * iteration, region, thread, start_s, end_s, compute_time_s. */
static inline double *cs_tt__pack(cs_tt_t *tt, long *n)
{
    long total = 0;
    for (int t = 0; t < tt->max_threads; t++)
        total += tt->thr[t].count;
    double *buf = (double *)malloc((size_t)(total > 0 ? total : 1) * 6 * sizeof(double));
    if (!buf)
        return NULL;
    long k = 0;
    for (int t = 0; t < tt->max_threads; t++)
        for (long i = 0; i < tt->thr[t].count; i++) {
            const cs_tt_record_t *r = &tt->rec[(size_t)t * (size_t)tt->capacity + (size_t)i];
            double *o = buf + 6 * k++;
            o[0] = r->iteration;
            o[1] = r->region;
            o[2] = t;
            o[3] = r->start - tt->t0;
            o[4] = r->end - tt->t0;
            o[5] = r->end - r->start;
        }
    *n = total;
    return buf;
}

/* A failed write (full disk, file-size limit) is reported once, naming the file;
 * the flush that hit it returns -1. */
static inline int cs_tt__write_failed(cs_tt_t *tt)
{
    int err = errno ? errno : EIO;
    fprintf(stderr, "commscope_threadtiming: cannot write %s: %s [errno %d]\n", tt->out,
            strerror(err), err);
    return -1;
}

static inline int cs_tt__write(cs_tt_t *tt, int rank, const double *buf, long n)
{
    if (!tt->fh) {
        tt->fh = fopen(tt->out, "w");
        if (!tt->fh) {
            fprintf(stderr, "commscope_threadtiming: cannot write %s: %s\n", tt->out,
                    strerror(errno));
            return -1;
        }
        if (fputs("trial,rank,iteration,region,thread,start_s,end_s,compute_time_s\n",
                  tt->fh) < 0)
            return cs_tt__write_failed(tt);
    }
    for (long k = 0; k < n; k++) {
        const double *o = buf + 6 * k;
        int reg = (int)o[1];
        if (fprintf(tt->fh, "%d,%d,%d,%s,%d,%.9f,%.9f,%.9e\n", tt->trial, rank, (int)o[0],
                    reg >= 0 && reg < tt->nregions ? tt->regions[reg] : "region", (int)o[2],
                    o[3], o[4], o[5]) < 0)
            return cs_tt__write_failed(tt);
    }
    if (fflush(tt->fh) != 0 || ferror(tt->fh))
        return cs_tt__write_failed(tt);
    return 0;
}

/* Write every record to the CSV and empty the buffers.  Call outside parallel
 * regions; with MPI initialised this is collective over the communicator (rank 0
 * of it writes).  Returns 0 on success, -1 if the file cannot be written. */
static inline int cs_tt_flush(cs_tt_t *tt)
{
    long n = 0, dropped = tt->dropped_threads;
    double *mine = cs_tt__pack(tt, &n);
    if (!mine)
        return -1;
    for (int t = 0; t < tt->max_threads; t++) {
        dropped += tt->thr[t].dropped;
        tt->thr[t].count = 0;
        tt->thr[t].dropped = 0;
    }
    tt->dropped_threads = 0;
    int rc = 0, use_mpi = 0;
#ifndef CS_TT_NO_MPI
    int init = 0, fini = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fini);
    use_mpi = init && !fini;
#endif
    if (!use_mpi) {
        if (dropped)
            fprintf(stderr, "commscope_threadtiming: %ld records dropped (buffer full)\n", dropped);
        rc = cs_tt__write(tt, 0, mine, n);
        free(mine);
        return rc;
    }
#ifndef CS_TT_NO_MPI
    int rank, size;
    MPI_Comm_rank(tt->comm, &rank);
    MPI_Comm_size(tt->comm, &size);
    int cnt = (int)(6 * n);
    int *counts = rank == 0 ? (int *)malloc(sizeof(int) * size) : NULL;
    int *displs = rank == 0 ? (int *)malloc(sizeof(int) * size) : NULL;
    MPI_Gather(&cnt, 1, MPI_INT, counts, 1, MPI_INT, 0, tt->comm);
    long all_dropped = 0;
    MPI_Reduce(&dropped, &all_dropped, 1, MPI_LONG, MPI_SUM, 0, tt->comm);
    double *all = NULL;
    if (rank == 0) {
        long total = 0;
        for (int r = 0; r < size; r++) {
            displs[r] = (int)total;
            total += counts[r];
        }
        all = (double *)malloc(sizeof(double) * (size_t)(total > 0 ? total : 1));
    }
    MPI_Gatherv(mine, cnt, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, tt->comm);
    if (rank == 0) {
        if (all_dropped)
            fprintf(stderr, "commscope_threadtiming: %ld records dropped (buffer full)\n",
                    all_dropped);
        for (int r = 0; r < size && rc == 0; r++)
            rc = cs_tt__write(tt, r, all + displs[r], counts[r] / 6);
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, tt->comm);
    free(all);
    free(counts);
    free(displs);
#endif
    free(mine);
    return rc;
}

/* Flush, close the file and free the buffers (collective like cs_tt_flush). */
static inline int cs_tt_finalize(cs_tt_t *tt)
{
    int rc = tt->rec ? cs_tt_flush(tt) : 0;
    if (tt->fh && fclose(tt->fh) != 0 && rc == 0)
        rc = cs_tt__write_failed(tt);
    tt->fh = NULL;
    free(tt->rec);
    free(tt->thr);
    tt->rec = NULL;
    tt->thr = NULL;
    return rc;
}

#endif
