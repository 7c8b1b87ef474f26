/* The request life cycle: MPI_Start, the Wait/Test families, MPI_Cancel and
 * MPI_Request_free.
 *
 * The ledger (counters.def) holds on every rank: started = completed + cancelled +
 * freed + outstanding.  A request is counted as started when a nonblocking call
 * returns it or MPI_Start activates it, and exactly once as ended: completed (seen
 * by a Wait/Test call), cancelled (MPI_Cancel, then the status says so) or freed
 * (MPI_Request_free while active).
 *
 * Each completion wrapper takes the table entries of the requests it was given out
 * of the table before the PMPI call, while their handles are still live (afterwards
 * MPI may already have given a handle to another thread's new request), attributes
 * the completions afterwards and puts back the entries of requests that did not
 * complete (and of persistent ones, inactive).  A program that ignores the statuses gets them
 * filled anyway: a receive's source and size, and whether it was cancelled, live
 * there.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cs_prof_requests.h"

void cs_on_start(int func, MPI_Request req, uint64_t t0)
{
    cs_req_t e;
    if (!cs_tracking_requests() || !cs_req_get(req, &e, 1)) return;
    uint64_t *s = cs_slab();
    cs_ledger_started(cs_sets, s, e.kind);
    uint64_t b0 = e.func >= 0 ? s[CS_FN(e.func, CS_FN_BYTES)] : 0;
    if (e.kind == CS_REQ_SEND)
        cs_count_sent(cs_sets, s, e.func, e.bytes, e.peer, e.comm);
    else if (e.kind == CS_REQ_COLL)
        cs_on_coll(e.func, e.bytes, e.comm);
    else if (e.kind == CS_REQ_NCOLL)
        cs_on_neighbor_coll(e.func, e.bytes, e.bytes2);
    if (e.func >= 0) cs_site_credit(e.site, s[CS_FN(e.func, CS_FN_BYTES)] - b0); /* MPI_Send_init's site */
    if (e.traced && (e.kind == CS_REQ_COLL || e.kind == CS_REQ_NCOLL))
        cs_trace_coll(CS_EV_ICOLL, func, e.func, t0, e.id, e.coll_sent, e.bytes2, e.peer, cs_comm_id(e.comm));
    else if (e.traced)
        cs_trace(e.kind == CS_REQ_SEND ? CS_EV_ISEND : CS_EV_IRECV, func, t0, e.id, e.bytes, e.peer,
                 e.tag, cs_comm_id(e.comm), 0);
}

void cs_on_cancel(MPI_Request req)
{
    if (cs_tracking_requests() && req != MPI_REQUEST_NULL) cs_req_mark_cancelled(req);
}

static int was_cancelled(const cs_req_t *e, const MPI_Status *status)
{
    int flag = 0;
    return e->cancelled && PMPI_Test_cancelled(status, &flag) == MPI_SUCCESS && flag;
}

/* MPICH (5.0 wheel, Debian's 4.0) completes an MPI_Isendrecv request with a status
 * that is not its receive's (the same source, tag and size whatever was received).
 * There the receive is counted as posted: its source (MPI_ANY_SOURCE: counted, but
 * in no peer's row) and its posted size (the size of a receive that fills its buffer). */
static int sendrecv_status_usable(const cs_req_t *e, const MPI_Status *status, MPI_Status *own)
{
#if defined(MPICH)
    if (e->kind == CS_REQ_SENDRECV) {
        *own = *status;
        own->MPI_SOURCE = e->peer;
        own->MPI_TAG = e->tag;
        PMPI_Status_set_elements_x(own, MPI_BYTE, e->bytes);
        return 0;
    }
#endif
    (void)e, (void)status, (void)own;
    return 1;
}

/* `e` was taken out of the table; a persistent request's entry goes back, inactive. */
static void complete(int func, MPI_Request before, cs_req_t *e, MPI_Status *status, uint64_t t0)
{
    if (e->persistent) {
        int was_active = e->active;
        e->active = 0;
        e->cancelled = 0;
        cs_req_restore(before, e);
        if (!was_active) return; /* an inactive persistent request completes at once */
        e->active = 1;
    }
    uint64_t *s = cs_slab();
    int cancelled = was_cancelled(e, status);
    MPI_Status own;
    if (!sendrecv_status_usable(e, status, &own)) status = &own;
    cs_ledger_ended(cs_sets, s, e->kind, cancelled ? CS_C_requests_cancelled : CS_C_requests_completed);
    uint64_t b0 = e->func >= 0 ? s[CS_FN(e->func, CS_FN_BYTES)] : 0;
    if (cancelled) {
        if (e->kind == CS_REQ_SEND) /* counted when it started: take it back */
            cs_count_message(cs_sets, s, e->func, e->bytes, e->peer, e->comm, 0, -1);
    } else if (cs_posts_receive(e->kind)) {
        cs_count_received(cs_sets, s, e->func, e->comm, status);
    } else if (e->kind == CS_REQ_FILE_READ) {
        long long n = cs_status_bytes(status);
        cs_count_io(s, e->func, e->peer, CS_IO_READ, n);
        cs_count_bin(cs_sets, s, e->func, n);
    }
    /* the bytes go to the call that carries the buffer (MPI_Irecv, not this Wait) */
    if (e->func >= 0) cs_site_credit(e->site, s[CS_FN(e->func, CS_FN_BYTES)] - b0);
    if (e->traced && (e->kind == CS_REQ_COLL || e->kind == CS_REQ_NCOLL)) {
        cs_trace_coll(CS_EV_COLL_DONE, func, e->func, t0, e->id, e->coll_sent, e->bytes2, e->peer,
                      cs_comm_id(e->comm));
    } else if (e->traced) {
        int recv = cs_posts_receive(e->kind) && !cancelled;
        cs_trace(CS_EV_COMPLETE, func, t0, e->id, recv ? cs_status_bytes(status) : e->bytes,
                 recv ? status->MPI_SOURCE : e->peer, recv ? status->MPI_TAG : e->tag,
                 cs_comm_id(e->comm), recv);
    }
}

void cs_freed(MPI_Request req, const cs_req_t *e)
{
    /* An active request freed before completion is no longer outstanding for us. */
    if (e->active) cs_ledger_ended(cs_sets, cs_slab(), e->kind, CS_C_requests_freed);
    cs_req_done(req, e->id, 0);
}

void cs_release(cs_saved_t *sv)
{
    for (int i = 0; i < sv->n; i++)
        if (sv->found[i] == 1) cs_req_restore(sv->reqs[i], &sv->entries[i]);
    if (sv->reqs != sv->s_reqs) free(sv->reqs);
    if (sv->entries != sv->s_entries) free(sv->entries);
    if (sv->found != sv->s_found) free(sv->found);
}

int cs_save(cs_saved_t *sv, int func, int n, const MPI_Request *reqs)
{
    memset(sv, 0, offsetof(cs_saved_t, s_reqs));
    sv->func = func;
    if (!cs_tracking_requests() || n <= 0) return 0;
    int small = n <= CS_ON_STACK;
    sv->n = n;
    sv->reqs = small ? sv->s_reqs : malloc(sizeof(MPI_Request) * (size_t)n);
    sv->entries = small ? sv->s_entries : malloc(sizeof(cs_req_t) * (size_t)n);
    sv->found = small ? sv->s_found : malloc((size_t)n);
    if (!sv->reqs || !sv->entries || !sv->found) {
        sv->n = 0; /* nothing taken: nothing to put back */
        cs_release(sv);
        return 0;
    }
    memcpy(sv->reqs, reqs, sizeof(MPI_Request) * (size_t)n);
    /* a shared handle appearing k times here gives up k entries, one each */
    for (int i = 0; i < n; i++)
        sv->found[i] = reqs[i] != MPI_REQUEST_NULL && cs_req_take(reqs[i], &sv->entries[i]) > 0;
    return 1;
}

void cs_complete_saved(cs_saved_t *sv, int i, MPI_Status *status, uint64_t t0)
{
    if (i < 0 || i >= sv->n || sv->found[i] != 1) return;
    sv->found[i] = 2;
    complete(sv->func, sv->reqs[i], &sv->entries[i], status, t0);
}

void cs_ended_saved(cs_saved_t *sv, int i)
{
    if (i < 0 || i >= sv->n || sv->found[i] != 1 || sv->entries[i].persistent) return;
    sv->found[i] = 2;
    cs_ledger_ended(cs_sets, cs_slab(), sv->entries[i].kind, CS_C_requests_completed);
}

void cs_settle(cs_saved_t *sv, const MPI_Request *now)
{
    for (int i = 0; i < sv->n; i++)
        if (sv->found[i] == 1 && now[i] == MPI_REQUEST_NULL) cs_ended_saved(sv, i);
}

/* A status array for calls given MPI_STATUSES_IGNORE (the statuses say what was
 * received and whether it was cancelled). */
typedef struct {
    MPI_Status *st;
    MPI_Status s_st[CS_ON_STACK];
} statuses_t;

static MPI_Status *statuses(statuses_t *own, int n, MPI_Status *given)
{
    own->st = 0;
    if (given != MPI_STATUSES_IGNORE || n <= 0) return given;
    own->st = n <= CS_ON_STACK ? own->s_st : malloc(sizeof(MPI_Status) * (size_t)n);
    return own->st ? own->st : given;
}

static void statuses_release(statuses_t *own)
{
    if (own->st && own->st != own->s_st) free(own->st);
}

CS_EXPORT int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    CS_ENTER(CS_F_MPI_Wait);
    CS_STATUS(status);
    cs_saved_t sv;
    int ok = cs_save(&sv, CS_F_MPI_Wait, 1, request);
    int rc = PMPI_Wait(request, status);
    if (ok && rc == MPI_SUCCESS) cs_complete_saved(&sv, 0, status, t0_);
    if (ok) cs_settle(&sv, request), cs_release(&sv);
    CS_LEAVE(CS_F_MPI_Wait);
    return rc;
}

CS_EXPORT int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    CS_ENTER(CS_F_MPI_Test);
    CS_STATUS(status);
    cs_saved_t sv;
    int ok = cs_save(&sv, CS_F_MPI_Test, 1, request);
    int rc = PMPI_Test(request, flag, status);
    if (ok && rc == MPI_SUCCESS && *flag) cs_complete_saved(&sv, 0, status, t0_);
    if (ok) cs_settle(&sv, request), cs_release(&sv);
    CS_LEAVE(CS_F_MPI_Test);
    return rc;
}

CS_EXPORT int MPI_Waitany(int count, MPI_Request array_of_requests[], int *index, MPI_Status *status)
{
    CS_ENTER(CS_F_MPI_Waitany);
    CS_STATUS(status);
    cs_saved_t sv;
    int ok = cs_save(&sv, CS_F_MPI_Waitany, count, array_of_requests);
    int rc = PMPI_Waitany(count, array_of_requests, index, status);
    if (ok && rc == MPI_SUCCESS && *index != MPI_UNDEFINED) cs_complete_saved(&sv, *index, status, t0_);
    if (ok) cs_settle(&sv, array_of_requests), cs_release(&sv);
    CS_LEAVE(CS_F_MPI_Waitany);
    return rc;
}

CS_EXPORT int MPI_Testany(int count, MPI_Request array_of_requests[], int *index, int *flag, MPI_Status *status)
{
    CS_ENTER(CS_F_MPI_Testany);
    CS_STATUS(status);
    cs_saved_t sv;
    int ok = cs_save(&sv, CS_F_MPI_Testany, count, array_of_requests);
    int rc = PMPI_Testany(count, array_of_requests, index, flag, status);
    if (ok && rc == MPI_SUCCESS && *flag && *index != MPI_UNDEFINED)
        cs_complete_saved(&sv, *index, status, t0_);
    if (ok) cs_settle(&sv, array_of_requests), cs_release(&sv);
    CS_LEAVE(CS_F_MPI_Testany);
    return rc;
}

CS_EXPORT int MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[])
{
    CS_ENTER(CS_F_MPI_Waitall);
    cs_saved_t sv;
    statuses_t own;
    int ok = cs_save(&sv, CS_F_MPI_Waitall, count, array_of_requests);
    MPI_Status *st = ok ? statuses(&own, count, array_of_statuses) : array_of_statuses;
    int rc = PMPI_Waitall(count, array_of_requests, st);
    /* MPI_ERR_IN_STATUS: each status's MPI_ERROR says which did not complete (pending) */
    if (ok && st != MPI_STATUSES_IGNORE && (rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS))
        for (int i = 0; i < count; i++)
            if (rc == MPI_SUCCESS || st[i].MPI_ERROR != MPI_ERR_PENDING) cs_complete_saved(&sv, i, &st[i], t0_);
    if (ok) cs_settle(&sv, array_of_requests), cs_release(&sv), statuses_release(&own);
    CS_LEAVE(CS_F_MPI_Waitall);
    return rc;
}

CS_EXPORT int MPI_Testall(int count, MPI_Request array_of_requests[], int *flag, MPI_Status array_of_statuses[])
{
    CS_ENTER(CS_F_MPI_Testall);
    cs_saved_t sv;
    statuses_t own;
    int ok = cs_save(&sv, CS_F_MPI_Testall, count, array_of_requests);
    MPI_Status *st = ok ? statuses(&own, count, array_of_statuses) : array_of_statuses;
    int rc = PMPI_Testall(count, array_of_requests, flag, st);
    if (ok && st != MPI_STATUSES_IGNORE && rc == MPI_SUCCESS && *flag)
        for (int i = 0; i < count; i++) cs_complete_saved(&sv, i, &st[i], t0_);
    if (ok) cs_settle(&sv, array_of_requests), cs_release(&sv), statuses_release(&own);
    CS_LEAVE(CS_F_MPI_Testall);
    return rc;
}

static int some(int which, int incount, MPI_Request reqs[], int *outcount, int indices[],
                MPI_Status statuses_given[], uint64_t t0)
{
    cs_saved_t sv;
    statuses_t own;
    int ok = cs_save(&sv, which, incount, reqs);
    MPI_Status *st = ok ? statuses(&own, incount, statuses_given) : statuses_given;
    int rc = which == CS_F_MPI_Waitsome ? PMPI_Waitsome(incount, reqs, outcount, indices, st)
                                        : PMPI_Testsome(incount, reqs, outcount, indices, st);
    if (ok && st != MPI_STATUSES_IGNORE && rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED)
        for (int i = 0; i < *outcount; i++) cs_complete_saved(&sv, indices[i], &st[i], t0);
    if (ok) cs_settle(&sv, reqs), cs_release(&sv), statuses_release(&own);
    return rc;
}

CS_EXPORT int MPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[],
                           MPI_Status array_of_statuses[])
{
    CS_ENTER(CS_F_MPI_Waitsome);
    int rc = some(CS_F_MPI_Waitsome, incount, array_of_requests, outcount, array_of_indices,
                  array_of_statuses, t0_);
    CS_LEAVE(CS_F_MPI_Waitsome);
    return rc;
}

CS_EXPORT int MPI_Testsome(int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[],
                           MPI_Status array_of_statuses[])
{
    CS_ENTER(CS_F_MPI_Testsome);
    int rc = some(CS_F_MPI_Testsome, incount, array_of_requests, outcount, array_of_indices,
                  array_of_statuses, t0_);
    CS_LEAVE(CS_F_MPI_Testsome);
    return rc;
}

CS_EXPORT int MPI_Request_free(MPI_Request *request)
{
    CS_ENTER(CS_F_MPI_Request_free);
    cs_req_t e;
    if (cs_tracking_requests() && *request != MPI_REQUEST_NULL && cs_req_get(*request, &e, -1))
        cs_freed(*request, &e);
    int rc = PMPI_Request_free(request);
    CS_LEAVE(CS_F_MPI_Request_free);
    return rc;
}
