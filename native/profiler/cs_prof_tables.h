/* Lookup tables keyed by MPI handle (cs_prof_tables.c): communicators and windows
 * (their ranks in world ranks, neighbourhoods), MPI-IO files (an id per path),
 * and requests (what a request is, so its completion can be attributed). */
#ifndef CS_PROF_TABLES_H
#define CS_PROF_TABLES_H

#include "cs_prof_state.h"

/* Declarations of the library's own symbols: hidden, so globals are reached
 * directly, not through the GOT (only the MPI wrappers are exported, CS_EXPORT). */
#pragma GCC visibility push(hidden)

/* ---- communicators and windows: a group of ranks ------------------------- */
typedef struct {
    int id;           /* communicators: 0 world, 1 self, then in order of first sight */
    int size;         /* size of the group peers are named in (remote group for intercomms) */
    int *world_ranks; /* rank in group -> world rank, -1 when outside the world group */
    /* neighbourhood (communicators with a topology), filled on first use */
    int topo_known, indegree, outdegree;
    char *in_real, *out_real; /* per neighbour slot: 1 unless MPI_PROC_NULL (Cartesian edges) */
} cs_group_t;

const cs_group_t *cs_comm_lookup(MPI_Comm comm); /* registers on first sight */
void cs_comm_register(MPI_Comm comm, const char *created_by, MPI_Comm parent);
void cs_comm_forget(MPI_Comm comm);
int cs_comm_id(MPI_Comm comm);                              /* -1 for MPI_COMM_NULL or an unknown communicator */
const cs_group_t *cs_comm_topology(MPI_Comm comm);          /* degrees filled */
void cs_comms_init(const char *node_base, int world_model); /* lists in <node_base>.comms.csv */
void cs_comms_finish(void);

const cs_group_t *cs_win_lookup(MPI_Win win);
void cs_win_register(MPI_Win win);
void cs_win_forget(MPI_Win win);

/* ---- MPI-IO files: ids in order of first open of each path ------------------ */
void cs_files_init(const char *node_base); /* lists in <node_base>.files.csv */
void cs_files_finish(void);
void cs_file_register(MPI_File fh, const char *path);
void cs_file_forget(MPI_File fh);
int cs_file_id(MPI_File fh); /* -1 when unknown */

/* ---- requests ------------------------------------------------------------------ */
enum {
    CS_REQ_SEND = 1,
    CS_REQ_RECV,
    CS_REQ_SENDRECV, /* Isendrecv: its receive completes it */
    CS_REQ_MRECV,    /* Imrecv: the message was counted when the probe matched it */
    CS_REQ_COLL,
    CS_REQ_NCOLL, /* NCOLL: neighbourhood (persistent: counted at each start) */
    CS_REQ_RMA,
    CS_REQ_FILE,
    CS_REQ_FILE_READ,
    CS_REQ_GENERALIZED,
    CS_REQ_COMM,
};
typedef struct {
    uintptr_t key;       /* the MPI_Request handle; 0: empty slot */
    uint64_t id;         /* commscope request id: starting thread's slab + 1 << 40 | its sequence */
    uint64_t order;      /* rank-wide start order: entries of one handle are taken oldest first */
    long long bytes;     /* sends: message size; receives: posted size; persistent collectives: bytes */
    long long bytes2;    /* persistent neighbourhood collectives: bytes received; traced
                       * collectives: bytes received (the trace's count) */
    long long coll_sent; /* traced collectives: bytes sent (the trace's count); root in peer */
    MPI_Comm comm;
    int peer; /* rank in comm (send: dest; receive: source as posted); file reads: file id */
    int tag;
    short kind;      /* CS_REQ_* */
    short func;      /* function that created it (size bins) */
    char persistent; /* persistent or partitioned: stays until MPI_Request_free */
    char active;     /* started and not yet completed */
    char cancelled;  /* MPI_Cancel was called on it */
    char traced;     /* its start is in the event trace */
    uint64_t *site;  /* --callsites: the entry of the call that created it, credited with
                      * the bytes counted for it later (cs_prof_sites.h) */
} cs_req_t;
int cs_reqs_init(long capacity);
/* Remember req; -1 when memory ran out. */
int cs_req_put(MPI_Request req, const cs_req_t *info);
/* Copy req's entry into *out; returns how many entries req has (0: not found).
 * set_active >= 0 also sets the entry's active flag.  A handle with several entries
 * (see cs_prof_tables.c) gives the caller's oldest, or else the oldest. */
int cs_req_get(MPI_Request req, cs_req_t *out, int set_active);
/* Take req's entry (as cs_req_get chooses it) out of the table into *out; returns how
 * many entries req had (0: none).  cs_req_restore puts an entry back, same order. */
int cs_req_take(MPI_Request req, cs_req_t *out);
int cs_req_restore(MPI_Request req, const cs_req_t *e);
/* Mark req as asked to be cancelled (1 if found). */
int cs_req_mark_cancelled(MPI_Request req);
/* The request with this id completed: forget it, or (keep) mark a persistent one inactive. */
void cs_req_done(MPI_Request req, uint64_t id, int keep);

/* Peer entries by (communicator, rank in it): the slow path (cs_prof_tables.c) maps
 * the rank to its world rank, finds or inserts the entry and caches it in this
 * thread's peer cache, which cs_refresh empties (a communicator was freed) and so does
 * the thread's own table moving (cs_peer_new). */
uint64_t *cs_peer_slow(uint64_t *s, MPI_Comm comm, int rank);

#define CS_PEER_SLOT(comm, rank) (((unsigned)(rank) ^ (unsigned)((uintptr_t)(comm) >> 4)) & (CS_PEER_CACHE - 1))

CS_HOT uint64_t *cs_peer_of(uint64_t *s, MPI_Comm comm, int rank)
{
    unsigned i = CS_PEER_SLOT(comm, rank);
    if (__builtin_expect(cs_tl.peer_cache[i].comm == comm && cs_tl.peer_cache[i].rank == rank, 1))
        return cs_tl.peer_cache[i].entry;
    return cs_peer_slow(s, comm, rank);
}

#pragma GCC visibility pop

#endif
