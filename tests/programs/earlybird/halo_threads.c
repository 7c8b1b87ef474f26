/* halo_threads: the bulk-synchronous halo harness of native/bench/bsp.c with the work
 * of each interval done by OpenMP threads of unequal speed, and its early-bird
 * (MPI-4 partitioned) variant.  A test program of scripts/earlybird_check.py.
 *
 * P ranks (2 or 4) on a periodic 2-D grid (MPI_Dims_create, as cs_bsp), T OpenMP
 * threads per rank (OMP_NUM_THREADS), N intervals of
 *
 *     MPI_Barrier | parallel region: thread t works U (1 + K t / (T-1)), then writes
 *                   its 1/T of every halo | halo exchange | MPI_Barrier
 *
 * (K = --imbalance: the last thread works (1+K)U, the first U; work is a timed spin,
 * diag.h).  Each direction's halo is --bytes (default 1 MiB).  The halos to one
 * neighbour rank travel as one message (on a periodic grid of 2 ranks in a dimension,
 * the - and + neighbours are the same rank); a direction whose neighbour is the rank
 * itself (a dimension of size 1) carries nothing.  A message is laid out partition by
 * partition: [thread][direction][bytes / T], so thread t's share is contiguous.
 *
 * Bulk (default): after the region the master thread posts MPI_Irecv and MPI_Isend to
 * every neighbour rank and MPI_Waitall, as cs_bsp's halo does.
 *
 * --partitioned: one MPI_Psend_init/MPI_Precv_init pair per neighbour rank with T
 * partitions, started before the region; each thread marks its partition of every
 * message ready (MPI_Pready) as soon as it has written it, then polls MPI_Parrived for
 * its partitions of the incoming messages (a finished thread drives the MPI's progress);
 * the master completes every request (MPI_Waitall) after the region.
 * --partitioned-wait: the same without the polling.  Received halos are checked (first
 * and last element of every direction's part of every partition); a wrong one stops the
 * program with status 1.
 *
 * Options: --iters N (default 100), --unit S (U, default 0.002), --imbalance K
 * (default 1), --bytes B (a multiple of 8 T), --partitioned, --partitioned-wait,
 * --thread-multiple (the bulk program under MPI_THREAD_MULTIPLE, which the partitioned
 * modes need: the cost of the thread level alone).
 */
#include "../diagnose/diag.h"

#include <omp.h>

#define DIRS 4

/* thread t of T works U (1 + K t / (T - 1)): the first U, the last (1 + K) U */
static double work_of(double U, double K, int t, int T)
{
    return U * (1.0 + (T > 1 ? K * t / (T - 1.0) : 0.0));
}

/* what `sender` writes for direction `dir` (its own) in partition `part` of interval `iter` */
static double expected(int sender, int dir, long iter, int part)
{
    return 1e6 * (sender + 1) + 1e4 * dir + 10.0 * (double)iter + part;
}

typedef struct {
    int rank;          /* the neighbour */
    int ndir, dir[DIRS]; /* my directions towards it, in order */
    double *send, *recv;
} peer_t;

int main(int argc, char **argv)
{
    int provided;
    int poll = diag_take_flag(&argc, argv, "--partitioned");
    int wait = diag_take_flag(&argc, argv, "--partitioned-wait");
    int multiple = diag_take_flag(&argc, argv, "--thread-multiple");
    int partitioned = poll || wait;
    MPI_Init_thread(&argc, &argv,
                    partitioned || multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED,
                    &provided);
    double K = diag_take_number(&argc, argv, "--imbalance", 1.0, 0.0, 100.0);
    double bytes = diag_take_number(&argc, argv, "--bytes", 1 << 20, 8.0, 1 << 30);
    diag_t d = diag_options(argc, argv, 100);
    int T = omp_get_max_threads();
    if (d.size != 2 && d.size != 4) {
        diag_rank0_say("this program needs 2 or 4 ranks", NULL);
        diag_stop(2);
    }
    if (partitioned && provided < MPI_THREAD_MULTIPLE) {
        diag_rank0_say("--partitioned needs MPI_THREAD_MULTIPLE", NULL);
        diag_stop(2);
    }
    if ((long)bytes % (8 * T)) {
        diag_rank0_say("--bytes: expected a multiple of 8 x threads (doubles per partition)", NULL);
        diag_stop(2);
    }
    long part = (long)bytes / 8 / T; /* doubles of one direction in one partition */

    int dims[2] = {0, 0}, periods[2] = {1, 1}, nbr[DIRS];
    MPI_Comm cart;
    MPI_Dims_create(d.size, 2, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    MPI_Cart_shift(cart, 0, 1, &nbr[0], &nbr[1]);
    MPI_Cart_shift(cart, 1, 1, &nbr[2], &nbr[3]);
    peer_t peers[DIRS];
    int np = 0;
    for (int k = 0; k < DIRS; k++) {
        if (nbr[k] == d.rank)
            continue;
        int p = 0;
        while (p < np && peers[p].rank != nbr[k])
            p++;
        if (p == np)
            peers[np++] = (peer_t){.rank = nbr[k], .ndir = 0};
        peers[p].dir[peers[p].ndir++] = k;
    }
    for (int p = 0; p < np; p++) {
        size_t n = (size_t)T * peers[p].ndir * part;
        peers[p].send = malloc(sizeof(double) * n);
        peers[p].recv = malloc(sizeof(double) * n);
        if (!peers[p].send || !peers[p].recv) {
            diag_rank0_say("cannot allocate the halo buffers", NULL);
            diag_stop(2);
        }
    }
    MPI_Request req[2 * DIRS];
    if (partitioned)
        for (int p = 0; p < np; p++) {
            MPI_Count per = (MPI_Count)peers[p].ndir * part;
            MPI_Precv_init(peers[p].recv, T, per, MPI_DOUBLE, peers[p].rank, 0, cart,
                           MPI_INFO_NULL, &req[p]);
            MPI_Psend_init(peers[p].send, T, per, MPI_DOUBLE, peers[p].rank, 0, cart,
                           MPI_INFO_NULL, &req[np + p]);
        }
    long bad = 0;
    for (long i = 0; i < d.iters; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (partitioned)
            MPI_Startall(2 * np, req);
#pragma omp parallel
        {
            int t = omp_get_thread_num();
            work(work_of(d.unit, K, t, T));
            for (int p = 0; p < np; p++) {
                for (int s = 0; s < peers[p].ndir; s++) {
                    double v = expected(d.rank, peers[p].dir[s], i, t);
                    double *x = peers[p].send + ((size_t)t * peers[p].ndir + s) * part;
                    for (long e = 0; e < part; e++)
                        x[e] = v;
                }
                if (partitioned)
                    MPI_Pready(t, req[np + p]);
            }
            for (int p = 0; poll && p < np; p++)
                for (int flag = 0; !flag;)
                    MPI_Parrived(req[p], t, &flag);
        }
        if (partitioned) {
            MPI_Waitall(2 * np, req, MPI_STATUSES_IGNORE);
        } else {
            for (int p = 0; p < np; p++)
                MPI_Irecv(peers[p].recv, T * peers[p].ndir * (int)part, MPI_DOUBLE, peers[p].rank,
                          0, cart, &req[p]);
            for (int p = 0; p < np; p++)
                MPI_Isend(peers[p].send, T * peers[p].ndir * (int)part, MPI_DOUBLE, peers[p].rank,
                          0, cart, &req[np + p]);
            MPI_Waitall(2 * np, req, MPI_STATUSES_IGNORE);
        }
        /* the neighbour's directions towards me are mine turned round (k ^ 1), and it
         * lays them out in ascending order, as I do mine */
        for (int p = 0; p < np; p++)
            for (int t = 0; t < T; t++)
                for (int s = 0; s < peers[p].ndir; s++) {
                    int theirs[DIRS], n = peers[p].ndir;
                    for (int q = 0; q < n; q++)
                        theirs[q] = peers[p].dir[q] ^ 1;
                    for (int a = 1; a < n; a++) /* n <= 4: insertion sort */
                        for (int b = a; b > 0 && theirs[b - 1] > theirs[b]; b--) {
                            int x = theirs[b];
                            theirs[b] = theirs[b - 1], theirs[b - 1] = x;
                        }
                    double v = expected(peers[p].rank, theirs[s], i, t);
                    double *x = peers[p].recv + ((size_t)t * peers[p].ndir + s) * part;
                    bad += x[0] != v || x[part - 1] != v;
                }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (partitioned)
        for (int j = 0; j < 2 * np; j++)
            MPI_Request_free(&req[j]);
    if (bad)
        fprintf(stderr, "rank %d: %ld halo parts arrived wrong\n", d.rank, bad);
    for (int p = 0; p < np; p++)
        free(peers[p].send), free(peers[p].recv);
    MPI_Comm_free(&cart);
    MPI_Finalize();
    return bad ? 1 : 0;
}
