/* How a profiled process ends (cs_prof_end.c): recorded in its rank header so that
 * `commscope profile` can say which rank ended how. */
#ifndef CS_PROF_END_H
#define CS_PROF_END_H

#include "cs_prof_state.h"

/* Start watching this process's end (once the rank header exists): its exit, a fatal
 * signal, MPI_Abort. */
void cs_end_watch(void);
/* Record one ending (CS_END_*) with its code; the first one recorded is kept.
 * Async-signal-safe. */
void cs_end_note(int how, int code);

#endif
