/* Fortran entry points written by hand (see cs_prof_fortran.h): MPI_Init,
 * MPI_Init_thread, MPI_Finalize, MPI_Pcontrol, the Wait/Test families and
 * MPI_Request_free, plus the argument views the generated wrappers use.
 *
 * Each function is defined for the mpif.h / `use mpi` symbols (mpi_wait_ and its
 * other manglings, calling pmpi_wait_) when CS_FORTRAN_F77, and for `use mpi_f08`
 * (mpi_wait_f08_, calling pmpi_wait_f08_ or else the MPI's own mpi_wait_f08_) when
 * CS_FORTRAN_F08.
 */
#define _GNU_SOURCE
#include "cs_functions.h"

#if defined(CS_FORTRAN_F77) || defined(CS_FORTRAN_F08)
#include <dlfcn.h>
#include <stdio.h>

#include "cs_prof_fortran.h"
#include "cs_prof_init.h"

/* A Fortran status is the C status's words (Open MPI: MPI_STATUS_SIZE = 6). */
#define FSTATUS ((int)(sizeof(MPI_Status) / sizeof(MPI_Fint)))
_Static_assert(sizeof(MPI_Status) / sizeof(MPI_Fint) <= CS_FSTATUS_WORDS, "Fortran status size");

/* The MPIs' Fortran sentinels: Open MPI's common blocks (gfortran appends _), MPICH's
 * mpi_f08 objects. */
extern MPI_Fint mpi_fortran_status_ignore_ __attribute__((weak));
extern MPI_Fint mpi_fortran_statuses_ignore_ __attribute__((weak));
extern MPI_Fint mpi_fortran_in_place_ __attribute__((weak));
extern MPI_Fint MPIR_F08_MPI_IN_PLACE __attribute__((weak));
extern MPI_Fint MPIR_F_MPI_IN_PLACE __attribute__((weak));

static int is(const void *p, const MPI_Fint *sentinel) { return sentinel && p == (const void *)sentinel; }

#if defined(MPICH) /* MPI-3's C names of the mpi_f08 sentinels (Open MPI 4.1 has none) */
#define F08_IGNORED(p, what) ((const void *)(p) == (const void *)MPI_F08_##what##_IGNORE)
#else
#define F08_IGNORED(p, what) 0
#endif

int cs_fortran_status_ignored(const MPI_Fint *status)
{
    return status == MPI_F_STATUS_IGNORE || is(status, &mpi_fortran_status_ignore_) || F08_IGNORED(status, STATUS);
}

int cs_fortran_statuses_ignored(const MPI_Fint *statuses)
{
    return statuses == MPI_F_STATUSES_IGNORE || is(statuses, &mpi_fortran_statuses_ignore_) ||
           F08_IGNORED(statuses, STATUSES);
}

void *cs_fortran_buffer(void *buf)
{
    return is(buf, &mpi_fortran_in_place_) || is(buf, &MPIR_F08_MPI_IN_PLACE) || is(buf, &MPIR_F_MPI_IN_PLACE)
               ? MPI_IN_PLACE
               : buf;
}

void *cs_fortran_next(const char *symbol)
{
    void *p = dlsym(RTLD_NEXT, symbol);
    if (!p) { /* the build saw it in the MPI's Fortran library: a program of another MPI */
        fprintf(stderr, CS_PREFIX "%s: not found in the MPI's Fortran library (%s)\n", symbol, dlerror());
        abort();
    }
    return p;
}

void cs_fortran_string(char *out, size_t size, const char *s, size_t len)
{
    while (len && s[len - 1] == ' ') len--;
    if (len >= size) len = size - 1;
    memcpy(out, s, len);
    out[len] = 0;
}

MPI_Datatype *cs_fortran_types(const MPI_Fint *types, MPI_Comm comm, int dir, int neighbor)
{
    int n = 0;
    if (neighbor) {
        const cs_group_t *g = cs_comm_topology(comm);
        n = g ? (dir == CS_OUT ? g->outdegree : g->indegree) : 0;
    } else {
        const cs_group_t *g = comm == MPI_COMM_WORLD ? 0 : cs_comm_lookup(comm);
        n = g ? g->size : cs_world_size;
    }
    MPI_Datatype *out = malloc(sizeof *out * (size_t)(n ? n : 1));
    for (int i = 0; out && types && i < n; i++) out[i] = PMPI_Type_f2c(types[i]);
    return out;
}

MPI_Request *cs_fortran_requests(const MPI_Fint *reqs, int n)
{
    MPI_Request *out = malloc(sizeof *out * (size_t)(n > 0 ? n : 1));
    for (int i = 0; out && i < n; i++) out[i] = PMPI_Request_f2c(reqs[i]);
    return out;
}

/* The C handles of n Fortran requests, saved with their table entries. */
static int fsave(cs_saved_t *sv, int func, int n, const MPI_Fint *freqs)
{
    MPI_Request on_stack[CS_ON_STACK];
    MPI_Request *reqs = n <= CS_ON_STACK ? on_stack : malloc(sizeof *reqs * (size_t)(n > 0 ? n : 1));
    if (!reqs) return 0;
    for (int i = 0; i < n; i++) reqs[i] = PMPI_Request_f2c(freqs[i]);
    int ok = cs_save(sv, func, n, reqs);
    if (reqs != on_stack) free(reqs);
    return ok;
}

/* cs_settle for Fortran handles. */
static void fsettle(cs_saved_t *sv, const MPI_Fint *now)
{
    MPI_Fint null = PMPI_Request_c2f(MPI_REQUEST_NULL);
    for (int i = 0; i < sv->n; i++)
        if (now[i] == null) cs_ended_saved(sv, i);
}

static void fcomplete(cs_saved_t *sv, int i, const MPI_Fint *fstatus, uint64_t t0)
{
    MPI_Status st;
    PMPI_Status_f2c(fstatus, &st);
    cs_complete_saved(sv, i, &st, t0);
}

/* A status (array) of our own when the program passed MPI_STATUS(ES)_IGNORE. */
static MPI_Fint *fstatuses(MPI_Fint *given, int n, MPI_Fint *own, MPI_Fint **heap)
{
    *heap = 0;
    if (!cs_fortran_statuses_ignored(given)) return given;
    if (n <= CS_ON_STACK) return own;
    *heap = malloc(sizeof(MPI_Fint) * (size_t)FSTATUS * (size_t)n);
    return *heap ? *heap : given;
}

/* Which request an index returned by Waitany/Testany/Waitsome/Testsome names: 1-based
 * by the standard, but MPICH 4.0's mpi_f08 returns them 0-based (pmodels/mpich#6270)
 * and MPI_UNDEFINED + 1 for none (#6989).  The request whose handle the call set to
 * MPI_REQUEST_NULL decides; a persistent one keeps its handle, so then the standard
 * reading stands.  -1: none. */
static int completed_index(const MPI_Fint *before, const MPI_Fint *after, int n, MPI_Fint index)
{
    MPI_Fint null = PMPI_Request_c2f(MPI_REQUEST_NULL);
    int one = index - 1, zero = index;
    if (one >= 0 && one < n && before[one] != null && after[one] == null) return one;
    if (zero >= 0 && zero < n && before[zero] != null && after[zero] == null) return zero;
    return one >= 0 && one < n ? one : -1;
}

static MPI_Fint *copy_handles(const MPI_Fint *reqs, int n, MPI_Fint *on_stack)
{
    MPI_Fint *out = n <= CS_ON_STACK ? on_stack : malloc(sizeof *out * (size_t)(n > 0 ? n : 1));
    if (out) memcpy(out, reqs, sizeof *out * (size_t)(n > 0 ? n : 0));
    return out;
}

typedef void wait_fn(MPI_Fint *, MPI_Fint *, MPI_Fint *);
typedef void test_fn(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
typedef void waitany_fn(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
typedef void testany_fn(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
typedef void waitall_fn(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
typedef void testall_fn(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
typedef void waitsome_fn(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
typedef void free_fn(MPI_Fint *, MPI_Fint *);
typedef void init_fn(MPI_Fint *);
typedef void init_thread_fn(MPI_Fint *, MPI_Fint *, MPI_Fint *);
typedef void pcontrol_fn(MPI_Fint *);

#define IERR MPI_Fint ierr_own = 0, *ierr_ = ierr ? ierr : &ierr_own /* f08: ierror is optional */

static void f_wait(wait_fn *real, MPI_Fint *request, MPI_Fint *status, MPI_Fint *ierr)
{
    IERR;
    CS_FORTRAN_ENTER(CS_F_MPI_Wait);
    MPI_Fint own[CS_FSTATUS_WORDS];
    if (cs_fortran_status_ignored(status)) status = own;
    cs_saved_t sv;
    int ok = fsave(&sv, CS_F_MPI_Wait, 1, request);
    real(request, status, ierr_);
    int mine_ = CS_FORTRAN_MINE(CS_F_MPI_Wait);
    if (ok && mine_ && *ierr_ == MPI_SUCCESS) fcomplete(&sv, 0, status, t0_);
    if (ok) fsettle(&sv, request), cs_release(&sv);
    CS_FORTRAN_LEAVE(CS_F_MPI_Wait, mine_);
}

static void f_test(test_fn *real, MPI_Fint *request, MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr)
{
    IERR;
    CS_FORTRAN_ENTER(CS_F_MPI_Test);
    MPI_Fint own[CS_FSTATUS_WORDS];
    if (cs_fortran_status_ignored(status)) status = own;
    cs_saved_t sv;
    int ok = fsave(&sv, CS_F_MPI_Test, 1, request);
    real(request, flag, status, ierr_);
    int mine_ = CS_FORTRAN_MINE(CS_F_MPI_Test);
    if (ok && mine_ && *ierr_ == MPI_SUCCESS && *flag) fcomplete(&sv, 0, status, t0_);
    if (ok) fsettle(&sv, request), cs_release(&sv);
    CS_FORTRAN_LEAVE(CS_F_MPI_Test, mine_);
}

static void f_waitany(waitany_fn *real, testany_fn *treal, MPI_Fint *count, MPI_Fint *requests,
                      MPI_Fint *index, MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr)
{
    IERR;
    int F = real ? CS_F_MPI_Waitany : CS_F_MPI_Testany;
    CS_FORTRAN_ENTER(F);
    MPI_Fint own[CS_FSTATUS_WORDS], yes = 1;
    if (cs_fortran_status_ignored(status)) status = own;
    cs_saved_t sv;
    MPI_Fint stack[CS_ON_STACK], *before = copy_handles(requests, *count, stack);
    int ok = before && fsave(&sv, F, *count, requests);
    if (real)
        real(count, requests, index, status, ierr_), flag = &yes;
    else
        treal(count, requests, index, flag, status, ierr_);
    int mine_ = CS_FORTRAN_MINE(F);
    if (ok && mine_ && *ierr_ == MPI_SUCCESS && *flag)
        fcomplete(&sv, completed_index(before, requests, *count, *index), status, t0_);
    if (ok) fsettle(&sv, requests), cs_release(&sv);
    if (before != stack) free(before);
    CS_FORTRAN_LEAVE(F, mine_);
}

static void f_waitall(waitall_fn *real, testall_fn *treal, MPI_Fint *count, MPI_Fint *requests,
                      MPI_Fint *flag, MPI_Fint *statuses, MPI_Fint *ierr)
{
    IERR;
    int F = real ? CS_F_MPI_Waitall : CS_F_MPI_Testall;
    CS_FORTRAN_ENTER(F);
    MPI_Fint own[CS_ON_STACK * CS_FSTATUS_WORDS], *heap, yes = 1;
    statuses = fstatuses(statuses, *count, own, &heap);
    cs_saved_t sv;
    int ok = fsave(&sv, F, *count, requests);
    if (real)
        real(count, requests, statuses, ierr_), flag = &yes;
    else
        treal(count, requests, flag, statuses, ierr_);
    int mine_ = CS_FORTRAN_MINE(F);
    if (ok && mine_ && !cs_fortran_statuses_ignored(statuses) && *flag &&
        (*ierr_ == MPI_SUCCESS || *ierr_ == MPI_ERR_IN_STATUS))
        for (int i = 0; i < *count; i++)
            if (*ierr_ == MPI_SUCCESS || statuses[i * FSTATUS + 2] != MPI_ERR_PENDING) /* MPI_ERROR */
                fcomplete(&sv, i, statuses + i * FSTATUS, t0_);
    if (ok) fsettle(&sv, requests), cs_release(&sv);
    free(heap);
    CS_FORTRAN_LEAVE(F, mine_);
}

static void f_waitsome(waitsome_fn *real, int F, MPI_Fint *incount, MPI_Fint *requests, MPI_Fint *outcount,
                       MPI_Fint *indices, MPI_Fint *statuses, MPI_Fint *ierr)
{
    IERR;
    CS_FORTRAN_ENTER(F);
    MPI_Fint own[CS_ON_STACK * CS_FSTATUS_WORDS], *heap;
    statuses = fstatuses(statuses, *incount, own, &heap);
    cs_saved_t sv;
    MPI_Fint stack[CS_ON_STACK], *before = copy_handles(requests, *incount, stack);
    int ok = before && fsave(&sv, F, *incount, requests);
    real(incount, requests, outcount, indices, statuses, ierr_);
    int mine_ = CS_FORTRAN_MINE(F);
    if (ok && mine_ && !cs_fortran_statuses_ignored(statuses) && *ierr_ == MPI_SUCCESS &&
        *outcount >= 0 && *outcount <= *incount)
        for (int i = 0; i < *outcount; i++)
            fcomplete(&sv, completed_index(before, requests, *incount, indices[i]), statuses + i * FSTATUS, t0_);
    if (ok) fsettle(&sv, requests), cs_release(&sv);
    if (before != stack) free(before);
    free(heap);
    CS_FORTRAN_LEAVE(F, mine_);
}

static void f_request_free(free_fn *real, MPI_Fint *request, MPI_Fint *ierr)
{
    IERR;
    CS_FORTRAN_ENTER(CS_F_MPI_Request_free);
    MPI_Request c = PMPI_Request_f2c(*request);
    cs_req_t e;
    int found = cs_tracking_requests() && c != MPI_REQUEST_NULL && cs_req_get(c, &e, -1);
    real(request, ierr_);
    int mine_ = CS_FORTRAN_MINE(CS_F_MPI_Request_free);
    if (found && mine_ && *ierr_ == MPI_SUCCESS) cs_freed(c, &e);
    CS_FORTRAN_LEAVE(CS_F_MPI_Request_free, mine_);
}

/* Open MPI's Fortran MPI_Init calls PMPI_Init: profiling starts here instead. */
static void f_init(init_fn *real, init_thread_fn *treal, MPI_Fint *required, MPI_Fint *provided,
                   MPI_Fint *ierr)
{
    IERR;
    if (real)
        real(ierr_);
    else
        treal(required, provided, ierr_);
    if (*ierr_ != MPI_SUCCESS) return;
    int level = MPI_THREAD_SINGLE, F = real ? CS_F_MPI_Init : CS_F_MPI_Init_thread;
    PMPI_Query_thread(&level);
    cs_profile_start(level, CS_NO_SESSION);
    if (cs_thread()[CS_FN(F, CS_FN_CALLS)] == 0) { /* unless the C wrapper did */
        cs_count_call(F);
        CS_SITE_CALL(F);
    }
}

static void f_finalize(init_fn *real, MPI_Fint *ierr)
{
    cs_profile_end(); /* counted once, whether or not the MPI's layer reaches MPI_Finalize */
    real(ierr);
}

static void f_pcontrol(pcontrol_fn *real, MPI_Fint *level)
{
    /* the C MPI_Pcontrol is ours (its PMPI does nothing): count and snapshot there */
    (void)real;
    MPI_Pcontrol((int)*level);
}

/* One Fortran function under all its names: NAME_ (and NAME__, NAME, upper case)
 * calling pmpi NAME_ (CS_FORTRAN_F77), and NAME_f08_ calling pmpi NAME_f08_ or else
 * the MPI's own NAME_f08_ (CS_FORTRAN_F08). */
#ifdef CS_FORTRAN_F77
#define F77(lower, upper, params, call) \
    extern void p##lower##_ params __attribute__((weak)); \
    CS_EXPORT void lower##_ params \
    { \
        CS_SITE_BEGIN; \
        call; \
        CS_SITE_END; \
    } \
    CS_EXPORT void lower##__ params __attribute__((alias(#lower "_"))); \
    CS_EXPORT void lower params __attribute__((alias(#lower "_"))); \
    CS_EXPORT void upper params __attribute__((alias(#lower "_")));
#else
#define F77(lower, upper, params, call)
#endif
#ifdef CS_FORTRAN_F08
#define F08(lower, params, call) \
    extern void p##lower##_f08_ params __attribute__((weak)); \
    CS_EXPORT void lower##_f08_ params \
    { \
        CS_SITE_BEGIN; \
        call; \
        CS_SITE_END; \
    }
#else
#define F08(lower, params, call)
#endif
#define FORTRAN(lower, upper, params, call_f77, call_f08) \
    F77(lower, upper, params, call_f77) \
    F08(lower, params, call_f08)

#define R(name) (p##name##_)
#define R08(name) \
    ({ \
        static void *next_; \
        if (!p##name##_f08_ && !next_) next_ = cs_fortran_next(#name "_f08_"); \
        p##name##_f08_ ? p##name##_f08_ : (__typeof__(&p##name##_f08_))next_; \
    })

FORTRAN(mpi_wait, MPI_WAIT, (MPI_Fint * r, MPI_Fint *st, MPI_Fint *ierr),
        f_wait(R(mpi_wait), r, st, ierr), f_wait(R08(mpi_wait), r, st, ierr))
FORTRAN(mpi_test, MPI_TEST, (MPI_Fint * r, MPI_Fint *flag, MPI_Fint *st, MPI_Fint *ierr),
        f_test(R(mpi_test), r, flag, st, ierr), f_test(R08(mpi_test), r, flag, st, ierr))
FORTRAN(mpi_waitany, MPI_WAITANY, (MPI_Fint * n, MPI_Fint *r, MPI_Fint *idx, MPI_Fint *st, MPI_Fint *ierr),
        f_waitany(R(mpi_waitany), 0, n, r, idx, 0, st, ierr),
        f_waitany(R08(mpi_waitany), 0, n, r, idx, 0, st, ierr))
FORTRAN(mpi_testany, MPI_TESTANY,
        (MPI_Fint * n, MPI_Fint *r, MPI_Fint *idx, MPI_Fint *flag, MPI_Fint *st, MPI_Fint *ierr),
        f_waitany(0, R(mpi_testany), n, r, idx, flag, st, ierr),
        f_waitany(0, R08(mpi_testany), n, r, idx, flag, st, ierr))
FORTRAN(mpi_waitall, MPI_WAITALL, (MPI_Fint * n, MPI_Fint *r, MPI_Fint *st, MPI_Fint *ierr),
        f_waitall(R(mpi_waitall), 0, n, r, 0, st, ierr), f_waitall(R08(mpi_waitall), 0, n, r, 0, st, ierr))
FORTRAN(mpi_testall, MPI_TESTALL, (MPI_Fint * n, MPI_Fint *r, MPI_Fint *flag, MPI_Fint *st, MPI_Fint *ierr),
        f_waitall(0, R(mpi_testall), n, r, flag, st, ierr),
        f_waitall(0, R08(mpi_testall), n, r, flag, st, ierr))
FORTRAN(mpi_waitsome, MPI_WAITSOME,
        (MPI_Fint * n, MPI_Fint *r, MPI_Fint *out, MPI_Fint *idx, MPI_Fint *st, MPI_Fint *ierr),
        f_waitsome(R(mpi_waitsome), CS_F_MPI_Waitsome, n, r, out, idx, st, ierr),
        f_waitsome(R08(mpi_waitsome), CS_F_MPI_Waitsome, n, r, out, idx, st, ierr))
FORTRAN(mpi_testsome, MPI_TESTSOME,
        (MPI_Fint * n, MPI_Fint *r, MPI_Fint *out, MPI_Fint *idx, MPI_Fint *st, MPI_Fint *ierr),
        f_waitsome(R(mpi_testsome), CS_F_MPI_Testsome, n, r, out, idx, st, ierr),
        f_waitsome(R08(mpi_testsome), CS_F_MPI_Testsome, n, r, out, idx, st, ierr))
FORTRAN(mpi_request_free, MPI_REQUEST_FREE, (MPI_Fint * r, MPI_Fint *ierr),
        f_request_free(R(mpi_request_free), r, ierr), f_request_free(R08(mpi_request_free), r, ierr))
FORTRAN(mpi_init, MPI_INIT, (MPI_Fint * ierr), f_init(R(mpi_init), 0, 0, 0, ierr),
        f_init(R08(mpi_init), 0, 0, 0, ierr))
FORTRAN(mpi_init_thread, MPI_INIT_THREAD, (MPI_Fint * req, MPI_Fint *prov, MPI_Fint *ierr),
        f_init(0, R(mpi_init_thread), req, prov, ierr), f_init(0, R08(mpi_init_thread), req, prov, ierr))
FORTRAN(mpi_finalize, MPI_FINALIZE, (MPI_Fint * ierr), f_finalize(R(mpi_finalize), ierr),
        f_finalize(R08(mpi_finalize), ierr))
FORTRAN(mpi_pcontrol, MPI_PCONTROL, (MPI_Fint * level), f_pcontrol(R(mpi_pcontrol), level),
        f_pcontrol(R08(mpi_pcontrol), level))

#endif /* CS_FORTRAN_F77 || CS_FORTRAN_F08 */
