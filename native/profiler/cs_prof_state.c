/* libcommscope's state (see cs_prof_state.h): globals, the node file and the blocks
 * this rank claims in it (rank block, slab chunks, size-bin rows, peer tables), the
 * clock, type sizes and error reporting. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cs_prof_state.h"

int cs_sets = 0;
int cs_world_size = 0;
int cs_world_rank = -1;
MPI_Group cs_world_group = MPI_GROUP_NULL;
cs_header_t *cs_hdr = 0;
uint64_t cs_node_nonce = 0;
uint64_t *cs_rank_words = 0;
uint64_t *cs_file_words = 0;
long long cs_coll_small_bytes = 2048;
int cs_coll_small_comm = 16;

int cs_thread_multiple = 1; /* until MPI_Init* says otherwise */

__thread cs_tl_t cs_tl __attribute__((tls_model("initial-exec"))) = {.index = -1};
/* On a line of its own: every call reads it, only set-up, the end and frees write it. */
volatile unsigned cs_epoch __attribute__((aligned(64))) = 1; /* a new thread (epoch 0) refreshes first */

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

int64_t cs_clock_skew_ns;

uint64_t cs_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + (uint64_t)cs_clock_skew_ns;
}

/* ---- blocks of the node file ------------------------------------------------- */

static int node_fd = -1;
static char node_path[4200];
static cs_node_header_t *node;

/* Blocks this process mapped, by file offset (few: rank block, chunks, bin blocks,
 * peer tables); appended under block_lock, read without it. */
typedef struct {
    uint64_t offset;
    void *p;
} block_t;
static block_t *blocks;
static int nblocks, blocks_cap;
static pthread_mutex_t block_lock = PTHREAD_MUTEX_INITIALIZER;

/* Claim `bytes` (whole pages) of the node file and map them; NULL with errno set.
 * posix_fallocate reserves the disk blocks first, so a full disk is an error here and
 * not a SIGBUS when a counter is first touched.  *offset gets the file offset. */
static void *claim(size_t bytes, uint64_t *offset)
{
    uint64_t at = __atomic_fetch_add(&node->next_free, (uint64_t)bytes, __ATOMIC_RELAXED);
    int err = posix_fallocate(node_fd, (off_t)at, (off_t)bytes);
    if (err) {
        errno = err;
        return 0;
    }
    void *p = mmap(0, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, node_fd, (off_t)at);
    if (p == MAP_FAILED) return 0;
    pthread_mutex_lock(&block_lock);
    if (nblocks == blocks_cap) {
        int cap = blocks_cap ? 2 * blocks_cap : 64;
        block_t *b = realloc(blocks, sizeof *b * (size_t)cap);
        if (b) blocks = b, blocks_cap = cap;
    }
    if (nblocks < blocks_cap) blocks[nblocks++] = (block_t){at, p};
    pthread_mutex_unlock(&block_lock);
    *offset = at;
    return p;
}

void *cs_block_at(uint64_t offset, size_t bytes)
{
    (void)bytes;
    pthread_mutex_lock(&block_lock);
    void *p = 0;
    for (int i = 0; i < nblocks && !p; i++)
        if (blocks[i].offset == offset) p = blocks[i].p;
    pthread_mutex_unlock(&block_lock);
    return p;
}

/* Open the node file, creating and laying it out if this rank comes first (under an
 * exclusive lock, so the node's other ranks wait for a complete header). */
static int open_node(const char *path, int *leader)
{
    snprintf(node_path, sizeof node_path, "%s", path);
    node_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (node_fd < 0) return -1;
    if (flock(node_fd, LOCK_EX) != 0) return -1;
    struct stat st;
    int err = fstat(node_fd, &st) != 0 ? errno : 0;
    *leader = !err && st.st_size == 0;
    if (*leader && !err) err = posix_fallocate(node_fd, 0, CS_FIRST_BLOCK);
    void *p = err ? MAP_FAILED : mmap(0, CS_FIRST_BLOCK, PROT_READ | PROT_WRITE, MAP_SHARED, node_fd, 0);
    if (p != MAP_FAILED && *leader) {
        cs_node_header_t *h = p;
        memcpy(h->magic, CS_NODE_MAGIC, 8);
        h->version = CS_NODE_VERSION;
        h->page = CS_PAGE;
        h->max_ranks = CS_MAX_LOCAL_RANKS;
        h->dir_at = CS_DIR_AT;
        h->nonce = ((uint64_t)getpid() << 32) ^ cs_now_ns();
        __atomic_store_n(&h->next_free, (uint64_t)CS_FIRST_BLOCK, __ATOMIC_RELEASE);
    }
    flock(node_fd, LOCK_UN);
    if (p == MAP_FAILED) {
        errno = err ? err : errno;
        return -1;
    }
    node = p;
    cs_node_nonce = node->nonce;
    if (memcmp(node->magic, CS_NODE_MAGIC, 8) != 0) {
        errno = EINVAL; /* not a node file of this version: never write into it */
        return -1;
    }
    return 0;
}

/* ---- slabs ------------------------------------------------------------------------ */

/* Calls made before set-up land in a scratch slab that nobody reads (no set is on
 * then, so only the fixed part is ever touched).  Threads that get no slab because
 * the file could not grow share `lost_slab`, also unread (lost_threads says so). */
static uint64_t scratch_slab[CS_SLAB_WORDS];
static uint64_t lost_slab[CS_SLAB_WORDS];
static uint64_t scratch_row[CS_PEER_ENTRY > CS_BIN_ROW_WORDS ? CS_PEER_ENTRY : CS_BIN_ROW_WORDS];
static uint64_t *chunks[CS_MAX_CHUNKS];
static pthread_mutex_t grow_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t *chunk_table; /* in the rank block: file offsets of the chunks */

uint64_t *cs_slab_at(uint32_t i)
{
    uint32_t at, c = cs_chunk_of(i, &at);
    uint64_t *chunk = __atomic_load_n(&chunks[c], __ATOMIC_ACQUIRE);
    return chunk + (size_t)at * CS_SLAB_WORDS;
}

uint32_t cs_slabs_visible(void)
{
    uint32_t mapped = __atomic_load_n(&cs_hdr->slabs_mapped, __ATOMIC_ACQUIRE);
    uint32_t claimed = __atomic_load_n(&cs_hdr->nslabs, __ATOMIC_ACQUIRE);
    return claimed < mapped ? claimed : mapped;
}

/* Claim chunks until the rank holds `need` slabs; caller holds grow_lock. */
static int grow_to(uint32_t need)
{
    while (cs_hdr->slabs_mapped < need) {
        uint32_t first, c = cs_chunk_of(cs_hdr->slabs_mapped, &first), n = cs_chunk_slabs(c);
        if (c >= CS_MAX_CHUNKS) {
            errno = ENOSPC;
            return -1;
        }
        uint64_t at;
        uint64_t *p = claim((size_t)n * CS_SLAB_WORDS * 8, &at);
        if (!p) return -1;
        for (uint32_t k = 0; k < n; k++) {
            uint64_t *s = p + (size_t)k * CS_SLAB_WORDS;
            s[CS_OFF_PEERCAP] = CS_PEERS_INLINE;
        }
        __atomic_store_n(&chunks[c], p, __ATOMIC_RELEASE);
        __atomic_store_n(&chunk_table[c], at, __ATOMIC_RELEASE);
        __atomic_store_n(&cs_hdr->slabs_mapped, cs_hdr->slabs_mapped + n, __ATOMIC_RELEASE);
    }
    return 0;
}

int cs_state_map(const char *path, int slabs, int *leader)
{
    if (open_node(path, leader) != 0) {
        cs_write_failed(path, errno, errno == EINVAL ? "it is not a commscope node file of this "
                                                       "version; this rank is not profiled"
                                                     : "this rank is not profiled");
        return -1;
    }
    uint32_t slot = __atomic_fetch_add(&node->nranks, 1, __ATOMIC_ACQ_REL);
    if (slot >= node->max_ranks) {
        __atomic_add_fetch(&node->lost_ranks, 1, __ATOMIC_RELAXED);
        fprintf(stderr, CS_PREFIX "rank %d: %s already lists %u ranks: this rank is not profiled\n",
                cs_world_rank, path, node->max_ranks);
        return -1;
    }
    uint64_t at;
    cs_header_t *h = claim(CS_RANK_BLOCK_BYTES, &at);
    if (!h) {
        cs_write_failed(path, errno, "this rank is not profiled");
        return -1;
    }
    memcpy(h->magic, CS_RANK_MAGIC, 8);
    h->version = CS_RANK_VERSION;
    h->block_bytes = CS_RANK_BLOCK_BYTES;
    h->slab_words = CS_SLAB_WORDS;
    h->nonce = ((uint64_t)getpid() << 32) ^ cs_now_ns() ^ ((uint64_t)cs_world_rank << 48);
    h->rank = cs_world_rank;
    h->world_size = cs_world_size;
    h->pid = (int32_t)getpid();
    h->tick0 = h->tick1 = cs_ticks();
    h->ns0 = h->ns1 = cs_now_ns();
    cs_hdr = h; /* grow_to reads slabs_mapped from it; nobody claims a slab before cs_sets is set */
    cs_rank_words = (uint64_t *)((char *)h + CS_RANK_WORDS_AT);
    cs_file_words = (uint64_t *)((char *)h + CS_FILES_AT);
    chunk_table = (uint64_t *)((char *)h + CS_CHUNKS_AT);
    if (grow_to((uint32_t)slabs) != 0) {
        cs_write_failed(path, errno, "this rank is not profiled");
        cs_hdr = 0;
        return -1;
    }
    __atomic_store_n(&h->state, CS_STATE_RUNNING, __ATOMIC_RELEASE);
    cs_dir_entry_t *dir = (cs_dir_entry_t *)((char *)node + node->dir_at);
    dir[slot].rank = cs_world_rank;
    dir[slot].block = at;
    __atomic_store_n(&dir[slot].ready, 1, __ATOMIC_RELEASE);
    return 0;
}

void cs_peer_cache_clear(void)
{
    for (int i = 0; i < CS_PEER_CACHE; i++) cs_tl.peer_cache[i] = (cs_peer_cache_t){MPI_COMM_NULL, -1, 0};
}

void cs_epoch_bump(void) { __atomic_add_fetch(&cs_epoch, 1, __ATOMIC_RELEASE); }

/* The epoch moved (or this thread's first call): take the sets as they are now,
 * empty the caches, and claim a slab if profiling has started since this thread got
 * the scratch slab. */
void cs_refresh(void)
{
    unsigned epoch = __atomic_load_n(&cs_epoch, __ATOMIC_ACQUIRE);
    int sets = __atomic_load_n(&cs_sets, __ATOMIC_ACQUIRE);
    cs_tl.type = MPI_DATATYPE_NULL; /* its size is 0, as cs_type_size_slow says */
    cs_tl.type_size = 0;
    cs_peer_cache_clear();
    if (!cs_tl.slab || (sets && cs_tl.slab == scratch_slab)) {
        cs_tl.slab = 0;
        cs_slab_claim();
    }
    cs_tl.sets = sets;
    cs_tl.epoch = epoch;
}

uint64_t *cs_slab_claim(void)
{
    if (!cs_hdr || !cs_sets) return cs_tl.slab = scratch_slab; /* claimed at the refresh after set-up */
    uint32_t i = __atomic_fetch_add(&cs_hdr->nslabs, 1, __ATOMIC_ACQ_REL);
    if (i >= __atomic_load_n(&cs_hdr->slabs_mapped, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&grow_lock);
        int err = grow_to(i + 1) != 0 ? errno : 0;
        pthread_mutex_unlock(&grow_lock);
        if (err) {
            if (__atomic_fetch_add(&cs_hdr->lost_threads, 1, __ATOMIC_RELAXED) == 0)
                cs_write_failed(node_path, err, "threads from here on are not counted");
            lost_slab[CS_OFF_PEERCAP] = CS_PEERS_INLINE;
            cs_tl.peers = lost_slab + CS_OFF_PEERS;
            return cs_tl.slab = lost_slab;
        }
    }
    uint64_t *s = cs_slab_at(i);
    s[CS_OFF_TID] = (uint64_t)syscall(SYS_gettid);
    cs_tl.index = (int)i;
    cs_tl.peers = s + CS_OFF_PEERS;
    return cs_tl.slab = s;
}

/* A new function's size-bin row: the next row of the thread's blocks (a new block of
 * CS_BIN_BLOCK_ROWS rows when the last is full). */
uint64_t *cs_bin_row_new(uint64_t *s, int row_of)
{
    if (s == scratch_slab || s == lost_slab) return scratch_row; /* not kept: counts nobody reads */
    uint64_t r = s[CS_OFF_BINROWS];
    size_t b = r / CS_BIN_BLOCK_ROWS;
    if (b >= CS_BIN_BLOCKS) return scratch_row; /* every sized function has a row by then */
    if (!cs_tl.bin_block[b]) {
        uint64_t at;
        uint64_t *p = claim(CS_BIN_BLOCK_BYTES, &at);
        if (!p) {
            __atomic_add_fetch(&cs_hdr->lost_blocks, 1, __ATOMIC_RELAXED);
            return cs_tl.bin_row[row_of] = scratch_row; /* lost from now on, and said so once */
        }
        cs_tl.bin_block[b] = p;
        __atomic_store_n(&s[CS_OFF_BINBLOCKS + b], at, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&s[CS_OFF_BINROWS], r + 1, __ATOMIC_RELEASE);
    __atomic_store_n(&((uint16_t *)(s + CS_OFF_BINMAP))[row_of], (uint16_t)(r + 1), __ATOMIC_RELEASE);
    return cs_tl.bin_row[row_of] = cs_tl.bin_block[b] + (r % CS_BIN_BLOCK_ROWS) * CS_BIN_ROW_WORDS;
}

static uint64_t *peer_slot(uint64_t *t, uint64_t cap, uint64_t key)
{
    for (uint64_t i = (key * 0x9E3779B97F4A7C15ull) >> 40 & (cap - 1);; i = (i + 1) & (cap - 1)) {
        uint64_t *e = t + i * CS_PEER_ENTRY;
        if (e[0] == key || e[0] == 0) return e;
    }
}

/* A new peer in this thread's table; at half full, the table moves to a new block
 * twice its size (readers see the move through the odd sequence number). */
uint64_t *cs_peer_new(uint64_t *s, int world)
{
    uint64_t key = (uint64_t)world + 1, cap = s[CS_OFF_PEERCAP];
    uint64_t *t = cs_tl.peers ? cs_tl.peers : s + CS_OFF_PEERS;
    if (2 * (s[CS_OFF_PEERCOUNT] + 1) > cap) {
        uint64_t at, *n = s == lost_slab ? 0 : claim(((2 * cap * CS_PEER_ENTRY * 8 + CS_PAGE - 1) / CS_PAGE) * CS_PAGE, &at);
        if (!n) {
            if (s != lost_slab) __atomic_add_fetch(&cs_hdr->lost_blocks, 1, __ATOMIC_RELAXED);
            uint64_t *e = peer_slot(t, cap, key);
            return e[0] == key ? e + 1 : scratch_row; /* full: new peers are not counted */
        }
        __atomic_store_n(&s[CS_OFF_PEERSEQ], s[CS_OFF_PEERSEQ] + 1, __ATOMIC_RELEASE); /* odd */
        for (uint64_t i = 0; i < cap; i++) {
            uint64_t *e = t + i * CS_PEER_ENTRY;
            if (e[0]) memcpy(peer_slot(n, 2 * cap, e[0]), e, CS_PEER_ENTRY * 8);
        }
        __atomic_store_n(&s[CS_OFF_PEERAT], at, __ATOMIC_RELEASE);
        __atomic_store_n(&s[CS_OFF_PEERCAP], 2 * cap, __ATOMIC_RELEASE);
        __atomic_store_n(&s[CS_OFF_PEERSEQ], s[CS_OFF_PEERSEQ] + 1, __ATOMIC_RELEASE); /* even */
        t = cs_tl.peers = n;
        cap *= 2;
        cs_peer_cache_clear(); /* the cached entries moved */
    }
    uint64_t *e = peer_slot(t, cap, key);
    if (e[0] != key) {
        __atomic_store_n(&e[0], key, __ATOMIC_RELEASE);
        s[CS_OFF_PEERCOUNT]++;
    }
    return e + 1;
}

void cs_state_sync(void)
{
    /* the mapped pages are the page cache: readers (and a killed rank's file) see every
     * count already; this only asks for the header's write-back to start */
    if (cs_hdr) msync(cs_hdr, CS_RANK_BLOCK_BYTES, MS_ASYNC);
}

int cs_thread_index(void) { return cs_tl.index; }

uint64_t cs_next_request_id_slow(void)
{
    if (cs_tl.index < 0) cs_slab();
    return ((uint64_t)(cs_tl.index + 1) << 40) | ++cs_tl.request_seq;
}

long long cs_type_size_slow(MPI_Datatype type)
{
    int size = 0;
    if (type == MPI_DATATYPE_NULL || PMPI_Type_size(type, &size) != MPI_SUCCESS) size = 0;
    cs_tl.type = type;
    cs_tl.type_size = size;
    return size;
}
