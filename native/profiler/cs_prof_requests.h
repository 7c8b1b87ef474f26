/* The request life cycle (cs_prof_requests.c), shared with the Fortran entry points
 * of the Wait/Test families (cs_prof_fortran.c). */
#ifndef CS_PROF_REQUESTS_H
#define CS_PROF_REQUESTS_H

#include "cs_prof_hooks.h"

/* Declarations of the library's own symbols: hidden, so globals are reached
 * directly, not through the GOT (only the MPI wrappers are exported, CS_EXPORT). */
#pragma GCC visibility push(hidden)

#define CS_ON_STACK 32

/* The requests a Wait/Test call was given and their table entries, taken out of
 * the table before the PMPI call while the handles are still live. */
typedef struct {
    int n;
    int func; /* the Wait/Test function (its completions' trace records say so) */
    MPI_Request *reqs;
    cs_req_t *entries;
    char *found; /* 1: taken; 2: completed */
    MPI_Request s_reqs[CS_ON_STACK];
    cs_req_t s_entries[CS_ON_STACK];
    char s_found[CS_ON_STACK];
} cs_saved_t;

/* Take the entries of reqs[0..n); 0 when tracking is off or memory ran out (nothing
 * is attributed then). */
int cs_save(cs_saved_t *sv, int func, int n, const MPI_Request *reqs);
/* Put back the entries of the requests that did not complete, free the arrays. */
void cs_release(cs_saved_t *sv);
/* Request i of the saved ones completed with `status` (never MPI_STATUS_IGNORE). */
void cs_complete_saved(cs_saved_t *sv, int i, MPI_Status *status, uint64_t t0);
/* Request i of the saved ones ended without a status to count from: the call
 * failed and MPI ended it anyway (a truncated receive under MPI_ERRORS_RETURN
 * sets the handle to MPI_REQUEST_NULL).  Counted completed, not as a message;
 * its entry is dropped, so a later request with the same handle is not taken
 * for it. */
void cs_ended_saved(cs_saved_t *sv, int i);
/* cs_ended_saved for every saved request whose handle is now MPI_REQUEST_NULL. */
void cs_settle(cs_saved_t *sv, const MPI_Request *now);
/* MPI_Request_free of a request whose entry was copied into *e. */
void cs_freed(MPI_Request req, const cs_req_t *e);

#pragma GCC visibility pop

#endif
