/* Hot-path hooks the generated wrappers call around each PMPI function.
 *
 * Everything here runs on every MPI call, so: a thread-local slab pointer,
 * plain increments, branches on a global set mask that never changes after
 * MPI_Init, no division, no atomics except for the rank-wide watermarks of
 * nonblocking requests (a request may be completed by another thread).
 */
#ifndef CS_PROF_HOOKS_H
#define CS_PROF_HOOKS_H

#include "cs_prof.h"

extern __thread uint64_t *cs_tl_slab __attribute__((tls_model("initial-exec")));

static inline uint64_t *cs_slab(void)
{
    uint64_t *s = cs_tl_slab;
    return __builtin_expect(s != 0, 1) ? s : cs_slab_claim();
}

#define CS_ENTER(F)                                           \
    uint64_t *s_ = cs_slab();                                 \
    s_[CS_OFF_CALLS + (F)]++;                                 \
    uint64_t t0_ = cs_clock_wanted ? cs_ticks() : 0;          \
    (void)t0_

#define CS_LEAVE(F)                                           \
    if (cs_sets & CS_SET_TIMERS) s_[CS_OFF_TICKS + (F)] += cs_ticks() - t0_

/* Receives need the status for source and size even when the program ignores it. */
#define CS_STATUS(st)                                         \
    MPI_Status cs_status_;                                    \
    if ((st) == MPI_STATUS_IGNORE) (st) = &cs_status_

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

/* MPI_IN_PLACE collectives use the receive side's count and type. */
static inline long long cs_bytes_inplace(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                         int recvcount, MPI_Datatype recvtype)
{
    return sendbuf == MPI_IN_PLACE ? cs_bytes(recvcount, recvtype) : cs_bytes(sendcount, sendtype);
}
long long cs_vbytes(const void *sendbuf, const int *sendcounts, MPI_Datatype sendtype,
                    const int *recvcounts, MPI_Datatype recvtype, MPI_Comm comm);
long long cs_wbytes(const void *sendbuf, const int *sendcounts, const MPI_Datatype *sendtypes,
                    const int *recvcounts, const MPI_Datatype *recvtypes, MPI_Comm comm);

static inline int cs_bin(long long bytes)
{
    if (bytes <= 0) return 0;
    int b = 64 - __builtin_clzll((unsigned long long)bytes);
    return b < CS_NBINS ? b : CS_NBINS - 1;
}

static inline void cs_count_bin(uint64_t *s, int func, long long bytes)
{
    if ((cs_sets & CS_SET_BINS) && cs_function_bin[func] >= 0)
        s[CS_OFF_BINS + cs_function_bin[func] * CS_NBINS + cs_bin(bytes)]++;
}

/* World rank of `rank` in `comm`, -1 when unknown. */
static inline int cs_world_of(MPI_Comm comm, int rank)
{
    if (comm == MPI_COMM_WORLD) return rank;
    if (comm == MPI_COMM_NULL || rank < 0) return -1;
    const cs_comm_t *c = cs_comm_lookup(comm);
    return c && rank < c->size ? c->world_ranks[rank] : -1;
}

/* Bytes a receive status reports.  Open MPI and MPICH keep the byte count in the
 * status itself; reading it there saves MPI_Get_count's checks and division on
 * every receive.  Other MPIs go through PMPI_Get_count. */
static inline long long cs_status_bytes(const MPI_Status *st)
{
#if defined(OPEN_MPI)
    return (long long)st->_ucount;
#elif defined(MPICH)
    return ((long long)((unsigned)st->count_hi_and_cancelled >> 1) << 32) + (unsigned)st->count_lo;
#else
    int n = 0;
    PMPI_Get_count(st, MPI_BYTE, &n);
    return n == MPI_UNDEFINED ? 0 : n;
#endif
}

/* One message this rank sent or received: counts, size bins and the peer matrix.
 * `received` is a constant at every call site, so the choices fold away. */
static inline void cs_count_message(uint64_t *s, int func, long long bytes, int peer,
                                    MPI_Comm comm, int received)
{
    if (cs_sets & CS_SET_BYTES) {
        s[received ? CS_C_messages_received : CS_C_messages_sent]++;
        s[received ? CS_C_bytes_received : CS_C_bytes_sent] += bytes;
        s[CS_OFF_FBYTES + func] += bytes;
    }
    cs_count_bin(s, func, bytes);
    if (cs_sets & CS_SET_PEERS) {
        int w = cs_world_of(comm, peer);
        if (w >= 0) {
            uint64_t *row = s + CS_OFF_PEERS + (received ? 2 : 0) * cs_world_size;
            row[w]++;
            row[cs_world_size + w] += bytes;
        }
    }
}

/* A message this rank sent (blocking, nonblocking, or a started persistent send). */
static inline void cs_count_sent(uint64_t *s, int func, long long bytes, int dest, MPI_Comm comm)
{
    cs_count_message(s, func, bytes, dest, comm, 0);
}

/* A message this rank received; source and size from the status. */
static inline void cs_count_received(uint64_t *s, int func, MPI_Comm comm, const MPI_Status *st)
{
    if (st->MPI_SOURCE != MPI_PROC_NULL)
        cs_count_message(s, func, cs_status_bytes(st), st->MPI_SOURCE, comm, 1);
}

static inline void cs_count_wildcards(uint64_t *s, int source, int tag)
{
    if (cs_sets & CS_SET_BYTES) {
        s[CS_C_any_source_receives] += source == MPI_ANY_SOURCE;
        s[CS_C_any_tag_receives] += tag == MPI_ANY_TAG;
    }
}

/* Rank-wide current value and high watermark (atomic: see the file comment). */
static inline void cs_sentinel_add(int sentinel, int watermark, long delta)
{
    uint64_t now = __atomic_add_fetch(&cs_rank_words[sentinel], (uint64_t)delta, __ATOMIC_RELAXED);
    if (delta > 0) {
        uint64_t hwm = __atomic_load_n(&cs_rank_words[watermark], __ATOMIC_RELAXED);
        while (now > hwm && !__atomic_compare_exchange_n(&cs_rank_words[watermark], &hwm, now, 1,
                                                         __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            ;
    }
}

static inline int cs_tracking_requests(void)
{
    return cs_sets & (CS_SET_BYTES | CS_SET_PEERS | CS_SET_BINS | CS_SET_REQUESTS | CS_SET_TRACE);
}

uint64_t cs_next_request_id(void);

/* Remember a request and count it as started. */
static inline void cs_track(uint64_t *s, MPI_Request req, int kind, int func, long long bytes,
                            int peer, int tag, MPI_Comm comm, int persistent, uint64_t *id_out)
{
    *id_out = 0;
    if (!cs_tracking_requests() || req == MPI_REQUEST_NULL) return;
    cs_req_t e = {0};
    e.id = *id_out = cs_next_request_id();
    e.kind = (short)kind;
    e.func = (short)func;
    e.bytes = bytes;
    e.peer = peer;
    e.tag = tag;
    e.comm = comm;
    e.persistent = (char)persistent;
    e.active = !persistent;
    if (cs_req_put(req, &e) != 0) {
        s[CS_C_requests_untracked]++;
        *id_out = 0;
        return;
    }
    if (!persistent && (cs_sets & CS_SET_REQUESTS)) {
        s[CS_C_requests_started]++;
        cs_sentinel_add(CS_C_outstanding_requests, CS_C_outstanding_requests_hwm, 1);
        if (kind == CS_REQ_RECV) cs_sentinel_add(CS_C_posted_receives, CS_C_posted_receives_hwm, 1);
    }
}

/* ---- hooks named in mpi_functions.py ---------------------------------- */

static inline void cs_on_send(int func, int count, MPI_Datatype type, int dest, int tag,
                              MPI_Comm comm, uint64_t t0)
{
    if (dest == MPI_PROC_NULL) return;
    uint64_t *s = cs_slab();
    long long bytes = cs_bytes(count, type);
    cs_count_sent(s, func, bytes, dest, comm);
    if (cs_sets & CS_SET_TRACE) cs_trace(CS_EV_SEND, t0, 0, bytes, dest, tag, comm, 0);
}

static inline void cs_on_isend(int func, int count, MPI_Datatype type, int dest, int tag,
                               MPI_Comm comm, MPI_Request req, uint64_t t0)
{
    if (dest == MPI_PROC_NULL) return;
    uint64_t *s = cs_slab();
    long long bytes = cs_bytes(count, type);
    uint64_t id;
    cs_count_sent(s, func, bytes, dest, comm);
    cs_track(s, req, CS_REQ_SEND, func, bytes, dest, tag, comm, 0, &id);
    if (cs_sets & CS_SET_TRACE) cs_trace(CS_EV_ISEND, t0, id, bytes, dest, tag, comm, 0);
}

static inline void cs_on_recv(int func, int source, int tag, MPI_Comm comm, MPI_Status *st,
                              uint64_t t0)
{
    if (source == MPI_PROC_NULL) return;
    uint64_t *s = cs_slab();
    cs_count_wildcards(s, source, tag);
    cs_count_received(s, func, comm, st);
    if (cs_sets & CS_SET_TRACE)
        cs_trace(CS_EV_RECV, t0, 0, cs_status_bytes(st), st->MPI_SOURCE, st->MPI_TAG, comm, 1);
}

static inline void cs_on_irecv(int func, int count, MPI_Datatype type, int source, int tag,
                               MPI_Comm comm, MPI_Request req, uint64_t t0)
{
    if (source == MPI_PROC_NULL) return;
    uint64_t *s = cs_slab();
    long long bytes = cs_bytes(count, type);
    uint64_t id;
    cs_count_wildcards(s, source, tag);
    cs_track(s, req, CS_REQ_RECV, func, bytes, source, tag, comm, 0, &id);
    if (cs_sets & CS_SET_TRACE) cs_trace(CS_EV_IRECV, t0, id, bytes, source, tag, comm, 0);
}

static inline void cs_on_persistent_init(int func, int kind, long long bytes, int peer, int tag,
                                         MPI_Comm comm, MPI_Request req)
{
    if (peer == MPI_PROC_NULL) return;
    uint64_t id;
    cs_track(cs_slab(), req, kind, func, bytes, peer, tag, comm, 1, &id);
}

void cs_on_start(int func, MPI_Request req, uint64_t t0);

static inline void cs_on_probe(int func, int source, int tag, MPI_Comm comm, uint64_t t0)
{
    (void)func;
    if (cs_sets & CS_SET_TRACE) cs_trace(CS_EV_PROBE, t0, 0, 0, source, tag, comm, 0);
}

static inline void cs_on_coll(int func, long long bytes, MPI_Comm comm)
{
    uint64_t *s = cs_slab();
    if (cs_sets & CS_SET_BYTES) {
        s[CS_C_collective_bytes] += bytes;
        s[CS_OFF_FBYTES + func] += bytes;
    }
    if (cs_sets & CS_SET_BINS) {
        cs_count_bin(s, func, bytes);
        const cs_comm_t *c = comm == MPI_COMM_WORLD ? 0 : cs_comm_lookup(comm);
        int size = c ? c->size : cs_world_size;
        int bin = (bytes > cs_coll_small_bytes) * 2 + (size > cs_coll_small_comm);
        s[CS_OFF_COLL + cs_function_coll[func] * CS_NCOLLBINS + bin]++;
    }
}

static inline void cs_on_request_started(MPI_Request req, int kind)
{
    uint64_t id;
    cs_track(cs_slab(), req, kind, -1, 0, -1, -1, MPI_COMM_NULL, 0, &id);
}

static inline void cs_on_comm_created(int func, MPI_Comm parent, MPI_Comm newcomm)
{
    if (newcomm != MPI_COMM_NULL) cs_comm_register(newcomm, cs_function_names[func], parent);
}

static inline void cs_on_comm_free(MPI_Comm comm) { cs_comm_forget(comm); }

static inline void cs_on_type_free(void) { __atomic_add_fetch(&cs_type_generation, 1, __ATOMIC_RELAXED); }

#endif
