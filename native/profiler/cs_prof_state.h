/* libcommscope's state: the counter sets, the node file with this rank's block and
 * its per-thread slabs, the clock, and error reporting.  Every other profiler file
 * uses this one; it uses none of them.
 *
 * Files of the library (native/profiler/):
 *   cs_prof_state.c     this state: the node file, slabs, size-bin rows, peer tables
 *   cs_prof_tables.c    communicators, windows, files, requests: handle lookups
 *   cs_prof_sizes.c     message sizes of vector and neighbourhood collectives
 *   cs_prof_snap.c      snapshot thread and MPI_T performance variables
 *   cs_prof_summary.c   the job-wide summary reduced at MPI_Finalize
 *   cs_prof_trace.c     per-thread event-trace buffers
 *   cs_prof_cpu.c       CPU contention: run-queue wait and on-CPU time of the threads
 *   cs_prof_requests.c  request life cycle: start, Wait/Test families, cancel, free
 *   cs_prof_fortran.c   Fortran entry points written by hand (init, Wait/Test)
 *   cs_prof_init.c      MPI_Init/Finalize and sessions: sets everything up, metadata
 *   generated (mpi_functions.py): cs_wrappers.c, cs_fortran_wrappers.c
 *
 * Storage (docs/profile.md, "Files"): one mapped file per node,
 * raw/node.<node>.bin, shared by the node's ranks:
 *   [node header][rank directory][blocks ...]
 * Each rank claims blocks from it with one atomic add on the header's next_free:
 * its rank block (header, rank-wide words, per-file counters, chunk table), chunks of
 * CS_CHUNK_SLABS slabs (one slab per thread that calls MPI, claimed as threads
 * appear), blocks of size-bin rows and grown peer tables.  A slab is an array of
 * uint64 words (layout below) that only its thread writes, with plain increments (no
 * atomics, no locks); readers sum the slabs.  Only what is used takes room: a thread
 * gets size-bin rows for the functions it calls, and its peer table holds the peers
 * it talks to.  Times are raw ticks (rdtsc on x86-64, else CLOCK_MONOTONIC ns): no
 * division on the hot path; readers convert with the rate from the clock pairs.
 */
#ifndef CS_PROF_STATE_H
#define CS_PROF_STATE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "cs_functions.h"

/* Declarations of the library's own symbols: hidden, so globals are reached
 * directly, not through the GOT (only the MPI wrappers are exported, CS_EXPORT). */
#pragma GCC visibility push(hidden)

#include "cs_layout.h"   /* the counter files' records (generated from layout.def) */
#include "cs_settings.h" /* sets and settings (generated from settings.def) */

/* Counter sets (CS_SET_*, CS_DEFAULT_SETS) and the COMMSCOPE_* settings come from
 * settings.def (cs_settings.h, generated); two more bits say what a set implies. */
enum {
    CS_SET_CALLSITES = 1 << CS_NSETS,   /* call sites (COMMSCOPE_CALLSITES, not a counter set) */
    CS_SET_CLOCK = 1 << (CS_NSETS + 1), /* timers or trace: wrappers read the clock (not a set) */
};
/* What a wrapper does beyond counting, on its slow path: the trace's call site, call sites. */
#define CS_SETS_SLOW (CS_SET_TRACE | CS_SET_CALLSITES)

enum { CS_KIND_REGULAR,
       CS_KIND_TIMER,
       CS_KIND_WATERMARK,
       CS_KIND_SENTINEL };
enum { CS_SCOPE_THREAD,
       CS_SCOPE_RANK };

#define CS_COUNTER(name, kind, scope, set, unit, desc) CS_C_##name,
enum {
#include "counters.def"
    CS_NCOUNTERS
};
#define CS_PEER_ARRAY(name, set, unit, desc) CS_P_##name,
enum {
#include "counters.def"
    CS_NPEER_ARRAYS
};
#define CS_FILE_COUNTER(name, unit, desc) CS_FILE_##name,
enum {
#include "counters.def"
    CS_NFILE_COUNTERS
};

#define CS_PAGE 4096

/* What every wrapper runs, inlined into it whatever the compiler's size heuristics say
 * (callgrind counts its instructions: scripts/hotpath_instructions.py). */
#define CS_HOT static inline __attribute__((always_inline))

/* ---- the node file -------------------------------------------------------------- */
#define CS_NODE_HEADER_BYTES CS_PAGE
#define CS_MAX_LOCAL_RANKS 1024 /* directory entries: ranks per node */
#define CS_DIR_AT CS_NODE_HEADER_BYTES
#define CS_FIRST_BLOCK (CS_DIR_AT + CS_MAX_LOCAL_RANKS * 16)

/* The node header (cs_node_header_t) and directory entries (cs_dir_entry_t): layout.def. */

/* ---- a rank block --------------------------------------------------------------- */
#define CS_RANK_BLOCK_BYTES 8192
#define CS_RANK_WORDS_AT 256 /* byte offset of the rank-scope words in the rank block */
#define CS_FILES_AT 1024     /* byte offset of the per-file counters */
#define CS_MAX_FILES 64      /* files beyond share the last row */
#define CS_CHUNKS_AT 3072    /* byte offset of the chunk table: file offsets of slab chunks */
#define CS_MAX_CHUNKS ((CS_RANK_BLOCK_BYTES - CS_CHUNKS_AT) / 8)
/* Chunk c holds 2^c slabs up to CS_BIG_CHUNK, then CS_BIG_CHUNK each: a rank with one
 * thread takes one slab, 500 threads take 500..563 (40,000 threads fit). */
#define CS_BIG_CHUNK 64
#define CS_BIG_CHUNK_LOG 6

/* A rank block starts with its header, cs_header_t (layout.def). */

enum { CS_STATE_RUNNING = 1,
       CS_STATE_FINALIZED = 2 };
enum { CS_END_EXIT = 1,
       CS_END_SIGNAL = 2,
       CS_END_ABORT = 3 };

/* ---- a slab, in words --------------------------------------------------------------- */
#define CS_NBINS 40 /* bin 0: 0 bytes; bin b: [2^(b-1), 2^b) bytes; the last is open */
#define CS_NCOLLBINS 4
/* Per function, one record of CS_FUNC_WORDS words in one half cache line: its calls,
 * ticks and bytes (bytes set), so that a call touches one line for all three.  The
 * readers take each function's offsets from node.<n>.json ("functions"). */
#define CS_FUNC_WORDS 4
enum { CS_FN_CALLS,
       CS_FN_TICKS,
       CS_FN_BYTES };
#define CS_OFF_FUNCS ((CS_NCOUNTERS + CS_FUNC_WORDS - 1) / CS_FUNC_WORDS * CS_FUNC_WORDS)
#define CS_FN(f, w) (CS_OFF_FUNCS + (f)*CS_FUNC_WORDS + (w)) /* word w of function f */
#define CS_OFF_COLL (CS_OFF_FUNCS + CS_NFUNC * CS_FUNC_WORDS)
#define CS_OFF_TID (CS_OFF_COLL + CS_NCOLL * CS_NCOLLBINS) /* the owner thread's id */
/* size bins: a row per function the thread has binned, in blocks: CS_NBINS counts,
 * then CS_NBINS tick totals (the time of the function's own calls that moved a message
 * of that bin, with timers on) */
#define CS_OFF_BINMAP (CS_OFF_TID + 1) /* u16 per sized function: its row + 1, 0: none */
#define CS_BINMAP_WORDS ((CS_NSIZED + 3) / 4)
#define CS_OFF_BINROWS (CS_OFF_BINMAP + CS_BINMAP_WORDS) /* rows used */
#define CS_OFF_BINBLOCKS (CS_OFF_BINROWS + 1)            /* file offsets of the row blocks */
#define CS_BIN_ROW_WORDS (2 * CS_NBINS)
#define CS_BIN_BLOCK_ROWS 6 /* 6 x 80 words in a page */
#define CS_BIN_BLOCK_BYTES CS_PAGE
#define CS_BIN_BLOCKS ((CS_NSIZED + CS_BIN_BLOCK_ROWS - 1) / CS_BIN_BLOCK_ROWS) /* room for all */
/* peers: an open-addressing table of {world rank + 1, CS_NPEER_ARRAYS values} */
#define CS_OFF_PEERSEQ (CS_OFF_BINBLOCKS + CS_BIN_BLOCKS) /* even: stable; odd: being moved */
#define CS_OFF_PEERCAP (CS_OFF_PEERSEQ + 1)               /* entries (a power of two) */
#define CS_OFF_PEERCOUNT (CS_OFF_PEERCAP + 1)             /* entries used */
#define CS_OFF_PEERAT (CS_OFF_PEERCOUNT + 1)              /* file offset of the table; 0: inline below */
#define CS_OFF_PEERS ((CS_OFF_PEERAT + 1 + 7) & ~7)       /* entries of 8 words start on a cache line */
#define CS_PEER_ENTRY (1 + CS_NPEER_ARRAYS)
#define CS_PEERS_INLINE 16
#define CS_SLAB_USED (CS_OFF_PEERS + CS_PEERS_INLINE * CS_PEER_ENTRY)
/* slabs are whole pages, so every chunk is */
#define CS_SLAB_WORDS ((CS_SLAB_USED + 511) & ~511)

/* Chunk of slab i, and the slab's place in it (chunks: see CS_BIG_CHUNK). */
static inline uint32_t cs_chunk_of(uint32_t i, uint32_t *at)
{
    if (i + 1 < 2 * CS_BIG_CHUNK) {
        uint32_t c = 31 - (uint32_t)__builtin_clz(i + 1);
        *at = i + 1 - (1u << c);
        return c;
    }
    uint32_t k = i + 1 - 2 * CS_BIG_CHUNK;
    *at = k % CS_BIG_CHUNK;
    return CS_BIG_CHUNK_LOG + 1 + k / CS_BIG_CHUNK;
}

static inline uint32_t cs_chunk_slabs(uint32_t c) { return c <= CS_BIG_CHUNK_LOG ? 1u << c : CS_BIG_CHUNK; }

extern int cs_sets;            /* CS_SET_* bits; 0 until profiling is set up */
extern int cs_thread_multiple; /* MPI_THREAD_MULTIPLE: threads may call MPI at once */
extern int cs_world_size;
extern int cs_world_rank;
extern MPI_Group cs_world_group; /* ranks of the peer tables (MPI_COMM_WORLD's, or a session's world pset) */
extern cs_header_t *cs_hdr;
extern uint64_t cs_node_nonce;
extern uint64_t *cs_rank_words;
extern uint64_t *cs_file_words;       /* CS_MAX_FILES rows of CS_NFILE_COUNTERS words */
extern long long cs_coll_small_bytes; /* collective bins: message size <= this is small */
extern int cs_coll_small_comm;        /* communicator size <= this is small */

/* The node file: open (or create) it and claim this rank's block; 0 or -1 with a message.
 * *leader is set to 1 for the rank that created the file (it writes the node's metadata). */
int cs_state_map(const char *path, int slabs, int *leader);
uint64_t *cs_slab_claim(void);   /* this thread's slab (a scratch slab before set-up) */
uint32_t cs_slabs_visible(void); /* slabs claimed and mapped: what readers may sum */
uint64_t *cs_slab_at(uint32_t i);
void cs_state_sync(void);  /* schedule the mapped file's write-back */
int cs_thread_index(void); /* index of this thread's slab, -1 before it has one */

uint64_t cs_now_ns(void);        /* CLOCK_MONOTONIC ns (plus cs_clock_skew_ns) */
extern int64_t cs_clock_skew_ns; /* tests only: COMMSCOPE_TEST_CLOCK_SKEW_NS (cs_prof_clocks.c) */
/* Memory of the node file at `offset` (a block this process mapped or maps now). */
void *cs_block_at(uint64_t offset, size_t bytes);

/* ---- what the hot path reads per thread ------------------------------------------
 * All in one thread-local block (initial-exec: the wrapper finds it with one GOT load
 * and reaches every field %fs-relative): the slab, the type-size cache, the peer cache,
 * and each sized function's size-bin row. */
#define CS_PEER_CACHE 8 /* (communicator, rank) -> peer entry: the last few, per thread */
typedef struct {
    MPI_Comm comm;
    int rank;
    uint64_t *entry; /* the peer's CS_NPEER_ARRAYS values; 0: no peer (outside the world) */
} cs_peer_cache_t;

typedef struct {
    unsigned epoch;    /* cs_epoch when this thread last refreshed (0: never) */
    int sets;          /* its copy of cs_sets, taken then */
    uint64_t *slab;    /* this thread's slab (a scratch slab before set-up); 0 until then */
    uint64_t *peers;   /* its peer table */
    MPI_Datatype type; /* type sizes: a one-entry cache */
    long long type_size;
    int index; /* the slab's index in the rank, -1 before it has one */
    uint64_t request_seq;
    cs_peer_cache_t peer_cache[CS_PEER_CACHE];
    uint64_t *bin_block[CS_BIN_BLOCKS];
    uint64_t *bin_row[CS_NSIZED]; /* per sized function (cs_function_bin): its row, 0: none yet */
} cs_tl_t;
extern __thread cs_tl_t cs_tl __attribute__((tls_model("initial-exec")));

uint64_t cs_next_request_id_slow(void);
/* commscope's id of a new request: the starting thread's slab + 1 << 40 | its sequence. */
static inline uint64_t cs_next_request_id(void)
{
    if (__builtin_expect(cs_tl.index < 0, 0)) return cs_next_request_id_slow();
    return ((uint64_t)(cs_tl.index + 1) << 40) | ++cs_tl.request_seq;
}

/* cs_epoch moves when profiling starts or ends and when a datatype or a communicator
 * is freed (its handle may come back naming another): a thread whose copy differs
 * refreshes at the start of its next call (cs_refresh: its copy of the sets, its slab,
 * its type-size and peer caches emptied).  So the hot path reads one global word, and
 * the caches need no check of their own. */
extern volatile unsigned cs_epoch;
void cs_refresh(void);
void cs_epoch_bump(void);

/* This thread's slab, refreshed first if the epoch moved. */
CS_HOT uint64_t *cs_thread(void)
{
    if (__builtin_expect(cs_tl.epoch != cs_epoch, 0)) cs_refresh();
    return cs_tl.slab;
}

CS_HOT uint64_t *cs_slab(void)
{
    uint64_t *s = cs_tl.slab;
    return __builtin_expect(s != 0, 1) ? s : cs_slab_claim();
}

/* ---- size-bin rows and peer entries of this thread's slab ------------------------ */
uint64_t *cs_bin_row_new(uint64_t *s, int row_of); /* slow path: assign a row */

/* The size-bin row of sized function row `row_of` (cs_function_bin) in slab s. */
CS_HOT uint64_t *cs_bin_row(uint64_t *s, int row_of)
{
    uint64_t *row = cs_tl.bin_row[row_of];
    return __builtin_expect(row != 0, 1) ? row : cs_bin_row_new(s, row_of);
}

uint64_t *cs_peer_new(uint64_t *s, int world); /* slow path: insert, growing the table */

/* The CS_NPEER_ARRAYS values of world rank `world` in slab s's peer table. */
static inline uint64_t *cs_peer(uint64_t *s, int world)
{
    uint64_t *t = cs_tl.peers;
    uint64_t mask = s[CS_OFF_PEERCAP] - 1, key = (uint64_t)world + 1;
    if (__builtin_expect(t != 0, 1)) {
        for (uint64_t i = (key * 0x9E3779B97F4A7C15ull) >> 40 & mask;; i = (i + 1) & mask) {
            uint64_t *e = t + i * CS_PEER_ENTRY;
            if (e[0] == key) return e + 1;
            if (e[0] == 0) break;
        }
    }
    return cs_peer_new(s, world);
}

/* The thread's peer cache (cs_peer_of, cs_prof_tables.h) emptied: a communicator was
 * freed, or the thread's own table moved (cs_peer_new). */
void cs_peer_cache_clear(void);

CS_HOT uint64_t cs_ticks(void)
{
#if defined(__x86_64__)
    uint32_t lo, hi;
    __asm__ volatile("rdtsc"
                     : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
#else
    return cs_now_ns();
#endif
}

/* Type sizes: a one-entry cache per thread, emptied by MPI_Type_free (cs_epoch). */
long long cs_type_size_slow(MPI_Datatype type);

CS_HOT long long cs_bytes(long long count, MPI_Datatype type)
{
    if (__builtin_expect(type == cs_tl.type, 1)) return count * cs_tl.type_size;
    return count * cs_type_size_slow(type);
}

/* The library is built with hidden visibility (internal calls and globals need no
 * PLT or GOT indirection); only the MPI wrappers are exported. */
#define CS_EXPORT __attribute__((visibility("default")))

/* Error messages from the library go to stderr with this prefix. */
#define CS_PREFIX "commscope profile: "

/* A failed write (errno err), reported as "cannot write PATH: REASON [errno N]; THEN", the
 * form the Python side turns into the run's failure (commscope.collect.lifecycle). */
void cs_write_failed(const char *path, int err, const char *then);
/* write() all n bytes (retrying short writes and EINTR); 0, or -1 with errno set. */
int cs_write_all(int fd, const void *p, size_t n);

#pragma GCC visibility pop

#endif
