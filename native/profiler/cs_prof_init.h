/* Setting profiling up and ending it (cs_prof_init.c), for the C and the Fortran
 * entry points of MPI_Init, MPI_Finalize and the sessions. */
#ifndef CS_PROF_INIT_H
#define CS_PROF_INIT_H

#include "cs_prof_sites.h"
#include "cs_prof_state.h"

/* The call site of a hand-written entry point without bytes or time (Init, Finalize,
 * Pcontrol): its own return address, or the one an outer entry point saved. */
#define CS_SITE_CALL(F) \
    do { \
        if (cs_sets & CS_SET_CALLSITES) cs_site_note((F), __builtin_return_address(0), 0, 0); \
    } while (0)

#ifdef CS_HAVE_MPI_Session_init
typedef MPI_Session cs_session_t;
#define CS_NO_SESSION MPI_SESSION_NULL
#else /* an MPI before MPI-4 */
typedef int cs_session_t;
#define CS_NO_SESSION 0
#endif

/* Set up everything once; `session` is CS_NO_SESSION in the world model. */
void cs_profile_start(int thread_level, cs_session_t session);
void cs_profile_finish(void);
void cs_profile_end(void); /* MPI_Finalize's part: count it, finish, stop counting (once) */
void cs_count_call(int func);

#endif
