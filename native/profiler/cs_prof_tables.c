/* Two lookup tables the wrappers need, both open addressing keyed by MPI handle:
 *
 * communicators: rank in a communicator -> rank in MPI_COMM_WORLD (the peer
 *   matrix is in world ranks).  Filled when a communicator is created through a
 *   wrapped call, or on first sight; read without locks, written under a mutex
 *   (creation is rare).  Every communicator is also listed in comms.<rank>.csv.
 * requests: what a nonblocking request is (send or receive, size, peer), so
 *   that Wait/Test can attribute its completion.  A request may be completed by
 *   another thread than the one that started it, so slots are claimed with a
 *   compare-and-swap; a full table only loses attribution (requests_untracked).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cs_prof.h"

#define EMPTY ((uintptr_t)0)
#define DELETED ((uintptr_t)1)
#define MAX_PROBES 512

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
            fprintf(comms_csv, "%d,%d,%s,%d,%d,", s->comm.id, size, created_by, comm_id_of(parent), inter);
            for (int r = 0; r < size; r++) fprintf(comms_csv, "%s%d", r ? " " : "", world[r]);
            fputc('\n', comms_csv);
            fflush(comms_csv);
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
    char path[4200];
    snprintf(path, sizeof path, "%s/comms.%d.csv", dir, cs_world_rank);
    comms_csv = fopen(path, "wx");
    if (comms_csv) fprintf(comms_csv, "comm_id,size,created_by,parent_id,inter,world_ranks\n");
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

static cs_req_t *reqs;
static unsigned req_bits;
static size_t req_slots;

int cs_reqs_init(long capacity)
{
    req_bits = 6;
    while ((1ul << req_bits) < (unsigned long)capacity) req_bits++;
    req_slots = (size_t)1 << req_bits;
    reqs = calloc(req_slots, sizeof *reqs); /* pages are touched only as slots are used */
    if (!reqs) {
        fprintf(stderr, CS_PREFIX "cannot allocate the request table (%zu slots)\n", req_slots);
        return -1;
    }
    return 0;
}

cs_req_t *cs_req_insert(MPI_Request req)
{
    uintptr_t key = handle_key((uintptr_t)req);
    size_t i = slot_of(key, req_bits);
    for (int n = 0; n < MAX_PROBES; n++, i = (i + 1) & (req_slots - 1)) {
        uintptr_t k = __atomic_load_n(&reqs[i].key, __ATOMIC_RELAXED);
        while (k == EMPTY || k == DELETED) {
            if (__atomic_compare_exchange_n(&reqs[i].key, &k, key, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
                return &reqs[i];
        }
    }
    return 0;
}

cs_req_t *cs_req_find(MPI_Request req)
{
    uintptr_t key = handle_key((uintptr_t)req);
    size_t i = slot_of(key, req_bits);
    for (int n = 0; n < MAX_PROBES; n++, i = (i + 1) & (req_slots - 1)) {
        uintptr_t k = __atomic_load_n(&reqs[i].key, __ATOMIC_ACQUIRE);
        if (k == key) return &reqs[i];
        if (k == EMPTY) return 0;
    }
    return 0;
}

void cs_req_remove(cs_req_t *entry) { __atomic_store_n(&entry->key, DELETED, __ATOMIC_RELEASE); }
