/* commscope multithreaded matching benchmark (Schonbein et al. 2018, Sec. 4.1).
 *
 * Two ranks in MPI_THREAD_MULTIPLE: rank 0 receives, rank 1 stands in for all
 * the neighbouring processes.  Per trial:
 *   1. T_r OpenMP threads on rank 0 pre-post M_t uniquely tagged MPI_Irecv's,
 *      each thread its own halo messages, in a free-for-all; an atomic counter
 *      taken at each post records the global post order (post_seq);
 *   2. rank 0 reads the ob1 queue-length pvars (Open MPI) through MPI_T;
 *   3. MPI_Barrier (on a duplicate of MPI_COMM_WORLD, so its messages never
 *      sit in the measured queues); rank 1's T_s threads then send, each thread
 *      its own tags in tag order; an atomic counter taken right before each
 *      send records the global send order (send_seq).  One communicator and one
 *      source: MPI's non-overtaking rule makes this the match order, up to the
 *      race between taking the counter and entering MPI_Send;
 *   4. rank 0 times the queue drain: barrier exit to all receives complete.
 * Which thread posts and which thread sends which tag comes from a plan file
 * written by the Python driver from the stencil model (commscope.models.stencil),
 * so the counts match the model by construction:
 *
 *   config,points,decomposition,tag,recv_thread,send_thread[,more columns, ignored]
 *
 * one row per message; tags 0..M_t-1 once each per config.  A receiving thread
 * posts its tags in the order of the rows; a sending thread sends its tags in
 * increasing order (the tag is the message's priority, 002: m_i before m_j for
 * i < j).  Several configs run in one job; --from-config K (a resumed sweep) skips
 * the configs before K and keeps the plan's numbering.
 * Warm-up trials (thread start-up) are run but not recorded.  A trial's order rows
 * are written before its trials row, so a complete trials row has its orders on disk.
 */
#include "cs_common.h"
#include "cs_mtmatch_options.h" /* generated from src/commscope/benchspec/mtmatch.py */

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#define LABEL_MAX 32

typedef struct {
    char points[LABEL_MAX], decomp[LABEL_MAX];
    int messages, threads_recv, threads_send;
    int *recv_thread, *send_thread; /* by tag */
    int **recv_list, **send_list;   /* per thread: tags in posting/sending order */
    int *recv_len, *send_len;
} config_t;

static int cmp_int(const void *a, const void *b)
{
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

/* One message of the plan, as written. */
typedef struct {
    int cfg, tag, rt, st;
    char pts[LABEL_MAX], dec[LABEL_MAX];
} plan_row_t;

/* The plan's rows in file order (a header line and blank lines skipped);
 * returns how many. */
static int read_rows(const char *path, plan_row_t **out)
{
    FILE *f = fopen(path, "r");
    char line[512];
    int nrows = 0, cap = 0, lineno = 0;
    plan_row_t *rows = NULL;
    if (!f)
        cs_die("--plan: cannot open %s", path);
    while (fgets(line, sizeof line, f)) {
        plan_row_t r;
        lineno++;
        if (lineno == 1 && strncmp(line, "config,", 7) == 0)
            continue;
        if (line[0] == '\n' || line[0] == '\0')
            continue;
        if (sscanf(line, "%d,%31[^,],%31[^,],%d,%d,%d", &r.cfg, r.pts, r.dec, &r.tag, &r.rt,
                   &r.st) != 6)
            cs_die("%s line %d: expected config,points,decomposition,tag,recv_thread,send_thread",
                   path, lineno);
        if (r.cfg < 0 || r.tag < 0 || r.rt < 0 || r.st < 0)
            cs_die("%s line %d: negative value", path, lineno);
        if (nrows == cap) {
            cap = cap ? 2 * cap : 1024;
            rows = realloc(rows, sizeof *rows * cap);
            if (!rows)
                cs_die("out of memory reading %s", path);
        }
        rows[nrows++] = r;
    }
    fclose(f);
    *out = rows;
    return nrows;
}

/* Read the plan; returns the number of configs. */
static int read_plan(const char *path, config_t **out)
{
    plan_row_t *rows;
    int nrows = read_rows(path, &rows), ncfg = 0;
    for (int i = 0; i < nrows; i++)
        ncfg = rows[i].cfg + 1 > ncfg ? rows[i].cfg + 1 : ncfg;
    if (nrows == 0)
        cs_die("%s: no messages in the plan", path);
    config_t *cfg = calloc(ncfg, sizeof *cfg);
    for (int i = 0; i < nrows; i++) {
        config_t *c = &cfg[rows[i].cfg];
        c->messages++;
        c->threads_recv = rows[i].rt + 1 > c->threads_recv ? rows[i].rt + 1 : c->threads_recv;
        c->threads_send = rows[i].st + 1 > c->threads_send ? rows[i].st + 1 : c->threads_send;
        strcpy(c->points, rows[i].pts);
        strcpy(c->decomp, rows[i].dec);
    }
    for (int k = 0; k < ncfg; k++) {
        config_t *c = &cfg[k];
        if (c->messages == 0)
            cs_die("%s: config %d has no messages (configs must be numbered 0..%d)", path, k,
                   ncfg - 1);
        c->recv_thread = cs_xmalloc(sizeof(int) * c->messages);
        c->send_thread = cs_xmalloc(sizeof(int) * c->messages);
        for (int t = 0; t < c->messages; t++)
            c->recv_thread[t] = -1;
        c->recv_len = calloc(c->threads_recv, sizeof(int));
        c->send_len = calloc(c->threads_send, sizeof(int));
        c->recv_list = cs_xmalloc(sizeof(int *) * c->threads_recv);
        c->send_list = cs_xmalloc(sizeof(int *) * c->threads_send);
        for (int t = 0; t < c->threads_recv; t++)
            c->recv_list[t] = cs_xmalloc(sizeof(int) * c->messages);
        for (int t = 0; t < c->threads_send; t++)
            c->send_list[t] = cs_xmalloc(sizeof(int) * c->messages);
    }
    for (int i = 0; i < nrows; i++) {
        config_t *c = &cfg[rows[i].cfg];
        int tag = rows[i].tag;
        if (tag >= c->messages || c->recv_thread[tag] >= 0)
            cs_die("%s: config %d: tags must be 0..%d, each once (tag %d)", path, rows[i].cfg,
                   c->messages - 1, tag);
        c->recv_thread[tag] = rows[i].rt;
        c->send_thread[tag] = rows[i].st;
        c->recv_list[rows[i].rt][c->recv_len[rows[i].rt]++] = tag;
        c->send_list[rows[i].st][c->send_len[rows[i].st]++] = tag;
    }
    for (int k = 0; k < ncfg; k++)
        for (int t = 0; t < cfg[k].threads_send; t++)
            qsort(cfg[k].send_list[t], cfg[k].send_len[t], sizeof(int), cmp_int);
    free(rows);
    *out = cfg;
    return ncfg;
}

/* An ob1 queue-length pvar bound to a communicator, read per peer. */
typedef struct {
    int ok, count, continuous;
    MPI_Datatype dt;
    MPI_T_pvar_handle handle;
} pvar_t;

static void pvar_open(pvar_t *p, MPI_T_pvar_session session, const char *want, MPI_Comm *comm)
{
    memset(p, 0, sizeof *p);
    int i = cs_pvar_index(want, MPI_T_BIND_MPI_COMM, &p->dt, &p->continuous);
    if (i < 0 || MPI_T_pvar_handle_alloc(session, i, comm, &p->handle, &p->count) != MPI_SUCCESS)
        return;
    if (!p->continuous && MPI_T_pvar_start(session, p->handle) != MPI_SUCCESS)
        return;
    p->ok = 1;
}

/* Entry `peer` of the pvar, NaN when unavailable. */
static double pvar_read(pvar_t *p, MPI_T_pvar_session session, int peer)
{
    if (!p->ok || peer >= p->count)
        return NAN;
    int tsize = 0;
    MPI_Type_size(p->dt, &tsize);
    unsigned char *buf = calloc(p->count, tsize > 0 ? tsize : 8);
    double v = NAN;
    if (MPI_T_pvar_read(session, p->handle, buf) == MPI_SUCCESS) {
        if (p->dt == MPI_DOUBLE)
            v = ((double *)buf)[peer];
        else if (p->dt == MPI_INT)
            v = ((int *)buf)[peer];
        else if (tsize == 4)
            v = ((unsigned *)buf)[peer];
        else if (tsize == 8)
            v = (double)((unsigned long long *)buf)[peer];
    }
    free(buf);
    return v;
}

/* Everything the phases of a run share: the checked options, the plan, the
 * buffers, the queue pvars, the open tables and the progress count. */
typedef struct {
    int rank;
    int trials, warmup, first; /* first: --from-config, a resumed sweep skips the configs before */
    long long msg_size;
    const char *out, *plan;
    config_t *cfg;
    int ncfg, max_msgs;
    MPI_Comm ctl; /* bookkeeping traffic stays out of MPI_COMM_WORLD's queues */
    cs_place_t places[2];
    char *rbuf, *sbuf;
    MPI_Request *reqs;
    int *post_seq, *send_seq; /* by tag: global post order (rank 0) and send order (rank 1) */
    MPI_T_pvar_session session;
    pvar_t q_posted, q_unexp;
    int have_t;
    FILE *ftrials, *forder;
    long done, total_trials;
} bench_t;

/* What rank 0 measured in one trial. */
typedef struct {
    double qp, qu, drain;
} trial_t;

/* Copy the parsed options and check them against the library and the world. */
static void take_options(bench_t *b, const cs_mtmatch_options_t *o, int provided, int size)
{
    b->out = o->out, b->plan = o->plan_file;
    b->trials = (int)o->trials, b->warmup = (int)o->warmup, b->first = (int)o->from_config;
    b->msg_size = o->size_bytes;
    if (b->msg_size > CS_MTMATCH_MAX_SIZE)
        cs_die("--size: expected a message size up to 1 MiB, got %lld", b->msg_size);
    if (provided < MPI_THREAD_MULTIPLE)
        cs_die("the MPI library does not provide MPI_THREAD_MULTIPLE (got level %d)", provided);
    if (size != 2)
        cs_die("needs exactly 2 ranks (receiver and sender), got %d", size);
    if (!b->plan)
        cs_die("--plan FILE is required (the Python driver writes it)");
}

/* Read the plan and check it against --from-config and MPI_TAG_UB. */
static void load_plan(bench_t *b)
{
    b->ncfg = read_plan(b->plan, &b->cfg);
    if (b->first >= b->ncfg)
        cs_die("--from-config %d: the plan has configs 0..%d", b->first, b->ncfg - 1);
    for (int k = 0; k < b->ncfg; k++)
        b->max_msgs = b->cfg[k].messages > b->max_msgs ? b->cfg[k].messages : b->max_msgs;
    int *tag_ub, flag;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
    if (flag && b->max_msgs - 1 > *tag_ub)
        cs_die("%d messages need tags up to %d but MPI_TAG_UB is %d", b->max_msgs, b->max_msgs - 1,
               *tag_ub);
}

static void allocate_buffers(bench_t *b)
{
    b->rbuf = cs_xmalloc((size_t)b->max_msgs * b->msg_size), b->sbuf = cs_xmalloc(b->msg_size);
    memset(b->sbuf, 'a', b->msg_size);
    b->reqs = cs_xmalloc(sizeof(MPI_Request) * b->max_msgs);
    b->post_seq = cs_xmalloc(sizeof(int) * b->max_msgs);
    b->send_seq = cs_xmalloc(sizeof(int) * b->max_msgs);
}

/* Queue lengths from the receiver's ob1 pvars (Open MPI only; NaN elsewhere). */
static void open_queue_pvars(bench_t *b)
{
    b->session = MPI_T_PVAR_SESSION_NULL;
    int tprov;
    if (b->rank == 0 && MPI_T_init_thread(MPI_THREAD_SINGLE, &tprov) == MPI_SUCCESS) {
        b->have_t = 1;
        MPI_Comm world = MPI_COMM_WORLD;
        if (MPI_T_pvar_session_create(&b->session) == MPI_SUCCESS) {
            pvar_open(&b->q_posted, b->session, "pml_ob1_posted_recvq_length", &world);
            pvar_open(&b->q_unexp, b->session, "pml_ob1_unexpected_msgq_length", &world);
        }
    }
}

/* Rank 0: placement, trials.csv and order.csv. */
static void open_tables(bench_t *b)
{
    cs_write_placement(b->out, b->places, 2);
    b->ftrials = cs_open_table(b->out, "trials.csv",
                               "config,trial,points,decomposition,threads_recv,threads_send,"
                               "messages,size_bytes,drain_time_s,ob1_posted_recvq_length,"
                               "ob1_unexpected_msgq_length");
    b->forder = cs_open_table(b->out, "order.csv",
                              "config,trial,tag,post_seq,send_seq,recv_thread,send_thread");
}

/* Rank 0: the run's description and the column heads on stdout. */
static void print_header(const bench_t *b)
{
    const cs_place_t *places = b->places;
    printf("# commscope multithreaded matching (Schonbein et al. 2018, Sec. 4.1): rank 0 (%s cpu %d) receives, "
           "rank 1 (%s cpu %d) sends; %d recorded trial(s) after %d warm-up\n",
           places[0].node, places[0].cpu, places[1].node, places[1].cpu, b->trials, b->warmup);
    printf("# ob1 queue-length pvars: %s\n", b->q_posted.ok ? "read" : "not available");
    printf("%-8s %-6s %-10s %5s %5s %7s %15s %15s %15s %9s\n", "# Config", "Points",
           "Decomp", "T_r", "T_s", "M_t", "Avg Drain", "Min Drain", "Max Drain",
           "PostedQ");
    fflush(stdout);
}

/* Rank 0, steps 1-4: post in a free-for-all, read the queues, time the drain,
 * then learn the send order. */
static void receive_trial(bench_t *b, const config_t *c, trial_t *tr)
{
    int seq = 0;
    long long msg_size = b->msg_size;
#pragma omp parallel num_threads(c->threads_recv)
    {
        int t = omp_get_thread_num();
        if (omp_get_num_threads() != c->threads_recv)
            cs_die("asked for %d receiving threads, got %d (OMP_THREAD_LIMIT?)",
                   c->threads_recv, omp_get_num_threads());
        for (int i = 0; i < c->recv_len[t]; i++) {
            int tag = c->recv_list[t][i], my;
#pragma omp atomic capture
            my = seq++;
            b->post_seq[tag] = my;
            MPI_Irecv(b->rbuf + (size_t)tag * msg_size, (int)msg_size, MPI_CHAR, 1, tag,
                      MPI_COMM_WORLD, &b->reqs[tag]);
        }
    }
    /* Everything is posted and nothing sent yet: the queues as the sender finds them. */
    tr->qp = pvar_read(&b->q_posted, b->session, 1);
    tr->qu = pvar_read(&b->q_unexp, b->session, 1);
    MPI_Barrier(b->ctl); /* on ctl: its messages stay out of the measured queues */
    double t0 = MPI_Wtime();
    MPI_Waitall(c->messages, b->reqs, MPI_STATUSES_IGNORE);
    tr->drain = MPI_Wtime() - t0;
    MPI_Recv(b->send_seq, c->messages, MPI_INT, 1, 3, b->ctl, MPI_STATUS_IGNORE);
}

/* Rank 1, step 3: every thread sends its tags in order; then the send order
 * to rank 0. */
static void send_trial(bench_t *b, const config_t *c)
{
    int seq = 0;
    MPI_Barrier(b->ctl); /* on ctl: its messages stay out of the measured queues */
#pragma omp parallel num_threads(c->threads_send)
    {
        int t = omp_get_thread_num();
        if (omp_get_num_threads() != c->threads_send)
            cs_die("asked for %d sending threads, got %d (OMP_THREAD_LIMIT?)",
                   c->threads_send, omp_get_num_threads());
        for (int i = 0; i < c->send_len[t]; i++) {
            int tag = c->send_list[t][i], my;
#pragma omp atomic capture
            my = seq++;
            b->send_seq[tag] = my;
            MPI_Send(b->sbuf, (int)b->msg_size, MPI_CHAR, 0, tag, MPI_COMM_WORLD);
        }
    }
    MPI_Send(b->send_seq, c->messages, MPI_INT, 0, 3, b->ctl);
}

/* Rank 0: a recorded trial's order rows, then its trials row. */
static void write_trial(bench_t *b, int k, int trial, const trial_t *tr)
{
    const config_t *c = &b->cfg[k];
    if (b->forder) /* first: a written trials row implies its order rows */
        for (int tag = 0; tag < c->messages; tag++)
            cs_row(b->forder, "%d,%d,%d,%d,%d,%d,%d\n", k, trial, tag,
                   b->post_seq[tag], b->send_seq[tag], c->recv_thread[tag],
                   c->send_thread[tag]);
    if (b->ftrials)
        cs_row(b->ftrials, "%d,%d,%s,%s,%d,%d,%d,%lld,%.9e,%.17g,%.17g\n", k, trial,
               c->points, c->decomp, c->threads_recv, c->threads_send,
               c->messages, b->msg_size, tr->drain, tr->qp, tr->qu);
}

/* Warm-up and recorded trials of config k; rank 0 echoes the config's line. */
static void run_config(bench_t *b, int k)
{
    config_t *c = &b->cfg[k];
    double sum = 0, lo = INFINITY, hi = 0, qlen = NAN;
    for (int trial = -b->warmup; trial < b->trials; trial++) {
        trial_t tr = {NAN, NAN, 0};
        MPI_Barrier(b->ctl);
        if (b->rank == 0)
            receive_trial(b, c, &tr);
        else
            send_trial(b, c);
        if (b->rank == 0) {
            if (trial >= 0) {
                sum += tr.drain;
                lo = tr.drain < lo ? tr.drain : lo;
                hi = tr.drain > hi ? tr.drain : hi;
                qlen = tr.qp;
                write_trial(b, k, trial, &tr);
            }
            cs_progress(++b->done, b->total_trials, "trial");
        }
    }
    if (b->rank == 0) {
        char t_avg[24], t_lo[24], t_hi[24];
        printf("%-8d %-6s %-10s %5d %5d %7d %15s %15s %15s %9.0f\n", k, c->points,
               c->decomp, c->threads_recv, c->threads_send, c->messages,
               cs_time_text(sum / b->trials, t_avg, sizeof t_avg),
               cs_time_text(lo, t_lo, sizeof t_lo), cs_time_text(hi, t_hi, sizeof t_hi), qlen);
        fflush(stdout);
    }
}

static void free_plan(config_t *cfg, int ncfg)
{
    for (int k = 0; k < ncfg; k++) {
        for (int t = 0; t < cfg[k].threads_recv; t++)
            free(cfg[k].recv_list[t]);
        for (int t = 0; t < cfg[k].threads_send; t++)
            free(cfg[k].send_list[t]);
        free(cfg[k].recv_list);
        free(cfg[k].send_list);
        free(cfg[k].recv_len);
        free(cfg[k].send_len);
        free(cfg[k].recv_thread);
        free(cfg[k].send_thread);
    }
    free(cfg);
}

static void tear_down(bench_t *b)
{
    if (b->ftrials)
        cs_close_table(b->ftrials);
    if (b->forder)
        cs_close_table(b->forder);
    if (b->have_t) {
        if (b->session != MPI_T_PVAR_SESSION_NULL)
            MPI_T_pvar_session_free(&b->session);
        MPI_T_finalize();
    }
    free_plan(b->cfg, b->ncfg);
    free(b->rbuf);
    free(b->sbuf);
    free(b->reqs);
    free(b->post_seq);
    free(b->send_seq);
    MPI_Comm_free(&b->ctl);
}

int main(int argc, char **argv)
{
    int rank, size, provided;
    cs_mtmatch_options_t o;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    cs_check_world();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int status = cs_mtmatch_parse_options(argc, argv, &o, rank);
    if (status >= 0)
        return status;
    bench_t b = {.rank = rank};
    take_options(&b, &o, provided, size);
    load_plan(&b);

    MPI_Comm_dup(MPI_COMM_WORLD, &b.ctl);
    cs_place_allgather(b.ctl, b.places);
    omp_set_dynamic(0); /* exactly the thread counts asked for */
    allocate_buffers(&b);
    open_queue_pvars(&b);
    if (rank == 0) {
        if (b.out)
            open_tables(&b);
        print_header(&b);
    }
    b.total_trials = (long)(b.ncfg - b.first) * (b.trials + b.warmup);
    for (int k = b.first; k < b.ncfg; k++)
        run_config(&b, k);
    tear_down(&b);
    MPI_Finalize();
    return 0;
}
