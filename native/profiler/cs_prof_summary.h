/* The job-wide summary (cs_prof_summary.c): at MPI_Finalize every rank's totals are
 * reduced to rank 0, which writes summary.json: the headline without converting
 * anything. */
#ifndef CS_PROF_SUMMARY_H
#define CS_PROF_SUMMARY_H

#include "cs_prof_state.h"

/* Declarations of the library's own symbols: hidden, so globals are reached
 * directly, not through the GOT (only the MPI wrappers are exported, CS_EXPORT). */
#pragma GCC visibility push(hidden)

void cs_summary_init(void);              /* at set-up: a communicator of our own */
void cs_summary_reduce(const char *dir); /* at MPI_Finalize, before the MPI's */

#pragma GCC visibility pop

#endif
