/* Shared helpers for commscope's native benchmarks: where each rank runs, the
 * output conventions (CSV files in a run directory, "@progress" lines on stderr),
 * and small option-parsing helpers.  Every benchmark follows the same contract:
 *
 *   cs_<name> [options] --out DIR
 *     - stdout: OSU-style header and aligned columns for people
 *     - DIR/placement.csv: rank,node,host,cpu,cpus,socket,core,numa,bound (rank 0)
 *     - DIR/<table>.csv: tidy samples, flushed as they are produced so that a
 *       killed run keeps what it measured
 *     - stderr: "@progress <done> <total> <label>" lines the Python driver turns
 *       into a progress bar; anything else on stderr is passed through.
 */
#ifndef CS_COMMON_H
#define CS_COMMON_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CS_HOST_MAX 64
#define CS_CPUS_MAX 128

typedef struct {
    int rank;
    char node[CS_HOST_MAX]; /* Slurm node (SLURMD_NODENAME), else the host name */
    char host[CS_HOST_MAX];
    char cpus[CS_CPUS_MAX]; /* affinity mask as a Linux CPU list ("0-3,8") */
    int cpu;                /* CPU the rank was on at start-up (sched_getcpu) */
    int socket;             /* physical package of that CPU, -1 if unknown */
    int core;               /* core id within the package, -1 if unknown */
    int numa;               /* NUMA node of that CPU, -1 if unknown */
    int bound;              /* 1 if the affinity mask holds a single CPU */
} cs_place_t;

/* Fill *p for the calling process. */
void cs_place_self(cs_place_t *p, int rank);
/* Gather every rank's placement (all has comm-size entries) on every rank. */
void cs_place_allgather(MPI_Comm comm, cs_place_t *all);
/* "intra-socket", "cross-socket" or "inter-node" for two placements: different
 * nodes are inter-node even when they share a host (several slurmd on one machine;
 * the Python side records and reports that). */
const char *cs_locality(const cs_place_t *a, const cs_place_t *b);
/* Stop at once when the MPI world is not what the launcher started: with
 * COMMSCOPE_NRANKS=N set and a world of another size (each rank a singleton, as
 * under `srun --mpi=none`), print "@singleton <size> <N>" on stderr and exit 3.
 * Call right after MPI_Init. */
void cs_check_world(void);
/* Write DIR/placement.csv (call on one rank). */
void cs_write_placement(const char *dir, const cs_place_t *all, int n);

/* mkdir -p; returns 0 on success. */
int cs_mkdir_p(const char *dir);
/* Open DIR/name for writing, write the header line; line-buffered so every
 * row reaches the disk as soon as it is complete.  Aborts on failure.
 * Write tables only through cs_row and close them with cs_close_table: a full
 * disk (or a file-size limit) then stops the benchmark at the first failed write
 * with "cannot write PATH: REASON [errno N]" and exit status 2, never a silently
 * truncated table. */
FILE *cs_open_table(const char *dir, const char *name, const char *header);
/* fprintf to a table opened by cs_open_table; dies at a failed write. */
void cs_row(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Flush and close a table; dies when the data cannot be written. */
void cs_close_table(FILE *f);
/* "@progress done total label" on stderr, flushed. */
void cs_progress(long done, long total, const char *label);

/* Print a message prefixed with the program name to stderr and MPI_Abort. */
void cs_die(const char *fmt, ...);

/* Parse sizes such as "4096", "4K" = "4KiB" (binary), "16MB" (SI), "1.5M", the grammar
 * of commscope.units.parse_size; returns -1 on error. */
long long cs_parse_size(const char *s);
/* Parse "MIN:MAX", ":MAX" (from 0) or a single MAX (from 1) into min/max; returns 0 on
 * success. */
int cs_parse_range(const char *s, long long *min, long long *max);

/* Option values that must be valid: each of these dies (cs_die) with a message
 * naming the option and the text it got, so callers need no error path. */
/* A whole decimal number >= min. */
long cs_parse_long(const char *option, const char *text, long min);
/* A finite number >= 0 (the floating-point options are times and spreads). */
double cs_parse_double(const char *option, const char *text);
/* The index of text in names[0..n-1]; otherwise dies with
 * "<option>: unknown <what> '<text>' (name0, name1, ...)". */
int cs_parse_choice(const char *option, const char *what, const char *text,
                    const char *const *names, int n);
/* A comma-separated list of sizes ("8,1K,64K", cs_parse_size syntax), each >= min,
 * at least one and at most max, into out; returns how many. */
int cs_parse_size_list(const char *option, const char *text, long long min, long long *out,
                       int max);

/* Random numbers: splitmix64 (Steele, Lea & Flood 2014), one 64-bit word of state
 * per stream.  Seeding (which stream a rank, thread or run uses) is the caller's. */
/* The next 64-bit output; advances *state. */
uint64_t cs_splitmix64(uint64_t *state);
/* Uniform in (0, 1), never 0 or 1, so log() of it is always finite. */
double cs_uniform01(uint64_t *state);
/* Standard normal by Box-Muller: two uniforms per value (the second value of the
 * pair is not kept, so a stream is simple to reproduce elsewhere). */
double cs_normal(uint64_t *state);

/* malloc that dies on failure (n = 0 still returns a unique pointer). */
void *cs_xmalloc(size_t n);

/* Sum, minimum and maximum of v[0..n-1], n >= 1 (the OSU-style summary rows). */
void cs_sum_min_max(const double *v, size_t n, double *sum, double *min, double *max);

/* A time for people, as commscope.units.format_seconds writes it: "61.3 us", "1.2 ms",
 * "2 s" (three significant digits, never e-notation; "-" when not finite). The echo of
 * every benchmark's table writes its times so (docs/conventions.md). Returns buf. */
const char *cs_time_text(double seconds, char *buf, size_t n);

/* The end of every benchmark's option loop on an unknown option or --help: usage
 * on rank 0 only, MPI_Finalize, and the exit status (0 for --help, 2 otherwise). */
int cs_usage_exit(int rank, int help, void (*usage)(void));

/* MPI_T (initialised by the caller): index of the performance variable `name` bound to
 * `bind` (e.g. MPI_T_BIND_MPI_COMM), with its datatype and continuity; -1 when the MPI
 * has no such variable. */
int cs_pvar_index(const char *name, int bind, MPI_Datatype *dt, int *continuous);

/* Monotonic wall clock in seconds (MPI_Wtime is used for MPI timings). */
double cs_clock(void);
/* Busy-wait for the given number of seconds (calibration-free: polls the clock). */
void cs_spin(double seconds);

#ifdef COMMSCOPE_HAVE_PARTITIONED
/* mpi.h has the partitioned calls; does the library take them?  A whole one-byte
 * transfer between ranks 0 and 1 of comm with this tag (Open MPI's part/persist is
 * upset by a partitioned request freed without ever being started).  Collective. */
int cs_partitioned_accepted(MPI_Comm comm, int rank, int tag);
#endif

#endif
