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
    const char *out = o.out;
    int iters = (int)o.iters, warmup = (int)o.warmup, min_messages = (int)o.min_messages;
    int contention = o.contention, queues = o.queues;
    long long total = o.total_bytes > 0 ? o.total_bytes : -1;
    int do_order[2] = {0, 0}; /* ordered, reversed */
    for (int k = 0; k < o.orders_count; k++)
        do_order[o.orders[k]] = 1;
    int ncounts = o.counts_count, nsizes = o.sizes_count;
    long long counts[CS_HVPINGPONG_MAX_COUNTS], *sizes = o.sizes;
    for (int k = 0; k < ncounts; k++)
        counts[k] = o.counts[k];
    if (size < 2 || size % 2)
        cs_die("needs an even number of ranks, got %d", size);
    if (ncounts == 0)
        cs_die("--counts N1,N2,... is required (the Python driver makes them from --messages)");
    qsort(counts, ncounts, sizeof counts[0], cmp_ll);
    if (counts[0] < 1)
        cs_die("--counts: message counts must be >= 1, got %lld", counts[0]);
    if (counts[ncounts - 1] > CS_HVPINGPONG_MAX_COUNT)
        cs_die("--counts: at most %d messages, got %lld", CS_HVPINGPONG_MAX_COUNT,
               counts[ncounts - 1]);
    if (min_messages > CS_HVPINGPONG_MAX_COUNT)
        cs_die("--min-messages: at most %d, got %d", CS_HVPINGPONG_MAX_COUNT, min_messages);
    if (total > 0)
        nsizes = 1; /* the size follows n */

    int *tag_ub, flag;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
    if (flag && counts[ncounts - 1] > *tag_ub)
        cs_die("%lld messages need tags up to %lld but MPI_TAG_UB is %d", counts[ncounts - 1],
               counts[ncounts - 1] - 1, *tag_ub);

    MPI_Comm ctl; /* bookkeeping traffic stays out of the measured communicator's queues */
    MPI_Comm_dup(MPI_COMM_WORLD, &ctl);
    cs_place_t *places = malloc(sizeof(cs_place_t) * size);
    cs_place_allgather(MPI_COMM_WORLD, places);

    /* Pairing: peer[r], and whether r initiates (sends first and keeps the time). */
    int *peer = malloc(sizeof(int) * size), *initiator = malloc(sizeof(int) * size);
    int pairs = size / 2;
    if (!contention) {
        for (int r = 0; r < size; r++) {
            peer[r] = r < pairs ? r + pairs : r - pairs;
            initiator[r] = r < pairs;
        }
    } else {
        /* Nodes in order of first appearance; the j-th rank of node i pairs with
         * the j-th rank of node i + N/2. */
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
            initiator[r] = node[r] < nnodes / 2;
            for (int q = 0; q < size; q++)
                if (node[q] == target && slot[q] == slot[r])
                    peer[r] = q;
        }
        free(node);
        free(slot);
        free(per_node);
    }

    /* Buffers for the largest n * s exchanged. */
    long long max_bytes = 1;
    for (int a = 0; a < ncounts; a++)
        for (int b = 0; b < nsizes; b++) {
            long long s = total > 0 ? total / counts[a] : sizes[b];
            if (counts[a] * s > max_bytes)
                max_bytes = counts[a] * s;
        }
    if (max_bytes > MAX_BUFFER)
        cs_die("n x s reaches %lld bytes per direction (limit %lld): lower --counts or --sizes",
               max_bytes, MAX_BUFFER);
    long long nmax_all = counts[ncounts - 1];
    char *sbuf = malloc(max_bytes), *rbuf = malloc(max_bytes);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * nmax_all);
    int *send_tags = malloc(sizeof(int) * nmax_all), *recv_tags = malloc(sizeof(int) * nmax_all);
    /* A cell of n messages times max(iters, ceil(min_messages / n)) repetitions: a few
       repetitions of a few messages give a median that jumps between the two modes of
       a small exchange (receives posted before or after the messages arrive). */
    int max_reps = iters > min_messages ? iters : min_messages;
    double *times = malloc(sizeof(double) * max_reps);
    double *all = rank == 0 ? malloc(sizeof(double) * max_reps * size) : NULL;
    if (!sbuf || !rbuf || !reqs || !send_tags || !recv_tags || !times || (rank == 0 && !all))
        cs_die("out of memory for %lld-byte buffers", max_bytes);
    memset(sbuf, 'a', max_bytes);

    /* Rank 0 collects the initiators' samples: list them once. */
    int ninit = 0, *inits = malloc(sizeof(int) * size);
    for (int r = 0; r < size; r++)
        if (initiator[r])
            inits[ninit++] = r;

    /* Queue lengths (--queues): every rank reads its own ob1 pvars; rank 0 writes them. */
    MPI_T_pvar_session session = MPI_T_PVAR_SESSION_NULL;
    qpvar_t q_posted = {0}, q_unexp = {0};
    unsigned long long qbuf[64];
    double qs[3] = {NAN, NAN, NAN}, *qall = rank == 0 ? malloc(sizeof(double) * 3 * size) : NULL;
    int tprov;
    if (queues && MPI_T_init_thread(MPI_THREAD_SINGLE, &tprov) == MPI_SUCCESS &&
        MPI_T_pvar_session_create(&session) == MPI_SUCCESS) {
        qpvar_open(&q_posted, session, "pml_ob1_posted_recvq_length");
        qpvar_open(&q_unexp, session, "pml_ob1_unexpected_msgq_length");
        if (q_posted.count > 64 || q_unexp.count > 64) /* one entry per peer: keep qbuf small */
            q_posted.ok = q_unexp.ok = 0;
    }

    FILE *samples = NULL, *qfile = NULL;
    if (rank == 0) {
        if (out) {
            cs_write_placement(out, places, size);
            samples = cs_open_table(out, "samples.csv",
                                    "n_messages,size_bytes,order,pair,rep,time_s,locality,pairs");
            if (queues)
                qfile = cs_open_table(out, "queues.csv",
                                      "n_messages,size_bytes,order,rank,initiator,"
                                      "unexpected_before_post,posted_after_post,"
                                      "unexpected_after_post");
        }
        printf("# commscope HighVolumePingPong (Bienz et al. 2018, Algorithm 1), %d pair(s)%s, "
               "one-way time = round trip / 2\n",
               pairs, contention ? ", contention layout" : "");
        for (int p = 0; p < ninit; p++) {
            int a = inits[p], b = peer[a];
            printf("# pair %d: rank %d (%s cpu %d) <-> rank %d (%s cpu %d): %s\n", p, a,
                   places[a].node, places[a].cpu, b, places[b].node, places[b].cpu,
                   cs_locality(&places[a], &places[b]));
        }
        printf("%-10s %-12s %-9s %14s %14s %14s %6s\n", "# Messages", "Size", "Order",
               "Avg Time", "Min Time", "Max Time", "Iters");
        fflush(stdout);
    }

    static const char *order_name[2] = {"ordered", "reversed"};
    long done = 0, total_steps = (long)ncounts * nsizes;
    for (int a = 0; a < ncounts; a++) {
        int n = (int)counts[a];
        int reps = (int)((min_messages + n - 1) / n);
        if (reps < iters)
            reps = iters;
        for (int b = 0; b < nsizes; b++) {
            long long s = total > 0 ? total / n : sizes[b];
            if (s > 2147483647LL)
                cs_die("message size %lld does not fit an MPI count", s);
            for (int o = 0; o < 2; o++) {
                if (!do_order[o])
                    continue;
                for (int i = 0; i < n; i++) {
                    send_tags[i] = i;
                    recv_tags[i] = o == 0 ? i : n - 1 - i; /* reversed: recv_tags_i = send_tags_{n-i-1} */
                }
                MPI_Barrier(MPI_COMM_WORLD);
                /* r == reps: the untimed repetition that reads the queue pvars (--queues) */
                for (int r = -warmup; r < reps + queues; r++) {
                    double t0 = MPI_Wtime();
                    int sample = r == reps;
                    for (int phase = 0; phase < 2; phase++) {
                        /* initiator: send then receive; its peer the other way round */
                        int sending = (phase == 0) == (initiator[rank] != 0);
                        if (sample && !sending)
                            qs[0] = qpvar_read(&q_unexp, session, peer[rank], qbuf);
                        for (int i = 0; i < n; i++) {
                            if (sending)
                                MPI_Isend(sbuf + (size_t)i * s, (int)s, MPI_CHAR, peer[rank],
                                          send_tags[i], MPI_COMM_WORLD, &reqs[i]);
                            else
                                MPI_Irecv(rbuf + (size_t)i * s, (int)s, MPI_CHAR, peer[rank],
                                          recv_tags[i], MPI_COMM_WORLD, &reqs[i]);
                        }
                        if (sample && !sending) {
                            qs[1] = qpvar_read(&q_posted, session, peer[rank], qbuf);
                            qs[2] = qpvar_read(&q_unexp, session, peer[rank], qbuf);
                        }
                        MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
                    }
                    if (r >= 0 && r < reps)
                        times[r] = (MPI_Wtime() - t0) / 2.0;
                }
                if (queues) {
                    MPI_Gather(qs, 3, MPI_DOUBLE, qall, 3, MPI_DOUBLE, 0, ctl);
                    if (qfile)
                        for (int q = 0; q < size; q++)
                            cs_row(qfile, "%d,%lld,%s,%d,%d,%.0f,%.0f,%.0f\n", n, s, order_name[o],
                                   q, initiator[q], qall[3 * q], qall[3 * q + 1], qall[3 * q + 2]);
                }
                /* Initiators hold the samples; gather them on rank 0. */
                if (rank == 0) {
                    double sum, lo, hi;
                    for (int p = 0; p < ninit; p++) {
                        double *dst = all + (size_t)p * reps;
                        if (inits[p] == 0)
                            memcpy(dst, times, sizeof(double) * reps);
                        else
                            MPI_Recv(dst, reps, MPI_DOUBLE, inits[p], 2, ctl,
                                     MPI_STATUS_IGNORE);
                    }
                    cs_sum_min_max(all, (size_t)ninit * reps, &sum, &lo, &hi);
                    char t_avg[24], t_lo[24], t_hi[24];
                    printf("%-10d %-12lld %-9s %14s %14s %14s %6d\n", n, s, order_name[o],
                           cs_time_text(sum / ((double)reps * ninit), t_avg, sizeof t_avg),
                           cs_time_text(lo, t_lo, sizeof t_lo), cs_time_text(hi, t_hi, sizeof t_hi),
                           reps);
                    fflush(stdout);
                    if (samples)
                        for (int p = 0; p < ninit; p++) {
                            const char *loc = cs_locality(&places[inits[p]], &places[peer[inits[p]]]);
                            for (int r = 0; r < reps; r++)
                                cs_row(samples, "%d,%lld,%s,%d,%d,%.9e,%s,%d\n", n, s,
                                       order_name[o], p, r, all[(size_t)p * reps + r], loc,
                                       pairs);
                        }
                } else if (initiator[rank]) {
                    MPI_Send(times, reps, MPI_DOUBLE, 0, 2, ctl);
                }
            }
            if (rank == 0)
                cs_progress(++done, total_steps, "messages");
        }
    }
    if (samples)
        cs_close_table(samples);
    if (qfile)
        cs_close_table(qfile);
    if (session != MPI_T_PVAR_SESSION_NULL) {
        if (q_posted.allocated)
            MPI_T_pvar_handle_free(session, &q_posted.handle);
        if (q_unexp.allocated)
            MPI_T_pvar_handle_free(session, &q_unexp.handle);
        MPI_T_pvar_session_free(&session);
        MPI_T_finalize();
    }
    free(qall);
    free(sbuf);
    free(rbuf);
    free(reqs);
    free(send_tags);
    free(recv_tags);
    free(times);
    free(all);
    free(inits);
    free(peer);
    free(initiator);
    free(places);
    MPI_Comm_free(&ctl);
    MPI_Finalize();
    return 0;
}
