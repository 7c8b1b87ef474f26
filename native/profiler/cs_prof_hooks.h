/* Hot-path hooks the generated wrappers call around each PMPI function.
 *
 * Everything here runs on every MPI call, so: a thread-local slab pointer,
 * plain increments, branches on a global set mask that never changes after
 * set-up, no division, no atomics except for the rank-wide words of nonblocking
 * requests (a request may be completed by another thread) and per-file counters.
 */
#ifndef CS_PROF_HOOKS_H
#define CS_PROF_HOOKS_H

#include <string.h>

#include "cs_prof_sites.h"
#include "cs_prof_state.h"
#include "cs_prof_tables.h"
#include "cs_prof_trace.h"

/* Time: the function's, and the size bin's when the call counted one of its own (the
 * last it counted: MPI_Sendrecv's time goes to its receive's bin); and with --callsites
 * the call site's bytes and time. */
static inline uint64_t cs_leave_time(uint64_t *s, int f, uint64_t t0)
{
    uint64_t dt = cs_ticks() - t0;
    s[CS_OFF_TICKS + f] += dt;
    uint64_t *bt = cs_tl_bin_tick;
    if (bt) {
        if (cs_tl_bin_func == f) *bt += dt;
        cs_tl_bin_tick = 0;
    }
    return dt;
}

/* With the trace on, the call's site for the records it writes (cs_trace reads
 * cs_tl_site): the wrapper's own return address, unless an outer entry point of ours
 * (a Fortran wrapper, MPI_Finalize) saved the program's; in the MPI's own Fortran
 * layer (MPICH's mpif.h calls MPI_*), the first frame outside it, unwound
 * (cs_site_program).  Call-site counting then finds the same address in cs_tl_site,
 * so the trace and the call-site table agree.  Untraced: one test of cs_sets. */
#define CS_TRACE_SITE_BEGIN                                                              \
    int tsite_ = 0;                                                                      \
    if (__builtin_expect((cs_sets & CS_SET_TRACE) != 0, 0) && !cs_tl_site) {             \
        uintptr_t ra_ = (uintptr_t)__builtin_return_address(0);                          \
        cs_tl_site = (void *)(cs_site_passthrough(ra_) ? cs_site_program(ra_) : ra_);    \
        tsite_ = 1;                                                                      \
    }
#define CS_TRACE_SITE_END \
    if (tsite_) cs_tl_site = 0

/* A call: calls counted; t0_ its entry tick (0 unless timers or the trace are on);
 * b0_ its function's bytes so far (what the call adds is its call site's); the trace's
 * site (above); se_ its call site's entry (--callsites), which a request the call
 * creates remembers. */
#define CS_ENTER(F)                                                                     \
    uint64_t *s_ = cs_slab();                                                           \
    s_[CS_OFF_CALLS + (F)]++;                                                           \
    uint64_t t0_ = cs_clock_wanted ? cs_ticks() : 0;                                    \
    uint64_t b0_ = s_[CS_OFF_FBYTES + (F)];                                             \
    CS_TRACE_SITE_BEGIN;                                                                \
    uint64_t *se_ = (cs_sets & CS_SET_CALLSITES) ? cs_site_enter((F), __builtin_return_address(0)) : 0; \
    (void)t0_, (void)b0_, (void)se_

#define CS_LEAVE(F)                                                                  \
    do {                                                                             \
        uint64_t dt_ = (cs_sets & CS_SET_TIMERS) ? cs_leave_time(s_, (F), t0_) : 0;   \
        if (se_) cs_site_leave(se_, s_[CS_OFF_FBYTES + (F)] - b0_, dt_);             \
        CS_TRACE_SITE_END;                                                           \
    } while (0)

/* Receives need the status for source and size even when the program ignores it:
 * our own then, saying "no message" (MPI_PROC_NULL, 0 bytes) where MPI leaves it
 * unwritten, so nothing is counted from stack garbage. */
#define CS_STATUS(st)                                         \
    MPI_Status cs_status_;                                    \
    if ((st) == MPI_STATUS_IGNORE) {                          \
        memset(&cs_status_, 0, sizeof cs_status_);            \
        cs_status_.MPI_SOURCE = MPI_PROC_NULL;                \
        (st) = &cs_status_;                                   \
    }

/* MPI_IN_PLACE collectives use the receive side's count and type. */
static inline long long cs_bytes_inplace(const void *sendbuf, long long sendcount, MPI_Datatype sendtype,
                                         long long recvcount, MPI_Datatype recvtype)
{
    return sendbuf == MPI_IN_PLACE ? cs_bytes(recvcount, recvtype) : cs_bytes(sendcount, sendtype);
}

/* Count arrays are int[] or, in the large-count (_c) functions, MPI_Count[]. */
long long cs_vbytes_i(const void *sendbuf, const int *sendcounts, MPI_Datatype sendtype,
                      const int *recvcounts, MPI_Datatype recvtype, MPI_Comm comm);
long long cs_vbytes_c(const void *sendbuf, const MPI_Count *sendcounts, MPI_Datatype sendtype,
                      const MPI_Count *recvcounts, MPI_Datatype recvtype, MPI_Comm comm);
long long cs_wbytes_i(const void *sendbuf, const int *sendcounts, const MPI_Datatype *sendtypes,
                      const int *recvcounts, const MPI_Datatype *recvtypes, MPI_Comm comm);
long long cs_wbytes_c(const void *sendbuf, const MPI_Count *sendcounts, const MPI_Datatype *sendtypes,
                      const MPI_Count *recvcounts, const MPI_Datatype *recvtypes, MPI_Comm comm);
#define CS_BY_COUNT_TYPE(counts, f) \
    _Generic((counts), const MPI_Count *: f##_c, MPI_Count *: f##_c, default: f##_i)
#define cs_vbytes(sb, sc, st, rc, rt, comm) CS_BY_COUNT_TYPE(rc, cs_vbytes)(sb, sc, st, rc, rt, comm)
#define cs_wbytes(sb, sc, st, rc, rt, comm) CS_BY_COUNT_TYPE(rc, cs_wbytes)(sb, sc, st, rc, rt, comm)

/* Neighbourhood collectives: bytes to (CS_OUT) or from (CS_IN) the real neighbours. */
enum { CS_IN, CS_OUT };
long long cs_nbytes(MPI_Comm comm, int dir, long long each);
long long cs_nbytes_v_i(MPI_Comm comm, int dir, const int *counts, MPI_Datatype type);
long long cs_nbytes_v_c(MPI_Comm comm, int dir, const MPI_Count *counts, MPI_Datatype type);
long long cs_nbytes_w_i(MPI_Comm comm, int dir, const int *counts, const MPI_Datatype *types);
long long cs_nbytes_w_c(MPI_Comm comm, int dir, const MPI_Count *counts, const MPI_Datatype *types);
#define cs_nbytes_v(comm, dir, c, t) CS_BY_COUNT_TYPE(c, cs_nbytes_v)(comm, dir, c, t)
#define cs_nbytes_w(comm, dir, c, t) CS_BY_COUNT_TYPE(c, cs_nbytes_w)(comm, dir, c, t)

static inline int cs_bin(long long bytes)
{
    if (bytes <= 0) return 0;
    int b = 64 - __builtin_clzll((unsigned long long)bytes);
    return b < CS_NBINS ? b : CS_NBINS - 1;
}

/* One message (or collective call) of `func` in its size bin; the bin's tick word is
 * remembered for the time of the call (CS_LEAVE), if the call is func's own. */
static inline void cs_count_bin(uint64_t *s, int func, long long bytes)
{
    if ((cs_sets & CS_SET_BINS) && cs_function_bin[func] >= 0) {
        uint64_t *row = cs_bin_row(s, cs_function_bin[func]);
        int b = cs_bin(bytes);
        row[b]++;
        cs_tl_bin_tick = row + CS_NBINS + b;
        cs_tl_bin_func = func;
    }
}

/* World rank of `rank` in a group (communicator, window), -1 when unknown. */
static inline int cs_world_in(const cs_group_t *g, int rank)
{
    return g && rank >= 0 && rank < g->size ? g->world_ranks[rank] : -1;
}

static inline int cs_world_of(MPI_Comm comm, int rank)
{
    if (comm == MPI_COMM_WORLD) return rank >= 0 && rank < cs_world_size ? rank : -1;
    if (comm == MPI_COMM_NULL || rank < 0) return -1;
    return cs_world_in(cs_comm_lookup(comm), rank);
}


/* Bytes a status reports.  Open MPI and MPICH keep the byte count in the status
 * itself; reading it there saves MPI_Get_count's checks and division on every
 * receive.  Other MPIs go through PMPI_Get_count. */
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
 * `received` is a constant at every call site, so the choices fold away; `sign`
 * -1 takes back a send that was cancelled. */
static inline void cs_count_message(uint64_t *s, int func, long long bytes, int peer,
                                    MPI_Comm comm, int received, int sign)
{
    if (cs_sets & CS_SET_BYTES) {
        s[received ? CS_C_messages_received : CS_C_messages_sent] += (uint64_t)(long long)sign;
        s[received ? CS_C_bytes_received : CS_C_bytes_sent] += (uint64_t)(sign * bytes);
        s[CS_OFF_FBYTES + func] += (uint64_t)(sign * bytes);
    }
    if (sign > 0) cs_count_bin(s, func, bytes);
    if (cs_sets & CS_SET_PEERS) {
        int w = cs_world_of(comm, peer);
        if (w >= 0) {
            uint64_t *p = cs_peer(s, w);
            p[received ? CS_P_messages_received : CS_P_messages_sent] += (uint64_t)(long long)sign;
            p[received ? CS_P_bytes_received : CS_P_bytes_sent] += (uint64_t)(sign * bytes);
        }
    }
}

static inline void cs_count_sent(uint64_t *s, int func, long long bytes, int dest, MPI_Comm comm)
{
    cs_count_message(s, func, bytes, dest, comm, 0, 1);
}

/* A message this rank received; source and size from the status. */
static inline void cs_count_received(uint64_t *s, int func, MPI_Comm comm, const MPI_Status *st)
{
    if (st->MPI_SOURCE != MPI_PROC_NULL)
        cs_count_message(s, func, cs_status_bytes(st), st->MPI_SOURCE, comm, 1, 1);
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

static inline int cs_posts_receive(int kind) { return kind == CS_REQ_RECV || kind == CS_REQ_SENDRECV; }

/* The request ledger: a request counted as started is later counted exactly once
 * as completed, cancelled or freed; outstanding is the difference. */
static inline void cs_ledger_started(uint64_t *s, int kind)
{
    if (!(cs_sets & CS_SET_REQUESTS)) return;
    s[CS_C_requests_started]++;
    cs_sentinel_add(CS_C_outstanding_requests, CS_C_outstanding_requests_hwm, 1);
    if (cs_posts_receive(kind)) cs_sentinel_add(CS_C_posted_receives, CS_C_posted_receives_hwm, 1);
}

static inline void cs_ledger_ended(uint64_t *s, int kind, int counter)
{
    if (!(cs_sets & CS_SET_REQUESTS)) return;
    s[counter]++;
    cs_sentinel_add(CS_C_outstanding_requests, CS_C_outstanding_requests_hwm, -1);
    if (cs_posts_receive(kind)) cs_sentinel_add(CS_C_posted_receives, CS_C_posted_receives_hwm, -1);
}

/* Remember a request and, unless persistent (started by MPI_Start), count it as started. */
static inline uint64_t cs_track(uint64_t *s, MPI_Request req, int kind, int func, long long bytes,
                                int peer, int tag, MPI_Comm comm, int persistent)
{
    if (!cs_tracking_requests() || req == MPI_REQUEST_NULL) return 0;
    cs_req_t e = {0};
    e.id = cs_next_request_id();
    e.kind = (short)kind;
    e.func = (short)func;
    e.bytes = bytes;
    e.peer = peer;
    e.tag = tag;
    e.comm = comm;
    e.persistent = (char)persistent;
    e.active = !persistent;
    e.traced = (cs_sets & CS_SET_TRACE) && (kind == CS_REQ_SEND || cs_posts_receive(kind));
    e.site = (cs_sets & CS_SET_CALLSITES) ? cs_tl_cur_site : 0;
    if (cs_req_put(req, &e) != 0) {
        s[CS_C_requests_untracked]++;
        return 0;
    }
    if (!persistent) cs_ledger_started(s, kind);
    return e.id;
}

/* ---- hooks named in mpi_functions.py ---------------------------------- */

static inline void cs_on_send(int func, long long count, MPI_Datatype type, int dest, int tag,
                              MPI_Comm comm, uint64_t t0)
{
    if (dest == MPI_PROC_NULL) return;
    uint64_t *s = cs_slab();
    long long bytes = cs_bytes(count, type);
    cs_count_sent(s, func, bytes, dest, comm);
    if (cs_sets & CS_SET_TRACE) cs_trace(CS_EV_SEND, func, t0, 0, bytes, dest, tag, cs_comm_id(comm), 0);
}

static inline void cs_on_isend(int func, long long count, MPI_Datatype type, int dest, int tag,
                               MPI_Comm comm, MPI_Request req, uint64_t t0)
{
    if (dest == MPI_PROC_NULL) return;
    uint64_t *s = cs_slab();
    long long bytes = cs_bytes(count, type);
    cs_count_sent(s, func, bytes, dest, comm);
    uint64_t id = cs_track(s, req, CS_REQ_SEND, func, bytes, dest, tag, comm, 0);
    if (cs_sets & CS_SET_TRACE) cs_trace(CS_EV_ISEND, func, t0, id, bytes, dest, tag, cs_comm_id(comm), 0);
}

static inline void cs_on_recv(int func, int source, int tag, MPI_Comm comm, MPI_Status *st,
                              uint64_t t0)
{
    if (source == MPI_PROC_NULL) return;
    uint64_t *s = cs_slab();
    cs_count_wildcards(s, source, tag);
    cs_count_received(s, func, comm, st);
    if (cs_sets & CS_SET_TRACE)
        cs_trace(CS_EV_RECV, func, t0, 0, cs_status_bytes(st), st->MPI_SOURCE, st->MPI_TAG, cs_comm_id(comm), 1);
}

static inline void cs_on_irecv(int func, long long count, MPI_Datatype type, int source, int tag,
                               MPI_Comm comm, MPI_Request req, uint64_t t0)
{
    if (source == MPI_PROC_NULL) return;
    uint64_t *s = cs_slab();
    long long bytes = cs_bytes(count, type);
    cs_count_wildcards(s, source, tag);
    uint64_t id = cs_track(s, req, CS_REQ_RECV, func, bytes, source, tag, comm, 0);
    if (cs_sets & CS_SET_TRACE) cs_trace(CS_EV_IRECV, func, t0, id, bytes, source, tag, cs_comm_id(comm), 0);
}

/* MPI_Isendrecv: the send is counted now, the receive when the request completes. */
static inline void cs_on_isendrecv(int func, long long sendcount, MPI_Datatype sendtype, int dest,
                                   int sendtag, long long recvcount, MPI_Datatype recvtype, int source,
                                   int recvtag, MPI_Comm comm, MPI_Request req, uint64_t t0)
{
    cs_on_send(func, sendcount, sendtype, dest, sendtag, comm, t0);
    uint64_t *s = cs_slab();
    long long bytes = source == MPI_PROC_NULL ? 0 : cs_bytes(recvcount, recvtype);
    if (source != MPI_PROC_NULL) cs_count_wildcards(s, source, recvtag);
    uint64_t id = cs_track(s, req, source == MPI_PROC_NULL ? CS_REQ_SEND : CS_REQ_SENDRECV, func,
                           bytes, source, recvtag, comm, 0);
    if ((cs_sets & CS_SET_TRACE) && source != MPI_PROC_NULL)
        cs_trace(CS_EV_IRECV, func, t0, id, bytes, source, recvtag, cs_comm_id(comm), 0);
    else if (cs_sets & CS_SET_TRACE)
        cs_trace(CS_EV_ISEND, func, t0, id, 0, MPI_PROC_NULL, sendtag, cs_comm_id(comm), 0);
}

static inline void cs_on_persistent_init(int func, int kind, long long bytes, int peer, int tag,
                                         MPI_Comm comm, MPI_Request req)
{
    if (peer != MPI_PROC_NULL) cs_track(cs_slab(), req, kind, func, bytes, peer, tag, comm, 1);
}

void cs_on_start(int func, MPI_Request req, uint64_t t0);
void cs_on_cancel(MPI_Request req);

static inline void cs_on_probe(int func, int source, int tag, MPI_Comm comm, uint64_t t0)
{
    if (cs_sets & CS_SET_TRACE) cs_trace(CS_EV_PROBE, func, t0, 0, 0, source, tag, cs_comm_id(comm), 0);
}

/* A matched probe takes the message off the queue: that is where it is received
 * (MPI_Mrecv/MPI_Imrecv only copy it out). */
static inline void cs_on_mprobe(int func, int source, int tag, MPI_Comm comm, MPI_Status *st,
                                uint64_t t0)
{
    if (source == MPI_PROC_NULL || st->MPI_SOURCE == MPI_PROC_NULL) return;
    uint64_t *s = cs_slab();
    cs_count_wildcards(s, source, tag);
    cs_count_received(s, func, comm, st);
    if (cs_sets & CS_SET_TRACE)
        cs_trace(CS_EV_RECV, func, t0, 0, cs_status_bytes(st), st->MPI_SOURCE, st->MPI_TAG, cs_comm_id(comm), 1);
}

static inline void cs_on_request_started(MPI_Request req, int kind)
{
    cs_track(cs_slab(), req, kind, -1, 0, -1, -1, MPI_COMM_NULL, 0);
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
        const cs_group_t *c = comm == MPI_COMM_WORLD ? 0 : cs_comm_lookup(comm);
        int size = c ? c->size : cs_world_size;
        int bin = (bytes > cs_coll_small_bytes) * 2 + (size > cs_coll_small_comm);
        s[CS_OFF_COLL + cs_function_coll[func] * CS_NCOLLBINS + bin]++;
    }
}

static inline void cs_on_neighbor_coll(int func, long long sent, long long received)
{
    uint64_t *s = cs_slab();
    if (cs_sets & CS_SET_BYTES) {
        s[CS_C_neighbor_bytes_sent] += sent;
        s[CS_C_neighbor_bytes_received] += received;
        s[CS_OFF_FBYTES + func] += sent;
    }
    cs_count_bin(s, func, sent);
}

/* Collectives in the event trace.  The byte expressions (mpi_functions.py COLL_TRACE)
 * are evaluated only when the trace is on. */
#define CS_TRACE_COLL(F, root, sent, received, comm, t0)                                   \
    if (cs_sets & CS_SET_TRACE)                                                              \
    cs_trace_coll(CS_EV_COLL, F, F, t0, 0, (sent), (received), cs_coll_root(root), cs_comm_id(comm))

/* A nonblocking collective: its request is remembered with what its completion records. */
static inline void cs_on_icoll(int func, MPI_Request req, int root, long long sent, long long received,
                               MPI_Comm comm, uint64_t t0)
{
    uint64_t *s = cs_slab();
    if (!cs_tracking_requests() || req == MPI_REQUEST_NULL) return;
    cs_req_t e = {0};
    e.id = cs_next_request_id();
    e.kind = CS_REQ_COLL;
    e.func = (short)func;
    e.coll_sent = sent;
    e.bytes2 = received;
    e.peer = cs_coll_root(root);
    e.comm = comm;
    e.traced = 1;
    e.site = (cs_sets & CS_SET_CALLSITES) ? cs_tl_cur_site : 0;
    if (cs_req_put(req, &e) != 0) {
        s[CS_C_requests_untracked]++;
        return;
    }
    cs_ledger_started(s, CS_REQ_COLL);
    cs_trace_coll(CS_EV_ICOLL, func, func, t0, e.id, sent, received, e.peer, cs_comm_id(comm));
}
#define CS_ICOLL(F, req, root, sent, received, comm, t0)                                  \
    if (cs_sets & CS_SET_TRACE) cs_on_icoll(F, req, root, (sent), (received), comm, t0);   \
    else cs_on_request_started(req, CS_REQ_COLL)

/* A persistent (neighbourhood) collective moves its bytes at every MPI_Start.  Traced
 * (`traced`): what each start and completion records (root, tsent, trecv) too. */
static inline void cs_on_persistent_coll_init(int func, long long bytes, long long received,
                                              MPI_Comm comm, MPI_Request req, int traced, int root,
                                              long long tsent, long long trecv)
{
    int neighbor = cs_function_names[func][4] == 'N'; /* MPI_Neighbor_* */
    uint64_t *s = cs_slab();
    if (!cs_tracking_requests() || req == MPI_REQUEST_NULL) return;
    cs_req_t e = {0};
    e.id = cs_next_request_id();
    e.kind = neighbor ? CS_REQ_NCOLL : CS_REQ_COLL;
    e.func = (short)func;
    e.bytes = bytes;
    e.bytes2 = neighbor ? received : traced ? trecv : 0;
    e.comm = comm;
    e.persistent = 1;
    e.site = (cs_sets & CS_SET_CALLSITES) ? cs_tl_cur_site : 0;
    if (traced) {
        e.traced = 1;
        e.peer = cs_coll_root(root);
        e.coll_sent = tsent;
    }
    if (cs_req_put(req, &e) != 0) s[CS_C_requests_untracked]++;
}
#define CS_PCOLL_INIT(F, bytes, received, root, tsent, trecv, comm, req)                  \
    if (cs_sets & CS_SET_TRACE)                                                              \
        cs_on_persistent_coll_init(F, bytes, received, comm, req, 1, root, (tsent), (trecv)); \
    else cs_on_persistent_coll_init(F, bytes, received, comm, req, 0, -1, 0, 0)

static inline void cs_on_comm_created(int func, MPI_Comm parent, MPI_Comm newcomm)
{
    if (newcomm != MPI_COMM_NULL) cs_comm_register(newcomm, cs_function_names[func], parent);
}

static inline void cs_on_comm_free(MPI_Comm comm) { cs_comm_forget(comm); }

static inline void cs_on_type_free(void) { __atomic_add_fetch(&cs_type_generation, 1, __ATOMIC_RELAXED); }

/* ---- one-sided ---------------------------------------------------------------- */

static inline void cs_on_win_created(MPI_Win win, MPI_Comm comm)
{
    (void)comm;
    cs_win_register(win);
}

static inline void cs_on_win_free(MPI_Win win) { cs_win_forget(win); }

enum { CS_RMA_PUT, CS_RMA_GET, CS_RMA_ACC };

static inline void cs_count_rma(uint64_t *s, const cs_group_t *g, int target, int kind, long long bytes)
{
    static const int counter[] = {CS_C_rma_bytes_put, CS_C_rma_bytes_got, CS_C_rma_bytes_accumulated};
    static const int array[] = {CS_P_rma_bytes_put, CS_P_rma_bytes_got, CS_P_rma_bytes_accumulated};
    if (cs_sets & CS_SET_BYTES) s[counter[kind]] += bytes;
    if (cs_sets & CS_SET_PEERS) {
        int w = cs_world_in(g, target);
        if (w >= 0) cs_peer(s, w)[array[kind]] += bytes;
    }
}

static inline void cs_on_rma(int func, MPI_Win win, int target, int kind, long long bytes)
{
    if (target == MPI_PROC_NULL) return;
    uint64_t *s = cs_slab();
    const cs_group_t *g = (cs_sets & CS_SET_PEERS) ? cs_win_lookup(win) : 0;
    cs_count_rma(s, g, target, kind, bytes);
    if (cs_sets & CS_SET_BYTES) s[CS_OFF_FBYTES + func] += bytes;
    cs_count_bin(s, func, bytes);
}

/* Get_accumulate, Fetch_and_op, Compare_and_swap: origin data combined into the
 * target (none with MPI_NO_OP), the old target data fetched back. */
static inline void cs_on_get_accumulate(int func, MPI_Win win, int target, MPI_Op op,
                                        long long origin_bytes, long long result_bytes)
{
    if (target == MPI_PROC_NULL) return;
    uint64_t *s = cs_slab();
    const cs_group_t *g = (cs_sets & CS_SET_PEERS) ? cs_win_lookup(win) : 0;
    long long acc = op == MPI_NO_OP ? 0 : origin_bytes;
    cs_count_rma(s, g, target, CS_RMA_ACC, acc);
    cs_count_rma(s, g, target, CS_RMA_GET, result_bytes);
    if (cs_sets & CS_SET_BYTES) s[CS_OFF_FBYTES + func] += acc + result_bytes;
    cs_count_bin(s, func, acc + result_bytes);
}

/* ---- MPI-IO -------------------------------------------------------------------- */

enum { CS_IO_READ, CS_IO_WRITE };

static inline void cs_on_file_open(const char *path, MPI_File fh) { cs_file_register(fh, path); }
static inline void cs_on_file_close(MPI_File fh) { cs_file_forget(fh); }

/* Bytes read or written through file id `file` (-1: unknown). */
static inline void cs_count_io(uint64_t *s, int func, int file, int dir, long long bytes)
{
    if (!(cs_sets & CS_SET_BYTES)) return;
    s[dir == CS_IO_READ ? CS_C_io_bytes_read : CS_C_io_bytes_written] += bytes;
    if (func >= 0) s[CS_OFF_FBYTES + func] += bytes;
    if (file >= 0) {
        uint64_t *row = cs_file_words + (size_t)(file < CS_MAX_FILES ? file : CS_MAX_FILES - 1) * CS_NFILE_COUNTERS;
        __atomic_add_fetch(&row[dir == CS_IO_READ ? CS_FILE_reads : CS_FILE_writes], 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&row[dir == CS_IO_READ ? CS_FILE_bytes_read : CS_FILE_bytes_written],
                           (uint64_t)bytes, __ATOMIC_RELAXED);
    }
}

static inline void cs_on_io(int func, MPI_File fh, int dir, long long bytes)
{
    uint64_t *s = cs_slab();
    cs_count_io(s, func, cs_file_id(fh), dir, bytes);
    cs_count_bin(s, func, bytes);
}

/* A nonblocking read: its size is known when it completes (from the status). */
static inline void cs_on_io_iread(int func, MPI_File fh, MPI_Request req)
{
    cs_track(cs_slab(), req, CS_REQ_FILE_READ, func, 0, cs_file_id(fh), 0, MPI_COMM_NULL, 0);
}

#endif
