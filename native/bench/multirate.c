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
    const char *out = o.out;
    int reps = (int)o.reps, ncounts = o.threads_count, nmodes = o.modes_count;
    long window = o.window, iters = o.iterations, warmup = o.warmup;
    long long msg_size = o.size_bytes;
    int counts[sizeof o.threads / sizeof o.threads[0]], *modes = o.modes;
    for (int k = 0; k < ncounts; k++) {
        if (o.threads[k] > MAX_THREADS)
            cs_die("--threads: at most %d threads per rank, got %ld", MAX_THREADS, o.threads[k]);
        counts[k] = (int)o.threads[k];
    }
    if (nmodes > NMODES)
        cs_die("--modes: at most %d modes, got %d", NMODES, nmodes);
    if (msg_size > CS_MULTIRATE_MAX_SIZE)
        cs_die("--size: expected a message size up to 1 MiB, got %lld", msg_size);
    if (provided < MPI_THREAD_MULTIPLE)
        cs_die("the MPI library does not provide MPI_THREAD_MULTIPLE (got level %d)", provided);
    if (size != 2)
        cs_die("needs exactly 2 ranks (rank 0 sends, rank 1 receives), got %d", size);
    int max_threads = 0;
    for (int k = 0; k < ncounts; k++)
        max_threads = counts[k] > max_threads ? counts[k] : max_threads;
    if ((double)window * msg_size * max_threads > (double)(1LL << 32))
        cs_die("--window x --size x threads: receive buffers of %.0f bytes exceed 4 GiB",
               (double)window * msg_size * max_threads);

    /* comms[0]: the shared communicator; comms[1 + t]: thread t's own. */
    MPI_Comm ctl, comms[MAX_THREADS + 1];
    MPI_Comm_dup(MPI_COMM_WORLD, &ctl);
    for (int c = 0; c <= max_threads; c++)
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[c]);
    cs_place_t places[2];
    cs_place_allgather(ctl, places);
    omp_set_dynamic(0); /* exactly the thread counts asked for */

    MPI_T_pvar_session session = MPI_T_PVAR_SESSION_NULL;
    qpvar_t q_posted, q_unexp;
    q_posted.index = q_unexp.index = -1;
    int tprov;
    if (rank == 1 && MPI_T_init_thread(MPI_THREAD_MULTIPLE, &tprov) == MPI_SUCCESS &&
        MPI_T_pvar_session_create(&session) == MPI_SUCCESS) {
        qpvar_open(&q_posted, session, "pml_ob1_posted_recvq_length", comms, max_threads + 1);
        qpvar_open(&q_unexp, session, "pml_ob1_unexpected_msgq_length", comms, max_threads + 1);
    }
    int have_pvars = q_unexp.index >= 0;
    MPI_Bcast(&have_pvars, 1, MPI_INT, 1, ctl);

    char **bufs = cs_xmalloc(sizeof(char *) * max_threads);
    MPI_Request **reqs = cs_xmalloc(sizeof(MPI_Request *) * max_threads);
    for (int t = 0; t < max_threads; t++) {
        size_t n = rank == 0 ? (size_t)msg_size : (size_t)window * msg_size;
        bufs[t] = cs_xmalloc(n ? n : 1);
        memset(bufs[t], 'a', n ? n : 1);
        reqs[t] = cs_xmalloc(sizeof(MPI_Request) * window);
    }
    double times[MAX_THREADS];

    FILE *fthreads = NULL, *freps = NULL;
    if (rank == 0) {
        if (out) {
            cs_write_placement(out, places, 2);
            fthreads = cs_open_table(out, "threads.csv",
                                     "mode,threads,rep,thread,messages,size_bytes,time_s");
            freps = cs_open_table(out, "reps.csv",
                                  "mode,threads,rep,messages,size_bytes,window,iterations,time_s,"
                                  "posted_recvq_mean,posted_recvq_max,unexpected_msgq_mean,"
                                  "unexpected_msgq_max");
        }
        printf("# commscope multirate (Eberius 2020, Sec. 3.9.1), pairwise: rank 0 (%s cpu %d) threads send "
               "to rank 1 (%s cpu %d) threads; window %ld x %lld B, %ld timed + %ld warm-up "
               "windows, %d rep(s)\n",
               places[0].node, places[0].cpu, places[1].node, places[1].cpu, window, msg_size,
               iters, warmup, reps);
        printf("# ob1 queue-length pvars (receiver, sampled per window): %s\n",
               have_pvars ? "read" : "not available");
        printf("%-12s %7s %15s %15s %15s %15s %11s\n", "# Mode", "Threads", "Avg Rate(msg/s)",
               "Min Rate(msg/s)", "Max Rate(msg/s)", "Per Thread", "UnexpQ max");
        fflush(stdout);
    }

    long done = 0, total = (long)ncounts * reps * nmodes;
    double(*rates)[NMODES] = cs_xmalloc(sizeof(double[NMODES]) * reps);
    double unexp_max[NMODES];
    for (int k = 0; k < ncounts; k++) {
        int T = counts[k];
        for (int m = 0; m < nmodes; m++)
            unexp_max[m] = have_pvars ? 0 : NAN;
        for (int rep = 0; rep < reps; rep++) {
            for (int m = 0; m < nmodes; m++) {
                int mode = modes[m];
                double t0 = 0;
                stat_t posted = {0}, unexp = {0};
#pragma omp parallel num_threads(T)
                {
                    int t = omp_get_thread_num();
                    if (omp_get_num_threads() != T)
                        cs_die("asked for %d threads, got %d (OMP_THREAD_LIMIT?)", T,
                               omp_get_num_threads());
                    MPI_Comm comm = mode == MODE_SHARED ? comms[0] : comms[1 + t];
                    int tag = mode == MODE_SHARED ? t : 0, peer = 1 - rank;
                    for (long it = -warmup; it < iters; it++) {
                        if (it == 0) { /* timed part starts together on both ranks */
#pragma omp barrier
#pragma omp master
                            {
                                MPI_Barrier(ctl);
                                t0 = MPI_Wtime();
                            }
#pragma omp barrier
                        }
                        if (rank == 0) {
                            for (long w = 0; w < window; w++)
                                MPI_Isend(bufs[t], (int)msg_size, MPI_CHAR, peer, tag, comm,
                                          &reqs[t][w]);
                            MPI_Waitall((int)window, reqs[t], MPI_STATUSES_IGNORE);
                            MPI_Recv(NULL, 0, MPI_CHAR, peer, tag, comm, MPI_STATUS_IGNORE);
                        } else {
                            for (long w = 0; w < window; w++)
                                MPI_Irecv(bufs[t] + w * msg_size, (int)msg_size, MPI_CHAR, peer,
                                          tag, comm, &reqs[t][w]);
                            if (t == 0 && it >= 0 && have_pvars) {
                                int first = mode == MODE_SHARED ? 0 : 1;
                                int n = mode == MODE_SHARED ? 1 : T;
                                stat_add(&posted, qpvar_sum(&q_posted, session, first, n, peer));
                                stat_add(&unexp, qpvar_sum(&q_unexp, session, first, n, peer));
                            }
                            MPI_Waitall((int)window, reqs[t], MPI_STATUSES_IGNORE);
                            MPI_Send(NULL, 0, MPI_CHAR, peer, tag, comm);
                        }
                    }
                    times[t] = MPI_Wtime() - t0;
                }
                double wall = 0;
                for (int t = 0; t < T; t++)
                    wall = times[t] > wall ? times[t] : wall;
                double q[4] = {NAN, NAN, NAN, NAN};
                if (rank == 1) {
                    if (posted.n) {
                        q[0] = posted.sum / posted.n;
                        q[1] = posted.max;
                        q[2] = unexp.sum / unexp.n;
                        q[3] = unexp.max;
                    }
                    MPI_Send(q, 4, MPI_DOUBLE, 0, 1, ctl);
                } else {
                    MPI_Recv(q, 4, MPI_DOUBLE, 1, 1, ctl, MPI_STATUS_IGNORE);
                    long msgs = (long)T * window * iters;
                    rates[rep][m] = msgs / wall;
                    if (have_pvars && q[3] > unexp_max[m])
                        unexp_max[m] = q[3];
                    if (fthreads)
                        for (int t = 0; t < T; t++)
                            cs_row(fthreads, "%s,%d,%d,%d,%ld,%lld,%.9e\n", MODE_NAMES[mode], T,
                                   rep, t, window * iters, msg_size, times[t]);
                    if (freps)
                        cs_row(freps, "%s,%d,%d,%ld,%lld,%ld,%ld,%.9e,%.6g,%.6g,%.6g,%.6g\n",
                               MODE_NAMES[mode], T, rep, msgs, msg_size, window, iters, wall,
                               q[0], q[1], q[2], q[3]);
                    cs_progress(++done, total, "repetition");
                }
            }
        }
        if (rank == 0) {
            for (int m = 0; m < nmodes; m++) {
                double r[reps], sum, lo, hi;
                for (int rep = 0; rep < reps; rep++)
                    r[rep] = rates[rep][m];
                cs_sum_min_max(r, reps, &sum, &lo, &hi);
                printf("%-12s %7d %15.0f %15.0f %15.0f %15.0f %11.0f\n", MODE_NAMES[modes[m]], T,
                       sum / reps, lo, hi, sum / reps / T, unexp_max[m]);
            }
            fflush(stdout);
        }
    }
    if (fthreads)
        cs_close_table(fthreads);
    if (freps)
        cs_close_table(freps);
    if (session != MPI_T_PVAR_SESSION_NULL) {
        for (int c = 0; c <= max_threads; c++) {
            if (q_posted.index >= 0 && q_posted.ok[c])
                MPI_T_pvar_handle_free(session, &q_posted.handle[c]);
            if (q_unexp.index >= 0 && q_unexp.ok[c])
                MPI_T_pvar_handle_free(session, &q_unexp.handle[c]);
        }
        MPI_T_pvar_session_free(&session);
        MPI_T_finalize();
    }
    for (int t = 0; t < max_threads; t++) {
        free(bufs[t]);
        free(reqs[t]);
    }
    free(bufs);
    free(reqs);
    free(rates);
    for (int c = 0; c <= max_threads; c++)
        MPI_Comm_free(&comms[c]);
    MPI_Comm_free(&ctl);
    MPI_Finalize();
    return 0;
}
