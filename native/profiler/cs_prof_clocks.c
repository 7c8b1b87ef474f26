/* Clock alignment for the event trace, as Score-P does it: twice per run (at the end
 * of MPI_Init, at the start of MPI_Finalize) every rank measures the offset of rank
 * 0's CLOCK_MONOTONIC to its own.  Rank r sends a request to rank 0, rank 0 answers
 * with its clock reading t0, and rank r keeps, of ROUNDS (10) such round trips (up to
 * MAX_ROUNDS while all were slower than 100 us: preempted), the one with the shortest
 * round trip: offset = t0 - (t_send + t_recv) / 2, exact to within half that round
 * trip.  Rank 0 serves the ranks one after another.
 *
 * Everything goes through PMPI on a duplicate of MPI_COMM_WORLD of our own (with
 * MPI_ERRORS_RETURN), so no counter, trace record or call site sees it.  Every wait
 * has a deadline (COMMSCOPE_SUMMARY_TIMEOUT_S, 30 s, as the job summary's): a rank
 * that died or never reaches MPI_Finalize costs the finalize measurement of the ranks
 * after it, never a hang.
 *
 * raw/clocks.<node>.jsonl: one line per rank and measurement, appended with one
 * O_APPEND write as soon as it is made (a rank killed before MPI_Finalize keeps its
 * init line):
 *   {"rank": R, "pid": P, "node": "n1", "when": "init"|"finalize", "local_ns": L,
 *    "offset_ns": O, "rtt_ns": T, "rounds": K[, "skew_ns": S]}
 * local_ns is the middle of the chosen round trip on this rank's clock, offset_ns what
 * is added to it for rank 0's clock, rtt_ns that round trip (rank 0: offset and round
 * trip 0).  skew_ns: the test skew (COMMSCOPE_TEST_CLOCK_SKEW_NS) this rank's clock
 * readings carry, only when it has one.  A measurement that timed out writes no line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cs_prof_clocks.h"

#define ROUNDS 10      /* round trips per measurement, at least */
#define MAX_ROUNDS 100 /* at most, while the shortest is still slow */
#define SLOW_NS 100000 /* 100 us: longer than any network's round trip, a preemption's */
enum { TAG_INIT = 0x6373,
       TAG_FINALIZE = 0x6374 }; /* apart: a late init message never answers finalize */

static MPI_Comm comm = MPI_COMM_NULL;
static char clocks_path[4400];
static char node_name[256];

void cs_clocks_skew(int rank)
{
    const char *v = cs_settings.test_clock_skew_ns;
    if (!*v) return;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", v);
    for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(0, ",", &save)) {
        char *end;
        long r = strtol(tok, &end, 10);
        if (*end != ':') {
            fprintf(stderr, CS_PREFIX "ignoring COMMSCOPE_TEST_CLOCK_SKEW_NS item '%s' (expected rank:ns)\n", tok);
            continue;
        }
        long long ns = strtoll(end + 1, &end, 10);
        if (*end) {
            fprintf(stderr, CS_PREFIX "ignoring COMMSCOPE_TEST_CLOCK_SKEW_NS item '%s' (expected rank:ns)\n", tok);
            continue;
        }
        if (r == rank) cs_clock_skew_ns = ns;
    }
}

static double timeout_s(void)
{
    return cs_settings.summary_timeout_s; /* COMMSCOPE_SUMMARY_TIMEOUT_S */
}

/* Wait for r until `deadline` (cs_now_ns): 1 when it completed.  Polls, yielding the
 * core between polls for the first millisecond (a round trip is timed: on an idle core
 * sched_yield returns at once, on a shared one the partner runs now rather than at the
 * end of our time slice), then every 20 us (a rank waiting for its turn leaves the cores
 * to the ranks being served).  A request that did not complete is cancelled (a
 * receive) and freed. */
static int wait_until(MPI_Request *r, uint64_t deadline, int recv)
{
    uint64_t spin_until = cs_now_ns() + 1000000;
    for (;;) {
        int done = 0;
        if (PMPI_Test(r, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) break;
        if (done) return 1;
        uint64_t now = cs_now_ns();
        if (now > deadline) break;
        if (now > spin_until)
            nanosleep(&(struct timespec){0, 20000}, 0);
        else
            sched_yield();
    }
    if (*r != MPI_REQUEST_NULL) {
        if (recv) PMPI_Cancel(r);
        PMPI_Request_free(r);
    }
    return 0;
}

typedef struct {
    int64_t local, offset, rtt;
    int rounds;
} measure_t;

/* Rank 0: answer every other rank's requests, rank after rank, until the rank says it
 * is done (a request of -1).  After a rank that did not ask in time, it stops serving
 * (the job is broken; the others time out). */
static int serve(int size, int tag, double limit)
{
    for (int r = 1; r < size; r++) {
        for (;;) {
            int ask = 0;
            MPI_Request q;
            if (PMPI_Irecv(&ask, 1, MPI_INT, r, tag, comm, &q) != MPI_SUCCESS ||
                !wait_until(&q, cs_now_ns() + (uint64_t)(limit * 1e9), 1))
                return 0;
            if (ask < 0) break;
            int64_t t0 = (int64_t)cs_now_ns();
            if (PMPI_Isend(&t0, 1, MPI_INT64_T, r, tag, comm, &q) != MPI_SUCCESS ||
                !wait_until(&q, cs_now_ns() + (uint64_t)(limit * 1e9), 0))
                return 0;
        }
    }
    return 1;
}

/* Rank r > 0: round trips to rank 0, the shortest kept: ROUNDS of them, or up to
 * MAX_ROUNDS while none was shorter than SLOW_NS (a core shared with other work
 * preempts one side for a time slice, milliseconds); then -1 (done). */
static measure_t ask(int tag, double limit)
{
    measure_t best = {0, 0, -1, 0};
    uint64_t deadline = cs_now_ns() + (uint64_t)(limit * 1e9);
    for (int k = 0; k < ROUNDS || (k < MAX_ROUNDS && best.rtt > SLOW_NS); k++) {
        int64_t t0 = 0;
        MPI_Request s, q;
        int64_t ts = (int64_t)cs_now_ns();
        if (PMPI_Isend(&k, 1, MPI_INT, 0, tag, comm, &s) != MPI_SUCCESS) return best;
        if (PMPI_Irecv(&t0, 1, MPI_INT64_T, 0, tag, comm, &q) != MPI_SUCCESS) {
            PMPI_Request_free(&s);
            return best;
        }
        int got = wait_until(&q, deadline, 1);
        int64_t tr = (int64_t)cs_now_ns();
        if (!wait_until(&s, deadline, 0) || !got) return best; /* rank 0 stopped serving */
        best.rounds++;
        int64_t rtt = tr - ts;
        if (best.rtt < 0 || rtt < best.rtt) {
            best.local = ts + rtt / 2;
            best.offset = t0 - best.local;
            best.rtt = rtt;
        }
    }
    int done = -1;
    MPI_Request s;
    if (PMPI_Isend(&done, 1, MPI_INT, 0, tag, comm, &s) != MPI_SUCCESS || !wait_until(&s, deadline, 0))
        best.rounds = -best.rounds; /* measured, but rank 0 never heard that it is done */
    return best;
}

static void write_line(const char *when, measure_t m)
{
    if (!clocks_path[0]) return;
    char line[1024];
    int n = snprintf(line, sizeof line,
                     "{\"rank\": %d, \"pid\": %d, \"node\": \"%s\", \"when\": \"%s\", \"local_ns\": %lld, "
                     "\"offset_ns\": %lld, \"rtt_ns\": %lld, \"rounds\": %d",
                     cs_world_rank, (int)getpid(), node_name, when, (long long)m.local, (long long)m.offset,
                     (long long)m.rtt, m.rounds);
    if (cs_clock_skew_ns) n += snprintf(line + n, sizeof line - (size_t)n, ", \"skew_ns\": %lld", (long long)cs_clock_skew_ns);
    n += snprintf(line + n, sizeof line - (size_t)n, "}\n");
    int fd = open(clocks_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0 || cs_write_all(fd, line, (size_t)n) != 0) { /* one write: ranks never interleave */
        int err = errno;
        if (fd >= 0) close(fd);
        cs_write_failed(clocks_path, err, "this rank's clock offset is lost");
    } else if (close(fd) != 0) {
        cs_write_failed(clocks_path, errno, "this rank's clock offset is lost");
    }
}

/* 1 when every exchange of this rank completed. */
static int measure(const char *when, int tag)
{
    double limit = timeout_s();
    measure_t m = {0, 0, 0, 0};
    int ok;
    if (cs_world_rank == 0) {
        ok = serve(cs_world_size, tag, limit);
        m.local = (int64_t)cs_now_ns();
    } else {
        m = ask(tag, limit);
        ok = m.rounds >= ROUNDS;
        if (m.rounds < 0) m.rounds = -m.rounds;
        if (m.rtt < 0) return 0; /* no round trip in time: no line */
    }
    write_line(when, m);
    return ok;
}

void cs_clocks_start(const char *path, const char *node)
{
    snprintf(clocks_path, sizeof clocks_path, "%s", path ? path : "");
    snprintf(node_name, sizeof node_name, "%s", node ? node : "");
    if (PMPI_Comm_dup(MPI_COMM_WORLD, &comm) != MPI_SUCCESS) {
        comm = MPI_COMM_NULL;
        return;
    }
    PMPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    measure("init", TAG_INIT);
}

void cs_clocks_finish(void)
{
    if (comm == MPI_COMM_NULL) return;
    if (measure("finalize", TAG_FINALIZE)) PMPI_Comm_free(&comm); /* else left to the MPI: a rank is gone */
    comm = MPI_COMM_NULL;
}
