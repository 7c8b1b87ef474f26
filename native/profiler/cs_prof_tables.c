/* Two lookup tables the wrappers need, both open addressing keyed by MPI handle:
 *
 * communicators: rank in a communicator -> rank in MPI_COMM_WORLD (the peer
 *   matrix is in world ranks).  Filled when a communicator is created through a
 *   wrapped call, or on first sight; read without locks, written under a mutex
 *   (creation is rare).  Every communicator is also listed in comms.<rank>.csv.
 * requests: what a nonblocking request is (send or receive, size, peer), so
 *   that Wait/Test can attribute its completion.  A request may be completed by
 *   another thread than the one that started it (see the bucket locks below); a
 *   full bucket only loses attribution (requests_untracked).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cs_prof.h"

#define EMPTY ((uintptr_t)0)
#define DELETED ((uintptr_t)1)

static inline uintptr_t handle_key(uintptr_t h) { return h < 2 ? h + 2 : h; }
static inline size_t slot_of(uintptr_t key, unsigned bits)
{
    return (size_t)((key * 0x9E3779B97F4A7C15ull) >> (64 - bits));
}

/* ---- communicators -------------------------------------------------------- */

#define COMM_BITS 12
#define COMM_SLOTS (1u << COMM_BITS)
typedef struct {
    uintptr_t key;
    cs_comm_t comm;
} comm_slot_t;
static comm_slot_t comm_slots[COMM_SLOTS];
static pthread_mutex_t comm_lock = PTHREAD_MUTEX_INITIALIZER;
static int next_comm_id = 0;
static FILE *comms_csv;
static char comms_path[4200];

static comm_slot_t *comm_find(uintptr_t key)
{
    for (size_t n = 0, i = slot_of(key, COMM_BITS); n < COMM_SLOTS; n++, i = (i + 1) % COMM_SLOTS) {
        uintptr_t k = __atomic_load_n(&comm_slots[i].key, __ATOMIC_ACQUIRE);
        if (k == key) return &comm_slots[i];
        if (k == EMPTY) return 0;
    }
    return 0;
}

static int comm_id_of(MPI_Comm comm)
{
    if (comm == MPI_COMM_WORLD) return 0;
    comm_slot_t *s = comm_find(handle_key((uintptr_t)comm));
    return s ? s->comm.id : -1;
}

/* Caller holds comm_lock. */
static comm_slot_t *comm_add(MPI_Comm comm, const char *created_by, MPI_Comm parent)
{
    uintptr_t key = handle_key((uintptr_t)comm);
    comm_slot_t *found = comm_find(key);
    if (found) return found;
    int inter = 0, size = 0;
    MPI_Group group, world_group;
    PMPI_Comm_test_inter(comm, &inter);
    if ((inter ? PMPI_Comm_remote_group(comm, &group) : PMPI_Comm_group(comm, &group)) != MPI_SUCCESS)
        return 0;
    PMPI_Group_size(group, &size);
    int *ranks = malloc(sizeof(int) * (size_t)(size ? size : 1));
    int *world = malloc(sizeof(int) * (size_t)(size ? size : 1));
    if (!ranks || !world) {
        free(ranks), free(world);
        PMPI_Group_free(&group);
        return 0;
    }
    for (int i = 0; i < size; i++) ranks[i] = i;
    PMPI_Comm_group(MPI_COMM_WORLD, &world_group);
    PMPI_Group_translate_ranks(group, size, ranks, world_group, world);
    PMPI_Group_free(&group);
    PMPI_Group_free(&world_group);
    free(ranks);
    for (int i = 0; i < size; i++)
        if (world[i] == MPI_UNDEFINED) world[i] = -1;
    for (size_t n = 0, i = slot_of(key, COMM_BITS); n < COMM_SLOTS; n++, i = (i + 1) % COMM_SLOTS) {
        uintptr_t k = comm_slots[i].key;
        if (k != EMPTY && k != DELETED) continue;
        comm_slot_t *s = &comm_slots[i];
        s->comm.id = next_comm_id++;
        s->comm.size = size;
        s->comm.world_ranks = world;
        __atomic_store_n(&s->key, key, __ATOMIC_RELEASE);
        if (comms_csv) {
            errno = 0;
            fprintf(comms_csv, "%d,%d,%s,%d,%d,", s->comm.id, size, created_by, comm_id_of(parent), inter);
            for (int r = 0; r < size; r++) fprintf(comms_csv, "%s%d", r ? " " : "", world[r]);
            fputc('\n', comms_csv);
            if (fflush(comms_csv) != 0 || ferror(comms_csv)) {
                /* stop rather than leave a list with holes; counting goes on */
                cs_write_failed(comms_path, errno ? errno : EIO,
                                "communicators are no longer listed");
                fclose(comms_csv);
                comms_csv = 0;
            }
        }
        return s;
    }
    free(world);
    return 0; /* table full: peers in this communicator stay unknown */
}

const cs_comm_t *cs_comm_lookup(MPI_Comm comm)
{
    comm_slot_t *s = comm_find(handle_key((uintptr_t)comm));
    if (s) return &s->comm;
    pthread_mutex_lock(&comm_lock);
    s = comm_add(comm, "first_use", MPI_COMM_NULL);
    pthread_mutex_unlock(&comm_lock);
    return s ? &s->comm : 0;
}

void cs_comm_register(MPI_Comm comm, const char *created_by, MPI_Comm parent)
{
    pthread_mutex_lock(&comm_lock);
    comm_add(comm, created_by, parent);
    pthread_mutex_unlock(&comm_lock);
}

void cs_comm_forget(MPI_Comm comm)
{
    if (comm == MPI_COMM_NULL || comm == MPI_COMM_WORLD || comm == MPI_COMM_SELF) return;
    pthread_mutex_lock(&comm_lock);
    comm_slot_t *s = comm_find(handle_key((uintptr_t)comm));
    if (s) {
        /* world_ranks stays allocated: a reader racing with the free may still use it */
        __atomic_store_n(&s->key, DELETED, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&comm_lock);
}

void cs_comms_init(const char *dir)
{
    char *path = comms_path;
    snprintf(path, sizeof comms_path, "%s/comms.%d.csv", dir, cs_world_rank);
    comms_csv = fopen(path, "wx");
    if (comms_csv) fprintf(comms_csv, "comm_id,size,created_by,parent_id,inter,world_ranks\n");
    else cs_write_failed(path, errno, "communicators are not listed");
    pthread_mutex_lock(&comm_lock);
    comm_add(MPI_COMM_WORLD, "MPI_COMM_WORLD", MPI_COMM_NULL);
    comm_add(MPI_COMM_SELF, "MPI_COMM_SELF", MPI_COMM_NULL);
    pthread_mutex_unlock(&comm_lock);
}

void cs_comms_finish(void)
{
    pthread_mutex_lock(&comm_lock);
    if (comms_csv) fclose(comms_csv);
    comms_csv = 0;
    pthread_mutex_unlock(&comm_lock);
}

/* ---- requests ------------------------------------------------------------- */

/* Buckets of a few entries, each behind its own byte lock (held for a handful of
 * instructions; threads meet only when their requests hash to the same bucket).
 * A lock-free table is not enough here: once PMPI_Wait* returns, MPI may hand the
 * same handle to another thread's new request before the completing thread has
 * removed the old entry.  So completion wrappers copy an entry while its handle is
 * still live, removal checks the entry's id, and an insert purges any older entry
 * with the same handle (that request has completed, or MPI would not reuse it). */
#define PER_BUCKET 4
typedef struct {
    uint32_t lock, pad;
    cs_req_t e[PER_BUCKET];
} bucket_t;
static bucket_t *buckets;
static unsigned bucket_bits;

static inline bucket_t *bucket_lock(uintptr_t key)
{
    bucket_t *b = &buckets[slot_of(key, bucket_bits)];
    while (__atomic_exchange_n(&b->lock, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(&b->lock, __ATOMIC_RELAXED)) __builtin_ia32_pause();
    return b;
}

static inline void bucket_unlock(bucket_t *b) { __atomic_store_n(&b->lock, 0, __ATOMIC_RELEASE); }

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

int cs_req_put(MPI_Request req, const cs_req_t *info)
{
    uintptr_t key = handle_key((uintptr_t)req);
    bucket_t *b = bucket_lock(key);
    cs_req_t *free_slot = 0;
    for (int i = 0; i < PER_BUCKET; i++) {
        if (b->e[i].key == key) b->e[i].key = EMPTY; /* stale: its request completed */
        if (b->e[i].key == EMPTY && !free_slot) free_slot = &b->e[i];
    }
    if (free_slot) {
        *free_slot = *info;
        free_slot->key = key;
    }
    bucket_unlock(b);
    return free_slot ? 0 : -1;
}

int cs_req_get(MPI_Request req, cs_req_t *out, int set_active)
{
    uintptr_t key = handle_key((uintptr_t)req);
    bucket_t *b = bucket_lock(key);
    int found = 0;
    for (int i = 0; i < PER_BUCKET && !found; i++) {
        if (b->e[i].key != key) continue;
        *out = b->e[i];
        if (set_active >= 0) b->e[i].active = (char)set_active;
        found = 1;
    }
    bucket_unlock(b);
    return found;
}

void cs_req_done(MPI_Request req, uint64_t id, int keep)
{
    uintptr_t key = handle_key((uintptr_t)req);
    bucket_t *b = bucket_lock(key);
    for (int i = 0; i < PER_BUCKET; i++)
        if (b->e[i].key == key && b->e[i].id == id) {
            if (keep) b->e[i].active = 0;
            else b->e[i].key = EMPTY;
        }
    bucket_unlock(b);
}
