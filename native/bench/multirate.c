/* commscope multirate: message rate of threads in pairs (001 Sec. 3.9.1, Table 3.4;
 * the pairwise pattern of Patinyasakdikul et al.'s Multirate benchmark).
 *
 * Two ranks in MPI_THREAD_MULTIPLE, T OpenMP threads each; thread t of rank 0
 * sends to thread t of rank 1 only.  Per window, the sending thread starts W
 * MPI_Isend's of S bytes and waits for them, then receives a zero-byte ack; the
 * receiving thread posts W MPI_Irecv's, waits, and sends the ack (OSU mbw_mr's
 * window protocol).  I timed windows follow X warm-up windows.  Two modes:
 *
 *   shared      every thread uses one communicator; the tag is the thread number
 *               (001's set-up: the threads compete for one sequence-number stream
 *               per peer, so messages can arrive out of sequence)
 *   per-thread  thread t uses its own communicator (Patinyasakdikul et al.'s
 *               remedy: matching and sequence numbers are per communicator)
 *
 * Both modes use duplicates of MPI_COMM_WORLD, and the barriers run on another
 * duplicate, so no bookkeeping message sits in a measured queue.  Repetitions of
 * the two modes alternate at each thread count, so slow phases of a shared
 * machine hit both alike.
 *
 * Out-of-sequence messages are not visible through standard MPI; what Open MPI's
 * ob1 exposes through MPI_T is read on the receiver: thread 0 samples the
 * posted-receive and unexpected-message queue lengths for the sender (summed
 * over the communicators in use) right after posting each timed window.
 *
 * Tables (rank 0 writes both):
 *   threads.csv  mode,threads,rep,thread,messages,size_bytes,time_s
 *                (one sending thread's timed windows: barrier to its last ack)
 *   reps.csv     mode,threads,rep,messages,size_bytes,window,iterations,time_s,
 *                posted_recvq_mean,posted_recvq_max,unexpected_msgq_mean,
 *                unexpected_msgq_max  (time_s: barrier to the last thread's ack;
 *                queue columns NaN where the MPI has no such pvar)
 */
#include "cs_common.h"
#include "cs_multirate_options.h" /* generated from src/commscope/benchspec/multirate.py */

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS CS_MULTIRATE_MAX_THREADS
enum { MODE_SHARED,
       MODE_PER_THREAD,
       NMODES };
static const char *const MODE_NAMES[NMODES] = {"shared", "per-thread"};

/* An ob1 queue-length pvar, one handle per communicator, entry for peer 0 summed. */
typedef struct {
    int index; /* -1 when the MPI has no such pvar */
    MPI_T_pvar_handle handle[MAX_THREADS + 1];
    int count[MAX_THREADS + 1], ok[MAX_THREADS + 1];
} qpvar_t;

static void qpvar_open(qpvar_t *q, MPI_T_pvar_session s, const char *want, MPI_Comm *comms, int n)
{
    MPI_Datatype dt;
    int continuous;
    memset(q, 0, sizeof *q);
    q->index = cs_pvar_index(want, MPI_T_BIND_MPI_COMM, &dt, &continuous);
    if (q->index >= 0 && (dt != MPI_UNSIGNED || !continuous)) /* read as unsigned, never started */
        q->index = -1;
    for (int c = 0; q->index >= 0 && c < n; c++)
        q->ok[c] = MPI_T_pvar_handle_alloc(s, q->index, &comms[c], &q->handle[c], &q->count[c]) ==
                   MPI_SUCCESS;
}

/* Sum of entry `peer` over communicators first..first+n-1; NaN when unavailable. */
static double qpvar_sum(qpvar_t *q, MPI_T_pvar_session s, int first, int n, int peer)
{
    unsigned buf[8];
    double sum = 0;
    if (q->index < 0)
        return NAN;
    for (int c = first; c < first + n; c++) {
        if (!q->ok[c] || q->count[c] > 8 || peer >= q->count[c] ||
            MPI_T_pvar_read(s, q->handle[c], buf) != MPI_SUCCESS)
            return NAN;
        sum += buf[peer];
    }
    return sum;
}

typedef struct {
    double sum, max;
    long n;
} stat_t;

static void stat_add(stat_t *st, double v)
{
    st->sum += v;
    st->max = st->n == 0 || v > st->max ? v : st->max;
    st->n++;
}

#define MAX_COUNTS (sizeof((cs_multirate_options_t *)0)->threads / sizeof(long)) /* --threads entries */

/* Everything the phases of a run share: the checked options, the
 * communicators, the queue pvars, the buffers, the open tables and the rates. */
typedef struct {
    int rank;
    int reps, ncounts, nmodes, max_threads;
    long window, iters, warmup;
    long long msg_size;
    int counts[MAX_COUNTS], *modes;
    const char *out;
    MPI_Comm ctl, comms[MAX_THREADS + 1]; /* comms[0]: the shared one; comms[1 + t]: thread t's own */
    cs_place_t places[2];
    MPI_T_pvar_session session;
    qpvar_t q_posted, q_unexp;
    int have_pvars;
    char **bufs;
    MPI_Request **reqs;
    double times[MAX_THREADS]; /* per sending or receiving thread, of one repetition */
    FILE *fthreads, *freps;
    double (*rates)[NMODES]; /* rank 0: per rep and mode, at one thread count */
    double unexp_max[NMODES];
    long done, total;
} bench_t;

/* Copy the parsed options and check them against the library and the world. */
static void take_options(bench_t *b, cs_multirate_options_t *o, int provided, int size)
{
    b->out = o->out;
    b->reps = (int)o->reps, b->ncounts = o->threads_count, b->nmodes = o->modes_count;
    b->window = o->window, b->iters = o->iterations, b->warmup = o->warmup;
    b->msg_size = o->size_bytes;
    b->modes = o->modes;
    for (int k = 0; k < b->ncounts; k++) {
        if (o->threads[k] > MAX_THREADS)
            cs_die("--threads: at most %d threads per rank, got %ld", MAX_THREADS, o->threads[k]);
        b->counts[k] = (int)o->threads[k];
    }
    if (b->nmodes > NMODES)
        cs_die("--modes: at most %d modes, got %d", NMODES, b->nmodes);
    if (b->msg_size > CS_MULTIRATE_MAX_SIZE)
        cs_die("--size: expected a message size up to 1 MiB, got %lld", b->msg_size);
    if (provided < MPI_THREAD_MULTIPLE)
        cs_die("the MPI library does not provide MPI_THREAD_MULTIPLE (got level %d)", provided);
    if (size != 2)
        cs_die("needs exactly 2 ranks (rank 0 sends, rank 1 receives), got %d", size);
    for (int k = 0; k < b->ncounts; k++)
        b->max_threads = b->counts[k] > b->max_threads ? b->counts[k] : b->max_threads;
    if ((double)b->window * b->msg_size * b->max_threads > (double)(1LL << 32))
        cs_die("--window x --size x threads: receive buffers of %.0f bytes exceed 4 GiB",
               (double)b->window * b->msg_size * b->max_threads);
}

/* The receiver's ob1 queue pvars on every communicator; both ranks learn
 * whether they are there. */
static void open_queue_pvars(bench_t *b)
{
    b->session = MPI_T_PVAR_SESSION_NULL;
    b->q_posted.index = b->q_unexp.index = -1;
    int tprov;
    if (b->rank == 1 && MPI_T_init_thread(MPI_THREAD_MULTIPLE, &tprov) == MPI_SUCCESS &&
        MPI_T_pvar_session_create(&b->session) == MPI_SUCCESS) {
        qpvar_open(&b->q_posted, b->session, "pml_ob1_posted_recvq_length", b->comms, b->max_threads + 1);
        qpvar_open(&b->q_unexp, b->session, "pml_ob1_unexpected_msgq_length", b->comms, b->max_threads + 1);
    }
    b->have_pvars = b->q_unexp.index >= 0;
    MPI_Bcast(&b->have_pvars, 1, MPI_INT, 1, b->ctl);
}

/* Per thread: one message (sender) or a window of them (receiver), and the
 * window's requests. */
static void allocate_buffers(bench_t *b)
{
    b->bufs = cs_xmalloc(sizeof(char *) * b->max_threads);
    b->reqs = cs_xmalloc(sizeof(MPI_Request *) * b->max_threads);
    for (int t = 0; t < b->max_threads; t++) {
        size_t n = b->rank == 0 ? (size_t)b->msg_size : (size_t)b->window * b->msg_size;
        b->bufs[t] = cs_xmalloc(n ? n : 1);
        memset(b->bufs[t], 'a', n ? n : 1);
        b->reqs[t] = cs_xmalloc(sizeof(MPI_Request) * b->window);
    }
}

/* Rank 0: placement, threads.csv and reps.csv. */
static void open_tables(bench_t *b)
{
    cs_write_placement(b->out, b->places, 2);
    b->fthreads = cs_open_table(b->out, "threads.csv",
                                "mode,threads,rep,thread,messages,size_bytes,time_s");
    b->freps = cs_open_table(b->out, "reps.csv",
                             "mode,threads,rep,messages,size_bytes,window,iterations,time_s,"
                             "posted_recvq_mean,posted_recvq_max,unexpected_msgq_mean,"
                             "unexpected_msgq_max");
}

/* Rank 0: the run's description and the column heads on stdout. */
static void print_header(const bench_t *b)
{
    const cs_place_t *places = b->places;
    printf("# commscope multirate (Eberius 2020, Sec. 3.9.1), pairwise: rank 0 (%s cpu %d) threads send "
           "to rank 1 (%s cpu %d) threads; window %ld x %lld B, %ld timed + %ld warm-up "
           "windows, %d rep(s)\n",
           places[0].node, places[0].cpu, places[1].node, places[1].cpu, b->window, b->msg_size,
           b->iters, b->warmup, b->reps);
    printf("# ob1 queue-length pvars (receiver, sampled per window): %s\n",
           b->have_pvars ? "read" : "not available");
    printf("%-12s %7s %15s %15s %15s %15s %11s\n", "# Mode", "Threads", "Avg Rate(msg/s)",
           "Min Rate(msg/s)", "Max Rate(msg/s)", "Per Thread", "UnexpQ max");
    fflush(stdout);
}

/* One repetition of one mode with T threads: every thread runs its windows;
 * times[t] from the common start to its last ack.  The receiver's thread 0
 * samples the queue lengths after posting each timed window. */
static void run_windows(bench_t *b, int T, int mode, stat_t *posted, stat_t *unexp)
{
    double t0 = 0;
    int rank = b->rank;
    long window = b->window;
    long long msg_size = b->msg_size;
#pragma omp parallel num_threads(T)
    {
        int t = omp_get_thread_num();
        if (omp_get_num_threads() != T)
            cs_die("asked for %d threads, got %d (OMP_THREAD_LIMIT?)", T,
                   omp_get_num_threads());
        MPI_Comm comm = mode == MODE_SHARED ? b->comms[0] : b->comms[1 + t];
        int tag = mode == MODE_SHARED ? t : 0, peer = 1 - rank;
        for (long it = -b->warmup; it < b->iters; it++) {
            if (it == 0) { /* timed part starts together on both ranks */
#pragma omp barrier
#pragma omp master
                {
                    MPI_Barrier(b->ctl);
                    t0 = MPI_Wtime();
                }
#pragma omp barrier
            }
            if (rank == 0) {
                for (long w = 0; w < window; w++)
                    MPI_Isend(b->bufs[t], (int)msg_size, MPI_CHAR, peer, tag, comm,
                              &b->reqs[t][w]);
                MPI_Waitall((int)window, b->reqs[t], MPI_STATUSES_IGNORE);
                MPI_Recv(NULL, 0, MPI_CHAR, peer, tag, comm, MPI_STATUS_IGNORE);
            } else {
                for (long w = 0; w < window; w++)
                    MPI_Irecv(b->bufs[t] + w * msg_size, (int)msg_size, MPI_CHAR, peer,
                              tag, comm, &b->reqs[t][w]);
                if (t == 0 && it >= 0 && b->have_pvars) {
                    int first = mode == MODE_SHARED ? 0 : 1;
                    int n = mode == MODE_SHARED ? 1 : T;
                    stat_add(posted, qpvar_sum(&b->q_posted, b->session, first, n, peer));
                    stat_add(unexp, qpvar_sum(&b->q_unexp, b->session, first, n, peer));
                }
                MPI_Waitall((int)window, b->reqs[t], MPI_STATUSES_IGNORE);
                MPI_Send(NULL, 0, MPI_CHAR, peer, tag, comm);
            }
        }
        b->times[t] = MPI_Wtime() - t0;
    }
}

/* The receiver's queue statistics to rank 0, which keeps the repetition's
 * rate and writes its rows. */
static void record_rep(bench_t *b, int T, int rep, int m, const stat_t *posted, const stat_t *unexp)
{
    int mode = b->modes[m];
    double wall = 0;
    for (int t = 0; t < T; t++)
        wall = b->times[t] > wall ? b->times[t] : wall;
    double q[4] = {NAN, NAN, NAN, NAN};
    if (b->rank == 1) {
        if (posted->n) {
            q[0] = posted->sum / posted->n;
            q[1] = posted->max;
            q[2] = unexp->sum / unexp->n;
            q[3] = unexp->max;
        }
        MPI_Send(q, 4, MPI_DOUBLE, 0, 1, b->ctl);
        return;
    }
    MPI_Recv(q, 4, MPI_DOUBLE, 1, 1, b->ctl, MPI_STATUS_IGNORE);
    long msgs = (long)T * b->window * b->iters;
    b->rates[rep][m] = msgs / wall;
    if (b->have_pvars && q[3] > b->unexp_max[m])
        b->unexp_max[m] = q[3];
    if (b->fthreads)
        for (int t = 0; t < T; t++)
            cs_row(b->fthreads, "%s,%d,%d,%d,%ld,%lld,%.9e\n", MODE_NAMES[mode], T,
                   rep, t, b->window * b->iters, b->msg_size, b->times[t]);
    if (b->freps)
        cs_row(b->freps, "%s,%d,%d,%ld,%lld,%ld,%ld,%.9e,%.6g,%.6g,%.6g,%.6g\n",
               MODE_NAMES[mode], T, rep, msgs, b->msg_size, b->window, b->iters, wall,
               q[0], q[1], q[2], q[3]);
    cs_progress(++b->done, b->total, "repetition");
}

/* Rank 0: one line per mode for the thread count T. */
static void echo_count(const bench_t *b, int T)
{
    int reps = b->reps;
    for (int m = 0; m < b->nmodes; m++) {
        double r[reps], sum, lo, hi;
        for (int rep = 0; rep < reps; rep++)
            r[rep] = b->rates[rep][m];
        cs_sum_min_max(r, reps, &sum, &lo, &hi);
        printf("%-12s %7d %15.0f %15.0f %15.0f %15.0f %11.0f\n", MODE_NAMES[b->modes[m]], T,
               sum / reps, lo, hi, sum / reps / T, b->unexp_max[m]);
    }
    fflush(stdout);
}

/* Every thread count; at each, the modes' repetitions alternate so slow
 * phases of a shared machine hit both alike. */
static void sweep(bench_t *b)
{
    b->total = (long)b->ncounts * b->reps * b->nmodes;
    b->rates = cs_xmalloc(sizeof(double[NMODES]) * b->reps);
    for (int k = 0; k < b->ncounts; k++) {
        int T = b->counts[k];
        for (int m = 0; m < b->nmodes; m++)
            b->unexp_max[m] = b->have_pvars ? 0 : NAN;
        for (int rep = 0; rep < b->reps; rep++)
            for (int m = 0; m < b->nmodes; m++) {
                stat_t posted = {0}, unexp = {0};
                run_windows(b, T, b->modes[m], &posted, &unexp);
                record_rep(b, T, rep, m, &posted, &unexp);
            }
        if (b->rank == 0)
            echo_count(b, T);
    }
}

static void tear_down(bench_t *b)
{
    if (b->fthreads)
        cs_close_table(b->fthreads);
    if (b->freps)
        cs_close_table(b->freps);
    if (b->session != MPI_T_PVAR_SESSION_NULL) {
        for (int c = 0; c <= b->max_threads; c++) {
            if (b->q_posted.index >= 0 && b->q_posted.ok[c])
                MPI_T_pvar_handle_free(b->session, &b->q_posted.handle[c]);
            if (b->q_unexp.index >= 0 && b->q_unexp.ok[c])
                MPI_T_pvar_handle_free(b->session, &b->q_unexp.handle[c]);
        }
        MPI_T_pvar_session_free(&b->session);
        MPI_T_finalize();
    }
    for (int t = 0; t < b->max_threads; t++) {
        free(b->bufs[t]);
        free(b->reqs[t]);
    }
    free(b->bufs);
    free(b->reqs);
    free(b->rates);
    for (int c = 0; c <= b->max_threads; c++)
        MPI_Comm_free(&b->comms[c]);
    MPI_Comm_free(&b->ctl);
}

int main(int argc, char **argv)
{
    int rank, size, provided;
    cs_multirate_options_t o;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    cs_check_world();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int status = cs_multirate_parse_options(argc, argv, &o, rank);
    if (status >= 0)
        return status;
    bench_t b = {.rank = rank};
    take_options(&b, &o, provided, size);

    MPI_Comm_dup(MPI_COMM_WORLD, &b.ctl);
    for (int c = 0; c <= b.max_threads; c++)
        MPI_Comm_dup(MPI_COMM_WORLD, &b.comms[c]);
    cs_place_allgather(b.ctl, b.places);
    omp_set_dynamic(0); /* exactly the thread counts asked for */
    open_queue_pvars(&b);
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
