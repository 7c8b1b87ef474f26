/* CPU contention: per rank, the time its threads were runnable but not running and the
 * time they ran, since MPI_Init (with the timers set, the default).
 *
 * Linux's /proc/self/task/<tid>/schedstat holds a thread's on-CPU ns, run-queue wait ns
 * and timeslices.  The snapshot thread reads it for every thread of the process but
 * itself, at every snapshot (and MPI_Init and MPI_Finalize read it from the calling
 * thread), never the wrappers: an MPI call costs nothing more.  Each thread's last
 * values are kept, so a thread that exited still counts.  The sums go to rank-wide
 * counters (counters.def: cpu_wait, cpu_run, ...), so snapshots give a time series and
 * counters.parquet the totals; at MPI_Finalize each rank appends one line with every
 * thread's own numbers to raw/cpu.<node>.jsonl (a single O_APPEND write):
 *   {"rank": R, "pid": P, "source": "schedstat", "cpus_online": N, "cpus_allowed": A,
 *    "involuntary_switches": S,
 *    "threads": [{"tid": T, "run_ns": .., "wait_ns": .., "mpi": true, "exited": false}, ...]}
 * Where schedstat cannot be read (another kernel configuration, no /proc), getrusage
 * gives the process's on-CPU time and involuntary switches, and the wait is flagged
 * unmeasured (cpu_source CS_CPU_RUSAGE), never 0.
 *
 * With --trace, a thread's own schedstat (its descriptor kept open) is read at the entry
 * of a traced call after a compute burst (cs_cpu_enter): a CPU record in its trace.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cs_prof_cpu.h"
#include "cs_prof_trace.h"

/* A thread's descriptors stay open up to this many (a program with hundreds of threads
 * must not lose its low descriptors to us); the rest are opened for each read. */
#define MAX_OPEN 64

typedef struct {
    int tid, fd;
    uint64_t run0, wait0, run, wait; /* at MPI_Init (0 for a later thread), and last read */
    char seen, exited;
} cpu_thread_t;

static cpu_thread_t *threads;
static int nthreads, cap, open_fds;
static int source;   /* CS_CPU_* */
static int skip_tid; /* the snapshot thread */
static uint64_t skip_usage_ns;

static uint64_t parse_u64(const char **p)
{
    uint64_t v = 0;
    while (**p == ' ') (*p)++;
    if (**p < '0' || **p > '9') return UINT64_MAX;
    for (; **p >= '0' && **p <= '9'; (*p)++) v = v * 10 + (uint64_t)(**p - '0');
    return v;
}

/* On-CPU and run-queue ns of one schedstat file; 0 or -1. */
static int read_schedstat(int fd, uint64_t *run, uint64_t *wait)
{
    char buf[96];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return -1;
    buf[n] = 0;
    const char *p = buf;
    *run = parse_u64(&p);
    *wait = parse_u64(&p);
    return *run == UINT64_MAX || *wait == UINT64_MAX ? -1 : 0;
}

static int open_schedstat(int tid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", tid);
    return open(path, O_RDONLY | O_CLOEXEC);
}

static int gettid_(void) { return (int)syscall(SYS_gettid); }

static cpu_thread_t *thread_of(int tid, int *fresh)
{
    *fresh = 0;
    for (int i = 0; i < nthreads; i++)
        if (threads[i].tid == tid && !threads[i].exited) return &threads[i];
    *fresh = 1;
    if (nthreads == cap) {
        int n = cap ? 2 * cap : 64;
        cpu_thread_t *t = realloc(threads, (size_t)n * sizeof *t);
        if (!t) return 0;
        threads = t, cap = n;
    }
    cpu_thread_t *t = &threads[nthreads++];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    t->fd = -1;
    return t;
}

/* Read one thread; at the start its values are the baseline. */
static void read_thread(int tid, int start)
{
    int fresh;
    cpu_thread_t *t = thread_of(tid, &fresh);
    if (!t) return;
    int fd = t->fd >= 0 ? t->fd : open_schedstat(tid);
    uint64_t run, wait;
    int ok = fd >= 0 && read_schedstat(fd, &run, &wait) == 0;
    if (fd >= 0 && t->fd < 0) {
        if (ok && open_fds < MAX_OPEN)
            t->fd = fd, open_fds++;
        else
            close(fd);
    }
    if (!ok) { /* gone between the listing and the read: its last values count */
        if (fresh) nthreads--;
        return;
    }
    t->seen = 1;
    t->run = run, t->wait = wait;
    if (start) t->run0 = run, t->wait0 = wait;
}

static uint64_t tv_ns(struct timeval tv) { return (uint64_t)tv.tv_sec * 1000000000ull + (uint64_t)tv.tv_usec * 1000ull; }

static void publish(uint64_t wait, uint64_t run, uint64_t now_threads)
{
    struct rusage ru;
    uint64_t switches = getrusage(RUSAGE_SELF, &ru) == 0 ? (uint64_t)ru.ru_nivcsw : 0;
    uint64_t *w = cs_rank_words;
    __atomic_store_n(&w[CS_C_cpu_wait], wait, __ATOMIC_RELAXED);
    __atomic_store_n(&w[CS_C_cpu_run], run, __ATOMIC_RELAXED);
    __atomic_store_n(&w[CS_C_cpu_involuntary_switches], switches, __ATOMIC_RELAXED);
    __atomic_store_n(&w[CS_C_cpu_threads], now_threads, __ATOMIC_RELAXED);
    if (now_threads > w[CS_C_cpu_threads_hwm]) __atomic_store_n(&w[CS_C_cpu_threads_hwm], now_threads, __ATOMIC_RELAXED);
    __atomic_store_n(&w[CS_C_cpu_source], (uint64_t)source, __ATOMIC_RELAXED);
}

/* Every thread now (start: as the baseline); returns how many there are. */
static uint64_t scan(int start)
{
    for (int i = 0; i < nthreads; i++) threads[i].seen = 0;
    DIR *d = opendir("/proc/self/task");
    if (!d) return 0;
    for (struct dirent *e; (e = readdir(d));) {
        int tid = atoi(e->d_name);
        if (tid > 0 && tid != skip_tid) read_thread(tid, start);
    }
    closedir(d);
    uint64_t alive = 0;
    for (int i = 0; i < nthreads; i++) {
        cpu_thread_t *t = &threads[i];
        if (t->seen) {
            alive++;
        } else if (!t->exited) {
            t->exited = 1;
            if (t->fd >= 0) close(t->fd), t->fd = -1, open_fds--;
        }
    }
    return alive;
}

static uint64_t rusage_run0;

static void sample(int start)
{
    if (source == CS_CPU_SCHEDSTAT) {
        uint64_t n = scan(start), wait = 0, run = 0;
        for (int i = 0; i < nthreads; i++) {
            wait += threads[i].wait - threads[i].wait0;
            run += threads[i].run - threads[i].run0;
        }
        publish(wait, run, n);
        return;
    }
    /* the process's time, less the snapshot thread's own (read when it is the caller) */
    struct rusage ru;
    if (skip_tid && gettid_() == skip_tid && getrusage(RUSAGE_THREAD, &ru) == 0)
        skip_usage_ns = tv_ns(ru.ru_utime) + tv_ns(ru.ru_stime);
    uint64_t run = getrusage(RUSAGE_SELF, &ru) == 0 ? tv_ns(ru.ru_utime) + tv_ns(ru.ru_stime) : 0;
    run = run > skip_usage_ns ? run - skip_usage_ns : 0;
    if (start) rusage_run0 = run;
    uint64_t n = 0;
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e; d && (e = readdir(d));) n += atoi(e->d_name) > 0 && atoi(e->d_name) != skip_tid;
    if (d) closedir(d);
    publish(0, run > rusage_run0 ? run - rusage_run0 : 0, n);
}

uint64_t cs_cpu_gap_ticks;
__thread uint64_t cs_tl_cpu_last __attribute__((tls_model("initial-exec")));

/* The gap in ticks, from the rank's first clock pair and now (at least 1 ms apart). */
static void calibrate_gap(void)
{
#if defined(__x86_64__)
    uint64_t dn = cs_now_ns() - cs_hdr->ns0;
    if (dn < 1000000) {
        struct timespec ts = {0, (long)(1000000 - dn)};
        nanosleep(&ts, 0);
    }
    double per_ns = (double)(cs_ticks() - cs_hdr->tick0) / (double)(cs_now_ns() - cs_hdr->ns0);
    cs_cpu_gap_ticks = (uint64_t)(CS_CPU_TRACE_GAP_NS * per_ns);
#else
    cs_cpu_gap_ticks = CS_CPU_TRACE_GAP_NS;
#endif
}

void cs_cpu_start(int aggregate, int trace)
{
    if (trace) calibrate_gap();
    if (!aggregate) return;
    int fd = open_schedstat(gettid_());
    uint64_t run, wait;
    source = fd >= 0 && read_schedstat(fd, &run, &wait) == 0 ? CS_CPU_SCHEDSTAT : CS_CPU_RUSAGE;
    if (fd >= 0) close(fd);
    sample(1);
}

void cs_cpu_sample(void)
{
    if (source) sample(0);
}

void cs_cpu_skip_self(void) { skip_tid = gettid_(); }

/* Whether thread tid has a slab: it called MPI. */
static int called_mpi(int tid)
{
    uint32_t n = cs_slabs_visible();
    for (uint32_t i = 0; i < n; i++)
        if ((int)cs_slab_at(i)[CS_OFF_TID] == tid) return 1;
    return 0;
}

void cs_cpu_write(const char *path)
{
    if (!source) return;
    sample(0); /* the totals in the counters are then the sums of the lines' threads */
    char *line = 0;
    size_t len = 0;
    FILE *f = open_memstream(&line, &len);
    if (!f) return;
    cpu_set_t set;
    int allowed = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : -1;
    fprintf(f, "{\"rank\": %d, \"pid\": %d, \"source\": \"%s\", \"cpus_online\": %ld, \"cpus_allowed\": %d, "
               "\"involuntary_switches\": %llu, \"threads\": [",
            cs_world_rank, (int)getpid(), source == CS_CPU_SCHEDSTAT ? "schedstat" : "rusage",
            sysconf(_SC_NPROCESSORS_ONLN), allowed,
            (unsigned long long)cs_rank_words[CS_C_cpu_involuntary_switches]);
    for (int i = 0; source == CS_CPU_SCHEDSTAT && i < nthreads; i++) {
        const cpu_thread_t *t = &threads[i];
        fprintf(f, "%s{\"tid\": %d, \"run_ns\": %llu, \"wait_ns\": %llu, \"mpi\": %s, \"exited\": %s}",
                i ? ", " : "", t->tid, (unsigned long long)(t->run - t->run0),
                (unsigned long long)(t->wait - t->wait0), called_mpi(t->tid) ? "true" : "false",
                t->exited ? "true" : "false");
    }
    fprintf(f, "]}\n");
    if (fclose(f) != 0 || !line) {
        free(line);
        return;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0 || cs_write_all(fd, line, len) != 0) cs_write_failed(path, errno, "no per-thread CPU times");
    if (fd >= 0) close(fd);
    free(line);
}

/* ---- the trace's CPU records ---- */

static __thread int tl_fd __attribute__((tls_model("initial-exec")));     /* descriptor + 1; 0 none */
static __thread char tl_state __attribute__((tls_model("initial-exec"))); /* 0 not tried, 1 open, 2 unreadable */
static pthread_key_t fd_key;
static pthread_once_t fd_once = PTHREAD_ONCE_INIT;

static void close_fd(void *p) { close((int)(intptr_t)p - 1); } /* at the thread's exit */
static void make_key(void) { pthread_key_create(&fd_key, close_fd); }

void cs_cpu_trace(int func, uint64_t t0)
{
    cs_tl_cpu_last = t0; /* tried now: the next try after the next burst */
    if (tl_state == 0) {
        int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
        if (fd < 0) fd = open_schedstat(gettid_());
        tl_state = fd >= 0 ? 1 : 2;
        if (fd >= 0) {
            tl_fd = fd + 1;
            pthread_once(&fd_once, make_key);
            pthread_setspecific(fd_key, (void *)(intptr_t)tl_fd);
        }
    }
    uint64_t run, wait;
    if (tl_state == 1 && read_schedstat(tl_fd - 1, &run, &wait) == 0) cs_trace_cpu(func, t0, wait, run);
}
