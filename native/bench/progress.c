/* commscope progress: does this MPI move data while the ranks compute outside
 * MPI calls?  (docs/progress.md)
 *
 * Two ranks, rank 0 sends to rank 1.  Per size and case:
 *   isend        MPI_Isend, then T of compute, then MPI_Wait;
 *   partitioned  MPI_Psend_init once per size, then per run MPI_Start and
 *                MPI_Pready of every partition (one thread, in order), T of
 *                compute, MPI_Wait;
 *   early-pready the same with the last partition's MPI_Pready after T: a
 *                partition that leaves at its own MPI_Pready has moved by then,
 *                one that waits for the whole buffer has not.
 * The sender computes busy (spinning on arithmetic) or blocked (sleeping, as a
 * thread waiting for I/O or an accelerator: the core is free).  The receiver
 * polls (an MPI_Test loop) or is idle (computes T, spinning, then MPI_Wait).
 *
 * First the transfer alone: BASELINE_REPS runs with no compute (receiver in
 * MPI_Wait at once), from the send's start to the receiver's completion; its
 * median is transfer_s, and T = max(compute_factor x transfer_s, min_compute).
 * Then every sender x receiver mode, each repetition a transfer alone (its
 * transfer_s: the lower of it and that median) and right after it the transfer with T: wait_after_s is the receiver's completion
 * minus the end of T (an idle receiver's own T: its MPI_Wait, while the sender,
 * whose T began after its send calls, still computes; the sender's T for a
 * polling receiver), at least 0; overlap_fraction = 1 - wait_after /
 * transfer_s, over the share of the data ready before T (early-pready: (P-1)/P),
 * clipped to [0, 1].  Early-pready with a polling receiver is seen directly
 * instead: the share of the first P-1 partitions MPI_Parrived reported before
 * the sender's last MPI_Pready.
 *
 * Partitioned requests are initialised once per (size, case) and restarted per
 * run: Open MPI's part/persist sends a partition at MPI_Pready only from the
 * request's second start on, so the warm-up runs (and the baseline) come first.
 * One CLOCK_MONOTONIC on one host; across hosts the receiver's clock is mapped
 * by the best of 32 pings (clock column).
 *
 * Tables: samples.csv (one row per case, sender, receiver, size and rep; a case
 * this MPI cannot run gets rows of NaN), transfers.csv (the transfers alone),
 * cases.csv (which cases ran or why not), placement.csv.
 */
#define _GNU_SOURCE
#include "cs_common.h"
#include "cs_progress_options.h" /* generated from src/commscope/benchspec/progress.py */

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

enum { K_ISEND,
       K_PART,
       K_EARLY,
       K_COUNT };
#define CASE_NAME cs_progress_cases_names /* the descriptor's names, in this order */
enum { S_BUSY,
       S_BLOCKED };
#define SENDER_NAME cs_progress_sender_names
enum { R_POLLING,
       R_IDLE };
#define RECEIVER_NAME cs_progress_receiver_names

#define TAG_DATA 7
#define TAG_RESULT 8
#define TAG_SYNC 9
#define CHECK_STRIDE 4093 /* bytes between checked bytes: a prime, so every page is hit */

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

typedef struct {
    double t_done;     /* receiver: its request completed */
    double t_computed; /* receiver: end of its T (NAN when polling) */
    double mismatches;
} result_t;

typedef struct {
    int rank, parts, reps, warmup;
    cs_progress_options_t *o;
    int run_case[K_COUNT];
    const char *note[K_COUNT];
    MPI_Comm comm;
    const char *clock_kind;
    double offset; /* receiver clock - sender clock */
    unsigned char *buf;
    double *arrived; /* early-pready, polling receiver: when each partition arrived */
    long long max_size;
    FILE *samples, *transfers;
} bench_t;

/* One (size, case): its request, the transfer alone and T. */
typedef struct {
    int k;
    long long size;
    MPI_Request req; /* the persistent partitioned request, or the run's Isend/Irecv */
    double transfer, compute;
} point_t;

/* Busy: arithmetic the compiler cannot drop, the clock read every 256 steps. */
static void compute_busy(double deadline)
{
    volatile double x = 1.0;
    while (cs_clock() < deadline)
        for (int i = 0; i < 256; i++)
            x = x * 1.000000001 + 1e-12;
}

/* Blocked: asleep to an absolute deadline, the core left to anyone. */
static void compute_blocked(double deadline)
{
    struct timespec ts;
    ts.tv_sec = (time_t)deadline;
    ts.tv_nsec = (long)((deadline - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L)
        ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void choose_cases(bench_t *b)
{
    int want[K_COUNT] = {0};
    for (int i = 0; i < b->o->cases_count; i++)
        want[b->o->cases[i]] = 1;
    int part_ok = 0;
    const char *why = "MPI-4 partitioned calls unavailable: mpi.h lacks MPI_Psend_init";
#ifdef COMMSCOPE_HAVE_PARTITIONED
    if (want[K_PART] || want[K_EARLY]) {
        part_ok = cs_partitioned_accepted(b->comm, b->rank, TAG_SYNC);
        why = "MPI-4 partitioned calls refused at run time (MPI_Psend_init/MPI_Precv_init failed)";
    }
#endif
    for (int k = 0; k < K_COUNT; k++) {
        b->run_case[k] = want[k] && (k == K_ISEND || part_ok);
        b->note[k] = !want[k] ? "not requested" : b->run_case[k] ? ""
                                                                 : why;
    }
}

/* The receiver's clock against the sender's: one clock on one host. */
static void relate_clocks(bench_t *b, const cs_place_t *places)
{
    double offset = 0, best = INFINITY;
    for (int i = 0; i < 32; i++) {
        if (b->rank == 0) {
            double ta = cs_clock(), tb;
            CHECK(MPI_Send(NULL, 0, MPI_BYTE, 1, TAG_SYNC, b->comm));
            CHECK(MPI_Recv(&tb, 1, MPI_DOUBLE, 1, TAG_SYNC, b->comm, MPI_STATUS_IGNORE));
            double tc = cs_clock();
            if (tc - ta < best)
                best = tc - ta, offset = tb - 0.5 * (ta + tc);
        } else {
            CHECK(MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_SYNC, b->comm, MPI_STATUS_IGNORE));
            double tb = cs_clock();
            CHECK(MPI_Send(&tb, 1, MPI_DOUBLE, 0, TAG_SYNC, b->comm));
        }
    }
    int same_host = strcmp(places[0].host, places[1].host) == 0;
    b->clock_kind = same_host ? "shared-monotonic" : "pingpong-offset";
    b->offset = same_host ? 0 : offset;
}

/* Receiver: one run.  Posts the receive, then polls or computes T and waits. */
static void receive_run(bench_t *b, point_t *p, int rmode, double compute, unsigned char salt)
{
    memset(b->buf, (unsigned char)~salt, p->size);
    if (p->k == K_ISEND)
        CHECK(MPI_Irecv(b->buf, (int)p->size, MPI_BYTE, 0, TAG_DATA, b->comm, &p->req));
    else
        CHECK(MPI_Start(&p->req));
    /* "posted": a message, not a barrier, whose exit could lag the sender's and
     * move the data inside MPI_Barrier; nothing is sent before it arrives */
    CHECK(MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_SYNC, b->comm));
    result_t res = {0, NAN, 0};
    int watch = p->k == K_EARLY && rmode == R_POLLING ? b->parts - 1 : 0;
    for (int i = 0; i < watch; i++)
        b->arrived[i] = -1;
    if (rmode == R_POLLING) {
        for (int flag = 0; !flag;) {
            CHECK(MPI_Test(&p->req, &flag, MPI_STATUS_IGNORE));
#ifdef COMMSCOPE_HAVE_PARTITIONED
            for (int i = 0; i < watch && !flag; i++) /* MPI_Parrived only while active */
                if (b->arrived[i] < 0) {
                    int got = 0;
                    CHECK(MPI_Parrived(p->req, i, &got));
                    if (got)
                        b->arrived[i] = cs_clock();
                }
#endif
        }
    } else {
        compute_busy(cs_clock() + compute);
        res.t_computed = cs_clock();
        CHECK(MPI_Wait(&p->req, MPI_STATUS_IGNORE));
    }
    res.t_done = cs_clock();
    for (long long i = 0; i < p->size; i += CHECK_STRIDE)
        res.mismatches += b->buf[i] != salt;
    res.mismatches += b->buf[p->size - 1] != salt;
    CHECK(MPI_Send(&res, 3, MPI_DOUBLE, 0, TAG_RESULT, b->comm));
    for (int i = 0; i < watch; i++) /* seen only as the whole request completed */
        b->arrived[i] = b->arrived[i] < 0 ? res.t_done : b->arrived[i];
    if (watch)
        CHECK(MPI_Send(b->arrived, watch, MPI_DOUBLE, 0, TAG_RESULT, b->comm));
}

/* Sender: one run; returns the receiver's result on the sender's clock, with
 * the send's start, the end of T and the end of the sender's wait. */
static result_t send_run(bench_t *b, point_t *p, int smode, int rmode, double compute, unsigned char salt,
                         double *t_start, double *t_computed, double *t_waited)
{
    int parts = b->parts;
    memset(b->buf, salt, p->size);
    if (p->k != K_ISEND)
        CHECK(MPI_Start(&p->req));
    CHECK(MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_SYNC, b->comm, MPI_STATUS_IGNORE));
    *t_start = cs_clock();
    if (p->k == K_ISEND)
        CHECK(MPI_Isend(b->buf, (int)p->size, MPI_BYTE, 1, TAG_DATA, b->comm, &p->req));
#ifdef COMMSCOPE_HAVE_PARTITIONED
    else
        for (int i = 0; i < (p->k == K_EARLY ? parts - 1 : parts); i++)
            CHECK(MPI_Pready(i, p->req));
#endif
    if (compute > 0) {
        double deadline = cs_clock() + compute;
        if (smode == S_BUSY)
            compute_busy(deadline);
        else
            compute_blocked(deadline);
    }
    *t_computed = cs_clock();
#ifdef COMMSCOPE_HAVE_PARTITIONED
    if (p->k == K_EARLY)
        CHECK(MPI_Pready(parts - 1, p->req));
#endif
    CHECK(MPI_Wait(&p->req, MPI_STATUS_IGNORE));
    *t_waited = cs_clock();
    result_t res;
    CHECK(MPI_Recv(&res, 3, MPI_DOUBLE, 1, TAG_RESULT, b->comm, MPI_STATUS_IGNORE));
    if (p->k == K_EARLY && rmode == R_POLLING) {
        CHECK(MPI_Recv(b->arrived, parts - 1, MPI_DOUBLE, 1, TAG_RESULT, b->comm, MPI_STATUS_IGNORE));
        for (int i = 0; i < parts - 1; i++)
            b->arrived[i] -= b->offset;
    }
    res.t_done -= b->offset;
    res.t_computed -= b->offset;
    (void)parts; /* unused without the partitioned calls */
    return res;
}

/* The transfer alone: no compute, the receiver in MPI_Wait at once.  Sets
 * p->transfer and p->compute (T) on both ranks. */
static void measure_transfer(bench_t *b, point_t *p)
{
    double t[CS_PROGRESS_BASELINE_REPS];
    for (int r = -b->warmup; r < CS_PROGRESS_BASELINE_REPS; r++) {
        unsigned char salt = (unsigned char)(0x40 + r);
        if (b->rank == 1) {
            receive_run(b, p, R_IDLE, 0, salt);
            continue;
        }
        double t0, t1, t2;
        result_t res = send_run(b, p, S_BUSY, R_IDLE, 0, salt, &t0, &t1, &t2);
        if (r < 0)
            continue;
        t[r] = res.t_done - t0;
        if (b->transfers)
            cs_row(b->transfers, "%s,%lld,%d,%.9e\n", CASE_NAME[p->k], p->size, r, t[r]);
        if (res.mismatches > 0)
            cs_die("%s, %lld bytes: the receiver found %.0f wrong bytes", CASE_NAME[p->k], p->size,
                   res.mismatches);
    }
    double both[2] = {0, 0};
    if (b->rank == 0) {
        both[0] = median(t, CS_PROGRESS_BASELINE_REPS);
        both[1] = b->o->compute_factor * both[0];
        if (both[1] < b->o->min_compute_s)
            both[1] = b->o->min_compute_s;
    }
    CHECK(MPI_Bcast(both, 2, MPI_DOUBLE, 0, b->comm));
    p->transfer = both[0], p->compute = both[1];
}

/* Every repetition of one sender x receiver mode; rank 0 writes the rows and
 * echoes the median overlap. */
static void measure_modes(bench_t *b, point_t *p, int smode, int rmode)
{
    int reps = b->reps;
    double ov[CS_PROGRESS_MAX_REPS], wa[CS_PROGRESS_MAX_REPS];
    /* the share of the data made ready before T: what could move during it */
    double share = p->k == K_EARLY ? (double)(b->parts - 1) / b->parts : 1.0;
    for (int r = -b->warmup; r < reps; r++) {
        unsigned char salt = (unsigned char)(0x80 + r + 7 * smode + 13 * rmode);
        if (b->rank == 1) {
            receive_run(b, p, R_IDLE, 0, salt);
            receive_run(b, p, rmode, p->compute, salt);
            continue;
        }
        double t0, t1, t2;
        /* the transfer alone right before, so a slow phase of a shared machine
         * slows both sides of the ratio */
        result_t alone = send_run(b, p, smode, R_IDLE, 0, salt, &t0, &t1, &t2);
        /* the lower of it and the median of the transfers alone: a preempted one
         * must not make the wait after T look short */
        double transfer = alone.t_done - t0;
        transfer = transfer < p->transfer ? transfer : p->transfer;
        result_t res = send_run(b, p, smode, rmode, p->compute, salt, &t0, &t1, &t2);
        if (r < 0)
            continue;
        /* idle: the receiver's own wait (the sender is still out of MPI then: its T
         * starts after the send calls); polling: what is left when the sender's T ends */
        double end_of_t = rmode == R_IDLE ? res.t_computed : t1;
        double after = res.t_done - end_of_t;
        after = after > 0 ? after : 0;
        double overlap = (1.0 - after / transfer) / share;
        overlap = overlap < 0 ? 0 : overlap > 1 ? 1
                                                : overlap;
        if (p->k == K_EARLY && rmode == R_POLLING) {
            /* seen directly: the share of the early partitions that arrived before the
             * last MPI_Pready (the wait alone cannot tell when latency dominates) */
            int early = 0;
            for (int i = 0; i < b->parts - 1; i++)
                early += b->arrived[i] < t1;
            overlap = (double)early / (b->parts - 1);
        }
        if (r < CS_PROGRESS_MAX_REPS)
            ov[r] = overlap, wa[r] = after;
        if (b->samples)
            cs_row(b->samples, "%s,%s,%s,%lld,%d,%d,%.9e,%.9e,%.9e,%.9e,%.6f,%.0f,%s\n",
                   CASE_NAME[p->k], SENDER_NAME[smode], RECEIVER_NAME[rmode], p->size, b->parts, r,
                   p->compute, transfer, after, t2 - t1, overlap, res.mismatches, b->clock_kind);
        if (res.mismatches > 0)
            cs_die("%s, %lld bytes, rep %d: the receiver found %.0f wrong bytes", CASE_NAME[p->k], p->size,
                   r, res.mismatches);
    }
    if (b->rank == 0) {
        int n = reps < CS_PROGRESS_MAX_REPS ? reps : CS_PROGRESS_MAX_REPS;
        char t_tr[24], t_c[24], t_wa[24];
        printf("%-10lld %-13s %-8s %-8s %12s %12s %12s %8.2f\n", p->size, CASE_NAME[p->k],
               SENDER_NAME[smode], RECEIVER_NAME[rmode], cs_time_text(p->transfer, t_tr, sizeof t_tr),
               cs_time_text(p->compute, t_c, sizeof t_c), cs_time_text(median(wa, n), t_wa, sizeof t_wa),
               median(ov, n));
        fflush(stdout);
    }
}

/* Rows of NaN for a case this MPI cannot run, so every size has all its rows. */
static void skip_rows(bench_t *b, int k, long long size)
{
    for (int s = 0; s < b->o->sender_count; s++)
        for (int q = 0; q < b->o->receiver_count; q++)
            for (int r = 0; r < b->reps; r++)
                cs_row(b->samples, "%s,%s,%s,%lld,%d,%d,nan,nan,nan,nan,nan,0,%s\n", CASE_NAME[k],
                       SENDER_NAME[b->o->sender[s]], RECEIVER_NAME[b->o->receiver[q]], size, b->parts, r,
                       b->clock_kind);
}

static void measure_case(bench_t *b, int k, long long size)
{
    point_t p = {k, size, MPI_REQUEST_NULL, 0, 0};
#ifdef COMMSCOPE_HAVE_PARTITIONED
    MPI_Count part = (MPI_Count)(size / b->parts);
    if (k != K_ISEND) {
        if (b->rank == 0)
            CHECK(MPI_Psend_init(b->buf, b->parts, part, MPI_BYTE, 1, TAG_DATA, b->comm, MPI_INFO_NULL, &p.req));
        else
            CHECK(MPI_Precv_init(b->buf, b->parts, part, MPI_BYTE, 0, TAG_DATA, b->comm, MPI_INFO_NULL, &p.req));
    }
#endif
    measure_transfer(b, &p);
    for (int s = 0; s < b->o->sender_count; s++)
        for (int q = 0; q < b->o->receiver_count; q++)
            measure_modes(b, &p, b->o->sender[s], b->o->receiver[q]);
    if (k != K_ISEND && p.req != MPI_REQUEST_NULL)
        MPI_Request_free(&p.req);
}

int main(int argc, char **argv)
{
    cs_progress_options_t o;
    int rank, nranks, provided;
    /* MULTIPLE: MPICH starts its progress thread (MPIR_CVAR_ASYNC_PROGRESS) only then */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    cs_check_world();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    int status = cs_progress_parse_options(argc, argv, &o, rank);
    if (status >= 0)
        return status;
    if (nranks != 2)
        cs_die("needs exactly 2 ranks (sender and receiver), got %d", nranks);
    if (o.reps > CS_PROGRESS_MAX_REPS)
        cs_die("--reps: at most %d, got %ld", CS_PROGRESS_MAX_REPS, o.reps);
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); /* a blocked sender wakes on time */
    bench_t b = {.rank = rank, .parts = (int)o.partitions, .reps = (int)o.reps, .warmup = (int)o.warmup, .o = &o};
    for (int i = 0; i < o.sizes_count; i++) {
        if (o.sizes[i] % b.parts)
            cs_die("--sizes: %lld bytes is not a multiple of %d partitions", o.sizes[i], b.parts);
        b.max_size = o.sizes[i] > b.max_size ? o.sizes[i] : b.max_size;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &b.comm);
    MPI_Comm_set_errhandler(b.comm, MPI_ERRORS_RETURN);
    cs_place_t places[2];
    cs_place_allgather(b.comm, places);
    choose_cases(&b);
    relate_clocks(&b, places);
    b.buf = cs_xmalloc(b.max_size);
    b.arrived = cs_xmalloc(sizeof(double) * b.parts);
    memset(b.buf, 0, b.max_size); /* touch the pages before timing */
    if (rank == 0) {
        if (o.out) {
            cs_write_placement(o.out, places, 2);
            FILE *ct = cs_open_table(o.out, "cases.csv", "case,status,note");
            for (int k = 0; k < K_COUNT; k++)
                cs_row(ct, "%s,%s,\"%s\"\n", CASE_NAME[k],
                       b.run_case[k] ? "run" : strcmp(b.note[k], "not requested") ? "skipped"
                                                                                  : "not-requested",
                       b.note[k]);
            cs_close_table(ct);
            b.samples = cs_open_table(o.out, "samples.csv",
                                      "case,sender,receiver,size_bytes,partitions,rep,compute_s,transfer_s,"
                                      "wait_after_s,sender_wait_s,overlap_fraction,mismatches,clock");
            b.transfers = cs_open_table(o.out, "transfers.csv", "case,size_bytes,rep,transfer_s");
        }
        printf("# commscope progress: does data move while the ranks compute outside MPI? %d partitions, "
               "T = %g x the transfer alone (at least %g s), %d reps, %d warm-up; MPI thread level %d; clock %s\n",
               b.parts, o.compute_factor, o.min_compute_s, b.reps, b.warmup, provided, b.clock_kind);
        for (int k = 0; k < K_COUNT; k++)
            if (!b.run_case[k] && strcmp(b.note[k], "not requested"))
                printf("# case %s skipped: %s\n", CASE_NAME[k], b.note[k]);
        printf("%-10s %-13s %-8s %-8s %12s %12s %12s %8s\n", "# Size", "Case", "Sender", "Receiver",
               "Transfer", "T", "Wait after", "Overlap");
        fflush(stdout);
    }
    long total = (long)(o.sizes_count - o.from_size) * o.cases_count, done = 0;
    for (int si = (int)o.from_size; si < o.sizes_count; si++)
        for (int c = 0; c < o.cases_count; c++) {
            int k = o.cases[c];
            if (b.run_case[k])
                measure_case(&b, k, o.sizes[si]);
            else if (b.samples)
                skip_rows(&b, k, o.sizes[si]);
            if (rank == 0)
                cs_progress(++done, total, CASE_NAME[k]);
        }
    if (b.samples)
        cs_close_table(b.samples), cs_close_table(b.transfers);
    free(b.buf), free(b.arrived);
    MPI_Comm_free(&b.comm);
    MPI_Finalize();
    return 0;
}
