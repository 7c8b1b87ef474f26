/* Shared helpers for commscope's native benchmarks: where each rank runs, the
 * output conventions (CSV files in a run directory, "@progress" lines on stderr),
 * and small option-parsing helpers.  Every benchmark follows the same contract:
 *
 *   cs_<name> [options] --out DIR
 *     - stdout: OSU-style header and aligned columns for people
 *     - DIR/placement.csv: rank,host,cpu,socket,core,numa (written by rank 0)
 *     - DIR/<table>.csv: tidy samples, flushed as they are produced so that a
 *       killed run keeps what it measured
 *     - stderr: "@progress <done> <total> <label>" lines the Python driver turns
 *       into a progress bar; anything else on stderr is passed through.
 */
#ifndef CS_COMMON_H
#define CS_COMMON_H

#include <mpi.h>
#include <stdio.h>
#include <stddef.h>

#define CS_HOST_MAX 64

typedef struct {
    int rank;
    char host[CS_HOST_MAX];
    int cpu;    /* CPU the rank was on at start-up (sched_getcpu) */
    int socket; /* physical package of that CPU, -1 if unknown */
    int core;   /* core id within the package, -1 if unknown */
    int numa;   /* NUMA node of that CPU, -1 if unknown */
    int bound;  /* 1 if the affinity mask holds a single CPU */
} cs_place_t;

/* Fill *p for the calling process. */
void cs_place_self(cs_place_t *p, int rank);
/* Gather every rank's placement (all has comm-size entries) on every rank. */
void cs_place_allgather(MPI_Comm comm, cs_place_t *all);
/* "intra-socket", "cross-socket" or "inter-node" for two placements. */
const char *cs_locality(const cs_place_t *a, const cs_place_t *b);
/* Write DIR/placement.csv (call on one rank). */
void cs_write_placement(const char *dir, const cs_place_t *all, int n);

/* mkdir -p; returns 0 on success. */
int cs_mkdir_p(const char *dir);
/* Open DIR/name for writing, write the header line; line-buffered so every
 * row reaches the disk as soon as it is complete.  Aborts on failure. */
FILE *cs_open_table(const char *dir, const char *name, const char *header);
/* "@progress done total label" on stderr, flushed. */
void cs_progress(long done, long total, const char *label);

/* Print a message prefixed with the program name to stderr and MPI_Abort. */
void cs_die(const char *fmt, ...);

/* Parse sizes such as "4096", "4K", "4KiB", "1M"; returns -1 on error. */
long long cs_parse_size(const char *s);
/* Parse "MIN:MAX" (or a single value) into min/max; returns 0 on success. */
int cs_parse_range(const char *s, long long *min, long long *max);

/* Monotonic wall clock in seconds (MPI_Wtime is used for MPI timings). */
double cs_clock(void);
/* Busy-wait for the given number of seconds (calibration-free: polls the clock). */
void cs_spin(double seconds);

#endif
