/* libcommscope_ompt.so: per-thread timing of OpenMP parallel regions through OMPT,
 * with no change to the program (the source-free counterpart of Marts et al. 2023,
 * Listing 1).
 *
 * Loaded by an OMPT-capable OpenMP runtime (LLVM libomp, Intel libiomp5) through
 * OMP_TOOL_LIBRARIES=<this file>.  A GCC-built program gets such a runtime with
 * LD_PRELOAD=libiomp5.so (it implements GCC's GOMP_* entry points).  Not an MPI
 * library: the rank comes from the launcher's environment.
 *
 * Every callback appends one 32-byte event to the calling thread's buffer:
 * parallel begin/end (encountering thread, with the region's code address),
 * implicit-task begin/end (every thread of the team), sync-region begin/end
 * (barriers: arrival and leave; kind says closing, worksharing or explicit) and
 * work begin/end where the runtime reports it.  Events carry the region
 * instance id (unique per process), so Python (commscope.collect.ompt) turns
 * them into per-thread arrivals.  Timestamps: CLOCK_MONOTONIC ns, the clock
 * of every other commscope raw file.
 *
 * Files in $COMMSCOPE_PROFILE_DIR (else the working directory):
 *   ompt.<rank>.<n>.bin   one per OS thread n (n = order of first event): a
 *                         64-byte header then events; appended whenever the
 *                         thread's buffer fills (COMMSCOPE_OMPT_BUFFER events,
 *                         default 4096) and at tool finalize, so a killed run
 *                         keeps every full buffer;
 *   ompt.<rank>.json      runtime version, pid, clock, written at tool start and
 *                         rewritten at finalize with event counts;
 *   ompt.<rank>.maps      copy of /proc/self/maps (at start and finalize), to
 *                         resolve code addresses to file:line afterwards.
 */
#define _GNU_SOURCE
#include <omp-tools.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CS_EXPORT __attribute__((visibility("default")))

enum {
    EV_PARALLEL_BEGIN = 1,
    EV_PARALLEL_END = 2,
    EV_TASK_BEGIN = 3,
    EV_TASK_END = 4,
    EV_SYNC_BEGIN = 5,
    EV_SYNC_END = 6,
    EV_WORK_BEGIN = 7,
    EV_WORK_END = 8
};

typedef struct {
    uint64_t t_ns;     /* CLOCK_MONOTONIC */
    uint64_t instance; /* parallel region instance id (0 = none known) */
    uint64_t codeptr;  /* return address in the program (parallel/sync/work), else 0 */
    uint16_t event;    /* EV_* */
    uint16_t kind;     /* ompt_sync_region_t or ompt_work_t; team size requested for parallel */
    uint16_t thread;   /* thread number in the team (implicit task index), 0xffff unknown */
    uint16_t team;     /* actual team size (implicit task begin), else 0 */
} cs_ompt_event_t;

typedef struct { /* file header, 64 bytes (layout in open_thread_file) */
    char magic[8];
    uint32_t version, record_size;
    int32_t file, pid;
    uint64_t t_start_ns;
    unsigned char reserved[32];
} cs_ompt_header_t;
_Static_assert(sizeof(cs_ompt_header_t) == 64, "header is 64 bytes");

typedef struct cs_ompt_thread {
    struct cs_ompt_thread *next;
    int id; /* file number */
    int fd; /* -1 until the first flush */
    uint32_t count;
    uint64_t written;
    cs_ompt_event_t *buf;
} cs_ompt_thread_t;

static char g_dir[3072];
static char g_rank[64];
static uint32_t g_capacity = 4096;
static uint64_t g_instances; /* atomic counter of parallel region instances */
static int g_nthreads;
static uint64_t g_dropped;
static cs_ompt_thread_t *g_threads; /* every thread's buffer, for the final flush */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread cs_ompt_thread_t *t_self;
static const char *g_runtime = "";
static uint64_t g_t_start;
static int g_finalized;
static int g_write_failed; /* set at the first failed write: the tool stops writing */

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void path_of(char *out, size_t n, const char *suffix)
{
    snprintf(out, n, "%s/ompt.%s.%s", g_dir, g_rank, suffix);
}

/* The rank as PROFILE-INTERFACE.md defines it: launcher variables, else p<pid>. */
static void find_rank(void)
{
    static const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID",
                                 NULL};
    for (int i = 0; vars[i]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) {
            snprintf(g_rank, sizeof g_rank, "%s", v);
            return;
        }
    }
    snprintf(g_rank, sizeof g_rank, "p%ld", (long)getpid());
}

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The first failed write stops every further write (a full disk would fail them all) with
 * one message in the form the benchmarks use, which the driver turns into the run's
 * failure reason; events from then on are counted as dropped. */
static void write_failed(const char *path, int err)
{
    if (__atomic_exchange_n(&g_write_failed, 1, __ATOMIC_RELAXED))
        return;
    fprintf(stderr, "commscope_ompt: cannot write %s: %s [errno %d]; thread timing stops here\n",
            path, strerror(err), err);
}

static void thread_path(const cs_ompt_thread_t *t, char *out, size_t n)
{
    char name[64];
    snprintf(name, sizeof name, "%d.bin", t->id);
    path_of(out, n, name);
}

/* Header of ompt.<rank>.<n>.bin, 64 bytes, little-endian:
 * char magic[8] "CSOMPT01"; uint32 version 1; uint32 record_size 32; int32 file
 * number; int32 pid; uint64 ns at tool start; 32 bytes reserved. */
static void open_thread_file(cs_ompt_thread_t *t)
{
    char path[3200];
    thread_path(t, path, sizeof path);
    t->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (t->fd < 0) {
        write_failed(path, errno);
        t->fd = -2;
        return;
    }
    cs_ompt_header_t h = {"CSOMPT01", 1, sizeof(cs_ompt_event_t), t->id, (int32_t)getpid(), g_t_start, {0}};
    if (write_all(t->fd, &h, sizeof h) != 0) {
        write_failed(path, errno);
        close(t->fd);
        t->fd = -2;
    }
}

static void flush_thread(cs_ompt_thread_t *t)
{
    if (!t->count)
        return;
    if (t->fd == -1 && !__atomic_load_n(&g_write_failed, __ATOMIC_RELAXED))
        open_thread_file(t);
    if (t->fd >= 0 && !__atomic_load_n(&g_write_failed, __ATOMIC_RELAXED) &&
        write_all(t->fd, t->buf, (size_t)t->count * sizeof(cs_ompt_event_t)) == 0) {
        t->written += t->count;
    } else {
        if (t->fd >= 0 && !__atomic_load_n(&g_write_failed, __ATOMIC_RELAXED)) {
            char path[3200];
            thread_path(t, path, sizeof path);
            write_failed(path, errno);
        }
        __atomic_fetch_add(&g_dropped, t->count, __ATOMIC_RELAXED);
    }
    t->count = 0;
}

static cs_ompt_thread_t *self(void)
{
    cs_ompt_thread_t *t = t_self;
    if (t)
        return t;
    t = calloc(1, sizeof *t);
    if (t)
        t->buf = malloc((size_t)g_capacity * sizeof(cs_ompt_event_t));
    if (!t || !t->buf) {
        free(t);
        return NULL;
    }
    /* Touch the buffer now: page faults later would land inside timed regions. */
    memset(t->buf, 0, (size_t)g_capacity * sizeof(cs_ompt_event_t));
    t->fd = -1;
    pthread_mutex_lock(&g_lock);
    t->id = g_nthreads++;
    t->next = g_threads;
    g_threads = t;
    pthread_mutex_unlock(&g_lock);
    t_self = t;
    return t;
}

static inline void emit(uint16_t event, uint64_t instance, const void *codeptr, uint16_t kind,
                        uint16_t thread, uint16_t team)
{
    uint64_t ts = now_ns(); /* first, so the tool's own work is not inside the interval */
    cs_ompt_thread_t *t = self();
    if (!t || g_finalized) {
        __atomic_fetch_add(&g_dropped, 1, __ATOMIC_RELAXED);
        return;
    }
    cs_ompt_event_t *e = &t->buf[t->count++];
    e->t_ns = ts;
    e->instance = instance;
    e->codeptr = (uint64_t)(uintptr_t)codeptr;
    e->event = event;
    e->kind = kind;
    e->thread = thread;
    e->team = team;
    if (t->count == g_capacity)
        flush_thread(t);
}

/* ---------------------------------------------------------------- callbacks */

static void on_parallel_begin(ompt_data_t *encountering_task_data,
                              const ompt_frame_t *encountering_task_frame,
                              ompt_data_t *parallel_data, unsigned int requested_parallelism,
                              int flags, const void *codeptr_ra)
{
    (void)encountering_task_frame;
    (void)flags;
    parallel_data->value = __atomic_add_fetch(&g_instances, 1, __ATOMIC_RELAXED);
    emit(EV_PARALLEL_BEGIN, parallel_data->value, codeptr_ra,
         (uint16_t)(requested_parallelism > 0xffff ? 0xffff : requested_parallelism),
         encountering_task_data ? (uint16_t)(encountering_task_data->value >> 48) : 0xffff, 0);
}

static void on_parallel_end(ompt_data_t *parallel_data, ompt_data_t *encountering_task_data,
                            int flags, const void *codeptr_ra)
{
    (void)encountering_task_data;
    (void)flags;
    emit(EV_PARALLEL_END, parallel_data->value, codeptr_ra, 0, 0xffff, 0);
}

/* task_data->value of an implicit task: instance id in the low 48 bits, the
 * thread's index in the team in the high 16 (instance ids stay far below 2^48). */
#define INSTANCE_OF(v) ((v)&0xffffffffffffull)
#define INDEX_OF(v) ((uint16_t)((v) >> 48))

static void on_implicit_task(ompt_scope_endpoint_t endpoint, ompt_data_t *parallel_data,
                             ompt_data_t *task_data, unsigned int actual_parallelism,
                             unsigned int index, int flags)
{
    if (!(flags & ompt_task_implicit))
        return; /* the initial task of a thread */
    if (endpoint == ompt_scope_begin) {
        uint64_t inst = parallel_data ? parallel_data->value : 0;
        task_data->value = INSTANCE_OF(inst) | ((uint64_t)(index & 0xffff) << 48);
        emit(EV_TASK_BEGIN, inst, NULL, 0, (uint16_t)index,
             (uint16_t)(actual_parallelism > 0xffff ? 0xffff : actual_parallelism));
    } else {
        /* parallel_data is NULL at the end of an implicit task (OpenMP 5.x). */
        emit(EV_TASK_END, INSTANCE_OF(task_data->value), NULL, 0, INDEX_OF(task_data->value), 0);
    }
}

/* Barriers and worksharing constructs: begin/end on one thread of a known instance. */
static void emit_scope(uint16_t ev_begin, ompt_scope_endpoint_t endpoint,
                       ompt_data_t *parallel_data, ompt_data_t *task_data, uint16_t kind,
                       const void *codeptr_ra)
{
    uint64_t v = task_data ? task_data->value : 0;
    uint64_t inst = INSTANCE_OF(v);
    if (!inst && parallel_data)
        inst = parallel_data->value;
    emit(endpoint == ompt_scope_begin ? ev_begin : (uint16_t)(ev_begin + 1), inst, codeptr_ra,
         kind, v ? INDEX_OF(v) : 0xffff, 0);
}

static void on_sync_region(ompt_sync_region_t kind, ompt_scope_endpoint_t endpoint,
                           ompt_data_t *parallel_data, ompt_data_t *task_data,
                           const void *codeptr_ra)
{
    emit_scope(EV_SYNC_BEGIN, endpoint, parallel_data, task_data, (uint16_t)kind, codeptr_ra);
}

static void on_work(ompt_work_t wstype, ompt_scope_endpoint_t endpoint,
                    ompt_data_t *parallel_data, ompt_data_t *task_data, uint64_t count,
                    const void *codeptr_ra)
{
    (void)count;
    emit_scope(EV_WORK_BEGIN, endpoint, parallel_data, task_data, (uint16_t)wstype, codeptr_ra);
}

static void on_thread_end(ompt_data_t *thread_data)
{
    (void)thread_data;
    if (t_self)
        flush_thread(t_self);
}

/* ---------------------------------------------------------------- metadata */

static void write_json(const char *state)
{
    char path[3200], tmp[3300];
    path_of(path, sizeof path, "json");
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
    if (__atomic_load_n(&g_write_failed, __ATOMIC_RELAXED))
        return;
    FILE *f = fopen(tmp, "w");
    if (!f) {
        write_failed(tmp, errno);
        return;
    }
    uint64_t written = 0;
    pthread_mutex_lock(&g_lock);
    for (cs_ompt_thread_t *t = g_threads; t; t = t->next)
        written += t->written;
    int nthreads = g_nthreads;
    pthread_mutex_unlock(&g_lock);
    fprintf(f, "{\"schema\": \"commscope.ompt\", \"schema_version\": 1, \"rank\": \"%s\", "
               "\"pid\": %ld, \"state\": \"%s\", \"clock\": \"CLOCK_MONOTONIC ns\", "
               "\"t_start_ns\": %llu, \"t_now_ns\": %llu, \"record_size\": %zu, "
               "\"buffer_events\": %u, \"threads\": %d, \"events_written\": %llu, "
               "\"events_dropped\": %llu, \"region_instances\": %llu, \"runtime\": \"",
            g_rank, (long)getpid(), state, (unsigned long long)g_t_start,
            (unsigned long long)now_ns(), sizeof(cs_ompt_event_t), g_capacity, nthreads,
            (unsigned long long)written, (unsigned long long)g_dropped,
            (unsigned long long)g_instances);
    for (const char *c = g_runtime; *c; c++)
        if (*c == '"' || *c == '\\')
            fprintf(f, "\\%c", *c);
        else if ((unsigned char)*c >= 0x20)
            fputc(*c, f);
    fputs("\"}\n", f);
    int bad = ferror(f);
    int err = bad ? (errno ? errno : EIO) : 0;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        err = errno;
    }
    if (bad) {
        unlink(tmp);
        write_failed(path, err);
    } else if (rename(tmp, path) != 0) {
        write_failed(path, errno);
    }
}

static void copy_maps(void)
{
    char path[3200];
    path_of(path, sizeof path, "maps");
    int in = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (__atomic_load_n(&g_write_failed, __ATOMIC_RELAXED)) {
        if (in >= 0)
            close(in);
        return;
    }
    int out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out < 0)
        write_failed(path, errno);
    char buf[65536];
    ssize_t n;
    while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
        if (write_all(out, buf, (size_t)n) != 0) {
            write_failed(path, errno);
            break;
        }
    if (in >= 0)
        close(in);
    if (out >= 0 && close(out) != 0)
        write_failed(path, errno);
}

/* ---------------------------------------------------------------- OMPT entry */

static int tool_initialize(ompt_function_lookup_t lookup, int initial_device_num,
                           ompt_data_t *tool_data)
{
    (void)initial_device_num;
    (void)tool_data;
    ompt_set_callback_t set_callback = (ompt_set_callback_t)lookup("ompt_set_callback");
    if (!set_callback)
        return 0;
    /* Registration results are not needed: an event the runtime never reports
     * simply does not appear, and the reader says which kinds it saw. */
    set_callback(ompt_callback_parallel_begin, (ompt_callback_t)on_parallel_begin);
    set_callback(ompt_callback_parallel_end, (ompt_callback_t)on_parallel_end);
    set_callback(ompt_callback_implicit_task, (ompt_callback_t)on_implicit_task);
    set_callback(ompt_callback_sync_region, (ompt_callback_t)on_sync_region);
    set_callback(ompt_callback_work, (ompt_callback_t)on_work);
    set_callback(ompt_callback_thread_end, (ompt_callback_t)on_thread_end);
    write_json("running");
    copy_maps();
    return 1; /* keep the tool active */
}

static void tool_finalize(ompt_data_t *tool_data)
{
    (void)tool_data;
    /* The runtime is shutting down; worker threads are idle.  Flush everyone. */
    pthread_mutex_lock(&g_lock);
    g_finalized = 1;
    for (cs_ompt_thread_t *t = g_threads; t; t = t->next) {
        flush_thread(t);
        if (t->fd >= 0 && close(t->fd) != 0) {
            char path[3200];
            thread_path(t, path, sizeof path);
            write_failed(path, errno);
        }
        t->fd = -2; /* closed: no further writes */
    }
    pthread_mutex_unlock(&g_lock);
    copy_maps();
    write_json("finalized");
}

CS_EXPORT ompt_start_tool_result_t *ompt_start_tool(unsigned int omp_version,
                                                    const char *runtime_version)
{
    static ompt_start_tool_result_t result = {tool_initialize, tool_finalize, {0}};
    (void)omp_version;
    const char *dir = getenv("COMMSCOPE_PROFILE_DIR");
    snprintf(g_dir, sizeof g_dir, "%s", dir && *dir ? dir : ".");
    const char *cap = getenv("COMMSCOPE_OMPT_BUFFER");
    if (cap && atol(cap) >= 16 && atol(cap) <= (1L << 24))
        g_capacity = (uint32_t)atol(cap);
    g_runtime = runtime_version ? runtime_version : "";
    g_t_start = now_ns();
    find_rank();
    return &result;
}
