/* Snapshots (cs_prof_snap.c): every counter and MPI_T performance variable, merged
 * into one vector in the canonical layout below and appended (what changed) to the
 * node's snapshot file every interval by a helper thread, at MPI_Pcontrol(2) and at
 * the end. */
#ifndef CS_PROF_SNAP_H
#define CS_PROF_SNAP_H

#include "cs_prof_state.h"

/* Declarations of the library's own symbols: hidden, so globals are reached
 * directly, not through the GOT (only the MPI wrappers are exported, CS_EXPORT). */
#pragma GCC visibility push(hidden)

/* The canonical layout of a rank's counters, in words (also in the metadata):
 * counters (thread ones summed over slabs, rank ones from the rank block), the
 * total calls and ticks, calls, ticks and bytes per function, collective bins, size
 * bins (one row per sized function), peer arrays (array-major, one word per world
 * rank), pvar values (doubles' bits). */
#define CS_CAN_TOTAL_CALLS CS_NCOUNTERS
#define CS_CAN_TOTAL_TICKS (CS_NCOUNTERS + 1)
#define CS_CAN_CALLS (CS_NCOUNTERS + 2)
#define CS_CAN_TICKS (CS_CAN_CALLS + CS_NFUNC)
#define CS_CAN_FBYTES (CS_CAN_TICKS + CS_NFUNC)
#define CS_CAN_COLL (CS_CAN_FBYTES + CS_NFUNC)
#define CS_CAN_BINS (CS_CAN_COLL + CS_NCOLL * CS_NCOLLBINS)
#define CS_CAN_PEERS (CS_CAN_BINS + CS_NSIZED * CS_NBINS)
size_t cs_canonical_words(void); /* with the pvars: depends on the world and the MPI */
size_t cs_canonical_pvars_at(void);
void cs_rank_totals(uint64_t *out); /* the counters now, up to the pvars */

int cs_pvars_init(int world_model); /* returns the number of pvar values sampled */
void cs_pvars_describe(void *fh);   /* JSON array of the sampled pvars (FILE *) */
void cs_pvars_stop(void);
int cs_snap_start(const char *path, double interval_s);
void cs_snap_stop(void);
void cs_snap_now(void);

#pragma GCC visibility pop

#endif
