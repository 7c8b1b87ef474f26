/* commscope HighVolumePingPong (Bienz, Gropp & Olson, EuroMPI'18, Algorithm 1).
 *
 * A pair of ranks exchanges n messages of s bytes each way: the first rank
 * Isends n messages and Waitalls, then Irecvs n and Waitalls; its peer does the
 * same the other way round.  Receive tags are either the send tags in the same
 * order ("ordered": each arriving message matches the head of the queue, O(n)
 * search) or reversed ("reversed": every match walks the whole remaining
 * queue, O(n^2) search, 004 Sec. 4.1).  The time kept per repetition is half
 * the round trip measured on the initiating rank, as for ping-pong.
 *
 * Message counts come from --counts (the Python driver makes the log grid of
 * --messages MIN:MAX); sizes are fixed (--sizes, every count x every size) or follow a
 * constant total (--total-bytes B: s = B / n).  Both orders run for each
 * (n, s), interleaved, so they see the same machine state.
 *
 * --queues adds one untimed repetition per (n, s, order) in which every rank
 * reads Open MPI's ob1 queue-length pvars (MPI_T) around its receive phase:
 * the unexpected queue before it posts its n receives, and the posted and
 * unexpected queues right after (before its Waitall).  They say which queue the
 * search walked: messages that arrived first are searched by the receives in
 * the unexpected queue; receives posted first are searched by the arrivals in
 * the posted queue.  Written to queues.csv (NaN where the MPI has no such pvar).
 *
 * Pairs: by default rank i < P/2 pairs with rank i + P/2 (several pairs run
 * concurrently, like cs_pingpong).  --contention pairs whole nodes instead:
 * with N nodes (N even, >= 4) the j-th rank of node i (i < N/2) pairs with the
 * j-th rank of node i + N/2, so every byte crosses the middle of a line of
 * nodes (004 Fig. 6).
 */
#include "cs_common.h"
#include "cs_hvpingpong_options.h" /* generated from src/commscope/benchspec/hvpingpong.py */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BUFFER (1LL << 31) /* per direction: n * s bytes must fit one allocation */

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

/* An ob1 queue-length pvar bound to MPI_COMM_WORLD (Open MPI only); ok = 0 elsewhere. */
typedef struct {
    int ok, allocated, count, tsize;
    MPI_T_pvar_handle handle;
} qpvar_t;

static void qpvar_open(qpvar_t *q, MPI_T_pvar_session s, const char *want)
{
    MPI_Datatype dt;
    int continuous;
    MPI_Comm world = MPI_COMM_WORLD;
    memset(q, 0, sizeof *q);
    int i = cs_pvar_index(want, MPI_T_BIND_MPI_COMM, &dt, &continuous);
    if (i < 0 || MPI_T_pvar_handle_alloc(s, i, &world, &q->handle, &q->count) != MPI_SUCCESS)
        return;
    q->allocated = 1;
    if (!continuous && MPI_T_pvar_start(s, q->handle) != MPI_SUCCESS)
        return;
    MPI_Type_size(dt, &q->tsize);
    q->ok = q->tsize == 4 || q->tsize == 8;
}

/* Entry `peer` (queue length for messages from that rank), NaN when unavailable. */
static double qpvar_read(qpvar_t *q, MPI_T_pvar_session s, int peer, void *buf)
{
    if (!q->ok || peer >= q->count || MPI_T_pvar_read(s, q->handle, buf) != MPI_SUCCESS)
        return NAN;
    return q->tsize == 4 ? (double)((unsigned *)buf)[peer] : (double)((unsigned long long *)buf)[peer];
}

static const char *order_name[2] = {"ordered", "reversed"};

/* Everything the phases of a run share: the checked options, the pairing,
 * the buffers, the queue pvars and the open tables. */
typedef struct {
    int rank, size, pairs;
    int iters, warmup, min_messages, contention, queues;
    long long total; /* --total-bytes, or -1: fixed sizes */
    int do_order[2]; /* ordered, reversed */
    int ncounts, nsizes;
    long long counts[CS_HVPINGPONG_MAX_COUNTS], *sizes;
    const char *out;
    MPI_Comm ctl; /* bookkeeping traffic stays out of the measured communicator's queues */
    cs_place_t *places;
    int *peer, *initiator; /* per rank: its partner, and whether it sends first and keeps the time */
    int ninit, *inits;     /* the initiators, whose samples rank 0 collects */
    char *sbuf, *rbuf;
    MPI_Request *reqs;
    int *send_tags, *recv_tags;
    double *times, *all;
    MPI_T_pvar_session session;
    qpvar_t q_posted, q_unexp;
    unsigned long long qbuf[64];
    double qs[3], *qall;
    FILE *samples, *qfile;
} bench_t;

/* Copy the parsed options and check them against the world and MPI_TAG_UB. */
static void take_options(bench_t *b, cs_hvpingpong_options_t *o)
{
    b->out = o->out;
    b->iters = (int)o->iters, b->warmup = (int)o->warmup, b->min_messages = (int)o->min_messages;
    b->contention = o->contention, b->queues = o->queues;
    b->total = o->total_bytes > 0 ? o->total_bytes : -1;
    for (int k = 0; k < o->orders_count; k++)
        b->do_order[o->orders[k]] = 1;
    int ncounts = b->ncounts = o->counts_count;
    b->nsizes = o->sizes_count;
    long long *counts = b->counts;
    b->sizes = o->sizes;
    for (int k = 0; k < ncounts; k++)
        counts[k] = o->counts[k];
    if (b->size < 2 || b->size % 2)
        cs_die("needs an even number of ranks, got %d", b->size);
    if (ncounts == 0)
        cs_die("--counts N1,N2,... is required (the Python driver makes them from --messages)");
    qsort(counts, ncounts, sizeof counts[0], cmp_ll);
    if (counts[0] < 1)
        cs_die("--counts: message counts must be >= 1, got %lld", counts[0]);
    if (counts[ncounts - 1] > CS_HVPINGPONG_MAX_COUNT)
        cs_die("--counts: at most %d messages, got %lld", CS_HVPINGPONG_MAX_COUNT,
               counts[ncounts - 1]);
    if (b->min_messages > CS_HVPINGPONG_MAX_COUNT)
        cs_die("--min-messages: at most %d, got %d", CS_HVPINGPONG_MAX_COUNT, b->min_messages);
    if (b->total > 0)
        b->nsizes = 1; /* the size follows n */

    int *tag_ub, flag;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
    if (flag && counts[ncounts - 1] > *tag_ub)
        cs_die("%lld messages need tags up to %lld but MPI_TAG_UB is %d", counts[ncounts - 1],
               counts[ncounts - 1] - 1, *tag_ub);
}

/* --contention: nodes in order of first appearance; the j-th rank of node i
 * pairs with the j-th rank of node i + N/2. */
static void pair_across_nodes(bench_t *b)
{
    int size = b->size;
    const cs_place_t *places = b->places;
    int *node = malloc(sizeof(int) * size), *slot = malloc(sizeof(int) * size);
    int nnodes = 0, *per_node = calloc(size, sizeof(int));
    for (int r = 0; r < size; r++) {
        node[r] = -1;
        for (int q = 0; q < r && node[r] < 0; q++)
            if (strcmp(places[q].node, places[r].node) == 0)
                node[r] = node[q];
        if (node[r] < 0)
            node[r] = nnodes++;
        slot[r] = per_node[node[r]]++;
    }
    if (nnodes < 4 || nnodes % 2)
        cs_die("--contention needs an even number of nodes, at least 4 (ranks run on %d "
               "node%s): node i sends to node i + N/2 across the network (Bienz et al. 2018, Fig. 6)",
               nnodes, nnodes == 1 ? "" : "s");
    for (int i = 1; i < nnodes; i++)
        if (per_node[i] != per_node[0])
            cs_die("--contention needs the same number of ranks on every node "
                   "(node 0 has %d, node %d has %d)",
                   per_node[0], i, per_node[i]);
    for (int r = 0; r < size; r++) {
        int target = node[r] < nnodes / 2 ? node[r] + nnodes / 2 : node[r] - nnodes / 2;
        b->initiator[r] = node[r] < nnodes / 2;
        for (int q = 0; q < size; q++)
            if (node[q] == target && slot[q] == slot[r])
                b->peer[r] = q;
    }
    free(node);
    free(slot);
    free(per_node);
}

/* Pairing: peer[r], and whether r initiates; then the list of initiators. */
static void pair_ranks(bench_t *b)
{
    int size = b->size;
    b->peer = malloc(sizeof(int) * size), b->initiator = malloc(sizeof(int) * size);
    b->pairs = size / 2;
    if (!b->contention) {
        for (int r = 0; r < size; r++) {
            b->peer[r] = r < b->pairs ? r + b->pairs : r - b->pairs;
            b->initiator[r] = r < b->pairs;
        }
    } else {
        pair_across_nodes(b);
    }
}

/* Buffers for the largest n * s exchanged, and the samples of one cell. */
static void allocate_buffers(bench_t *b)
{
    long long max_bytes = 1, *counts = b->counts;
    for (int a = 0; a < b->ncounts; a++)
        for (int k = 0; k < b->nsizes; k++) {
            long long s = b->total > 0 ? b->total / counts[a] : b->sizes[k];
            if (counts[a] * s > max_bytes)
                max_bytes = counts[a] * s;
        }
    if (max_bytes > MAX_BUFFER)
        cs_die("n x s reaches %lld bytes per direction (limit %lld): lower --counts or --sizes",
               max_bytes, MAX_BUFFER);
    long long nmax_all = counts[b->ncounts - 1];
    b->sbuf = malloc(max_bytes), b->rbuf = malloc(max_bytes);
    b->reqs = malloc(sizeof(MPI_Request) * nmax_all);
    b->send_tags = malloc(sizeof(int) * nmax_all), b->recv_tags = malloc(sizeof(int) * nmax_all);
    /* A cell of n messages times max(iters, ceil(min_messages / n)) repetitions: a few
       repetitions of a few messages give a median that jumps between the two modes of
       a small exchange (receives posted before or after the messages arrive). */
    int max_reps = b->iters > b->min_messages ? b->iters : b->min_messages;
    b->times = malloc(sizeof(double) * max_reps);
    b->all = b->rank == 0 ? malloc(sizeof(double) * max_reps * b->size) : NULL;
    if (!b->sbuf || !b->rbuf || !b->reqs || !b->send_tags || !b->recv_tags || !b->times ||
        (b->rank == 0 && !b->all))
        cs_die("out of memory for %lld-byte buffers", max_bytes);
    memset(b->sbuf, 'a', max_bytes);

    b->inits = malloc(sizeof(int) * b->size);
    for (int r = 0; r < b->size; r++)
        if (b->initiator[r])
            b->inits[b->ninit++] = r;
}

/* Queue lengths (--queues): every rank reads its own ob1 pvars; rank 0 writes them. */
static void open_queue_pvars(bench_t *b)
{
    b->session = MPI_T_PVAR_SESSION_NULL;
    b->qs[0] = b->qs[1] = b->qs[2] = NAN;
    b->qall = b->rank == 0 ? malloc(sizeof(double) * 3 * b->size) : NULL;
    int tprov;
    if (b->queues && MPI_T_init_thread(MPI_THREAD_SINGLE, &tprov) == MPI_SUCCESS &&
        MPI_T_pvar_session_create(&b->session) == MPI_SUCCESS) {
        qpvar_open(&b->q_posted, b->session, "pml_ob1_posted_recvq_length");
        qpvar_open(&b->q_unexp, b->session, "pml_ob1_unexpected_msgq_length");
        if (b->q_posted.count > 64 || b->q_unexp.count > 64) /* one entry per peer: keep qbuf small */
            b->q_posted.ok = b->q_unexp.ok = 0;
    }
}

/* Rank 0: placement, samples.csv and (--queues) queues.csv. */
static void open_tables(bench_t *b)
{
    cs_write_placement(b->out, b->places, b->size);
    b->samples = cs_open_table(b->out, "samples.csv",
                               "n_messages,size_bytes,order,pair,rep,time_s,locality,pairs");
    if (b->queues)
        b->qfile = cs_open_table(b->out, "queues.csv",
                                 "n_messages,size_bytes,order,rank,initiator,"
                                 "unexpected_before_post,posted_after_post,"
                                 "unexpected_after_post");
}

/* Rank 0: the run's description, its pairs and the column heads on stdout. */
static void print_header(const bench_t *b)
{
    const cs_place_t *places = b->places;
    printf("# commscope HighVolumePingPong (Bienz et al. 2018, Algorithm 1), %d pair(s)%s, "
           "one-way time = round trip / 2\n",
           b->pairs, b->contention ? ", contention layout" : "");
    for (int p = 0; p < b->ninit; p++) {
        int x = b->inits[p], y = b->peer[x];
        printf("# pair %d: rank %d (%s cpu %d) <-> rank %d (%s cpu %d): %s\n", p, x,
               places[x].node, places[x].cpu, y, places[y].node, places[y].cpu,
               cs_locality(&places[x], &places[y]));
    }
    printf("%-10s %-12s %-9s %14s %14s %14s %6s\n", "# Messages", "Size", "Order",
           "Avg Time", "Min Time", "Max Time", "Iters");
    fflush(stdout);
}

/* Algorithm 1 for one cell: warm-up, reps timed repetitions into times[], and
 * with --queues one untimed repetition (r == reps) that reads the queue pvars. */
static void exchange(bench_t *b, int n, long long s, int order, int reps)
{
    int peer = b->peer[b->rank];
    for (int i = 0; i < n; i++) {
        b->send_tags[i] = i;
        b->recv_tags[i] = order == 0 ? i : n - 1 - i; /* reversed: recv_tags_i = send_tags_{n-i-1} */
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int r = -b->warmup; r < reps + b->queues; r++) {
        double t0 = MPI_Wtime();
        int sample = r == reps;
        for (int phase = 0; phase < 2; phase++) {
            /* initiator: send then receive; its peer the other way round */
            int sending = (phase == 0) == (b->initiator[b->rank] != 0);
            if (sample && !sending)
                b->qs[0] = qpvar_read(&b->q_unexp, b->session, peer, b->qbuf);
            for (int i = 0; i < n; i++) {
                if (sending)
                    MPI_Isend(b->sbuf + (size_t)i * s, (int)s, MPI_CHAR, peer,
                              b->send_tags[i], MPI_COMM_WORLD, &b->reqs[i]);
                else
                    MPI_Irecv(b->rbuf + (size_t)i * s, (int)s, MPI_CHAR, peer,
                              b->recv_tags[i], MPI_COMM_WORLD, &b->reqs[i]);
            }
            if (sample && !sending) {
                b->qs[1] = qpvar_read(&b->q_posted, b->session, peer, b->qbuf);
                b->qs[2] = qpvar_read(&b->q_unexp, b->session, peer, b->qbuf);
            }
            MPI_Waitall(n, b->reqs, MPI_STATUSES_IGNORE);
        }
        if (r >= 0 && r < reps)
            b->times[r] = (MPI_Wtime() - t0) / 2.0;
    }
}

/* --queues: every rank's three queue lengths to rank 0, into queues.csv. */
static void gather_queues(bench_t *b, int n, long long s, int order)
{
    double *qall = b->qall;
    MPI_Gather(b->qs, 3, MPI_DOUBLE, qall, 3, MPI_DOUBLE, 0, b->ctl);
    if (b->qfile)
        for (int q = 0; q < b->size; q++)
            cs_row(b->qfile, "%d,%lld,%s,%d,%d,%.0f,%.0f,%.0f\n", n, s, order_name[order],
                   q, b->initiator[q], qall[3 * q], qall[3 * q + 1], qall[3 * q + 2]);
}

/* Rank 0: the initiators' samples of a cell gathered, echoed and written. */
static void report_cell(bench_t *b, int n, long long s, int order, int reps)
{
    int ninit = b->ninit;
    double sum, lo, hi;
    for (int p = 0; p < ninit; p++) {
        double *dst = b->all + (size_t)p * reps;
        if (b->inits[p] == 0)
            memcpy(dst, b->times, sizeof(double) * reps);
        else
            MPI_Recv(dst, reps, MPI_DOUBLE, b->inits[p], 2, b->ctl,
                     MPI_STATUS_IGNORE);
    }
    cs_sum_min_max(b->all, (size_t)ninit * reps, &sum, &lo, &hi);
    char t_avg[24], t_lo[24], t_hi[24];
    printf("%-10d %-12lld %-9s %14s %14s %14s %6d\n", n, s, order_name[order],
           cs_time_text(sum / ((double)reps * ninit), t_avg, sizeof t_avg),
           cs_time_text(lo, t_lo, sizeof t_lo), cs_time_text(hi, t_hi, sizeof t_hi),
           reps);
    fflush(stdout);
    if (b->samples)
        for (int p = 0; p < ninit; p++) {
            const cs_place_t *x = &b->places[b->inits[p]], *y = &b->places[b->peer[b->inits[p]]];
            const char *loc = cs_locality(x, y);
            for (int r = 0; r < reps; r++)
                cs_row(b->samples, "%d,%lld,%s,%d,%d,%.9e,%s,%d\n", n, s,
                       order_name[order], p, r, b->all[(size_t)p * reps + r], loc,
                       b->pairs);
        }
}

/* Every (n, s) cell, both orders interleaved so they see the same machine state. */
static void sweep(bench_t *b)
{
    long done = 0, total_steps = (long)b->ncounts * b->nsizes;
    for (int a = 0; a < b->ncounts; a++) {
        int n = (int)b->counts[a];
        int reps = (int)((b->min_messages + n - 1) / n);
        if (reps < b->iters)
            reps = b->iters;
        for (int k = 0; k < b->nsizes; k++) {
            long long s = b->total > 0 ? b->total / n : b->sizes[k];
            if (s > 2147483647LL)
                cs_die("message size %lld does not fit an MPI count", s);
            for (int order = 0; order < 2; order++) {
                if (!b->do_order[order])
                    continue;
                exchange(b, n, s, order, reps);
                if (b->queues)
                    gather_queues(b, n, s, order);
                /* Initiators hold the samples; gather them on rank 0. */
                if (b->rank == 0)
                    report_cell(b, n, s, order, reps);
                else if (b->initiator[b->rank])
                    MPI_Send(b->times, reps, MPI_DOUBLE, 0, 2, b->ctl);
            }
            if (b->rank == 0)
                cs_progress(++done, total_steps, "messages");
        }
    }
}

static void tear_down(bench_t *b)
{
    if (b->samples)
        cs_close_table(b->samples);
    if (b->qfile)
        cs_close_table(b->qfile);
    if (b->session != MPI_T_PVAR_SESSION_NULL) {
        if (b->q_posted.allocated)
            MPI_T_pvar_handle_free(b->session, &b->q_posted.handle);
        if (b->q_unexp.allocated)
            MPI_T_pvar_handle_free(b->session, &b->q_unexp.handle);
        MPI_T_pvar_session_free(&b->session);
        MPI_T_finalize();
    }
    free(b->qall);
    free(b->sbuf);
    free(b->rbuf);
    free(b->reqs);
    free(b->send_tags);
    free(b->recv_tags);
    free(b->times);
    free(b->all);
    free(b->inits);
    free(b->peer);
    free(b->initiator);
    free(b->places);
    MPI_Comm_free(&b->ctl);
}

int main(int argc, char **argv)
{
    int rank, size, provided;
    cs_hvpingpong_options_t o;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    cs_check_world();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int status = cs_hvpingpong_parse_options(argc, argv, &o, rank);
    if (status >= 0)
        return status;
    bench_t b = {.rank = rank, .size = size};
    take_options(&b, &o);

    MPI_Comm_dup(MPI_COMM_WORLD, &b.ctl);
    b.places = malloc(sizeof(cs_place_t) * size);
    cs_place_allgather(MPI_COMM_WORLD, b.places);
    pair_ranks(&b);
    allocate_buffers(&b);
    open_queue_pvars(&b);
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
