/* Event trace of point-to-point calls and collectives (`commscope profile --trace`).
 *
 * Each thread fills its own buffer of fixed-size records and appends it to
 * trace.<rank>.<thread>.bin with one write() when full and at MPI_Finalize, so a
 * killed run keeps every flushed buffer.  The file is opened for each append and
 * closed again: a program with hundreds of threads does not hold hundreds of
 * descriptors.  A rank-wide byte budget
 * (COMMSCOPE_TRACE_LIMIT) bounds the disk used; records past it are counted as
 * dropped and a message says so once.
 *
 * File: a 64-byte header (cs_trace_header_t: "CSTRACE1", version 4, the record size,
 * rank, thread, ...) then 56-byte records (cs_trace_rec_t), both declared in
 * layout.def (docs/profile.md's table is made from it).  Version 1 had u16 event and flags
 * and no function id; version 2 keeps the 48 bytes with u8 event and flags and the
 * function id in the other two bytes; version 3 appends the call site (the return
 * address of the outermost entry into this library, cs_prof_hooks.h); version 4 adds
 * CPU records (CS_EV_CPU: the thread's run-queue wait and on-CPU ns, cs_prof_cpu.c).
 *
 * The distinct call sites of each thread's records are gathered into a small set
 * when its buffer is flushed (not per record), so that MPI_Finalize can list the
 * loaded objects that hold them (callsites.<node>.jsonl) and the reader can resolve
 * them to file:line, with or without --callsites.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cs_prof_sites.h"
#include "cs_prof_tables.h"
#include "cs_prof_trace.h"

/* What the records' fields hold per event: layout.def's trace_record. */

/* The distinct sites of a thread's records: open addressing, 0 is empty. */
typedef struct {
    uint64_t *slot;
    size_t mask, used;
} site_set_t;

typedef struct trace_buf {
    cs_trace_rec_t *recs;
    int n, thread;
    char started, closed; /* header written; closed at finalize (late records dropped) */
    site_set_t sites;
    struct trace_buf *next;
} trace_buf_t;

static char trace_dir[4096];
static long long limit_bytes, used_bytes;
static int buffer_records;
static int warned, write_failed;
static trace_buf_t *all_buffers;
static pthread_mutex_t buffers_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread trace_buf_t *tl_buf;

void cs_trace_init(const char *dir, long long limit, int records)
{
    snprintf(trace_dir, sizeof trace_dir, "%s", dir);
    limit_bytes = limit;
    buffer_records = records;
}

static void trace_path(const trace_buf_t *b, char *path, size_t n)
{
    snprintf(path, n, "%s/trace.%d.%d.bin", trace_dir, cs_world_rank, b->thread);
}

/* Append n bytes to b's file, writing its header first when it is new. */
static int append(trace_buf_t *b, const void *data, size_t n)
{
    char path[4200];
    trace_path(b, path, sizeof path);
    int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | (b->started ? 0 : O_CREAT | O_EXCL), 0600);
    if (fd < 0) return -1;
    int rc = 0;
    if (!b->started) {
        cs_trace_header_t h = {.version = CS_TRACE_VERSION,
                               .record_bytes = sizeof(cs_trace_rec_t),
                               .rank = cs_world_rank,
                               .thread = b->thread,
                               .tick0 = cs_hdr->tick0};
        memcpy(h.magic, CS_TRACE_MAGIC, sizeof h.magic);
        rc = cs_write_all(fd, &h, sizeof h);
        b->started = rc == 0;
    }
    if (rc == 0) rc = cs_write_all(fd, data, n);
    int err = errno;
    close(fd);
    errno = err;
    return rc;
}

static int site_insert(site_set_t *t, uint64_t a)
{
    if ((t->used + 1) * 2 > t->mask + 1) { /* keep it at most half full */
        size_t cap = t->mask ? 2 * (t->mask + 1) : 64;
        uint64_t *slot = calloc(cap, sizeof *slot);
        if (!slot) return -1;
        for (size_t i = 0; t->slot && i <= t->mask; i++) {
            if (!t->slot[i]) continue;
            size_t j = (t->slot[i] * 0x9E3779B97F4A7C15ull) >> 32 & (cap - 1);
            while (slot[j]) j = (j + 1) & (cap - 1);
            slot[j] = t->slot[i];
        }
        free(t->slot);
        t->slot = slot;
        t->mask = cap - 1;
    }
    size_t i = (a * 0x9E3779B97F4A7C15ull) >> 32 & t->mask;
    for (; t->slot[i]; i = (i + 1) & t->mask)
        if (t->slot[i] == a) return 0;
    t->slot[i] = a;
    t->used++;
    return 0;
}

/* The buffer's sites into its thread's set (consecutive records of one call share
 * theirs, so most records cost one comparison); a CPU record names no call of its own
 * (it may precede a call that writes no record). */
static void note_sites(trace_buf_t *b)
{
    uint64_t last = 0;
    for (int i = 0; i < b->n; i++) {
        uint64_t a = b->recs[i].site;
        if (a == last || !a || b->recs[i].event == CS_EV_CPU) continue;
        last = a;
        if (site_insert(&b->sites, a) != 0) return; /* out of memory: those stay unresolved */
    }
}

static void flush(trace_buf_t *b)
{
    if (b->n == 0) return;
    note_sites(b);
    size_t bytes = (size_t)b->n * sizeof(cs_trace_rec_t);
    uint64_t *s = cs_slab_at((uint32_t)b->thread);
    int over = __atomic_add_fetch(&used_bytes, (long long)bytes, __ATOMIC_RELAXED) > limit_bytes;
    int err = 0;
    /* The first failed write stops the trace (no record is appended after a hole); a
     * closed buffer drops late records. */
    if (!over && !b->closed && !__atomic_load_n(&write_failed, __ATOMIC_RELAXED)) {
        if (append(b, b->recs, bytes) == 0) {
            s[CS_C_trace_records] += (uint64_t)b->n;
            b->n = 0;
            return;
        }
        err = errno ? errno : EIO;
    }
    s[CS_C_trace_records_dropped] += (uint64_t)b->n;
    b->n = 0;
    if (over && !__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED)) {
        fprintf(stderr, CS_PREFIX "rank %d: trace size limit reached (COMMSCOPE_TRACE_LIMIT, "
                                  "--trace-limit); later records are counted as dropped\n",
                cs_world_rank);
    } else if (err && !__atomic_exchange_n(&write_failed, 1, __ATOMIC_RELAXED)) {
        char path[4200];
        trace_path(b, path, sizeof path);
        cs_write_failed(path, err, "later trace records are counted as dropped");
    }
}

static trace_buf_t *my_buffer(void)
{
    if (tl_buf) return tl_buf;
    trace_buf_t *b = calloc(1, sizeof *b);
    if (!b || !(b->recs = malloc(sizeof(cs_trace_rec_t) * (size_t)buffer_records))) {
        free(b);
        return 0;
    }
    cs_slab();
    b->thread = cs_thread_index();
    if (b->thread < 0) { /* a thread without a slab of its own is not traced either */
        free(b->recs);
        free(b);
        return 0;
    }
    pthread_mutex_lock(&buffers_lock);
    b->next = all_buffers;
    all_buffers = b;
    pthread_mutex_unlock(&buffers_lock);
    return tl_buf = b;
}

static void trace_at(int event, int func, uint64_t t0, uint64_t t1, uint64_t request, long long bytes,
                     int peer, int tag, int comm_id, int flags)
{
    trace_buf_t *b = my_buffer();
    if (!b) return;
    cs_trace_rec_t *r = &b->recs[b->n++];
    r->t_begin = t0;
    r->t_end = t1;
    r->request = request;
    r->bytes = bytes;
    r->peer = peer == MPI_ANY_SOURCE ? -1 : peer;
    r->tag = tag == MPI_ANY_TAG ? -1 : tag;
    r->comm = comm_id;
    r->event = (uint8_t)event;
    r->flags = (uint8_t)flags;
    r->func = func >= 0 && func < CS_NFUNC ? (uint16_t)func : 0xffff;
    r->site = (uint64_t)(uintptr_t)cs_tl_site; /* set by the entry point (cs_prof_hooks.h) */
    if (b->n == buffer_records) flush(b);
}

void cs_trace(int event, int func, uint64_t t0, uint64_t request, long long bytes, int peer, int tag,
              int comm_id, int flags)
{
    trace_at(event, func, t0, cs_ticks(), request, bytes, peer, tag, comm_id, flags);
}

void cs_trace_cpu(int func, uint64_t t0, uint64_t wait_ns, uint64_t run_ns)
{
    trace_at(CS_EV_CPU, func, t0, t0, wait_ns, (long long)run_ns, -1, 0, -1, 0);
}

void cs_trace_coll(int event, int func, int coll, uint64_t t0, uint64_t request, long long sent,
                   long long received, int root, int comm_id)
{
    if (event == CS_EV_COLL)
        cs_trace(event, func, t0, (uint64_t)received, sent, root, coll, comm_id, 0);
    else
        cs_trace(event, func, t0, request, event == CS_EV_ICOLL ? sent : received, root, coll, comm_id, 0);
}

int cs_coll_root(int root)
{
    return root == CS_NO_ROOT ? CS_ROOT_NONE : root == MPI_ROOT    ? CS_ROOT_MPI_ROOT
                                           : root == MPI_PROC_NULL ? CS_ROOT_PROC_NULL
                                                                   : root;
}

int cs_coll_is_root(MPI_Comm comm, int root)
{
    if (root == MPI_ROOT) return 1; /* intercommunicator: the root's side says MPI_ROOT */
    int inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    return !inter && root >= 0 && root == cs_coll_rank(comm);
}

int cs_coll_size(MPI_Comm comm)
{
    const cs_group_t *g = comm == MPI_COMM_WORLD ? 0 : cs_comm_lookup(comm);
    return g ? g->size : cs_world_size;
}

int cs_coll_rank(MPI_Comm comm)
{
    int r = -1;
    PMPI_Comm_rank(comm, &r);
    return r;
}

void cs_trace_finish(void)
{
    pthread_mutex_lock(&buffers_lock);
    for (trace_buf_t *b = all_buffers; b; b = b->next) {
        flush(b);
        b->closed = 1; /* a late record is dropped, not written */
    }
    pthread_mutex_unlock(&buffers_lock);
}

size_t cs_trace_sites(uint64_t **out)
{
    *out = 0;
    size_t n = 0, cap = 0;
    pthread_mutex_lock(&buffers_lock);
    for (trace_buf_t *b = all_buffers; b; b = b->next) cap += b->sites.used;
    uint64_t *a = cap ? malloc(cap * sizeof *a) : 0;
    for (trace_buf_t *b = all_buffers; a && b; b = b->next)
        for (size_t i = 0; b->sites.slot && i <= b->sites.mask; i++)
            if (b->sites.slot[i]) a[n++] = b->sites.slot[i];
    pthread_mutex_unlock(&buffers_lock);
    *out = a;
    return a ? n : 0;
}
