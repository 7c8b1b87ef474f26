/* The job-wide summary: at MPI_Finalize each rank's totals (every counter; calls,
 * bytes and seconds per function) are reduced to rank 0 over a communicator of the
 * library's own: sums, and minima and maxima with the rank that holds them
 * (MPI_MINLOC, MPI_MAXLOC).  Rank 0 writes summary.json.
 *
 * The reductions are nonblocking and waited for until a deadline
 * (COMMSCOPE_SUMMARY_TIMEOUT_S, default 30 s): a rank that died or never reaches
 * MPI_Finalize costs the summary, never a hang of the others in the library.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cs_prof_snap.h"
#include "cs_prof_summary.h"

static MPI_Comm comm = MPI_COMM_NULL;

void cs_summary_init(void)
{
    if (PMPI_Comm_dup(MPI_COMM_WORLD, &comm) != MPI_SUCCESS) comm = MPI_COMM_NULL;
}

typedef struct {
    double value;
    int rank;
} value_rank_t;

static const char *const COUNTER_NAMES[] = {
#define CS_COUNTER(name, kind, scope, set, unit, desc) #name,
#include "counters.def"
};

/* Values reduced: counters, then calls, bytes and seconds per function, then 1 for a
 * rank that was profiled. */
#define NVALUES (CS_NCOUNTERS + 3 * CS_NFUNC + 1)

static void write_stat(FILE *f, const char *name, int i, const double *sum, const value_rank_t *lo,
                       const value_rank_t *hi, int n, int last)
{
    fprintf(f, "   \"%s\": {\"total\": %.17g, \"mean\": %.17g, \"min\": %.17g, \"min_rank\": %d, "
               "\"max\": %.17g, \"max_rank\": %d}%s\n",
            name, sum[i], sum[i] / n, lo[i].value, lo[i].rank, hi[i].value, hi[i].rank, last ? "" : ",");
}

static int write_summary(const char *dir, int n, const double *sum, const value_rank_t *lo,
                         const value_rank_t *hi)
{
    char path[4200], tmp[4300];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    snprintf(tmp, sizeof tmp, "%s/.summary.json.tmp", dir);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : 0;
    if (!f) return errno ? errno : EIO;
    int profiled = (int)sum[NVALUES - 1];
    fprintf(f, "{\n \"schema\": \"commscope.summary\",\n \"schema_version\": 1,\n \"ranks\": %d,\n"
               " \"ranks_profiled\": %d,\n",
            n, profiled);
    n = profiled ? profiled : 1; /* means over the profiled ranks */
    fprintf(f, " \"counters\": {\n");
    for (int c = 0; c < CS_NCOUNTERS; c++) write_stat(f, COUNTER_NAMES[c], c, sum, lo, hi, n, c + 1 == CS_NCOUNTERS);
    fprintf(f, " },\n \"functions\": {\n");
    int used = 0, seen = 0;
    for (int i = 0; i < CS_NFUNC; i++) used += hi[CS_NCOUNTERS + i].value > 0;
    for (int i = 0; i < CS_NFUNC; i++) {
        if (!(hi[CS_NCOUNTERS + i].value > 0)) continue; /* called on no rank */
        fprintf(f, "  \"%s\": {\n", cs_function_names[i]);
        write_stat(f, "calls", CS_NCOUNTERS + i, sum, lo, hi, n, 0);
        write_stat(f, "bytes", CS_NCOUNTERS + CS_NFUNC + i, sum, lo, hi, n, 0);
        write_stat(f, "time_s", CS_NCOUNTERS + 2 * CS_NFUNC + i, sum, lo, hi, n, 1);
        fprintf(f, "  }%s\n", ++seen < used ? "," : "");
    }
    fprintf(f, " }\n}\n");
    int err = fflush(f) != 0 || ferror(f) ? (errno ? errno : EIO) : 0;
    if (fclose(f) != 0 && !err) err = errno;
    if (!err && rename(tmp, path) != 0) err = errno;
    if (err) unlink(tmp);
    return err;
}

void cs_summary_reduce(const char *dir)
{
    if (comm == MPI_COMM_NULL) return;
    int profiled = cs_hdr != 0; /* a rank whose files failed has nothing to add, but takes part */
    size_t words = cs_canonical_pvars_at();
    uint64_t *can = calloc(words, 8);
    double *mine = calloc(NVALUES, sizeof *mine), *sum = calloc(NVALUES, sizeof *sum);
    value_rank_t *vr = calloc(NVALUES, sizeof *vr), *lo = calloc(NVALUES, sizeof *lo),
                 *hi = calloc(NVALUES, sizeof *hi);
    if (!can || !mine || !sum || !vr || !lo || !hi) goto out;
    if (profiled) cs_rank_totals(can);
    double dticks = profiled ? (double)(cs_hdr->tick1 - cs_hdr->tick0) : 0;
    double dns = profiled ? (double)(cs_hdr->ns1 - cs_hdr->ns0) : 0;
    double s_per_tick = dticks > 0 && dns > 0 ? dns / dticks / 1e9 : 0;
    for (int c = 0; c < CS_NCOUNTERS; c++) mine[c] = (double)can[c];
    for (int i = 0; i < CS_NFUNC; i++) {
        mine[CS_NCOUNTERS + i] = (double)can[CS_CAN_CALLS + i];
        mine[CS_NCOUNTERS + CS_NFUNC + i] = (double)can[CS_CAN_FBYTES + i];
        mine[CS_NCOUNTERS + 2 * CS_NFUNC + i] = (double)can[CS_CAN_TICKS + i] * s_per_tick;
    }
    mine[NVALUES - 1] = profiled;
    for (int i = 0; i < NVALUES; i++) vr[i] = (value_rank_t){mine[i], cs_world_rank};
    MPI_Request r[3];
    PMPI_Ireduce(mine, sum, NVALUES, MPI_DOUBLE, MPI_SUM, 0, comm, &r[0]);
    for (int i = 0; !profiled && i < NVALUES; i++) vr[i].value = 1e308; /* no minimum of ours */
    PMPI_Ireduce(vr, lo, NVALUES, MPI_DOUBLE_INT, MPI_MINLOC, 0, comm, &r[1]);
    for (int i = 0; !profiled && i < NVALUES; i++) vr[i].value = -1e308; /* nor maximum */
    PMPI_Ireduce(vr, hi, NVALUES, MPI_DOUBLE_INT, MPI_MAXLOC, 0, comm, &r[2]);
    double limit = cs_settings.summary_timeout_s;
    uint64_t deadline = cs_now_ns() + (uint64_t)(limit * 1e9);
    int done = 0;
    while (!done && cs_now_ns() < deadline) {
        PMPI_Testall(3, r, &done, MPI_STATUSES_IGNORE);
        if (!done) nanosleep(&(struct timespec){0, 1000000}, 0);
    }
    if (!done) { /* the requests are left to the MPI: a rank is gone, or far behind */
        if (cs_world_rank == 0)
            fprintf(stderr, CS_PREFIX "no job summary: not every rank reached MPI_Finalize within "
                                      "%g s (COMMSCOPE_SUMMARY_TIMEOUT_S)\n",
                    limit);
        goto out;
    }
    if (cs_world_rank == 0 && sum[NVALUES - 1] > 0) {
        int err = write_summary(dir, cs_world_size, sum, lo, hi);
        if (err) {
            char path[4200];
            snprintf(path, sizeof path, "%s/summary.json", dir);
            cs_write_failed(path, err, "no job summary");
        }
    }
    PMPI_Comm_free(&comm);
out:
    free(can), free(mine), free(sum), free(vr), free(lo), free(hi);
}
