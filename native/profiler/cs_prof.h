/* libcommscope: software performance counters for unmodified MPI programs.
 *
 * Internal declarations shared by the library's files:
 *   cs_prof_init.c      MPI_Init/Finalize, the mapped counter file, metadata
 *   cs_prof_tables.c    communicator table (rank translation), request table
 *   cs_prof_complete.c  Wait/Test families (completion of tracked requests)
 *   cs_prof_snap.c      snapshot thread and MPI_T performance variables
 *   cs_prof_trace.c     per-thread event-trace buffers
 *   cs_wrappers.c       generated wrappers (mpi_functions.py)
 *
 * Storage: one mapped file per rank, raw/counters.<rank>.bin
 *   [header: CS_HEADER_BYTES][slab 0][slab 1]...   one slab per thread
 * A slab is an array of uint64 words (layout below).  Each thread writes only its
 * own slab with plain increments (no atomics, no locks); readers sum the slabs.
 * Times are raw ticks (rdtsc on x86-64, else CLOCK_MONOTONIC ns): no division on
 * the hot path; readers convert with the rate from the header's clock pairs.
 */
#ifndef CS_PROF_H
#define CS_PROF_H

#include <mpi.h>
#include <stdint.h>
#include <time.h>

#include "cs_functions.h"

/* Counter sets, selected by COMMSCOPE_COUNTERS (calls are always counted). */
enum {
    CS_SET_BYTES = 1 << 0,    /* message and byte counts, any-source/tag receives */
    CS_SET_PEERS = 1 << 1,    /* rank x rank matrix of messages and bytes */
    CS_SET_BINS = 1 << 2,     /* power-of-two size bins and collective bins */
    CS_SET_REQUESTS = 1 << 3, /* requests started/completed, watermarks */
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
#undef CS_COUNTER

/* Slab layout, in words. */
#define CS_NBINS 40 /* bin 0: 0 bytes; bin b: [2^(b-1), 2^b) bytes; the last is open */
#define CS_NCOLLBINS 4
#define CS_OFF_CALLS CS_NCOUNTERS
#define CS_OFF_TICKS (CS_OFF_CALLS + CS_NFUNC)
#define CS_OFF_FBYTES (CS_OFF_TICKS + CS_NFUNC) /* bytes per function (bytes set) */
#define CS_OFF_BINS (CS_OFF_FBYTES + CS_NFUNC)
#define CS_OFF_COLL (CS_OFF_BINS + CS_NSIZED * CS_NBINS)
#define CS_OFF_PEERS (CS_OFF_COLL + CS_NCOLL * CS_NCOLLBINS)
/* then 4 arrays of world_size words: messages sent to, bytes sent to,
 * messages received from, bytes received from (world ranks) */

#define CS_HEADER_BYTES 8192
#define CS_RANK_WORDS_AT 256 /* byte offset of the rank-scope words */
#define CS_TIDS_AT 1024      /* byte offset of the slab owners' thread ids */
#define CS_MAX_SLABS_LIMIT ((CS_HEADER_BYTES - CS_TIDS_AT) / 8)

typedef struct {
    char magic[8]; /* "CSCOUNT1" */
    uint32_t version;
    uint32_t header_bytes;
    uint64_t slab_words;
    uint32_t max_slabs;
    uint32_t nslabs; /* slabs claimed so far (atomic) */
    uint64_t nonce;  /* also in the metadata: pairs the two files */
    int32_t rank, world_size;
    int32_t pid, state; /* CS_STATE_* */
    uint64_t seq;       /* snapshots taken */
    uint64_t tick0, ns0, tick1, ns1; /* clock pairs: ticks and CLOCK_MONOTONIC ns */
    uint32_t overflow_threads;      /* threads beyond max_slabs (share the last slab) */
    uint32_t reserved;
} cs_header_t;

enum { CS_STATE_RUNNING = 1, CS_STATE_FINALIZED = 2 };

/* Library state (cs_prof_init.c). */
extern int cs_sets;         /* CS_SET_* bits; 0 until MPI_Init has set up the files */
extern int cs_clock_wanted; /* timers or trace on: wrappers read the clock */
extern int cs_world_size;
extern int cs_world_rank;
extern uint64_t cs_off_peers_end;
extern cs_header_t *cs_hdr;
extern uint64_t *cs_rank_words;
extern long long cs_coll_small_bytes; /* collective bins: message size <= this is small */
extern int cs_coll_small_comm;        /* communicator size <= this is small */

uint64_t *cs_slab_claim(void); /* this thread's slab (a scratch slab before init) */
uint64_t *cs_slab_at(int i);
uint64_t cs_now_ns(void);

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

/* Communicator table (cs_prof_tables.c). */
typedef struct {
    int id;           /* 0 world, 1 self, then in order of first sight on this rank */
    int size;         /* size of the group peers are named in (remote group for intercomms) */
    int *world_ranks; /* rank in comm -> rank in MPI_COMM_WORLD */
} cs_comm_t;
const cs_comm_t *cs_comm_lookup(MPI_Comm comm); /* registers on first sight */
void cs_comm_register(MPI_Comm comm, const char *created_by, MPI_Comm parent);
void cs_comm_forget(MPI_Comm comm);
void cs_comms_init(const char *dir);
void cs_comms_finish(void);

/* Request table (cs_prof_tables.c): what a request is, so its completion can be
 * attributed (a receive's source and size come from the status). */
enum { CS_REQ_SEND = 1, CS_REQ_RECV = 2, CS_REQ_COLL = 3 };
typedef struct {
    uintptr_t key;   /* the MPI_Request handle; 0: empty slot */
    uint64_t id;     /* commscope request id (trace) */
    long long bytes; /* sends: message size; receives: posted size */
    MPI_Comm comm;
    int peer;        /* rank in comm (send: dest; receive: source as posted) */
    int tag;
    short kind;      /* CS_REQ_* */
    short func;      /* function that created it (size bins) */
    char persistent; /* persistent or partitioned: stays until MPI_Request_free */
    char active;     /* started and not yet completed */
} cs_req_t;
int cs_reqs_init(long capacity);
/* Remember req (purging a stale entry of the same handle); -1 when its bucket is full. */
int cs_req_put(MPI_Request req, const cs_req_t *info);
/* Copy req's entry into *out (1 if found); set_active >= 0 also sets its active flag. */
int cs_req_get(MPI_Request req, cs_req_t *out, int set_active);
/* The request with this id completed: forget it, or (keep) mark a persistent one inactive. */
void cs_req_done(MPI_Request req, uint64_t id, int keep);

/* Completion of a request whose entry was copied before the Wait/Test call. */
void cs_complete(MPI_Request before, const cs_req_t *e, const MPI_Status *status, uint64_t t0);

/* Snapshots (cs_prof_snap.c). */
int cs_pvars_init(void);           /* returns the number of pvar values sampled */
void cs_pvars_describe(void *fh);  /* JSON array of the sampled pvars (FILE *) */
int cs_snap_start(const char *dir, double interval_s);
void cs_snap_stop(void);
void cs_snap_now(void);
void cs_sum_slabs(uint64_t *totals);

/* Event trace (cs_prof_trace.c). */
enum { CS_EV_SEND = 1, CS_EV_ISEND, CS_EV_RECV, CS_EV_IRECV, CS_EV_COMPLETE, CS_EV_PROBE };
void cs_trace_init(const char *dir, long long limit_bytes, int buffer_records);
void cs_trace(int event, uint64_t t0, uint64_t request, long long bytes, int peer, int tag,
              MPI_Comm comm, int flags);
void cs_trace_finish(void);
int cs_thread_index(void); /* index of this thread's slab, -1 before init */

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
