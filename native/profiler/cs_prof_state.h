/* libcommscope's state: the counter sets, the mapped counter file and its
 * per-thread slabs, the clock, and error reporting.  Every other profiler file
 * uses this one; it uses none of them.
 *
 * Files of the library (native/profiler/):
 *   cs_prof_state.c     this state, the counter file, slabs (grown on demand)
 *   cs_prof_tables.c    communicators, windows, files, requests: handle lookups
 *   cs_prof_snap.c      snapshot thread and MPI_T performance variables
 *   cs_prof_trace.c     per-thread event-trace buffers
 *   cs_prof_requests.c  request life cycle: start, Wait/Test families, cancel, free
 *   cs_prof_fortran.c   Fortran entry points written by hand (init, Wait/Test)
 *   cs_prof_init.c      MPI_Init/Finalize and sessions: sets everything up, metadata
 *   generated (mpi_functions.py): cs_wrappers.c, cs_fortran_wrappers.c
 *
 * Storage: one mapped file per rank, raw/counters.<rank>.bin
 *   [header: CS_HEADER_BYTES][slab 0][slab 1]...   one slab per thread
 * A slab is an array of uint64 words (layout below).  Each thread writes only its
 * own slab with plain increments (no atomics, no locks); readers sum the slabs.
 * The file starts with CS_CHUNK_SLABS slabs and grows by as many whenever a new
 * thread needs one, so there is no thread limit.  Times are raw ticks (rdtsc on
 * x86-64, else CLOCK_MONOTONIC ns): no division on the hot path; readers convert
 * with the rate from the header's clock pairs.
 */
#ifndef CS_PROF_STATE_H
#define CS_PROF_STATE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "cs_functions.h"

/* Counter sets, selected by COMMSCOPE_COUNTERS (calls are always counted). */
enum {
    CS_SET_BYTES = 1 << 0,    /* message, byte, RMA, I/O and neighbour counts */
    CS_SET_PEERS = 1 << 1,    /* rank x rank matrices */
    CS_SET_BINS = 1 << 2,     /* power-of-two size bins and collective bins */
    CS_SET_REQUESTS = 1 << 3, /* request ledger, watermarks */
    CS_SET_TIMERS = 1 << 4,   /* ticks inside every wrapped function */
    CS_SET_TRACE = 1 << 5,    /* event trace of point-to-point calls */
    CS_SET_PVARS = 1 << 6,    /* MPI_T performance variables in the snapshots */
};

enum { CS_KIND_REGULAR, CS_KIND_TIMER, CS_KIND_WATERMARK, CS_KIND_SENTINEL };
enum { CS_SCOPE_THREAD, CS_SCOPE_RANK };

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

/* Slab layout, in words. */
#define CS_NBINS 40 /* bin 0: 0 bytes; bin b: [2^(b-1), 2^b) bytes; the last is open */
#define CS_NCOLLBINS 4
#define CS_OFF_CALLS CS_NCOUNTERS
#define CS_OFF_TICKS (CS_OFF_CALLS + CS_NFUNC)
#define CS_OFF_FBYTES (CS_OFF_TICKS + CS_NFUNC) /* bytes per function (bytes set) */
#define CS_OFF_BINS (CS_OFF_FBYTES + CS_NFUNC)
#define CS_OFF_COLL (CS_OFF_BINS + CS_NSIZED * CS_NBINS)
#define CS_OFF_TID (CS_OFF_COLL + CS_NCOLL * CS_NCOLLBINS) /* the owner thread's id */
#define CS_OFF_PEERS (CS_OFF_TID + 1)
/* then CS_NPEER_ARRAYS arrays of world_size words (counters.def order), rounded up
 * to whole 512-byte blocks so that a chunk of slabs is whole pages */

#define CS_HEADER_BYTES 8192
#define CS_RANK_WORDS_AT 256 /* byte offset of the rank-scope words */
#define CS_FILES_AT 1024     /* byte offset of the per-file counters */
#define CS_MAX_FILES 64      /* files beyond share the last row */
#define CS_CHUNK_SLABS 8
#define CS_MAX_CHUNKS 16384

typedef struct {
    char magic[8]; /* "CSCOUNT2" */
    uint32_t version;
    uint32_t header_bytes;
    uint64_t slab_words;
    uint32_t slabs_mapped; /* slabs the file holds now (it grows by CS_CHUNK_SLABS) */
    uint32_t nslabs;       /* slabs claimed by threads (a new one may still be all zero) */
    uint64_t nonce;        /* also in the metadata: pairs the two files */
    int32_t rank, world_size;
    int32_t pid, state; /* CS_STATE_* */
    uint64_t seq;       /* snapshots taken */
    uint64_t tick0, ns0, tick1, ns1; /* clock pairs: ticks and CLOCK_MONOTONIC ns */
    uint32_t lost_threads; /* threads that got no slab (the file could not grow) */
    uint32_t nfiles;       /* MPI-IO files seen (rows of the file counters used) */
} cs_header_t;

enum { CS_STATE_RUNNING = 1, CS_STATE_FINALIZED = 2 };

extern int cs_sets;         /* CS_SET_* bits; 0 until profiling is set up */
extern int cs_clock_wanted; /* timers or trace on: wrappers read the clock */
extern int cs_world_size;
extern int cs_world_rank;
extern MPI_Group cs_world_group; /* ranks of the peer matrices (MPI_COMM_WORLD's, or a session's world pset) */
extern cs_header_t *cs_hdr;
extern uint64_t *cs_rank_words;
extern uint64_t *cs_file_words; /* CS_MAX_FILES rows of CS_NFILE_COUNTERS words */
extern long long cs_coll_small_bytes; /* collective bins: message size <= this is small */
extern int cs_coll_small_comm;        /* communicator size <= this is small */

/* The counter file: create and map it with `slabs` slabs (0 or -1 with a message). */
int cs_state_map(const char *path, size_t slab_words, int slabs);
size_t cs_state_slab_words(void);
uint64_t *cs_slab_claim(void); /* this thread's slab (a scratch slab before set-up) */
uint64_t *cs_slab_at(uint32_t i);
uint32_t cs_slabs_visible(void); /* slabs claimed and mapped: what readers may sum */
void cs_state_sync(void);        /* schedule the mapped file's write-back */
int cs_thread_index(void);       /* index of this thread's slab, -1 before it has one */
uint64_t cs_next_request_id(void);
uint64_t cs_now_ns(void);

extern __thread uint64_t *cs_tl_slab __attribute__((tls_model("initial-exec")));

static inline uint64_t *cs_slab(void)
{
    uint64_t *s = cs_tl_slab;
    return __builtin_expect(s != 0, 1) ? s : cs_slab_claim();
}

static inline uint64_t cs_ticks(void)
{
#if defined(__x86_64__)
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
#else
    return cs_now_ns();
#endif
}

/* Type sizes: a one-entry cache per thread, invalidated by MPI_Type_free. */
extern volatile unsigned cs_type_generation;
long long cs_type_size_slow(MPI_Datatype type);
extern __thread MPI_Datatype cs_tl_type __attribute__((tls_model("initial-exec")));
extern __thread long long cs_tl_type_size __attribute__((tls_model("initial-exec")));
extern __thread unsigned cs_tl_type_gen __attribute__((tls_model("initial-exec")));

static inline long long cs_bytes(long long count, MPI_Datatype type)
{
    if (__builtin_expect(type == cs_tl_type && cs_tl_type_gen == cs_type_generation, 1))
        return count * cs_tl_type_size;
    return count * cs_type_size_slow(type);
}

/* The library is built with hidden visibility (internal calls and globals need no
 * PLT or GOT indirection); only the MPI wrappers are exported. */
#define CS_EXPORT __attribute__((visibility("default")))

/* Error messages from the library go to stderr with this prefix. */
#define CS_PREFIX "commscope profile: "

/* A failed write (errno err), reported as "cannot write PATH: REASON [errno N]; THEN", the
 * form the Python side turns into the run's failure (commscope.bench.driver). */
void cs_write_failed(const char *path, int err, const char *then);
/* write() all n bytes (retrying short writes and EINTR); 0, or -1 with errno set. */
int cs_write_all(int fd, const void *p, size_t n);

#endif
