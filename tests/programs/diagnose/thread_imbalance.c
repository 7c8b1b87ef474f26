/* thread_imbalance: one OpenMP thread of every rank has more work than the other.
 *
 * 2 ranks x 2 OpenMP threads, N iterations.  Each iteration: #pragma omp parallel where
 * thread 0 spins (1+K)U and thread 1 spins U (K = --imbalance, default 2: 3U and U),
 * each thread then writes its half of the message; then the master thread does
 * MPI_Sendrecv of the message (--bytes, default 4 KiB) with the other rank.
 *
 * Problem:   load imbalance between the threads of a rank.
 * Culprits:  both ranks (their thread 0).
 * Waiting:   thread 1 of each rank waits KU per iteration at the region's closing
 *            (implicit) barrier; MPI sees nothing of it (the Sendrecv pairs ranks
 *            that are equally late).
 * Fix:       balance the threads: both spin (1+K/2)U (the same (2+K)U of work per rank).
 * Saving:    a region lasts its slowest thread: (1+K)U unfixed, (1+K/2)U fixed: KU/2
 *            per iteration (U with the default K = 2).
 *
 * --partitioned: the early-bird alternative (MPI-4 partitioned communication, under
 * MPI_THREAD_MULTIPLE): one MPI_Psend_init/MPI_Precv_init pair of 2 partitions, started
 * before the region; each thread marks its half ready (MPI_Pready) as soon as it has
 * written it, then polls MPI_Parrived for its half of the incoming message (so the
 * finished thread drives the MPI's progress while the other still works); the master
 * completes both requests with MPI_Waitall after the region.  --partitioned-wait: the
 * same without the polling (only the master's MPI_Waitall progresses the transfer).
 * The work is unchanged: only when the message leaves differs.  Every received half is
 * checked; a wrong one stops the program with status 1.  --thread-multiple: the bulk
 * program under MPI_THREAD_MULTIPLE (what the partitioned modes need), to tell the cost
 * of the thread level from that of partitioned communication.
 */
#include "diag.h"

#include <omp.h>

static double expected(int sender, long iter, int part)
{
    return 1e6 * (sender + 1) + 10.0 * (double)iter + part;
}

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
    double K = diag_take_number(&argc, argv, "--imbalance", 2.0, 0.0, 100.0);
    double bytes = diag_take_number(&argc, argv, "--bytes", 4096.0, 16.0, 1 << 30);
    diag_t d = diag_options(argc, argv, 80);
    diag_ranks(&d, 2);
    if (partitioned && provided < MPI_THREAD_MULTIPLE) {
        diag_rank0_say("--partitioned needs MPI_THREAD_MULTIPLE", NULL);
        diag_stop(2);
    }
    if ((long)bytes % 16) {
        diag_rank0_say("--bytes: expected a multiple of 16 (2 halves of doubles)", NULL);
        diag_stop(2);
    }
    double U = d.unit;
    long count = (long)bytes / 8, half = count / 2;
    double *out = malloc(sizeof(double) * count), *in = malloc(sizeof(double) * count);
    if (!out || !in) {
        diag_rank0_say("cannot allocate the message buffers", NULL);
        diag_stop(2);
    }
    int other = 1 - d.rank;
    long bad = 0;
    MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    if (partitioned) {
        MPI_Psend_init(out, 2, (MPI_Count)half, MPI_DOUBLE, other, 0, MPI_COMM_WORLD,
                       MPI_INFO_NULL, &req[0]);
        MPI_Precv_init(in, 2, (MPI_Count)half, MPI_DOUBLE, other, 0, MPI_COMM_WORLD,
                       MPI_INFO_NULL, &req[1]);
    }
    for (long i = 0; i < d.iters; i++) {
        if (partitioned)
            MPI_Startall(2, req);
#pragma omp parallel num_threads(2)
        {
            int t = omp_get_thread_num();
            work(d.fixed ? (1 + K / 2) * U : t == 0 ? (1 + K) * U : U);
            double v = expected(d.rank, i, t);
            for (long j = t * half; j < (t + 1) * half; j++)
                out[j] = v;
            if (partitioned) {
                MPI_Pready(t, req[0]);
                for (int flag = 0; poll && !flag;)
                    MPI_Parrived(req[1], t, &flag);
            }
        }
        if (partitioned)
            MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        else
            MPI_Sendrecv(out, (int)count, MPI_DOUBLE, other, 0, in, (int)count, MPI_DOUBLE,
                         other, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int t = 0; t < 2; t++)
            bad += in[t * half] != expected(other, i, t) || in[(t + 1) * half - 1] != expected(other, i, t);
    }
    if (partitioned) {
        MPI_Request_free(&req[0]);
        MPI_Request_free(&req[1]);
    }
    if (bad)
        fprintf(stderr, "rank %d: %ld message halves arrived wrong\n", d.rank, bad);
    free(out);
    free(in);
    MPI_Finalize();
    return bad ? 1 : 0;
}
