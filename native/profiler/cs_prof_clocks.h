/* Clock alignment for the event trace (cs_prof_clocks.c, `commscope profile --trace`):
 * each rank's CLOCK_MONOTONIC offset to rank 0's, measured at the end of MPI_Init
 * and at the start of MPI_Finalize, so traces of several nodes share one time line. */
#ifndef CS_PROF_CLOCKS_H
#define CS_PROF_CLOCKS_H

#include "cs_prof_state.h"

/* Declarations of the library's own symbols: hidden, so globals are reached
 * directly, not through the GOT (only the MPI wrappers are exported, CS_EXPORT). */
#pragma GCC visibility push(hidden)

/* COMMSCOPE_TEST_CLOCK_SKEW_NS="rank:ns,rank:ns" (tests only): this rank's
 * CLOCK_MONOTONIC readings (cs_now_ns) are shifted by its ns from now on, as if it ran
 * on a node whose clock is off by that much.  Called once the world rank is known. */
void cs_clocks_skew(int rank);

/* Collective over MPI_COMM_WORLD (every rank calls them, profiled or not): the
 * measurement on a private duplicate, through PMPI only.  `path`: the node's
 * clocks.<node>.jsonl, or 0 for a rank that takes part but writes nothing. */
void cs_clocks_start(const char *path, const char *node);
void cs_clocks_finish(void);

#pragma GCC visibility pop

#endif
