/* commscope bsp: the bulk-synchronous variability harness of Dominguez-Trujillo
 * (2021, Sec. 3.3.1).
 *
 * k intervals of  MPI_Barrier | workload [+ 2-D halo exchange] | MPI_Barrier.
 * Each rank times its workload and its halo exchange between the two barriers
 * (interval_s = workload_s + halo_s, the "time between synchronization points")
 * and the time it then waits in the closing barrier (barrier_s, Sec. 3.3.4).
 * Rank 0 takes the per-interval maximum with MPI_Reduce (MPI_MAXLOC, so the
 * slowest rank is known too) and writes it at once; the per-rank rows are
 * gathered every --flush-every intervals, so a killed run keeps what it measured.
 *
 * Workloads (Table 3.1):
 *   ftq    spin for a time drawn from a distribution (seconds)
 *   fwq    a drawn number of integer additions
 *   dgemm  C = A B through the linked CBLAS (single-threaded), N x N
 *   spmv   y = A x, A the 5-point 2-D Laplacian of an N x N grid in CSR
 * Every operand has known entries so the recorded checksums can be verified:
 * checksum = sum_k v[k] (1 + k%17) over the result (C row-major, or y); for fwq
 * it is sum_{i<n} (i & 1023).
 *
 * The halo: ranks form a periodic 2-D Cartesian grid (MPI_Cart_create over
 * MPI_Dims_create), so every rank has 4 neighbours; it sends --halo-bytes to
 * each and receives as much from each.  Element j of the message that rank s
 * sends in interval i is (s+1)*HALO_RANK_W + (i+1)*HALO_ITER_W + j%13, which the
 * receiver checks (halo_bad counts mismatches, halo_sum sums what arrived).
 *
 * Tables in --out DIR: intervals.csv (one row per interval and rank),
 * maxima.csv (one row per interval), neighbors.csv, placement.csv.
 */
#include "cs_common.h"
#include "cs_bsp_options.h" /* generated from src/commscope/benchspec/bsp.py */

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef CS_HAVE_BLAS
#include <cblas.h>
#define CS_CAT_(a, b) a##b
#define CS_CAT(a, b) CS_CAT_(a, b)
/* The scipy-openblas32 wheel prefixes every symbol with "scipy_". */
#define CS_BLAS(name) CS_CAT(CS_BLAS_PREFIX, name)
#endif

#define HALO_RANK_W CS_BSP_HALO_RANK_W /* shared with the Python checks (the descriptor) */
#define HALO_ITER_W CS_BSP_HALO_ITER_W

enum workload { W_FTQ,
                W_FWQ,
                W_DGEMM,
                W_SPMV };
#define workload_names cs_bsp_workload_names /* the descriptor's names, in this order */
enum dist { D_CONSTANT,
            D_NORMAL,
            D_UNIFORM,
            D_EXPONENTIAL,
            D_LOGNORMAL };
#define dist_names cs_bsp_dist_names

/* --- random numbers: one splitmix64 stream per rank, seeded in main -------- */
static uint64_t rng_state;

/* A draw with the given mean and standard deviation, clamped at 0 (a time or a
 * count cannot be negative). */
static double draw(enum dist d, double mean, double sd)
{
    double v = mean;
    switch (d) {
    case D_CONSTANT: v = mean; break;
    case D_NORMAL: v = mean + sd * cs_normal(&rng_state); break;
    case D_UNIFORM: v = mean + sd * sqrt(3.0) * (2.0 * cs_uniform01(&rng_state) - 1.0); break;
    /* shifted so that both mean and sd hold: mean - sd + Exp(scale sd), sd <= mean */
    case D_EXPONENTIAL: v = mean - sd - sd * log(cs_uniform01(&rng_state)); break;
    case D_LOGNORMAL: {
        double s2 = log(1.0 + (sd * sd) / (mean * mean));
        v = exp(log(mean) - 0.5 * s2 + sqrt(s2) * cs_normal(&rng_state));
        break;
    }
    }
    return v > 0 ? v : 0;
}

/* --- workloads ----------------------------------------------------------- */

/* FWQ: n integer additions; the empty asm keeps the compiler from folding the
 * loop into a closed form.  Returns sum of (i & 1023) so the work is checkable. */
static uint64_t fwq(uint64_t n)
{
    uint64_t acc = 0;
    for (uint64_t i = 0; i < n; i++) {
        acc += i & 1023;
        __asm__ volatile(""
                         : "+r"(acc));
    }
    return acc;
}

typedef struct {
    int n; /* grid side: n*n rows */
    long nnz;
    long *rowptr;
    int *col;
    double *val;
    double *x, *y;
} csr_t;

/* 5-point Laplacian (4 on the diagonal, -1 to each grid neighbour, Dirichlet
 * boundary) of an n x n grid, row i*n+j. */
static void spmv_setup(csr_t *a, int n)
{
    long rows = (long)n * n;
    a->n = n;
    a->rowptr = malloc(sizeof(long) * (rows + 1));
    a->col = malloc(sizeof(int) * rows * 5);
    a->val = malloc(sizeof(double) * rows * 5);
    a->x = malloc(sizeof(double) * rows);
    a->y = malloc(sizeof(double) * rows);
    if (!a->rowptr || !a->col || !a->val || !a->x || !a->y)
        cs_die("spmv: cannot allocate a %d x %d grid", n, n);
    long k = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            long r = (long)i * n + j;
            a->rowptr[r] = k;
            if (i > 0) a->col[k] = (int)(r - n), a->val[k++] = -1.0;
            if (j > 0) a->col[k] = (int)(r - 1), a->val[k++] = -1.0;
            a->col[k] = (int)r, a->val[k++] = 4.0;
            if (j < n - 1) a->col[k] = (int)(r + 1), a->val[k++] = -1.0;
            if (i < n - 1) a->col[k] = (int)(r + n), a->val[k++] = -1.0;
            a->x[r] = (double)(r % 7 + 1); /* known input: 1..7 repeating */
        }
    a->rowptr[rows] = k;
    a->nnz = k;
}

static double spmv(csr_t *a, int reps)
{
    long rows = (long)a->n * a->n;
    double sum = 0;
    for (int rep = 0; rep < reps; rep++) {
        for (long r = 0; r < rows; r++) {
            double s = 0;
            for (long k = a->rowptr[r]; k < a->rowptr[r + 1]; k++)
                s += a->val[k] * a->x[a->col[k]];
            a->y[r] = s;
        }
    }
    for (long r = 0; r < rows; r++)
        sum += a->y[r] * (double)(1 + r % 17);
    return sum;
}

typedef struct {
    int n;
    double *a, *b, *c;
} gemm_t;

/* Known entries (row-major): A[i][j] = ((i*7 + j*3) % 11 - 5) / 8,
 * B[i][j] = ((i*5 + j*2) % 9 - 4) / 4; the checksum is sum_k C[k] (1 + k%17) over
 * the row-major elements (a weighted sum, so compensating errors do not hide). */
static void dgemm_setup(gemm_t *g, int n)
{
    size_t nn = (size_t)n * n;
    g->n = n;
    g->a = malloc(sizeof(double) * nn);
    g->b = malloc(sizeof(double) * nn);
    g->c = malloc(sizeof(double) * nn);
    if (!g->a || !g->b || !g->c)
        cs_die("dgemm: cannot allocate three %d x %d matrices", n, n);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            g->a[(size_t)i * n + j] = ((i * 7 + j * 3) % 11 - 5) / 8.0;
            g->b[(size_t)i * n + j] = ((i * 5 + j * 2) % 9 - 4) / 4.0;
        }
}

static double dgemm(gemm_t *g, int reps)
{
#ifdef CS_HAVE_BLAS
    int n = g->n;
    for (int rep = 0; rep < reps; rep++)
        CS_BLAS(cblas_dgemm)(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, g->a, n,
                             g->b, n, 0.0, g->c, n);
    double sum = 0;
    for (size_t k = 0; k < (size_t)n * n; k++)
        sum += g->c[k] * (double)(1 + k % 17);
    return sum;
#else
    (void)g;
    (void)reps;
    cs_die("dgemm: cs_bsp was built without a CBLAS (configure with COMMSCOPE_BLAS_*)");
    return 0;
#endif
}

/* --- halo ---------------------------------------------------------------- */

typedef struct {
    MPI_Comm cart;
    int count;  /* doubles per message */
    int nbr[4]; /* x-, x+, y-, y+ */
    double *send[4], *recv[4];
} halo_t;

static const char *dir_names[4] = {"x-", "x+", "y-", "y+"};

static void halo_setup(halo_t *h, long long bytes, int size)
{
    int dims[2] = {0, 0}, periods[2] = {1, 1};
    MPI_Dims_create(size, 2, dims);
    /* reorder = 0: the grid rank is the world rank, so tables stay comparable */
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &h->cart);
    MPI_Cart_shift(h->cart, 0, 1, &h->nbr[0], &h->nbr[1]);
    MPI_Cart_shift(h->cart, 1, 1, &h->nbr[2], &h->nbr[3]);
    h->count = (int)(bytes / 8);
    for (int d = 0; d < 4; d++) {
        h->send[d] = malloc(sizeof(double) * (h->count ? h->count : 1));
        h->recv[d] = malloc(sizeof(double) * (h->count ? h->count : 1));
        if (!h->send[d] || !h->recv[d])
            cs_die("halo: cannot allocate %lld-byte buffers", bytes);
    }
}

/* Exchange with the 4 neighbours.  A message travelling towards + in dimension
 * m has tag 2m, towards - tag 2m+1, so the two messages between the same pair
 * of ranks (2 ranks along a periodic dimension) cannot be confused. */
static void halo_exchange(halo_t *h, int rank, long interval, double *sum, long *bad)
{
    MPI_Request req[8];
    int n = h->count;
    double base = (rank + 1) * HALO_RANK_W + (interval + 1) * HALO_ITER_W;
    for (int d = 0; d < 4; d++)
        for (int j = 0; j < n; j++)
            h->send[d][j] = base + j % 13;
    for (int d = 0; d < 4; d++) {
        int m = d / 2, plus_side = d % 2;
        /* from the - neighbour comes a message travelling towards + (tag 2m) */
        int tag = plus_side ? 2 * m + 1 : 2 * m;
        MPI_Irecv(h->recv[d], n, MPI_DOUBLE, h->nbr[d], tag, h->cart, &req[d]);
    }
    for (int d = 0; d < 4; d++) {
        int m = d / 2, plus_side = d % 2;
        int tag = plus_side ? 2 * m : 2 * m + 1;
        MPI_Isend(h->send[d], n, MPI_DOUBLE, h->nbr[d], tag, h->cart, &req[4 + d]);
    }
    MPI_Waitall(8, req, MPI_STATUSES_IGNORE);
    *sum = 0;
    *bad = 0;
    for (int d = 0; d < 4; d++) {
        double nb = (h->nbr[d] + 1) * HALO_RANK_W + (interval + 1) * HALO_ITER_W;
        for (int j = 0; j < n; j++) {
            *sum += h->recv[d][j];
            *bad += h->recv[d][j] != nb + j % 13;
        }
    }
}

/* --- driver -------------------------------------------------------------- */

typedef struct {
    double workload_s, halo_s, barrier_s, interval_s;
    double requested_s, requested_ops, checksum, halo_sum;
    double halo_bad;
} row_t;
#define ROW_DOUBLES ((int)(sizeof(row_t) / sizeof(double)))

/* Everything the phases of a run share: the checked options, the workload
 * and halo state, the row buffers, the open tables and the running block. */
typedef struct {
    int rank, size;
    enum workload wl;
    enum dist dist;
    long intervals, warmup, flush_every, reps;
    long nsize; /* matrix or grid side */
    double mean, sd;
    long long halo_bytes;
    unsigned long long seed;
    const char *out;
    cs_place_t *places;
    gemm_t gemm;
    csr_t csr;
    halo_t halo;
    row_t *rows, *all; /* this rank's rows of the block; every rank's, on rank 0 */
    int *all_nbr;
    FILE *tab_iv, *tab_max;
    /* rank 0: the block since the last flush, and the whole run */
    double sum_max, total_max, sum_bar, block_max;
    long block_start;
} bench_t;

/* Copy the parsed options, check them, and fill in the defaults that depend
 * on the workload. */
static void take_options(bench_t *b, const cs_bsp_options_t *o)
{
    if (o->workload < 0)
        cs_die("--workload is required (ftq, fwq, dgemm or spmv)");
    b->wl = (enum workload)o->workload;
    b->dist = (enum dist)o->dist;
    b->intervals = o->intervals, b->warmup = o->warmup, b->flush_every = o->flush_every, b->reps = o->reps;
    b->nsize = o->dim;                /* 0: not given */
    b->mean = o->mean, b->sd = o->sd; /* NAN: not given */
    b->halo_bytes = o->halo_bytes;
    b->seed = (unsigned long long)o->seed;
    b->out = o->out;
    if (b->halo_bytes % 8)
        cs_die("--halo-bytes: expected a multiple of 8 bytes, got %lld", b->halo_bytes);
    if (isnan(b->mean))
        b->mean = b->wl == W_FTQ ? 0.01 : 5e6;
    if (isnan(b->sd))
        b->sd = b->mean / 10;
    if (b->dist == D_LOGNORMAL && b->mean <= 0)
        cs_die("--mean: the lognormal distribution needs a positive mean");
    if (b->nsize <= 0)
        b->nsize = b->wl == W_DGEMM ? 256 : 512;
    if (b->wl == W_SPMV && b->nsize * b->nsize > 0x7fffffffL / 5)
        cs_die("--dim: a %ld x %ld grid is too large for 32-bit column indices", b->nsize, b->nsize);
}

/* The workload's operands and the halo's grid and buffers. */
static void set_up_work(bench_t *b)
{
    if (b->wl == W_DGEMM) {
#ifdef CS_HAVE_BLAS
#ifdef CS_BLAS_OPENBLAS
        CS_BLAS(openblas_set_num_threads)(1); /* one core per rank, as in the thesis */
#endif
#else
        cs_die("--workload dgemm: cs_bsp was built without a CBLAS "
               "(configure with -DCOMMSCOPE_BLAS_INCLUDE_DIR/_LIB_DIR/_LIBRARY)");
#endif
        dgemm_setup(&b->gemm, (int)b->nsize);
    } else if (b->wl == W_SPMV) {
        spmv_setup(&b->csr, (int)b->nsize);
    }
    if (b->halo_bytes > 0)
        halo_setup(&b->halo, b->halo_bytes, b->size);
}

/* Row buffers for one flush block, and every rank's neighbours on rank 0. */
static void allocate_rows(bench_t *b)
{
    b->rows = malloc(sizeof(row_t) * b->flush_every);
    b->all = b->rank == 0 ? malloc(sizeof(row_t) * b->flush_every * b->size) : NULL;
    if (!b->rows || (b->rank == 0 && !b->all))
        cs_die("cannot allocate %ld rows", b->flush_every);
    /* neighbours of every rank, for the halo check */
    int nbr[4] = {-1, -1, -1, -1};
    if (b->halo_bytes > 0)
        memcpy(nbr, b->halo.nbr, sizeof nbr);
    b->all_nbr = b->rank == 0 ? malloc(sizeof(int) * 4 * b->size) : NULL;
    MPI_Gather(nbr, 4, MPI_INT, b->all_nbr, 4, MPI_INT, 0, MPI_COMM_WORLD);
}

/* Rank 0: placement, intervals.csv, maxima.csv and (with a halo) neighbors.csv. */
static void open_tables(bench_t *b)
{
    cs_write_placement(b->out, b->places, b->size);
    b->tab_iv = cs_open_table(b->out, "intervals.csv",
                              "interval,rank,host,workload_s,halo_s,barrier_s,interval_s,"
                              "requested_s,requested_ops,checksum,halo_sum,halo_bad");
    b->tab_max = cs_open_table(b->out, "maxima.csv",
                               "interval,max_interval_s,max_workload_s,argmax_rank,"
                               "wall_s,max_barrier_s");
    if (b->halo_bytes > 0) {
        FILE *f = cs_open_table(b->out, "neighbors.csv", "rank,direction,neighbor");
        for (int r = 0; r < b->size; r++)
            for (int d = 0; d < 4; d++)
                cs_row(f, "%d,%s,%d\n", r, dir_names[d], b->all_nbr[4 * r + d]);
        cs_close_table(f);
    }
}

/* Rank 0: the run's description and the column heads on stdout. */
static void print_header(const bench_t *b)
{
    printf("# commscope bsp (Dominguez-Trujillo 2021, Sec. 3.3): %d rank(s), workload %s",
           b->size, workload_names[b->wl]);
    if (b->wl == W_FTQ) {
        char t_mean[24], t_sd[24];
        printf(", %s(mean %s, sd %s)", dist_names[b->dist], cs_time_text(b->mean, t_mean, sizeof t_mean),
               cs_time_text(b->sd, t_sd, sizeof t_sd));
    } else if (b->wl == W_FWQ)
        printf(", %s(mean %g, sd %g) additions", dist_names[b->dist], b->mean, b->sd);
    else
        printf(", size %ld, reps %ld", b->nsize, b->reps);
    printf(", halo %lld B, seed %llu\n", b->halo_bytes, b->seed);
    printf("%-20s %16s %16s %16s\n", "# Intervals", "Avg Max", "Max Max",
           "Avg MaxBarr");
    fflush(stdout);
}

/* One interval: barrier, workload, halo, barrier.  Fills this rank's row and
 * returns the wall time from the first barrier's end to the second's. */
static double run_interval(bench_t *b, long it, row_t *row)
{
    *row = (row_t){0};
    row->requested_s = row->requested_ops = NAN;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    switch (b->wl) {
    case W_FTQ:
        row->requested_s = draw(b->dist, b->mean, b->sd);
        cs_spin(row->requested_s);
        break;
    case W_FWQ:
        row->requested_ops = floor(draw(b->dist, b->mean, b->sd) + 0.5);
        row->checksum = (double)fwq((uint64_t)row->requested_ops);
        break;
    case W_DGEMM: row->checksum = dgemm(&b->gemm, (int)b->reps); break;
    case W_SPMV: row->checksum = spmv(&b->csr, (int)b->reps); break;
    }
    double t1 = MPI_Wtime();
    if (b->halo_bytes > 0) {
        long bad = 0;
        halo_exchange(&b->halo, b->rank, it, &row->halo_sum, &bad);
        row->halo_bad = (double)bad;
    }
    double t2 = MPI_Wtime();
    MPI_Barrier(MPI_COMM_WORLD);
    double t3 = MPI_Wtime();
    row->workload_s = t1 - t0;
    row->halo_s = t2 - t1;
    row->interval_s = t2 - t0;
    row->barrier_s = t3 - t2;
    return t3 - t0;
}

/* The per-interval maximum, by reduction as in the thesis; rank 0 writes it
 * and adds it to the block. */
static void reduce_maxima(bench_t *b, long it, const row_t *row, double wall)
{
    struct {
        double v;
        int r;
    } mine = {row->interval_s, b->rank}, top;
    double wmax, bmax, mine_w[2] = {row->workload_s, row->barrier_s}, maxes[2];
    MPI_Reduce(&mine, &top, 1, MPI_DOUBLE_INT, MPI_MAXLOC, 0, MPI_COMM_WORLD);
    MPI_Reduce(mine_w, maxes, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    wmax = maxes[0];
    bmax = maxes[1];
    if (b->rank == 0) {
        if (b->tab_max)
            cs_row(b->tab_max, "%ld,%.9e,%.9e,%d,%.9e,%.9e\n", it, top.v, wmax, top.r,
                   wall, bmax);
        b->sum_max += top.v;
        b->total_max += top.v;
        b->block_max = top.v > b->block_max ? top.v : b->block_max;
        b->sum_bar += bmax;
    }
}

/* Rank 0: the gathered rows of a block of n intervals into intervals.csv. */
static void write_block_rows(bench_t *b, int n)
{
    FILE *tab_iv = b->tab_iv;
    for (int k = 0; k < n && tab_iv; k++)
        for (int r = 0; r < b->size; r++) {
            row_t *w = &b->all[(size_t)r * n + k];
            cs_row(tab_iv, "%ld,%d,%s,%.9e,%.9e,%.9e,%.9e,", b->block_start + k, r,
                   b->places[r].host, w->workload_s, w->halo_s, w->barrier_s,
                   w->interval_s);
            if (isnan(w->requested_s))
                cs_row(tab_iv, ",");
            else
                cs_row(tab_iv, "%.9e,", w->requested_s);
            if (isnan(w->requested_ops))
                cs_row(tab_iv, ",");
            else
                cs_row(tab_iv, "%.0f,", w->requested_ops);
            cs_row(tab_iv, "%.17g,%.17g,%.0f\n", w->checksum, w->halo_sum,
                   w->halo_bad);
        }
}

/* Gather the block that ends at interval it (n intervals) on rank 0, write
 * and echo it, and start the next block. */
static void flush_block(bench_t *b, long it, int n)
{
    MPI_Gather(b->rows, n * ROW_DOUBLES, MPI_DOUBLE, b->all, n * ROW_DOUBLES, MPI_DOUBLE, 0,
               MPI_COMM_WORLD);
    if (b->rank == 0) {
        write_block_rows(b, n);
        char label[64];
        snprintf(label, sizeof label, "%ld-%ld", b->block_start, it);
        char t_avg[24], t_max[24], t_bar[24];
        printf("%-20s %16s %16s %16s\n", label, cs_time_text(b->sum_max / n, t_avg, sizeof t_avg),
               cs_time_text(b->block_max, t_max, sizeof t_max),
               cs_time_text(b->sum_bar / n, t_bar, sizeof t_bar));
        fflush(stdout);
        cs_progress(it + 1, b->intervals, "intervals");
    }
    b->block_start = it + 1;
    b->sum_max = b->sum_bar = b->block_max = 0;
}

/* Warm-up, then every interval; a block is flushed every --flush-every
 * intervals and at the end, so a killed run keeps what it measured. */
static void run_intervals(bench_t *b)
{
    for (long it = -b->warmup; it < b->intervals; it++) {
        row_t row;
        double wall = run_interval(b, it, &row);
        if (it < 0)
            continue;
        reduce_maxima(b, it, &row, wall);
        long slot = (it - b->block_start);
        b->rows[slot] = row;
        if (slot + 1 == b->flush_every || it + 1 == b->intervals)
            flush_block(b, it, (int)(slot + 1));
    }
}

static void tear_down(bench_t *b)
{
    if (b->tab_iv)
        cs_close_table(b->tab_iv);
    if (b->tab_max)
        cs_close_table(b->tab_max);
    if (b->halo_bytes > 0) {
        for (int d = 0; d < 4; d++)
            free(b->halo.send[d]), free(b->halo.recv[d]);
        MPI_Comm_free(&b->halo.cart);
    }
    free(b->gemm.a), free(b->gemm.b), free(b->gemm.c);
    free(b->csr.rowptr), free(b->csr.col), free(b->csr.val), free(b->csr.x), free(b->csr.y);
    free(b->rows), free(b->all), free(b->all_nbr), free(b->places);
}

int main(int argc, char **argv)
{
    int rank, size, provided;
    cs_bsp_options_t o;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    cs_check_world();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int status = cs_bsp_parse_options(argc, argv, &o, rank);
    if (status >= 0)
        return status;
    bench_t b = {.rank = rank, .size = size};
    take_options(&b, &o);

    rng_state = b.seed + 0x632BE59BD9B4E019ULL * (uint64_t)rank;
    b.places = malloc(sizeof(cs_place_t) * size);
    cs_place_allgather(MPI_COMM_WORLD, b.places);
    set_up_work(&b);
    allocate_rows(&b);
    if (rank == 0) {
        if (b.out)
            open_tables(&b);
        print_header(&b);
    }
    run_intervals(&b);
    if (rank == 0) {
        char t_total[24];
        printf("# runtime (sum of interval maxima): %s over %ld intervals\n",
               cs_time_text(b.total_max, t_total, sizeof t_total),
               b.intervals);
        fflush(stdout);
    }
    tear_down(&b);
    MPI_Finalize();
    return 0;
}
