/* The Wait/Test families and MPI_Request_free: where nonblocking requests end.
 *
 * Each wrapper copies the table entries of the requests it was given before the
 * PMPI call, while their handles are still live (afterwards MPI may already have
 * given a handle to another thread's new request), and attributes the completions
 * afterwards.  A program that ignores the statuses gets them filled anyway: a
 * receive's source and size live there.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cs_prof_hooks.h"

#define ON_STACK 32

void cs_complete(MPI_Request before, const cs_req_t *e, const MPI_Status *status, uint64_t t0)
{
    if (!e->active) return; /* an inactive persistent request */
    uint64_t *s = cs_slab();
    if (cs_sets & CS_SET_REQUESTS) {
        s[CS_C_requests_completed]++;
        cs_sentinel_add(CS_C_outstanding_requests, CS_C_outstanding_requests_hwm, -1);
        if (e->kind == CS_REQ_RECV) cs_sentinel_add(CS_C_posted_receives, CS_C_posted_receives_hwm, -1);
    }
    if (e->kind == CS_REQ_RECV && status) cs_count_received(s, e->func, e->comm, status);
    if (cs_sets & CS_SET_TRACE) {
        int recv = e->kind == CS_REQ_RECV && status;
        long long n = recv ? cs_status_bytes(status) : 0;
        cs_trace(CS_EV_COMPLETE, t0, e->id, recv ? n : e->bytes, recv ? status->MPI_SOURCE : e->peer,
                 recv ? status->MPI_TAG : e->tag, e->comm, recv);
    }
    cs_req_done(before, e->id, e->persistent);
}

/* The requests a call was given, their table entries, and a status array when the
 * caller passed MPI_STATUSES_IGNORE (want_statuses == 0: the call has one status). */
typedef struct {
    int n;
    MPI_Request *reqs;
    cs_req_t *entries;
    char *found;
    MPI_Status *st;
    MPI_Request s_reqs[ON_STACK];
    cs_req_t s_entries[ON_STACK];
    char s_found[ON_STACK];
    MPI_Status s_st[ON_STACK];
} saved_t;

static void release(saved_t *sv)
{
    if (sv->reqs != sv->s_reqs) free(sv->reqs);
    if (sv->entries != sv->s_entries) free(sv->entries);
    if (sv->found != sv->s_found) free(sv->found);
    if (sv->st != sv->s_st) free(sv->st);
}

/* Returns 0 when tracking is off or memory ran out (nothing is attributed then). */
static int save(saved_t *sv, int n, const MPI_Request *reqs, MPI_Status **statuses)
{
    memset(sv, 0, offsetof(saved_t, s_reqs));
    if (!cs_tracking_requests() || n <= 0) return 0;
    int small = n <= ON_STACK;
    sv->n = n;
    sv->reqs = small ? sv->s_reqs : malloc(sizeof(MPI_Request) * (size_t)n);
    sv->entries = small ? sv->s_entries : malloc(sizeof(cs_req_t) * (size_t)n);
    sv->found = small ? sv->s_found : malloc((size_t)n);
    if (statuses && *statuses == MPI_STATUSES_IGNORE)
        sv->st = small ? sv->s_st : malloc(sizeof(MPI_Status) * (size_t)n);
    if (!sv->reqs || !sv->entries || !sv->found || (statuses && *statuses == MPI_STATUSES_IGNORE && !sv->st)) {
        release(sv);
        return 0;
    }
    if (sv->st) *statuses = sv->st;
    memcpy(sv->reqs, reqs, sizeof(MPI_Request) * (size_t)n);
    for (int i = 0; i < n; i++)
        sv->found[i] = reqs[i] != MPI_REQUEST_NULL && cs_req_get(reqs[i], &sv->entries[i], -1);
    return 1;
}

static void complete_saved(saved_t *sv, int i, const MPI_Status *status, uint64_t t0)
{
    if (sv->found[i]) cs_complete(sv->reqs[i], &sv->entries[i], status, t0);
}

CS_EXPORT int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    CS_ENTER(CS_F_MPI_Wait);
    CS_STATUS(status);
    saved_t sv;
    int ok = save(&sv, 1, request, 0);
    int rc = PMPI_Wait(request, status);
    if (ok && rc == MPI_SUCCESS) complete_saved(&sv, 0, status, t0_);
    CS_LEAVE(CS_F_MPI_Wait);
    return rc;
}

CS_EXPORT int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    CS_ENTER(CS_F_MPI_Test);
    CS_STATUS(status);
    saved_t sv;
    int ok = save(&sv, 1, request, 0);
    int rc = PMPI_Test(request, flag, status);
    if (ok && rc == MPI_SUCCESS && *flag) complete_saved(&sv, 0, status, t0_);
    CS_LEAVE(CS_F_MPI_Test);
    return rc;
}

CS_EXPORT int MPI_Waitany(int count, MPI_Request array_of_requests[], int *index, MPI_Status *status)
{
    CS_ENTER(CS_F_MPI_Waitany);
    CS_STATUS(status);
    saved_t sv;
    int ok = save(&sv, count, array_of_requests, 0);
    int rc = PMPI_Waitany(count, array_of_requests, index, status);
    if (ok && rc == MPI_SUCCESS && *index != MPI_UNDEFINED) complete_saved(&sv, *index, status, t0_);
    if (ok) release(&sv);
    CS_LEAVE(CS_F_MPI_Waitany);
    return rc;
}

CS_EXPORT int MPI_Testany(int count, MPI_Request array_of_requests[], int *index, int *flag, MPI_Status *status)
{
    CS_ENTER(CS_F_MPI_Testany);
    CS_STATUS(status);
    saved_t sv;
    int ok = save(&sv, count, array_of_requests, 0);
    int rc = PMPI_Testany(count, array_of_requests, index, flag, status);
    if (ok && rc == MPI_SUCCESS && *flag && *index != MPI_UNDEFINED)
        complete_saved(&sv, *index, status, t0_);
    if (ok) release(&sv);
    CS_LEAVE(CS_F_MPI_Testany);
    return rc;
}

CS_EXPORT int MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[])
{
    CS_ENTER(CS_F_MPI_Waitall);
    saved_t sv;
    int ok = save(&sv, count, array_of_requests, &array_of_statuses);
    int rc = PMPI_Waitall(count, array_of_requests, array_of_statuses);
    /* MPI_ERR_IN_STATUS: some completed; each status's MPI_ERROR says which */
    if (ok && (rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS))
        for (int i = 0; i < count; i++)
            if (rc == MPI_SUCCESS || array_of_statuses[i].MPI_ERROR == MPI_SUCCESS)
                complete_saved(&sv, i, &array_of_statuses[i], t0_);
    if (ok) release(&sv);
    CS_LEAVE(CS_F_MPI_Waitall);
    return rc;
}

CS_EXPORT int MPI_Testall(int count, MPI_Request array_of_requests[], int *flag, MPI_Status array_of_statuses[])
{
    CS_ENTER(CS_F_MPI_Testall);
    saved_t sv;
    int ok = save(&sv, count, array_of_requests, &array_of_statuses);
    int rc = PMPI_Testall(count, array_of_requests, flag, array_of_statuses);
    if (ok && rc == MPI_SUCCESS && *flag)
        for (int i = 0; i < count; i++) complete_saved(&sv, i, &array_of_statuses[i], t0_);
    if (ok) release(&sv);
    CS_LEAVE(CS_F_MPI_Testall);
    return rc;
}

static int some(int which, int incount, MPI_Request reqs[], int *outcount, int indices[],
                MPI_Status statuses[], uint64_t t0)
{
    saved_t sv;
    int ok = save(&sv, incount, reqs, &statuses);
    int rc = which == CS_F_MPI_Waitsome ? PMPI_Waitsome(incount, reqs, outcount, indices, statuses)
                                        : PMPI_Testsome(incount, reqs, outcount, indices, statuses);
    if (ok && rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED)
        for (int i = 0; i < *outcount; i++) complete_saved(&sv, indices[i], &statuses[i], t0);
    if (ok) release(&sv);
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
    if (cs_tracking_requests() && *request != MPI_REQUEST_NULL && cs_req_get(*request, &e, -1)) {
        /* An active request freed before completion is no longer outstanding for us. */
        if (e.active && (cs_sets & CS_SET_REQUESTS)) {
            cs_sentinel_add(CS_C_outstanding_requests, CS_C_outstanding_requests_hwm, -1);
            if (e.kind == CS_REQ_RECV) cs_sentinel_add(CS_C_posted_receives, CS_C_posted_receives_hwm, -1);
        }
        cs_req_done(*request, e.id, 0);
    }
    int rc = PMPI_Request_free(request);
    CS_LEAVE(CS_F_MPI_Request_free);
    return rc;
}
