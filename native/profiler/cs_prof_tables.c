/* Lookup tables the wrappers need, keyed by MPI handle (cs_prof_tables.h):
 *
 * groups: communicators and windows -> world ranks (the peer matrices are in world
 *   ranks), plus a communicator's neighbourhood.  Filled when created through a
 *   wrapped call, or on first sight; read without locks, written under a mutex
 *   (creation is rare).  Every communicator is also listed in node.<node>.comms.csv.
 * files: an MPI-IO file handle -> an id per path, listed in node.<node>.files.csv.
 *
 * The two lists are shared by the node's ranks: each line is appended with one
 * write() (O_APPEND), so lines of different ranks never mix, and says whose it is.
 * requests: what a nonblocking request is (send or receive, size, peer), so that
 *   Wait/Test can attribute its completion.  A request may be completed by another
 *   thread than the one that started it (see the bucket locks below).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cs_prof_tables.h"

#define EMPTY ((uintptr_t)0)
#define DELETED ((uintptr_t)1)

static inline uintptr_t handle_key(uintptr_t h) { return h < 2 ? h + 2 : h; }
static inline size_t slot_of(uintptr_t key, unsigned bits)
{
    return (size_t)((key * 0x9E3779B97F4A7C15ull) >> (64 - bits));
}

/* ---- groups: communicators and windows ----------------------------------------- */

#define GROUP_BITS 12
#define GROUP_SLOTS (1u << GROUP_BITS)
typedef struct {
    uintptr_t key;
    cs_group_t g;
} group_slot_t;
typedef struct {
    group_slot_t slots[GROUP_SLOTS];
    pthread_mutex_t lock;
    int next_id;
} group_table_t;
static group_table_t comms = {.lock = PTHREAD_MUTEX_INITIALIZER};
static group_table_t wins = {.lock = PTHREAD_MUTEX_INITIALIZER};
/* ---- the node's lists -------------------------------------------------------------- */

typedef struct {
    int fd; /* -1: not open (or given up after a failed write) */
    char path[4200];
} node_list_t;

/* Open (or create, writing `header`) a list shared by the node's ranks. */
static void list_open(node_list_t *l, const char *path, const char *header, const char *then)
{
    snprintf(l->path, sizeof l->path, "%s", path);
    l->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    struct stat st;
    int rc = l->fd >= 0 && flock(l->fd, LOCK_EX) == 0 && fstat(l->fd, &st) == 0 ? 0 : -1;
    if (rc == 0 && st.st_size == 0) rc = cs_write_all(l->fd, header, strlen(header));
    int err = errno;
    if (l->fd >= 0) flock(l->fd, LOCK_UN);
    if (rc != 0) {
        cs_write_failed(path, err, then);
        if (l->fd >= 0) close(l->fd);
        l->fd = -1;
    }
}

/* A growing line of text. */
typedef struct {
    char *p;
    size_t n, cap;
} line_t;

static void say(line_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(line_t *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p ? b->p + b->n : 0, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) return;
        if (b->p && b->n + (size_t)k < b->cap) {
            b->n += (size_t)k;
            return;
        }
        size_t cap = (b->cap ? 2 * b->cap : 256) + (size_t)k;
        char *p = realloc(b->p, cap);
        if (!p) return;
        b->p = p, b->cap = cap;
    }
}

static void list_line(node_list_t *l, line_t *b, const char *then)
{
    if (l->fd >= 0 && b->p && cs_write_all(l->fd, b->p, b->n) != 0) {
        /* stop rather than leave a list with holes; counting goes on */
        cs_write_failed(l->path, errno, then);
        close(l->fd);
        l->fd = -1;
    }
    free(b->p);
}

static void list_close(node_list_t *l)
{
    if (l->fd >= 0) close(l->fd);
    l->fd = -1;
}

static node_list_t comms_list = {.fd = -1}, files_list = {.fd = -1};

static group_slot_t *group_find(group_table_t *t, uintptr_t key)
{
    for (size_t n = 0, i = slot_of(key, GROUP_BITS); n < GROUP_SLOTS; n++, i = (i + 1) % GROUP_SLOTS) {
        uintptr_t k = __atomic_load_n(&t->slots[i].key, __ATOMIC_ACQUIRE);
        if (k == key) return &t->slots[i];
        if (k == EMPTY) return 0;
    }
    return 0;
}

/* world ranks of `group` (malloc'd; -1 for ranks outside the world group), or NULL. */
static int *world_ranks_of(MPI_Group group, int size)
{
    int *ranks = malloc(sizeof(int) * (size_t)(size ? size : 1));
    int *world = malloc(sizeof(int) * (size_t)(size ? size : 1));
    if (!ranks || !world) {
        free(ranks), free(world);
        return 0;
    }
    for (int i = 0; i < size; i++) ranks[i] = i;
    PMPI_Group_translate_ranks(group, size, ranks, cs_world_group, world);
    free(ranks);
    for (int i = 0; i < size; i++)
        if (world[i] == MPI_UNDEFINED) world[i] = -1;
    return world;
}

/* Caller holds t->lock.  Takes ownership of `world`. */
static group_slot_t *group_add(group_table_t *t, uintptr_t key, int size, int *world)
{
    for (size_t n = 0, i = slot_of(key, GROUP_BITS); n < GROUP_SLOTS; n++, i = (i + 1) % GROUP_SLOTS) {
        uintptr_t k = t->slots[i].key;
        if (k != EMPTY && k != DELETED) continue;
        group_slot_t *s = &t->slots[i];
        memset(&s->g, 0, sizeof s->g);
        s->g.id = t->next_id++;
        s->g.size = size;
        s->g.world_ranks = world;
        __atomic_store_n(&s->key, key, __ATOMIC_RELEASE);
        return s;
    }
    free(world);
    return 0; /* table full: peers in this group stay unknown */
}

static void forget(group_table_t *t, uintptr_t key)
{
    pthread_mutex_lock(&t->lock);
    group_slot_t *s = group_find(t, key);
    if (s) /* world_ranks stays allocated: a reader racing with the free may still use it */
        __atomic_store_n(&s->key, DELETED, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&t->lock);
}

int cs_comm_id(MPI_Comm comm)
{
    if (comm == MPI_COMM_WORLD) return 0;
    if (comm == MPI_COMM_NULL) return -1;
    const cs_group_t *g = cs_comm_lookup(comm);
    return g ? g->id : -1;
}

/* A communicator's world ranks as runs: "0-127" for the world, "3 5 8-11" otherwise. */
static void list_comm(const cs_group_t *g, const char *created_by, int parent_id, int inter)
{
    if (comms_list.fd < 0) return;
    line_t b = {0};
    say(&b, "%d,%d,%d,%s,%d,%d,", cs_world_rank, g->id, g->size, created_by, parent_id, inter);
    for (int r = 0; r < g->size;) {
        int end = r;
        while (end + 1 < g->size && g->world_ranks[end] >= 0 && g->world_ranks[end + 1] == g->world_ranks[end] + 1)
            end++;
        say(&b, end > r ? "%s%d-%d" : "%s%d", r ? " " : "", g->world_ranks[r], g->world_ranks[end]);
        r = end + 1;
    }
    say(&b, "\n");
    list_line(&comms_list, &b, "communicators are no longer listed");
}

/* Caller holds comms.lock. */
static group_slot_t *comm_add(MPI_Comm comm, const char *created_by, MPI_Comm parent)
{
    uintptr_t key = handle_key((uintptr_t)comm);
    group_slot_t *found = group_find(&comms, key);
    if (found) return found;
    int inter = 0, size = 0;
    MPI_Group group;
    PMPI_Comm_test_inter(comm, &inter);
    if ((inter ? PMPI_Comm_remote_group(comm, &group) : PMPI_Comm_group(comm, &group)) != MPI_SUCCESS)
        return 0;
    PMPI_Group_size(group, &size);
    int *world = world_ranks_of(group, size);
    PMPI_Group_free(&group);
    group_slot_t *s = world ? group_add(&comms, key, size, world) : 0;
    if (s) {
        group_slot_t *p = parent == MPI_COMM_NULL ? 0 : group_find(&comms, handle_key((uintptr_t)parent));
        list_comm(&s->g, created_by, parent == MPI_COMM_WORLD ? 0 : p ? p->g.id
                                                                      : -1,
                  inter);
    }
    return s;
}

const cs_group_t *cs_comm_lookup(MPI_Comm comm)
{
    group_slot_t *s = group_find(&comms, handle_key((uintptr_t)comm));
    if (s) return &s->g;
    if (!cs_sets || comm == MPI_COMM_NULL) return 0; /* not profiling: no MPI calls of ours */
    pthread_mutex_lock(&comms.lock);
    s = comm_add(comm, "first_use", MPI_COMM_NULL);
    pthread_mutex_unlock(&comms.lock);
    return s ? &s->g : 0;
}

void cs_comm_register(MPI_Comm comm, const char *created_by, MPI_Comm parent)
{
    if (!cs_sets) return;
    pthread_mutex_lock(&comms.lock);
    comm_add(comm, created_by, parent);
    pthread_mutex_unlock(&comms.lock);
}

void cs_comm_forget(MPI_Comm comm)
{
    if (comm == MPI_COMM_NULL || comm == MPI_COMM_WORLD || comm == MPI_COMM_SELF) return;
    forget(&comms, handle_key((uintptr_t)comm));
    cs_epoch_bump(); /* its handle may name another communicator next: peer caches empty */
}

/* The peer entry of `rank` in `comm` (0 when it is no world rank), kept in this
 * thread's peer cache (cs_peer_of in cs_prof_tables.h). */
uint64_t *cs_peer_slow(uint64_t *s, MPI_Comm comm, int rank)
{
    int w = -1;
    if (comm == MPI_COMM_WORLD)
        w = rank >= 0 && rank < cs_world_size ? rank : -1;
    else if (comm != MPI_COMM_NULL && rank >= 0) {
        const cs_group_t *g = cs_comm_lookup(comm);
        w = g && rank < g->size ? g->world_ranks[rank] : -1;
    }
    uint64_t *e = w >= 0 ? cs_peer(s, w) : 0;
    if (s == cs_tl.slab) cs_tl.peer_cache[CS_PEER_SLOT(comm, rank)] = (cs_peer_cache_t){comm, rank, e};
    return e;
}

/* Neighbours as the neighbourhood collectives see them: a Cartesian communicator has
 * 2 x ndims slots (in = out), MPI_PROC_NULL at a non-periodic edge; a graph's are the
 * rank's neighbours; a distributed graph's its in- and out-edges. */
static void fill_topology(cs_group_t *g, MPI_Comm comm)
{
    int topo = MPI_UNDEFINED, rank = 0;
    PMPI_Topo_test(comm, &topo);
    PMPI_Comm_rank(comm, &rank);
    if (topo == MPI_CART) {
        int ndims = 0;
        PMPI_Cartdim_get(comm, &ndims);
        g->indegree = g->outdegree = 2 * ndims;
        g->in_real = calloc((size_t)(2 * ndims + 1), 1);
        g->out_real = g->in_real;
        for (int d = 0; g->in_real && d < ndims; d++) {
            int lo, hi;
            PMPI_Cart_shift(comm, d, 1, &lo, &hi);
            g->in_real[2 * d] = lo != MPI_PROC_NULL;
            g->in_real[2 * d + 1] = hi != MPI_PROC_NULL;
        }
    } else if (topo == MPI_GRAPH) {
        int n = 0;
        PMPI_Graph_neighbors_count(comm, rank, &n);
        g->indegree = g->outdegree = n;
    } else if (topo == MPI_DIST_GRAPH) {
        int weighted = 0;
        PMPI_Dist_graph_neighbors_count(comm, &g->indegree, &g->outdegree, &weighted);
    }
    __atomic_store_n(&g->topo_known, 1, __ATOMIC_RELEASE);
}

const cs_group_t *cs_comm_topology(MPI_Comm comm)
{
    const cs_group_t *g = cs_comm_lookup(comm);
    if (!g || __atomic_load_n(&g->topo_known, __ATOMIC_ACQUIRE)) return g;
    pthread_mutex_lock(&comms.lock);
    if (!g->topo_known) fill_topology((cs_group_t *)g, comm);
    pthread_mutex_unlock(&comms.lock);
    return g;
}

void cs_comms_init(const char *node_base, int world_model)
{
    char path[4200];
    snprintf(path, sizeof path, "%s.comms.csv", node_base);
    list_open(&comms_list, path, "rank,comm_id,size,created_by,parent_id,inter,world_ranks\n",
              "communicators are not listed");
    pthread_mutex_lock(&comms.lock);
    if (world_model) {
        comm_add(MPI_COMM_WORLD, "MPI_COMM_WORLD", MPI_COMM_NULL);
        comm_add(MPI_COMM_SELF, "MPI_COMM_SELF", MPI_COMM_NULL);
    } else {
        comms.next_id = 2; /* ids 0 and 1 stay the world model's */
    }
    pthread_mutex_unlock(&comms.lock);
}

void cs_comms_finish(void)
{
    pthread_mutex_lock(&comms.lock);
    list_close(&comms_list);
    pthread_mutex_unlock(&comms.lock);
}

const cs_group_t *cs_win_lookup(MPI_Win win)
{
    group_slot_t *s = group_find(&wins, handle_key((uintptr_t)win));
    if (s || !cs_sets || win == MPI_WIN_NULL) return s ? &s->g : 0;
    cs_win_register(win); /* a window created before profiling started */
    s = group_find(&wins, handle_key((uintptr_t)win));
    return s ? &s->g : 0;
}

void cs_win_register(MPI_Win win)
{
    if (!cs_sets || win == MPI_WIN_NULL) return;
    uintptr_t key = handle_key((uintptr_t)win);
    pthread_mutex_lock(&wins.lock);
    if (!group_find(&wins, key)) {
        MPI_Group group;
        int size = 0;
        if (PMPI_Win_get_group(win, &group) == MPI_SUCCESS) {
            PMPI_Group_size(group, &size);
            int *world = world_ranks_of(group, size);
            PMPI_Group_free(&group);
            if (world) group_add(&wins, key, size, world);
        }
    }
    pthread_mutex_unlock(&wins.lock);
}

void cs_win_forget(MPI_Win win) { forget(&wins, handle_key((uintptr_t)win)); }

/* ---- MPI-IO files ------------------------------------------------------------- */

#define FILE_SLOTS 1024
static struct {
    uintptr_t key;
    int id;
} file_slots[FILE_SLOTS];
static char **file_paths; /* id -> path */
static int nfile_paths, file_paths_cap;
static pthread_mutex_t files_lock = PTHREAD_MUTEX_INITIALIZER;
static char files_path[4200]; /* opened at the first MPI-IO call: most programs make none */

void cs_files_init(const char *node_base) { snprintf(files_path, sizeof files_path, "%s.files.csv", node_base); }

void cs_files_finish(void)
{
    pthread_mutex_lock(&files_lock);
    list_close(&files_list);
    pthread_mutex_unlock(&files_lock);
}

static void csv_field(line_t *b, const char *s)
{
    say(b, "\"");
    for (; *s; s++) {
        if (*s == '"') say(b, "\"");
        say(b, "%c", *s == '\n' ? ' ' : *s);
    }
    say(b, "\"");
}

/* Caller holds files_lock.  The id of `path`, listing a new one in files.<rank>.csv
 * (the list is opened at the first MPI-IO call: most programs do none). */
static int path_id(const char *path)
{
    for (int i = 0; i < nfile_paths; i++)
        if (!strcmp(file_paths[i], path)) return i;
    if (nfile_paths == file_paths_cap) {
        int cap = file_paths_cap ? 2 * file_paths_cap : 16;
        char **p = realloc(file_paths, sizeof *p * (size_t)cap);
        if (!p) return CS_MAX_FILES - 1;
        file_paths = p, file_paths_cap = cap;
    }
    file_paths[nfile_paths] = strdup(path);
    if (!file_paths[nfile_paths]) return CS_MAX_FILES - 1;
    if (files_path[0]) { /* one attempt */
        list_open(&files_list, files_path, "rank,file_id,path\n", "files are not listed");
        files_path[0] = 0;
    }
    line_t b = {0};
    say(&b, "%d,%d,", cs_world_rank, nfile_paths);
    csv_field(&b, path);
    say(&b, "\n");
    list_line(&files_list, &b, "files are no longer listed");
    __atomic_store_n(&cs_hdr->nfiles, (uint32_t)(nfile_paths + 1), __ATOMIC_RELEASE);
    return nfile_paths++;
}

void cs_file_register(MPI_File fh, const char *path)
{
    if (!cs_sets || fh == MPI_FILE_NULL) return;
    uintptr_t key = handle_key((uintptr_t)fh);
    pthread_mutex_lock(&files_lock);
    int id = path_id(path);
    for (size_t n = 0, i = slot_of(key, 10); n < FILE_SLOTS; n++, i = (i + 1) % FILE_SLOTS) {
        if (file_slots[i].key == EMPTY || file_slots[i].key == DELETED || file_slots[i].key == key) {
            file_slots[i].id = id;
            __atomic_store_n(&file_slots[i].key, key, __ATOMIC_RELEASE);
            break;
        }
    }
    pthread_mutex_unlock(&files_lock);
}

void cs_file_forget(MPI_File fh)
{
    uintptr_t key = handle_key((uintptr_t)fh);
    pthread_mutex_lock(&files_lock);
    for (size_t n = 0, i = slot_of(key, 10); n < FILE_SLOTS && file_slots[i].key != EMPTY;
         n++, i = (i + 1) % FILE_SLOTS)
        if (file_slots[i].key == key) {
            __atomic_store_n(&file_slots[i].key, DELETED, __ATOMIC_RELEASE);
            break;
        }
    pthread_mutex_unlock(&files_lock);
}

int cs_file_id(MPI_File fh)
{
    uintptr_t key = handle_key((uintptr_t)fh);
    for (size_t n = 0, i = slot_of(key, 10); n < FILE_SLOTS; n++, i = (i + 1) % FILE_SLOTS) {
        uintptr_t k = __atomic_load_n(&file_slots[i].key, __ATOMIC_ACQUIRE);
        if (k == key) return file_slots[i].id;
        if (k == EMPTY) return -1;
    }
    return -1;
}

/* ---- requests ------------------------------------------------------------- */

/* Buckets of a few entries, each behind its own byte lock (held for a handful of
 * instructions; threads meet only when their requests hash to the same bucket).
 * A lock-free table is not enough here: once PMPI_Wait* returns, MPI may hand the
 * same handle to another thread's new request before the completing thread has
 * removed the old entry.  So completion wrappers copy an entry while its handle is
 * still live, and removal checks the entry's id.
 *
 * The Wait/Test wrappers take the entries of the requests they were given out of
 * the table before the PMPI call, and put back those that did not complete: so no
 * entry outlives its handle, which MPI may reuse the moment the call returns.
 *
 * One handle can stand for several live requests: Open MPI returns one shared,
 * already complete request object for sends that finish at once (to itself, say).
 * So a handle may have several entries: a thread takes the oldest of its own, or
 * else the oldest (`order`).
 * A full bucket spills into one overflow list behind a mutex, so no request goes
 * untracked; the list is searched only while it holds something. */
#define PER_BUCKET 4
typedef struct {
    uint32_t lock, pad;
    cs_req_t e[PER_BUCKET];
} bucket_t;
static bucket_t *buckets;
static unsigned bucket_bits;
static cs_req_t *overflow;
static int noverflow, overflow_cap;
static pthread_mutex_t overflow_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t next_order = 1;

/* Below MPI_THREAD_MULTIPLE the program makes one MPI call at a time, so the table
 * is only ever touched by one thread at a time: no bucket locks, no atomic order. */
static inline bucket_t *bucket_lock(uintptr_t key)
{
    bucket_t *b = &buckets[slot_of(key, bucket_bits)];
    if (__builtin_expect(cs_thread_multiple, 0))
        while (__atomic_exchange_n(&b->lock, 1, __ATOMIC_ACQUIRE))
            while (__atomic_load_n(&b->lock, __ATOMIC_RELAXED)) __builtin_ia32_pause();
    return b;
}

static inline void bucket_unlock(bucket_t *b)
{
    if (__builtin_expect(cs_thread_multiple, 0)) __atomic_store_n(&b->lock, 0, __ATOMIC_RELEASE);
}

int cs_reqs_init(long capacity)
{
    bucket_bits = 4;
    while ((PER_BUCKET << bucket_bits) < capacity) bucket_bits++;
    buckets = calloc((size_t)1 << bucket_bits, sizeof *buckets); /* touched only as used */
    if (!buckets) {
        fprintf(stderr, CS_PREFIX "cannot allocate the request table (%ld entries)\n", capacity);
        return -1;
    }
    return 0;
}

static int put(MPI_Request req, const cs_req_t *info, uint64_t order)
{
    uintptr_t key = handle_key((uintptr_t)req);
    bucket_t *b = bucket_lock(key);
    cs_req_t *slot = 0;
    for (int i = 0; i < PER_BUCKET && !slot; i++)
        if (b->e[i].key == EMPTY) slot = &b->e[i];
    if (slot) {
        *slot = *info;
        slot->key = key;
        slot->order = order;
    }
    bucket_unlock(b);
    if (slot) return 0;
    pthread_mutex_lock(&overflow_lock);
    if (noverflow == overflow_cap) {
        int cap = overflow_cap ? 2 * overflow_cap : 64;
        cs_req_t *p = realloc(overflow, sizeof *p * (size_t)cap);
        if (p) overflow = p, overflow_cap = cap;
    }
    int ok = noverflow < overflow_cap;
    if (ok) {
        overflow[noverflow] = *info;
        overflow[noverflow].key = key;
        overflow[noverflow].order = order;
        __atomic_store_n(&noverflow, noverflow + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&overflow_lock);
    return ok ? 0 : -1;
}

int cs_req_put(MPI_Request req, const cs_req_t *info)
{
    uint64_t order = __builtin_expect(cs_thread_multiple, 0) ? __atomic_fetch_add(&next_order, 1, __ATOMIC_RELAXED)
                                                             : next_order++;
    return put(req, info, order);
}

int cs_req_restore(MPI_Request req, const cs_req_t *e) { return put(req, e, e->order); }

/* The entry of `key` with `id` (id != 0), or else the oldest one the calling thread
 * started (a shared handle: each thread waits for its own request), or else the
 * oldest.  Sets *count to how many entries key has.  Both locks are held by the
 * caller (the overflow lock only when the list is not empty). */
static cs_req_t *find(bucket_t *b, int with_overflow, uintptr_t key, uint64_t id, int *count)
{
    /* the usual case: one entry of this handle, in its bucket */
    int at = -1, k = 0;
    for (int i = 0; i < PER_BUCKET; i++)
        if (b->e[i].key == key) at = i, k++;
    if (__builtin_expect(k == 1 && !with_overflow, 1)) {
        *count = 1;
        return !id || b->e[at].id == id ? &b->e[at] : 0;
    }
    uint64_t mine = (uint64_t)(cs_tl.index + 1);
    cs_req_t *oldest = 0, *own = 0;
    k = 0;
    for (int i = 0; i < PER_BUCKET + (with_overflow ? noverflow : 0); i++) {
        cs_req_t *e = i < PER_BUCKET ? &b->e[i] : &overflow[i - PER_BUCKET];
        if (e->key != key) continue;
        k++;
        if (id && e->id == id) {
            *count = 1;
            return e;
        }
        if (!oldest || e->order < oldest->order) oldest = e;
        if (e->id >> 40 == mine && (!own || e->order < own->order)) own = e;
    }
    *count = k;
    return id ? 0 : own ? own
                        : oldest;
}

enum { OP_GET,
       OP_TAKE,
       OP_CANCEL,
       OP_DONE };
static int with_entry(MPI_Request req, int op, cs_req_t *out, int set_active, uint64_t id, int keep)
{
    uintptr_t key = handle_key((uintptr_t)req);
    int spill = __atomic_load_n(&noverflow, __ATOMIC_ACQUIRE) != 0, count = 0;
    if (spill) pthread_mutex_lock(&overflow_lock);
    bucket_t *b = bucket_lock(key);
    cs_req_t *e = find(b, spill, key, op == OP_DONE ? id : 0, &count);
    if (e && (op == OP_GET || op == OP_TAKE)) {
        *out = *e;
        if (set_active >= 0) e->active = (char)set_active;
    }
    if (e && op == OP_CANCEL) {
        e->cancelled = 1;
    } else if (e && op == OP_DONE && keep) {
        e->active = 0, e->cancelled = 0;
    } else if (e && op != OP_GET) {
        e->key = EMPTY;
        if (spill && e >= overflow && e < overflow + noverflow) { /* keep the list dense */
            *e = overflow[noverflow - 1];
            __atomic_store_n(&noverflow, noverflow - 1, __ATOMIC_RELEASE);
        }
    }
    bucket_unlock(b);
    if (spill) pthread_mutex_unlock(&overflow_lock);
    return e ? count : 0;
}

int cs_req_get(MPI_Request req, cs_req_t *out, int set_active)
{
    return with_entry(req, OP_GET, out, set_active, 0, 0);
}

int cs_req_take(MPI_Request req, cs_req_t *out) { return with_entry(req, OP_TAKE, out, -1, 0, 0); }

int cs_req_mark_cancelled(MPI_Request req) { return with_entry(req, OP_CANCEL, 0, -1, 0, 0); }

void cs_req_done(MPI_Request req, uint64_t id, int keep) { with_entry(req, OP_DONE, 0, -1, id, keep); }
