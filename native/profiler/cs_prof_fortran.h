/* Fortran entry points (generated cs_fortran_wrappers.c, hand-written
 * cs_prof_fortran.c), built for the Fortran layers that call PMPI_* directly, where
 * C wrappers never see a Fortran call: Open MPI's mpif.h, `use mpi` and `use
 * mpi_f08` (CS_FORTRAN_F77, CS_FORTRAN_F08), MPICH's `use mpi_f08` for routines
 * without a buffer (CS_FORTRAN_F08).
 *
 * Each wrapper passes the Fortran arguments unchanged to the MPI's own Fortran
 * entry point (pmpi_send_, pmpi_send_f08_, or for MPICH's f08 the next definition
 * of mpi_send_f08_ after ours), so every Fortran convention (sentinels, LOGICAL,
 * optional ierror) stays the MPI's business, and counts through the C hooks with C
 * views of the arguments (handles through PMPI_*_f2c, statuses through
 * PMPI_Status_f2c: Open MPI's and MPICH's Fortran statuses, f08 ones too, are the C
 * status's words).  A call is counted once: if the MPI's Fortran layer did reach a
 * C wrapper, that wrapper counted it (its calls counter moved) and the Fortran
 * wrapper leaves it alone.
 */
#ifndef CS_PROF_FORTRAN_H
#define CS_PROF_FORTRAN_H

#include <stdlib.h>
#include <string.h>

#include "cs_prof_requests.h"

/* Declarations of the library's own symbols: hidden, so globals are reached
 * directly, not through the GOT (only the MPI wrappers are exported, CS_EXPORT). */
#pragma GCC visibility push(hidden)

_Static_assert(sizeof(MPI_Fint) == sizeof(int), "Fortran INTEGER count arrays are viewed as int[]");

/* Room for a Fortran status (MPI_STATUS_SIZE integers; 6 in Open MPI, 5 in MPICH). */
#define CS_FSTATUS_WORDS 16

#define CS_FORTRAN_ENTER(F) \
    CS_SITE_BEGIN; \
    uint64_t *s_ = cs_thread(); \
    int sets_ = cs_tl.sets; \
    uint64_t calls0_ = s_[CS_FN((F), CS_FN_CALLS)]; \
    uint64_t t0_ = (sets_ & CS_SET_CLOCK) ? cs_ticks() : 0; \
    uint64_t b0_ = s_[CS_FN((F), CS_FN_BYTES)]; \
    uint64_t *se_ = 0, *bt_ = 0; \
    (void)t0_, (void)b0_, (void)bt_, (void)sets_

/* 1 (and counted, with its call site) when no C wrapper counted this call during the
 * PMPI call; the hooks after it then see this call's site as the current one. */
static inline int cs_fortran_mine(uint64_t *s, int f, uint64_t calls0, uint64_t **se)
{
    if (s[CS_FN(f, CS_FN_CALLS)] != calls0) return 0;
    s[CS_FN(f, CS_FN_CALLS)]++;
    if (cs_sets & CS_SET_CALLSITES) *se = cs_site_enter(f, cs_tl_site);
    return 1;
}
#define CS_FORTRAN_MINE(F) cs_fortran_mine(s_, (F), calls0_, &se_)

/* The call site is the Fortran caller's (CS_SITE_BEGIN saved it); a C wrapper that
 * counted the call instead recorded that same site. */
#define CS_FORTRAN_LEAVE(F, mine) \
    do { \
        uint64_t dt_ = 0; \
        if ((mine) && (cs_sets & CS_SET_TIMERS)) dt_ = cs_leave_time(s_, (F), t0_, bt_); \
        if ((mine) && se_) cs_site_leave(se_, s_[CS_FN((F), CS_FN_BYTES)] - b0_, dt_); \
        CS_SITE_END; \
    } while (0)

int cs_fortran_status_ignored(const MPI_Fint *status);
int cs_fortran_statuses_ignored(const MPI_Fint *statuses);
void *cs_fortran_buffer(void *buf);                                        /* Fortran MPI_IN_PLACE -> C MPI_IN_PLACE */
void cs_fortran_string(char *out, size_t size, const char *s, size_t len); /* blank-padded -> C */
MPI_Datatype *cs_fortran_types(const MPI_Fint *types, MPI_Comm comm, int dir, int neighbor);
MPI_Request *cs_fortran_requests(const MPI_Fint *reqs, int n);
void *cs_fortran_next(const char *symbol); /* the MPI's own definition after ours */

#pragma GCC visibility pop

#endif
