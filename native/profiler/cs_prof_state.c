/* libcommscope's state (see cs_prof_state.h): globals, the mapped counter file and
 * the slabs threads claim in it, the clock, type sizes and error reporting. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cs_prof_state.h"

int cs_sets = 0;
int cs_clock_wanted = 0;
int cs_world_size = 0;
int cs_world_rank = -1;
MPI_Group cs_world_group = MPI_GROUP_NULL;
cs_header_t *cs_hdr = 0;
uint64_t *cs_rank_words = 0;
uint64_t *cs_file_words = 0;
long long cs_coll_small_bytes = 2048;
int cs_coll_small_comm = 16;

__thread uint64_t *cs_tl_slab __attribute__((tls_model("initial-exec"))) = 0;
static __thread int tl_index __attribute__((tls_model("initial-exec"))) = -1;
static __thread uint64_t tl_request_seq __attribute__((tls_model("initial-exec"))) = 0;
__thread MPI_Datatype cs_tl_type __attribute__((tls_model("initial-exec")));
__thread long long cs_tl_type_size __attribute__((tls_model("initial-exec"))) = 0;
__thread unsigned cs_tl_type_gen __attribute__((tls_model("initial-exec"))) = ~0u;
volatile unsigned cs_type_generation = 0;

void cs_write_failed(const char *path, int err, const char *then)
{
    fprintf(stderr, CS_PREFIX "rank %d: cannot write %s: %s [errno %d]; %s\n", cs_world_rank, path,
            strerror(err), err, then);
}

int cs_write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return -1;
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

uint64_t cs_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- the counter file and its slabs ----------------------------------------- */

/* Calls made before set-up land in a scratch slab that nobody reads (no set is on
 * then, so only the fixed part is ever touched).  Threads that get no slab because
 * the file could not grow share `lost_slab`, also unread (lost_threads says so). */
static uint64_t scratch_slab[CS_OFF_PEERS + 8];
static uint64_t *lost_slab;
static size_t slab_words;
static int map_fd = -1;
static char map_path[4200];
static uint64_t *chunks[CS_MAX_CHUNKS];
static pthread_mutex_t grow_lock = PTHREAD_MUTEX_INITIALIZER;

size_t cs_state_slab_words(void) { return slab_words; }

uint64_t *cs_slab_at(uint32_t i)
{
    uint64_t *chunk = __atomic_load_n(&chunks[i / CS_CHUNK_SLABS], __ATOMIC_ACQUIRE);
    return chunk + (size_t)(i % CS_CHUNK_SLABS) * slab_words;
}

uint32_t cs_slabs_visible(void)
{
    uint32_t mapped = __atomic_load_n(&cs_hdr->slabs_mapped, __ATOMIC_ACQUIRE);
    uint32_t claimed = __atomic_load_n(&cs_hdr->nslabs, __ATOMIC_ACQUIRE);
    return claimed < mapped ? claimed : mapped;
}

/* Map whole chunks until the file holds `need` slabs; caller holds grow_lock.
 * posix_fallocate reserves the blocks first, so a full disk is an error here and
 * not a SIGBUS when a counter is first touched. */
static int grow_to(uint32_t need)
{
    size_t chunk_bytes = (size_t)CS_CHUNK_SLABS * slab_words * 8;
    while (cs_hdr->slabs_mapped < need) {
        uint32_t c = cs_hdr->slabs_mapped / CS_CHUNK_SLABS;
        if (c >= CS_MAX_CHUNKS) {
            errno = ENOSPC;
            return -1;
        }
        off_t at = CS_HEADER_BYTES + (off_t)c * (off_t)chunk_bytes;
        int err = posix_fallocate(map_fd, at, (off_t)chunk_bytes);
        if (err) {
            errno = err;
            return -1;
        }
        void *p = mmap(0, chunk_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd, at);
        if (p == MAP_FAILED)
            return -1;
        __atomic_store_n(&chunks[c], (uint64_t *)p, __ATOMIC_RELEASE);
        __atomic_store_n(&cs_hdr->slabs_mapped, cs_hdr->slabs_mapped + CS_CHUNK_SLABS, __ATOMIC_RELEASE);
    }
    return 0;
}

int cs_state_map(const char *path, size_t words, int slabs)
{
    snprintf(map_path, sizeof map_path, "%s", path);
    slab_words = words;
    map_fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (map_fd < 0) {
        cs_write_failed(path, errno, errno == EEXIST ? "a profile is already there, not overwritten; "
                                                       "this rank is not profiled"
                                                     : "this rank is not profiled");
        return -1;
    }
    lost_slab = calloc(words, 8);
    int err = lost_slab ? posix_fallocate(map_fd, 0, CS_HEADER_BYTES) : ENOMEM;
    void *head = err ? MAP_FAILED : mmap(0, CS_HEADER_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd, 0);
    if (head == MAP_FAILED) {
        cs_write_failed(path, err ? err : errno, "this rank is not profiled");
        close(map_fd);
        unlink(path);
        return -1;
    }
    cs_header_t *h = head;
    memcpy(h->magic, "CSCOUNT2", 8);
    h->version = 2;
    h->header_bytes = CS_HEADER_BYTES;
    h->slab_words = words;
    cs_hdr = h; /* grow_to reads slabs_mapped from it; nobody claims a slab before cs_sets is set */
    if (grow_to((uint32_t)slabs) != 0) {
        cs_write_failed(path, errno, "this rank is not profiled");
        cs_hdr = 0;
        munmap(head, CS_HEADER_BYTES);
        close(map_fd);
        unlink(path);
        return -1;
    }
    h->nonce = ((uint64_t)getpid() << 32) ^ cs_now_ns() ^ ((uint64_t)cs_world_rank << 48);
    h->rank = cs_world_rank;
    h->world_size = cs_world_size;
    h->pid = (int32_t)getpid();
    h->tick0 = h->tick1 = cs_ticks();
    h->ns0 = h->ns1 = cs_now_ns();
    cs_rank_words = (uint64_t *)((char *)head + CS_RANK_WORDS_AT);
    cs_file_words = (uint64_t *)((char *)head + CS_FILES_AT);
    __atomic_store_n(&h->state, CS_STATE_RUNNING, __ATOMIC_RELEASE);
    return 0;
}

uint64_t *cs_slab_claim(void)
{
    if (!cs_hdr || !cs_sets) return scratch_slab; /* not cached: claimed again after set-up */
    uint32_t i = __atomic_fetch_add(&cs_hdr->nslabs, 1, __ATOMIC_ACQ_REL);
    if (i >= __atomic_load_n(&cs_hdr->slabs_mapped, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&grow_lock);
        int err = grow_to(i + 1) != 0 ? errno : 0;
        pthread_mutex_unlock(&grow_lock);
        if (err) {
            if (__atomic_fetch_add(&cs_hdr->lost_threads, 1, __ATOMIC_RELAXED) == 0)
                cs_write_failed(map_path, err, "threads from here on are not counted");
            return cs_tl_slab = lost_slab;
        }
    }
    uint64_t *s = cs_slab_at(i);
    s[CS_OFF_TID] = (uint64_t)syscall(SYS_gettid);
    tl_index = (int)i;
    return cs_tl_slab = s;
}

void cs_state_sync(void)
{
    if (!cs_hdr) return;
    size_t chunk_bytes = (size_t)CS_CHUNK_SLABS * slab_words * 8;
    msync(cs_hdr, CS_HEADER_BYTES, MS_ASYNC);
    for (uint32_t c = 0; c < cs_hdr->slabs_mapped / CS_CHUNK_SLABS; c++)
        msync(chunks[c], chunk_bytes, MS_ASYNC);
}

int cs_thread_index(void) { return tl_index; }

uint64_t cs_next_request_id(void)
{
    if (tl_index < 0) cs_slab();
    return ((uint64_t)(tl_index + 1) << 40) | ++tl_request_seq;
}

long long cs_type_size_slow(MPI_Datatype type)
{
    int size = 0;
    if (type == MPI_DATATYPE_NULL || PMPI_Type_size(type, &size) != MPI_SUCCESS) size = 0;
    cs_tl_type = type;
    cs_tl_type_size = size;
    cs_tl_type_gen = cs_type_generation;
    return size;
}
