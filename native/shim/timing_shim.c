/* Timing shim: an LD_PRELOAD library, independent of libcommscope, that gives the
 * validation of `commscope diagnose` on real applications a ground truth the profiler
 * did not compute (scripts/validate_diagnose_apps.py, docs/validation.md).
 *
 * Each wrapper finds the next MPI_X with dlsym(RTLD_NEXT): preloaded before
 * libcommscope it calls libcommscope's wrapper (both time the same run), alone it
 * calls the MPI library.  It shares no code or clock with libcommscope: its own
 * CLOCK_MONOTONIC reads, its own sums.  With CS_TIMING_SHIM_DIR set, MPI_Finalize writes
 * DIR/rank<R>.txt: wall time from MPI_Init's return to MPI_Finalize's entry, time in the
 * wrapped calls, calls and time per function (every wrapped function, so a reader knows
 * what is covered) and the entry and exit of every recorded call (below) on a
 * communicator of the world's size: the ranks' n-th calls of one function are one instance.
 * Thread safety: the sums are atomic; records take a lock. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* X(name, recorded, (parameters), (arguments), communicator or MPI_COMM_NULL); recorded:
 * each call's entry and exit are kept (the collectives, and MPI_Sendrecv, whose n-th
 * calls on two ranks exchanging symmetrically are one exchange) */
#define SHIM_FUNCTIONS(X) \
    X(Send, 0, (const void *b, int n, MPI_Datatype t, int d, int g, MPI_Comm c), (b, n, t, d, g, c), MPI_COMM_NULL) \
    X(Ssend, 0, (const void *b, int n, MPI_Datatype t, int d, int g, MPI_Comm c), (b, n, t, d, g, c), MPI_COMM_NULL) \
    X(Recv, 0, (void *b, int n, MPI_Datatype t, int s, int g, MPI_Comm c, MPI_Status *st), (b, n, t, s, g, c, st), MPI_COMM_NULL) \
    X(Isend, 0, (const void *b, int n, MPI_Datatype t, int d, int g, MPI_Comm c, MPI_Request *r), (b, n, t, d, g, c, r), MPI_COMM_NULL) \
    X(Irecv, 0, (void *b, int n, MPI_Datatype t, int s, int g, MPI_Comm c, MPI_Request *r), (b, n, t, s, g, c, r), MPI_COMM_NULL) \
    X(Sendrecv, 1, (const void *sb, int sn, MPI_Datatype st, int d, int sg, void *rb, int rn, MPI_Datatype rt, int s, int rg, MPI_Comm c, MPI_Status *sta), (sb, sn, st, d, sg, rb, rn, rt, s, rg, c, sta), c) \
    X(Probe, 0, (int s, int g, MPI_Comm c, MPI_Status *st), (s, g, c, st), MPI_COMM_NULL) \
    X(Iprobe, 0, (int s, int g, MPI_Comm c, int *f, MPI_Status *st), (s, g, c, f, st), MPI_COMM_NULL) \
    X(Wait, 0, (MPI_Request * r, MPI_Status * st), (r, st), MPI_COMM_NULL) \
    X(Waitall, 0, (int n, MPI_Request r[], MPI_Status st[]), (n, r, st), MPI_COMM_NULL) \
    X(Waitany, 0, (int n, MPI_Request r[], int *i, MPI_Status *st), (n, r, i, st), MPI_COMM_NULL) \
    X(Waitsome, 0, (int n, MPI_Request r[], int *o, int i[], MPI_Status st[]), (n, r, o, i, st), MPI_COMM_NULL) \
    X(Test, 0, (MPI_Request * r, int *f, MPI_Status *st), (r, f, st), MPI_COMM_NULL) \
    X(Testall, 0, (int n, MPI_Request r[], int *f, MPI_Status st[]), (n, r, f, st), MPI_COMM_NULL) \
    X(Testany, 0, (int n, MPI_Request r[], int *i, int *f, MPI_Status *st), (n, r, i, f, st), MPI_COMM_NULL) \
    X(Request_free, 0, (MPI_Request * r), (r), MPI_COMM_NULL) \
    X(Cancel, 0, (MPI_Request * r), (r), MPI_COMM_NULL) \
    X(Barrier, 1, (MPI_Comm c), (c), c) \
    X(Bcast, 1, (void *b, int n, MPI_Datatype t, int root, MPI_Comm c), (b, n, t, root, c), c) \
    X(Reduce, 1, (const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, int root, MPI_Comm c), (s, r, n, t, o, root, c), c) \
    X(Allreduce, 1, (const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c), (s, r, n, t, o, c), c) \
    X(Scan, 1, (const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c), (s, r, n, t, o, c), c) \
    X(Exscan, 1, (const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c), (s, r, n, t, o, c), c) \
    X(Gather, 1, (const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, int root, MPI_Comm c), (s, sn, st, r, rn, rt, root, c), c) \
    X(Gatherv, 1, (const void *s, int sn, MPI_Datatype st, void *r, const int rn[], const int dis[], MPI_Datatype rt, int root, MPI_Comm c), (s, sn, st, r, rn, dis, rt, root, c), c) \
    X(Scatter, 1, (const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, int root, MPI_Comm c), (s, sn, st, r, rn, rt, root, c), c) \
    X(Scatterv, 1, (const void *s, const int sn[], const int dis[], MPI_Datatype st, void *r, int rn, MPI_Datatype rt, int root, MPI_Comm c), (s, sn, dis, st, r, rn, rt, root, c), c) \
    X(Allgather, 1, (const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c), (s, sn, st, r, rn, rt, c), c) \
    X(Allgatherv, 1, (const void *s, int sn, MPI_Datatype st, void *r, const int rn[], const int dis[], MPI_Datatype rt, MPI_Comm c), (s, sn, st, r, rn, dis, rt, c), c) \
    X(Alltoall, 1, (const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c), (s, sn, st, r, rn, rt, c), c) \
    X(Alltoallv, 1, (const void *s, const int sn[], const int sd[], MPI_Datatype st, void *r, const int rn[], const int rd[], MPI_Datatype rt, MPI_Comm c), (s, sn, sd, st, r, rn, rd, rt, c), c) \
    X(Reduce_scatter, 1, (const void *s, void *r, const int n[], MPI_Datatype t, MPI_Op o, MPI_Comm c), (s, r, n, t, o, c), c) \
    X(Comm_split, 0, (MPI_Comm c, int color, int key, MPI_Comm *out), (c, color, key, out), MPI_COMM_NULL) \
    X(Comm_dup, 0, (MPI_Comm c, MPI_Comm * out), (c, out), MPI_COMM_NULL) \
    X(Comm_create, 0, (MPI_Comm c, MPI_Group g, MPI_Comm * out), (c, g, out), MPI_COMM_NULL) \
    X(Comm_free, 0, (MPI_Comm * c), (c), MPI_COMM_NULL) \
    X(Cart_create, 0, (MPI_Comm c, int nd, const int dims[], const int periods[], int reorder, MPI_Comm *out), (c, nd, dims, periods, reorder, out), MPI_COMM_NULL)

#define SHIM_ENUM(name, coll, params, args, comm) F_##name,
enum { SHIM_FUNCTIONS(SHIM_ENUM) F_COUNT };
#define SHIM_NAME(name, coll, params, args, comm) "MPI_" #name,
static const char *const names[F_COUNT] = {SHIM_FUNCTIONS(SHIM_NAME)};

struct record {
    int function;
    uint64_t entry_ns, exit_ns;
};

static uint64_t calls[F_COUNT], time_ns[F_COUNT], mpi_ns;
static uint64_t init_end_ns, finalize_ns;
static int active, world_rank, world_size; /* active: between Init's return and Finalize */
static struct record *records;
static size_t nrecords, capacity;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int depth; /* an MPI call made inside another is not counted twice */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *next_symbol(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) {
        fprintf(stderr, "timing_shim: no %s after this library\n", name);
        abort();
    }
    return p;
}

static void account(int f, int recorded, MPI_Comm comm, uint64_t t0, uint64_t t1)
{
    if (!__atomic_load_n(&active, __ATOMIC_ACQUIRE)) return;
    __atomic_add_fetch(&calls[f], 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&time_ns[f], t1 - t0, __ATOMIC_RELAXED);
    __atomic_add_fetch(&mpi_ns, t1 - t0, __ATOMIC_RELAXED);
    if (!recorded || comm == MPI_COMM_NULL) return;
    int size = 0;
    PMPI_Comm_size(comm, &size); /* PMPI: no other tool sees the shim's own query */
    if (size != world_size) return;
    pthread_mutex_lock(&lock);
    if (nrecords == capacity) {
        size_t more = capacity ? 2 * capacity : 4096;
        struct record *r = realloc(records, more * sizeof *r);
        if (!r) {
            pthread_mutex_unlock(&lock);
            return;
        }
        records = r, capacity = more;
    }
    records[nrecords++] = (struct record){f, t0, t1};
    pthread_mutex_unlock(&lock);
}

#define SHIM_WRAP(name, coll, params, args, comm) \
    int MPI_##name params \
    { \
        static int(*real) params; \
        if (!real) *(void **)&real = next_symbol("MPI_" #name); \
        if (depth++) { \
            int rc = real args; \
            depth--; \
            return rc; \
        } \
        uint64_t t0 = now_ns(); \
        int rc = real args; \
        uint64_t t1 = now_ns(); \
        depth--; \
        account(F_##name, coll, comm, t0, t1); \
        return rc; \
    }
SHIM_FUNCTIONS(SHIM_WRAP)

static void started(void)
{
    PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
    init_end_ns = now_ns();
    __atomic_store_n(&active, 1, __ATOMIC_RELEASE);
}

int MPI_Init(int *argc, char ***argv)
{
    static int (*real)(int *, char ***);
    if (!real) *(void **)&real = next_symbol("MPI_Init");
    int rc = real(argc, argv);
    started();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    static int (*real)(int *, char ***, int, int *);
    if (!real) *(void **)&real = next_symbol("MPI_Init_thread");
    int rc = real(argc, argv, required, provided);
    started();
    return rc;
}

static void write_rank(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/rank%d.txt", dir, world_rank);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "timing_shim: cannot write %s\n", path);
        return;
    }
    fprintf(f, "rank %d\nsize %d\n", world_rank, world_size);
    fprintf(f, "wall_s %.9f\nmpi_s %.9f\n", (finalize_ns - init_end_ns) * 1e-9, mpi_ns * 1e-9);
    fprintf(f, "init_end_ns %llu\nfinalize_ns %llu\n", (unsigned long long)init_end_ns,
            (unsigned long long)finalize_ns);
    for (int i = 0; i < F_COUNT; i++)
        fprintf(f, "function %s %llu %.9f\n", names[i], (unsigned long long)calls[i], time_ns[i] * 1e-9);
    for (size_t i = 0; i < nrecords; i++)
        fprintf(f, "call %s %llu %llu\n", names[records[i].function],
                (unsigned long long)records[i].entry_ns, (unsigned long long)records[i].exit_ns);
    fclose(f);
}

int MPI_Finalize(void)
{
    static int (*real)(void);
    if (!real) *(void **)&real = next_symbol("MPI_Finalize");
    finalize_ns = now_ns();
    __atomic_store_n(&active, 0, __ATOMIC_RELEASE);
    const char *dir = getenv("CS_TIMING_SHIM_DIR");
    if (dir && *dir) write_rank(dir);
    return real();
}
