/* Fortran entry points written by hand (see cs_prof_fortran.h): MPI_Init,
 * MPI_Init_thread, MPI_Finalize, MPI_Pcontrol, the Wait/Test families and
 * MPI_Request_free, plus the argument views the generated wrappers use.
 *
 * Each function is defined once for the mpif.h / `use mpi` symbols (mpi_wait_ and
 * its other manglings, calling pmpi_wait_) and once for `use mpi_f08`
 * (mpi_wait_f08_, calling pmpi_wait_f08_).  Fortran indices are 1-based.
 */
#include "cs_functions.h"

#ifdef CS_FORTRAN_WRAPPERS
#include "cs_prof_fortran.h"
#include "cs_prof_init.h"

/* A Fortran status is the C status's words (Open MPI: MPI_STATUS_SIZE = 6). */
#define FSTATUS ((int)(sizeof(MPI_Status) / sizeof(MPI_Fint)))
_Static_assert(sizeof(MPI_Status) / sizeof(MPI_Fint) <= CS_FSTATUS_WORDS, "Fortran status size");

/* The MPI's Fortran sentinels: addresses of common blocks (gfortran appends _). */
extern MPI_Fint mpi_fortran_status_ignore_ __attribute__((weak));
extern MPI_Fint mpi_fortran_statuses_ignore_ __attribute__((weak));
extern MPI_Fint mpi_fortran_in_place_ __attribute__((weak));

int cs_fortran_status_ignored(const MPI_Fint *status)
{
    return status == MPI_F_STATUS_IGNORE || (&mpi_fortran_status_ignore_ && status == &mpi_fortran_status_ignore_);
}

int cs_fortran_statuses_ignored(const MPI_Fint *statuses)
{
    return statuses == MPI_F_STATUSES_IGNORE ||
           (&mpi_fortran_statuses_ignore_ && statuses == &mpi_fortran_statuses_ignore_);
}

void *cs_fortran_buffer(void *buf)
{
    return &mpi_fortran_in_place_ && buf == (void *)&mpi_fortran_in_place_ ? MPI_IN_PLACE : buf;
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
static int fsave(cs_saved_t *sv, int n, const MPI_Fint *freqs)
{
    MPI_Request on_stack[CS_ON_STACK];
    MPI_Request *reqs = n <= CS_ON_STACK ? on_stack : malloc(sizeof *reqs * (size_t)(n > 0 ? n : 1));
    if (!reqs) return 0;
    for (int i = 0; i < n; i++) reqs[i] = PMPI_Request_f2c(freqs[i]);
    int ok = cs_save(sv, n, reqs);
    if (reqs != on_stack) free(reqs);
    return ok;
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
    int ok = fsave(&sv, 1, request);
    real(request, status, ierr_);
    int mine_ = CS_FORTRAN_MINE(CS_F_MPI_Wait);
    if (ok && mine_ && *ierr_ == MPI_SUCCESS) fcomplete(&sv, 0, status, t0_);
    if (ok) cs_release(&sv);
    CS_FORTRAN_LEAVE(CS_F_MPI_Wait, mine_);
}

static void f_test(test_fn *real, MPI_Fint *request, MPI_Fint *flag, MPI_Fint *status, MPI_Fint *ierr)
{
    IERR;
    CS_FORTRAN_ENTER(CS_F_MPI_Test);
    MPI_Fint own[CS_FSTATUS_WORDS];
    if (cs_fortran_status_ignored(status)) status = own;
    cs_saved_t sv;
    int ok = fsave(&sv, 1, request);
    real(request, flag, status, ierr_);
    int mine_ = CS_FORTRAN_MINE(CS_F_MPI_Test);
    if (ok && mine_ && *ierr_ == MPI_SUCCESS && *flag) fcomplete(&sv, 0, status, t0_);
    if (ok) cs_release(&sv);
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
    int ok = fsave(&sv, *count, requests);
    if (real) real(count, requests, index, status, ierr_), flag = &yes;
    else treal(count, requests, index, flag, status, ierr_);
    int mine_ = CS_FORTRAN_MINE(F);
    if (ok && mine_ && *ierr_ == MPI_SUCCESS && *flag && *index != MPI_UNDEFINED)
        fcomplete(&sv, *index - 1, status, t0_);
    if (ok) cs_release(&sv);
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
    int ok = fsave(&sv, *count, requests);
    if (real) real(count, requests, statuses, ierr_), flag = &yes;
    else treal(count, requests, flag, statuses, ierr_);
    int mine_ = CS_FORTRAN_MINE(F);
    if (ok && mine_ && !cs_fortran_statuses_ignored(statuses) && *flag &&
        (*ierr_ == MPI_SUCCESS || *ierr_ == MPI_ERR_IN_STATUS))
        for (int i = 0; i < *count; i++)
            if (*ierr_ == MPI_SUCCESS || statuses[i * FSTATUS + 2] != MPI_ERR_PENDING) /* MPI_ERROR */
                fcomplete(&sv, i, statuses + i * FSTATUS, t0_);
    if (ok) cs_release(&sv);
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
    int ok = fsave(&sv, *incount, requests);
    real(incount, requests, outcount, indices, statuses, ierr_);
    int mine_ = CS_FORTRAN_MINE(F);
    if (ok && mine_ && !cs_fortran_statuses_ignored(statuses) && *ierr_ == MPI_SUCCESS &&
        *outcount != MPI_UNDEFINED)
        for (int i = 0; i < *outcount; i++) fcomplete(&sv, indices[i] - 1, statuses + i * FSTATUS, t0_);
    if (ok) cs_release(&sv);
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
    if (real) real(ierr_);
    else treal(required, provided, ierr_);
    if (*ierr_ != MPI_SUCCESS) return;
    int level = MPI_THREAD_SINGLE;
    PMPI_Query_thread(&level);
    cs_profile_start(level, CS_NO_SESSION);
    cs_count_call(real ? CS_F_MPI_Init : CS_F_MPI_Init_thread);
}

static void f_finalize(init_fn *real, MPI_Fint *ierr)
{
    cs_count_call(CS_F_MPI_Finalize);
    cs_profile_finish();
    __atomic_store_n(&cs_sets, 0, __ATOMIC_RELEASE);
    real(ierr);
}

static void f_pcontrol(pcontrol_fn *real, MPI_Fint *level)
{
    /* the C MPI_Pcontrol is ours (its PMPI does nothing): count and snapshot there */
    (void)real;
    MPI_Pcontrol((int)*level);
}

/* One Fortran function under all its names: NAME_ (and NAME__, NAME, upper case)
 * calling pmpi NAME_, and NAME_f08_ calling pmpi NAME_f08_. */
#define FORTRAN(lower, upper, params, call_f77, call_f08)                                         \
    extern void p##lower##_ params __attribute__((weak));                                          \
    extern void p##lower##_f08_ params __attribute__((weak));                                      \
    CS_EXPORT void lower##_ params { call_f77; }                                                   \
    CS_EXPORT void lower##__ params __attribute__((alias(#lower "_")));                           \
    CS_EXPORT void lower params __attribute__((alias(#lower "_")));                               \
    CS_EXPORT void upper params __attribute__((alias(#lower "_")));                               \
    CS_EXPORT void lower##_f08_ params { call_f08; }

#define R(name) (p##name##_)
#define R08(name) (p##name##_f08_)

FORTRAN(mpi_wait, MPI_WAIT, (MPI_Fint *r, MPI_Fint *st, MPI_Fint *ierr),
        f_wait(R(mpi_wait), r, st, ierr), f_wait(R08(mpi_wait), r, st, ierr))
FORTRAN(mpi_test, MPI_TEST, (MPI_Fint *r, MPI_Fint *flag, MPI_Fint *st, MPI_Fint *ierr),
        f_test(R(mpi_test), r, flag, st, ierr), f_test(R08(mpi_test), r, flag, st, ierr))
FORTRAN(mpi_waitany, MPI_WAITANY, (MPI_Fint *n, MPI_Fint *r, MPI_Fint *idx, MPI_Fint *st, MPI_Fint *ierr),
        f_waitany(R(mpi_waitany), 0, n, r, idx, 0, st, ierr),
        f_waitany(R08(mpi_waitany), 0, n, r, idx, 0, st, ierr))
FORTRAN(mpi_testany, MPI_TESTANY,
        (MPI_Fint *n, MPI_Fint *r, MPI_Fint *idx, MPI_Fint *flag, MPI_Fint *st, MPI_Fint *ierr),
        f_waitany(0, R(mpi_testany), n, r, idx, flag, st, ierr),
        f_waitany(0, R08(mpi_testany), n, r, idx, flag, st, ierr))
FORTRAN(mpi_waitall, MPI_WAITALL, (MPI_Fint *n, MPI_Fint *r, MPI_Fint *st, MPI_Fint *ierr),
        f_waitall(R(mpi_waitall), 0, n, r, 0, st, ierr), f_waitall(R08(mpi_waitall), 0, n, r, 0, st, ierr))
FORTRAN(mpi_testall, MPI_TESTALL, (MPI_Fint *n, MPI_Fint *r, MPI_Fint *flag, MPI_Fint *st, MPI_Fint *ierr),
        f_waitall(0, R(mpi_testall), n, r, flag, st, ierr),
        f_waitall(0, R08(mpi_testall), n, r, flag, st, ierr))
FORTRAN(mpi_waitsome, MPI_WAITSOME,
        (MPI_Fint *n, MPI_Fint *r, MPI_Fint *out, MPI_Fint *idx, MPI_Fint *st, MPI_Fint *ierr),
        f_waitsome(R(mpi_waitsome), CS_F_MPI_Waitsome, n, r, out, idx, st, ierr),
        f_waitsome(R08(mpi_waitsome), CS_F_MPI_Waitsome, n, r, out, idx, st, ierr))
FORTRAN(mpi_testsome, MPI_TESTSOME,
        (MPI_Fint *n, MPI_Fint *r, MPI_Fint *out, MPI_Fint *idx, MPI_Fint *st, MPI_Fint *ierr),
        f_waitsome(R(mpi_testsome), CS_F_MPI_Testsome, n, r, out, idx, st, ierr),
        f_waitsome(R08(mpi_testsome), CS_F_MPI_Testsome, n, r, out, idx, st, ierr))
FORTRAN(mpi_request_free, MPI_REQUEST_FREE, (MPI_Fint *r, MPI_Fint *ierr),
        f_request_free(R(mpi_request_free), r, ierr), f_request_free(R08(mpi_request_free), r, ierr))
FORTRAN(mpi_init, MPI_INIT, (MPI_Fint *ierr), f_init(R(mpi_init), 0, 0, 0, ierr),
        f_init(R08(mpi_init), 0, 0, 0, ierr))
FORTRAN(mpi_init_thread, MPI_INIT_THREAD, (MPI_Fint *req, MPI_Fint *prov, MPI_Fint *ierr),
        f_init(0, R(mpi_init_thread), req, prov, ierr), f_init(0, R08(mpi_init_thread), req, prov, ierr))
FORTRAN(mpi_finalize, MPI_FINALIZE, (MPI_Fint *ierr), f_finalize(R(mpi_finalize), ierr),
        f_finalize(R08(mpi_finalize), ierr))
FORTRAN(mpi_pcontrol, MPI_PCONTROL, (MPI_Fint *level), f_pcontrol(R(mpi_pcontrol), level),
        f_pcontrol(R08(mpi_pcontrol), level))

#endif /* CS_FORTRAN_WRAPPERS */
