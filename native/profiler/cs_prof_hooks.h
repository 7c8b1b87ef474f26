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

#include "cs_prof_cpu.h"
#include "cs_prof_sites.h"
#include "cs_prof_state.h"
#include "cs_prof_tables.h"
#include "cs_prof_trace.h"

/* Declarations of the library's own symbols: hidden, so globals are reached
 * directly, not through the GOT (only the MPI wrappers are exported, CS_EXPORT). */
#pragma GCC visibility push(hidden)

/* ---- a wrapper's entry and exit ----------------------------------------------
 *
 * CS_ENTER(F) counts the call and reads the clock; CS_LEAVE(F) adds the call's ticks
 * to its function and, when the call counted a message (or a collective) of its own
 * in a size bin, to that bin: the hooks return the bin's tick word and the wrapper
 * keeps the last one in bt_ (CS_BIN_TIME), so MPI_Sendrecv's time goes to its
 * receive's bin, and a Wait that completes an MPI_Irecv's receive (counted in the
 * MPI_Irecv's bin, by cs_prof_requests.c) keeps its own time out of it.
 * The trace's call site and call sites (--callsites) are the slow path (one test of
 * the sets word at entry, one at exit):
 *   t0_  the call's entry tick (0 unless timers or the trace are on)
 *   b0_  its function's bytes so far (what the call adds is its call site's)
 *   se_  its call site's entry (--callsites), which a request the call creates remembers
 */
typedef struct {
    uint64_t b0;    /* the function's bytes at entry */
    uint64_t *site; /* the call site's entry (--callsites) */
    uint64_t t0;    /* traced: the entry tick (its end is the thread's last traced call's) */
    int tsite;      /* the trace's site was set here (to be cleared at exit) */
} cs_slow_t;

/* The call's site for the records it writes (cs_trace reads cs_tl_site): the wrapper's
 * own return address, unless an outer entry point of ours (a Fortran wrapper,
 * MPI_Finalize) saved the program's; in the MPI's own Fortran layer (MPICH's mpif.h
 * calls MPI_*), the first frame outside it, unwound (cs_site_program).  Call-site
 * counting then finds the same address in cs_tl_site, so the trace and the call-site
 * table agree; a call from mpi4py's module is then given its Python site id.
 * Traced, a call after a compute burst first records the thread's CPU times
 * (cs_cpu_enter). */
CS_HOT void cs_enter_slow(cs_slow_t *sl, uint64_t *s, int f, int sets, void *ra, uint64_t t0)
{
    sl->b0 = s[CS_FN(f, CS_FN_BYTES)];
    sl->tsite = 0;
    sl->t0 = 0;
    if ((sets & CS_SET_TRACE) && !cs_tl_site) {
        uintptr_t r = (uintptr_t)ra;
        cs_tl_site = (void *)(cs_site_passthrough(r) ? cs_site_program(r) : r);
        sl->tsite = 1;
    }
    if (sets & CS_SET_TRACE) {
        cs_cpu_enter(f, t0);
        sl->t0 = t0;
    }
    sl->site = (sets & CS_SET_CALLSITES) ? cs_site_enter(f, ra) : 0;
    /* mpi4py: the return address is the method's, whichever line called it; the trace
     * takes the Python line the call-site entry was keyed by (or finds it) instead. */
    if (sl->tsite && cs_site_python((uintptr_t)cs_tl_site))
        cs_tl_site = (void *)cs_site_python_line((uintptr_t)cs_tl_site, sl->site);
}

CS_HOT void cs_leave_slow(const cs_slow_t *sl, uint64_t *s, int f, uint64_t dt)
{
    if (sl->site) cs_site_leave(sl->site, s[CS_FN(f, CS_FN_BYTES)] - sl->b0, dt);
    if (sl->tsite) cs_tl_site = 0;
    if (sl->t0) cs_tl_cpu_last = dt ? sl->t0 + dt : cs_ticks(); /* dt is 0 without the timers */
}

/* The clock at exit: the call's ticks, to its function and to the bin of the message
 * it counted (bt, or 0). */
CS_HOT uint64_t cs_leave_time(uint64_t *s, int f, uint64_t t0, uint64_t *bt)
{
    uint64_t dt = cs_ticks() - t0;
    s[CS_FN(f, CS_FN_TICKS)] += dt;
    if (bt) *bt += dt;
    return dt;
}

/* The generic entry and exit (hand-written wrappers, and the full path of every
 * generated wrapper, which runs when the trace or call sites are on): RA is the
 * program's return address, the call site. */
#define CS_BEGIN(F) \
    uint64_t *s_ = cs_thread(); \
    int sets_ = cs_tl.sets

#define CS_FULL_ENTER(F, RA) \
    s_[CS_FN((F), CS_FN_CALLS)]++; \
    uint64_t t0_ = (sets_ & CS_SET_CLOCK) ? cs_ticks() : 0; \
    uint64_t *bt_ = 0; /* the tick word of the size bin the call's time goes to */ \
    cs_slow_t sl_ = {0, 0, 0, 0}; \
    if (__builtin_expect((sets_ & CS_SETS_SLOW) != 0, 0)) \
        cs_enter_slow(&sl_, s_, (F), sets_, (RA), t0_); \
    uint64_t *se_ = sl_.site; \
    (void)t0_, (void)se_, (void)bt_

#define CS_ENTER(F) \
    CS_BEGIN(F); \
    CS_FULL_ENTER(F, __builtin_return_address(0))

#define CS_LEAVE(F) \
    do { \
        uint64_t dt_ = (sets_ & CS_SET_TIMERS) ? cs_leave_time(s_, (F), t0_, bt_) : 0; \
        if (__builtin_expect((sets_ & CS_SETS_SLOW) != 0, 0)) cs_leave_slow(&sl_, s_, (F), dt_); \
    } while (0)

/* The fast path of a generated wrapper (after CS_BEGIN and the test of the slow
 * sets, mpi_functions.py): neither the trace nor call sites are on, and sets_ says so,
 * so the compiler drops every branch that tests them (the hooks take sets_ as an
 * argument). */
#define CS_FAST_ENTER(F) \
    sets_ &= ~CS_SETS_SLOW; \
    s_[CS_FN((F), CS_FN_CALLS)]++; \
    uint64_t t0_ = (sets_ & CS_SET_CLOCK) ? cs_ticks() : 0; \
    uint64_t *bt_ = 0, *se_ = 0; \
    (void)t0_, (void)se_, (void)bt_

#define CS_FAST_END(F) \
    do { \
        if (sets_ & CS_SET_TIMERS) cs_leave_time(s_, (F), t0_, bt_); \
    } while (0)

/* A hook that counted a message or collective of the call's own function in a size
 * bin returns that bin's tick word: the call's time goes there (the last one). */
#define CS_BIN_TIME(hook) \
    do { \
        uint64_t *bt1_ = (hook); \
        if (bt1_) bt_ = bt1_; \
    } while (0)

/* Receives need the status for source and size even when the program ignores it:
 * our own then, saying "no message" (MPI_PROC_NULL, 0 bytes) where MPI leaves it
 * unwritten, so nothing is counted from stack garbage. */
#define CS_STATUS(st) \
    MPI_Status cs_status_; \
    if ((st) == MPI_STATUS_IGNORE) { \
        memset(&cs_status_, 0, sizeof cs_status_); \
        cs_status_.MPI_SOURCE = MPI_PROC_NULL; \
        (st) = &cs_status_; \
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
    _Generic((counts), const MPI_Count * \
             : f##_c, MPI_Count * \
             : f##_c, default \
             : f##_i)
#define cs_vbytes(sb, sc, st, rc, rt, comm) CS_BY_COUNT_TYPE(rc, cs_vbytes)(sb, sc, st, rc, rt, comm)
#define cs_wbytes(sb, sc, st, rc, rt, comm) CS_BY_COUNT_TYPE(rc, cs_wbytes)(sb, sc, st, rc, rt, comm)

/* Neighbourhood collectives: bytes to (CS_OUT) or from (CS_IN) the real neighbours. */
enum { CS_IN,
       CS_OUT };
long long cs_nbytes(MPI_Comm comm, int dir, long long each);
long long cs_nbytes_v_i(MPI_Comm comm, int dir, const int *counts, MPI_Datatype type);
long long cs_nbytes_v_c(MPI_Comm comm, int dir, const MPI_Count *counts, MPI_Datatype type);
long long cs_nbytes_w_i(MPI_Comm comm, int dir, const int *counts, const MPI_Datatype *types);
long long cs_nbytes_w_c(MPI_Comm comm, int dir, const MPI_Count *counts, const MPI_Datatype *types);
#define cs_nbytes_v(comm, dir, c, t) CS_BY_COUNT_TYPE(c, cs_nbytes_v)(comm, dir, c, t)
#define cs_nbytes_w(comm, dir, c, t) CS_BY_COUNT_TYPE(c, cs_nbytes_w)(comm, dir, c, t)

/* bin 0: 0 bytes; bin b >= 1: [2^(b-1), 2^b) bytes: the highest bit of 2 * bytes + 1
 * (no branch), the last bin open. */
CS_HOT int cs_bin(long long bytes)
{
    int b = 63 - __builtin_clzll(2 * (unsigned long long)bytes + 1);
    return b < CS_NBINS ? b : CS_NBINS - 1;
}

/* One message (or collective call) of `func` in its size bin; returns the bin's tick
 * word (0 when bins are off or func has none) for the time of the call (CS_BIN_TIME). */
CS_HOT uint64_t *cs_count_bin(int sets, uint64_t *s, int func, long long bytes)
{
    if (!(sets & CS_SET_BINS) || cs_function_bin[func] < 0) return 0;
    uint64_t *row = cs_bin_row(s, cs_function_bin[func]);
    int b = cs_bin(bytes);
    row[b]++;
    return row + CS_NBINS + b;
}

/* World rank of `rank` in a group (communicator, window), -1 when unknown. */
static inline int cs_world_in(const cs_group_t *g, int rank)
{
    return g && rank >= 0 && rank < g->size ? g->world_ranks[rank] : -1;
}

/* Bytes a status reports.  Open MPI and MPICH keep the byte count in the status
 * itself; reading it there saves MPI_Get_count's checks and division on every
 * receive.  Other MPIs go through PMPI_Get_count. */
CS_HOT long long cs_status_bytes(const MPI_Status *st)
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

/* The message and byte counters of one message sent or received (sign -1: a
 * cancelled send taken back). */
CS_HOT void cs_count_bytes(uint64_t *s, int func, long long bytes, int received, int sign)
{
    s[received ? CS_C_messages_received : CS_C_messages_sent] += (uint64_t)(long long)sign;
    s[received ? CS_C_bytes_received : CS_C_bytes_sent] += (uint64_t)(sign * bytes);
    s[CS_FN(func, CS_FN_BYTES)] += (uint64_t)(sign * bytes);
}

/* The same message in the peer matrix: the peer's entry by (communicator, rank). */
CS_HOT void cs_count_peer(uint64_t *s, MPI_Comm comm, int peer, long long bytes, int received, int sign)
{
    uint64_t *p = cs_peer_of(s, comm, peer);
    if (p) {
        p[received ? CS_P_messages_received : CS_P_messages_sent] += (uint64_t)(long long)sign;
        p[received ? CS_P_bytes_received : CS_P_bytes_sent] += (uint64_t)(sign * bytes);
    }
}

/* One message this rank sent or received: counts, size bin and the peer matrix;
 * returns the size bin's tick word (cs_count_bin).  `received` is a constant at every
 * call site, so the choices fold away; `sign` -1 takes back a send that was cancelled. */
CS_HOT uint64_t *cs_count_message(int sets, uint64_t *s, int func, long long bytes, int peer,
                                  MPI_Comm comm, int received, int sign)
{
    uint64_t *bt = 0;
    if (sets & CS_SET_BYTES) cs_count_bytes(s, func, bytes, received, sign);
    if (sign > 0) bt = cs_count_bin(sets, s, func, bytes);
    if (sets & CS_SET_PEERS) cs_count_peer(s, comm, peer, bytes, received, sign);
    return bt;
}

CS_HOT uint64_t *cs_count_sent(int sets, uint64_t *s, int func, long long bytes, int dest, MPI_Comm comm)
{
    return cs_count_message(sets, s, func, bytes, dest, comm, 0, 1);
}

/* A message this rank received; source and size from the status.  `peer`: the
 * source's peer entry when the receive named its source (cs_recv_peer), else 0. */
CS_HOT uint64_t *cs_count_received_at(int sets, uint64_t *s, int func, MPI_Comm comm, const MPI_Status *st,
                                      uint64_t *peer)
{
    int source = st->MPI_SOURCE;
    if (source == MPI_PROC_NULL) return 0;
    long long bytes = cs_status_bytes(st);
    if (!peer) return cs_count_message(sets, s, func, bytes, source, comm, 1, 1);
    uint64_t *bt = 0;
    if (sets & CS_SET_BYTES) cs_count_bytes(s, func, bytes, 1, 1);
    bt = cs_count_bin(sets, s, func, bytes);
    peer[CS_P_messages_received]++;
    peer[CS_P_bytes_received] += (uint64_t)bytes;
    return bt;
}

CS_HOT uint64_t *cs_count_received(int sets, uint64_t *s, int func, MPI_Comm comm, const MPI_Status *st)
{
    return cs_count_received_at(sets, s, func, comm, st, 0);
}

/* The peer entry of a receive's named source, found before the receive is posted
 * (so the work after it, on the critical path of a ping-pong, is shorter): 0 for
 * MPI_ANY_SOURCE and MPI_PROC_NULL, or without the peers set. */
CS_HOT uint64_t *cs_recv_peer(int sets, uint64_t *s, int source, MPI_Comm comm)
{
    return (sets & CS_SET_PEERS) && source >= 0 ? cs_peer_of(s, comm, source) : 0;
}

CS_HOT void cs_count_wildcards(int sets, uint64_t *s, int source, int tag)
{
    if (__builtin_expect(source == MPI_ANY_SOURCE || tag == MPI_ANY_TAG, 0) && (sets & CS_SET_BYTES)) {
        s[CS_C_any_source_receives] += source == MPI_ANY_SOURCE;
        s[CS_C_any_tag_receives] += tag == MPI_ANY_TAG;
    }
}

/* Rank-wide current value and high watermark: atomic when threads may call MPI at
 * once (a request may be completed by another thread than the one that started it);
 * else plain (the program serialises its MPI calls), written whole for the readers. */
static inline void cs_sentinel_add(int sentinel, int watermark, long delta)
{
    if (__builtin_expect(!cs_thread_multiple, 1)) {
        uint64_t now = __atomic_load_n(&cs_rank_words[sentinel], __ATOMIC_RELAXED) + (uint64_t)delta;
        __atomic_store_n(&cs_rank_words[sentinel], now, __ATOMIC_RELAXED);
        if (delta > 0 && now > __atomic_load_n(&cs_rank_words[watermark], __ATOMIC_RELAXED))
            __atomic_store_n(&cs_rank_words[watermark], now, __ATOMIC_RELAXED);
        return;
    }
    uint64_t now = __atomic_add_fetch(&cs_rank_words[sentinel], (uint64_t)delta, __ATOMIC_RELAXED);
    if (delta > 0) {
        uint64_t hwm = __atomic_load_n(&cs_rank_words[watermark], __ATOMIC_RELAXED);
        while (now > hwm && !__atomic_compare_exchange_n(&cs_rank_words[watermark], &hwm, now, 1,
                                                         __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            ;
    }
}

static inline int cs_tracking(int sets)
{
    return sets & (CS_SET_BYTES | CS_SET_PEERS | CS_SET_BINS | CS_SET_REQUESTS | CS_SET_TRACE);
}
static inline int cs_tracking_requests(void) { return cs_tracking(cs_sets); }

static inline int cs_posts_receive(int kind) { return kind == CS_REQ_RECV || kind == CS_REQ_SENDRECV; }

/* The request ledger: a request counted as started is later counted exactly once
 * as completed, cancelled or freed; outstanding is the difference. */
static inline void cs_ledger_started(int sets, uint64_t *s, int kind)
{
    if (!(sets & CS_SET_REQUESTS)) return;
    s[CS_C_requests_started]++;
    cs_sentinel_add(CS_C_outstanding_requests, CS_C_outstanding_requests_hwm, 1);
    if (cs_posts_receive(kind)) cs_sentinel_add(CS_C_posted_receives, CS_C_posted_receives_hwm, 1);
}

static inline void cs_ledger_ended(int sets, uint64_t *s, int kind, int counter)
{
    if (!(sets & CS_SET_REQUESTS)) return;
    s[counter]++;
    cs_sentinel_add(CS_C_outstanding_requests, CS_C_outstanding_requests_hwm, -1);
    if (cs_posts_receive(kind)) cs_sentinel_add(CS_C_posted_receives, CS_C_posted_receives_hwm, -1);
}

/* Remember a request and, unless persistent (started by MPI_Start), count it as started. */
static inline uint64_t cs_track(int sets, uint64_t *s, MPI_Request req, int kind, int func, long long bytes,
                                int peer, int tag, MPI_Comm comm, int persistent)
{
    if (!cs_tracking(sets) || req == MPI_REQUEST_NULL) return 0;
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
    e.traced = (sets & CS_SET_TRACE) && (kind == CS_REQ_SEND || cs_posts_receive(kind));
    e.site = (sets & CS_SET_CALLSITES) ? cs_tl_cur_site : 0;
    if (cs_req_put(req, &e) != 0) {
        s[CS_C_requests_untracked]++;
        return 0;
    }
    if (!persistent) cs_ledger_started(sets, s, kind);
    return e.id;
}

/* ---- hooks named in mpi_functions.py ---------------------------------- */

/* The hooks that count a message or collective of the call's own function return
 * its size bin's tick word (CS_BIN_TIME), or 0. */
CS_HOT uint64_t *cs_on_send(int sets, int func, long long count, MPI_Datatype type, int dest, int tag,
                            MPI_Comm comm, uint64_t t0)
{
    if (dest == MPI_PROC_NULL) return 0;
    uint64_t *s = cs_slab();
    long long bytes = cs_bytes(count, type);
    uint64_t *bt = cs_count_sent(sets, s, func, bytes, dest, comm);
    if (sets & CS_SET_TRACE) cs_trace(CS_EV_SEND, func, t0, 0, bytes, dest, tag, cs_comm_id(comm), 0);
    return bt;
}

CS_HOT uint64_t *cs_on_isend(int sets, int func, long long count, MPI_Datatype type, int dest, int tag,
                             MPI_Comm comm, MPI_Request req, uint64_t t0)
{
    if (dest == MPI_PROC_NULL) return 0;
    uint64_t *s = cs_slab();
    long long bytes = cs_bytes(count, type);
    uint64_t *bt = cs_count_sent(sets, s, func, bytes, dest, comm);
    uint64_t id = cs_track(sets, s, req, CS_REQ_SEND, func, bytes, dest, tag, comm, 0);
    if (sets & CS_SET_TRACE) cs_trace(CS_EV_ISEND, func, t0, id, bytes, dest, tag, cs_comm_id(comm), 0);
    return bt;
}

/* `peer`: cs_recv_peer's, before the receive was posted (0: find it from the status). */
CS_HOT uint64_t *cs_on_recv(int sets, int func, int source, int tag, MPI_Comm comm, MPI_Status *st,
                            uint64_t t0, uint64_t *peer)
{
    if (source == MPI_PROC_NULL) return 0;
    uint64_t *s = cs_slab();
    cs_count_wildcards(sets, s, source, tag);
    uint64_t *bt = cs_count_received_at(sets, s, func, comm, st, peer);
    if (sets & CS_SET_TRACE)
        cs_trace(CS_EV_RECV, func, t0, 0, cs_status_bytes(st), st->MPI_SOURCE, st->MPI_TAG, cs_comm_id(comm), 1);
    return bt;
}

CS_HOT void cs_on_irecv(int sets, int func, long long count, MPI_Datatype type, int source, int tag,
                        MPI_Comm comm, MPI_Request req, uint64_t t0)
{
    if (source == MPI_PROC_NULL) return;
    uint64_t *s = cs_slab();
    long long bytes = cs_bytes(count, type);
    cs_count_wildcards(sets, s, source, tag);
    uint64_t id = cs_track(sets, s, req, CS_REQ_RECV, func, bytes, source, tag, comm, 0);
    if (sets & CS_SET_TRACE) cs_trace(CS_EV_IRECV, func, t0, id, bytes, source, tag, cs_comm_id(comm), 0);
}

/* MPI_Isendrecv: the send is counted now, the receive when the request completes. */
static inline uint64_t *cs_on_isendrecv(int sets, int func, long long sendcount, MPI_Datatype sendtype, int dest,
                                        int sendtag, long long recvcount, MPI_Datatype recvtype, int source,
                                        int recvtag, MPI_Comm comm, MPI_Request req, uint64_t t0)
{
    uint64_t *bt = cs_on_send(sets, func, sendcount, sendtype, dest, sendtag, comm, t0);
    uint64_t *s = cs_slab();
    long long bytes = source == MPI_PROC_NULL ? 0 : cs_bytes(recvcount, recvtype);
    if (source != MPI_PROC_NULL) cs_count_wildcards(sets, s, source, recvtag);
    uint64_t id = cs_track(sets, s, req, source == MPI_PROC_NULL ? CS_REQ_SEND : CS_REQ_SENDRECV, func,
                           bytes, source, recvtag, comm, 0);
    if ((sets & CS_SET_TRACE) && source != MPI_PROC_NULL)
        cs_trace(CS_EV_IRECV, func, t0, id, bytes, source, recvtag, cs_comm_id(comm), 0);
    else if (sets & CS_SET_TRACE)
        cs_trace(CS_EV_ISEND, func, t0, id, 0, MPI_PROC_NULL, sendtag, cs_comm_id(comm), 0);
    return bt;
}

static inline void cs_on_persistent_init(int func, int kind, long long bytes, int peer, int tag,
                                         MPI_Comm comm, MPI_Request req)
{
    if (peer != MPI_PROC_NULL) cs_track(cs_sets, cs_slab(), req, kind, func, bytes, peer, tag, comm, 1);
}

void cs_on_start(int func, MPI_Request req, uint64_t t0);
void cs_on_cancel(MPI_Request req);

static inline void cs_on_probe(int func, int source, int tag, MPI_Comm comm, uint64_t t0)
{
    if (cs_sets & CS_SET_TRACE) cs_trace(CS_EV_PROBE, func, t0, 0, 0, source, tag, cs_comm_id(comm), 0);
}

/* A matched probe takes the message off the queue: that is where it is received
 * (MPI_Mrecv/MPI_Imrecv only copy it out). */
static inline uint64_t *cs_on_mprobe(int func, int source, int tag, MPI_Comm comm, MPI_Status *st,
                                     uint64_t t0)
{
    if (source == MPI_PROC_NULL || st->MPI_SOURCE == MPI_PROC_NULL) return 0;
    uint64_t *s = cs_slab();
    cs_count_wildcards(cs_sets, s, source, tag);
    uint64_t *bt = cs_count_received(cs_sets, s, func, comm, st);
    if (cs_sets & CS_SET_TRACE)
        cs_trace(CS_EV_RECV, func, t0, 0, cs_status_bytes(st), st->MPI_SOURCE, st->MPI_TAG, cs_comm_id(comm), 1);
    return bt;
}

static inline void cs_on_request_started(MPI_Request req, int kind)
{
    cs_track(cs_sets, cs_slab(), req, kind, -1, 0, -1, -1, MPI_COMM_NULL, 0);
}

static inline uint64_t *cs_on_coll(int func, long long bytes, MPI_Comm comm)
{
    uint64_t *s = cs_slab(), *bt = 0;
    if (cs_sets & CS_SET_BYTES) {
        s[CS_C_collective_bytes] += bytes;
        s[CS_FN(func, CS_FN_BYTES)] += bytes;
    }
    if (cs_sets & CS_SET_BINS) {
        bt = cs_count_bin(cs_sets, s, func, bytes);
        const cs_group_t *c = comm == MPI_COMM_WORLD ? 0 : cs_comm_lookup(comm);
        int size = c ? c->size : cs_world_size;
        int bin = (bytes > cs_coll_small_bytes) * 2 + (size > cs_coll_small_comm);
        s[CS_OFF_COLL + cs_function_coll[func] * CS_NCOLLBINS + bin]++;
    }
    return bt;
}

static inline uint64_t *cs_on_neighbor_coll(int func, long long sent, long long received)
{
    uint64_t *s = cs_slab();
    if (cs_sets & CS_SET_BYTES) {
        s[CS_C_neighbor_bytes_sent] += sent;
        s[CS_C_neighbor_bytes_received] += received;
        s[CS_FN(func, CS_FN_BYTES)] += sent;
    }
    return cs_count_bin(cs_sets, s, func, sent);
}

/* Collectives in the event trace.  The byte expressions (mpi_functions.py COLL_TRACE)
 * are evaluated only when the trace is on. */
#define CS_TRACE_COLL(F, root, sent, received, comm, t0) \
    if (cs_sets & CS_SET_TRACE) \
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
    cs_ledger_started(cs_sets, s, CS_REQ_COLL);
    cs_trace_coll(CS_EV_ICOLL, func, func, t0, e.id, sent, received, e.peer, cs_comm_id(comm));
}
#define CS_ICOLL(F, req, root, sent, received, comm, t0) \
    if (cs_sets & CS_SET_TRACE) \
        cs_on_icoll(F, req, root, (sent), (received), comm, t0); \
    else \
        cs_on_request_started(req, CS_REQ_COLL)

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
    e.bytes2 = neighbor ? received : traced ? trecv
                                            : 0;
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
#define CS_PCOLL_INIT(F, bytes, received, root, tsent, trecv, comm, req) \
    if (cs_sets & CS_SET_TRACE) \
        cs_on_persistent_coll_init(F, bytes, received, comm, req, 1, root, (tsent), (trecv)); \
    else \
        cs_on_persistent_coll_init(F, bytes, received, comm, req, 0, -1, 0, 0)

static inline void cs_on_comm_created(int func, MPI_Comm parent, MPI_Comm newcomm)
{
    if (newcomm != MPI_COMM_NULL) cs_comm_register(newcomm, cs_function_names[func], parent);
}

static inline void cs_on_comm_free(MPI_Comm comm) { cs_comm_forget(comm); }

static inline void cs_on_type_free(void) { cs_epoch_bump(); /* type-size caches empty */ }

/* ---- one-sided ---------------------------------------------------------------- */

static inline void cs_on_win_created(MPI_Win win, MPI_Comm comm)
{
    (void)comm;
    cs_win_register(win);
}

static inline void cs_on_win_free(MPI_Win win) { cs_win_forget(win); }

enum { CS_RMA_PUT,
       CS_RMA_GET,
       CS_RMA_ACC };

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

static inline uint64_t *cs_on_rma(int func, MPI_Win win, int target, int kind, long long bytes)
{
    if (target == MPI_PROC_NULL) return 0;
    uint64_t *s = cs_slab();
    const cs_group_t *g = (cs_sets & CS_SET_PEERS) ? cs_win_lookup(win) : 0;
    cs_count_rma(s, g, target, kind, bytes);
    if (cs_sets & CS_SET_BYTES) s[CS_FN(func, CS_FN_BYTES)] += bytes;
    return cs_count_bin(cs_sets, s, func, bytes);
}

/* Get_accumulate, Fetch_and_op, Compare_and_swap: origin data combined into the
 * target (none with MPI_NO_OP), the old target data fetched back. */
static inline uint64_t *cs_on_get_accumulate(int func, MPI_Win win, int target, MPI_Op op,
                                             long long origin_bytes, long long result_bytes)
{
    if (target == MPI_PROC_NULL) return 0;
    uint64_t *s = cs_slab();
    const cs_group_t *g = (cs_sets & CS_SET_PEERS) ? cs_win_lookup(win) : 0;
    long long acc = op == MPI_NO_OP ? 0 : origin_bytes;
    cs_count_rma(s, g, target, CS_RMA_ACC, acc);
    cs_count_rma(s, g, target, CS_RMA_GET, result_bytes);
    if (cs_sets & CS_SET_BYTES) s[CS_FN(func, CS_FN_BYTES)] += acc + result_bytes;
    return cs_count_bin(cs_sets, s, func, acc + result_bytes);
}

/* ---- MPI-IO -------------------------------------------------------------------- */

enum { CS_IO_READ,
       CS_IO_WRITE };

static inline void cs_on_file_open(const char *path, MPI_File fh) { cs_file_register(fh, path); }
static inline void cs_on_file_close(MPI_File fh) { cs_file_forget(fh); }

/* Bytes read or written through file id `file` (-1: unknown). */
static inline void cs_count_io(uint64_t *s, int func, int file, int dir, long long bytes)
{
    if (!(cs_sets & CS_SET_BYTES)) return;
    s[dir == CS_IO_READ ? CS_C_io_bytes_read : CS_C_io_bytes_written] += bytes;
    if (func >= 0) s[CS_FN(func, CS_FN_BYTES)] += bytes;
    if (file >= 0) {
        uint64_t *row = cs_file_words + (size_t)(file < CS_MAX_FILES ? file : CS_MAX_FILES - 1) * CS_NFILE_COUNTERS;
        __atomic_add_fetch(&row[dir == CS_IO_READ ? CS_FILE_reads : CS_FILE_writes], 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&row[dir == CS_IO_READ ? CS_FILE_bytes_read : CS_FILE_bytes_written],
                           (uint64_t)bytes, __ATOMIC_RELAXED);
    }
}

static inline uint64_t *cs_on_io(int func, MPI_File fh, int dir, long long bytes)
{
    uint64_t *s = cs_slab();
    cs_count_io(s, func, cs_file_id(fh), dir, bytes);
    return cs_count_bin(cs_sets, s, func, bytes);
}

/* A nonblocking read: its size is known when it completes (from the status). */
static inline void cs_on_io_iread(int func, MPI_File fh, MPI_Request req)
{
    cs_track(cs_sets, cs_slab(), req, CS_REQ_FILE_READ, func, 0, cs_file_id(fh), 0, MPI_COMM_NULL, 0);
}

#pragma GCC visibility pop

#endif
