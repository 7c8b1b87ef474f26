/* Snapshots (cs_prof_snap.c): every counter and MPI_T performance variable, copied
 * to snapshots.<rank>.bin every interval by a helper thread, at MPI_Pcontrol(2)
 * and at the end. */
#ifndef CS_PROF_SNAP_H
#define CS_PROF_SNAP_H

#include "cs_prof_state.h"

int cs_pvars_init(int world_model); /* returns the number of pvar values sampled */
void cs_pvars_describe(void *fh);   /* JSON array of the sampled pvars (FILE *) */
int cs_snap_start(const char *dir, double interval_s);
void cs_snap_stop(void);
void cs_snap_now(void);

#endif
