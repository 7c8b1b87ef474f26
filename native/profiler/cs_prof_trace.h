/* Event trace of point-to-point calls and collectives (cs_prof_trace.c,
 * `commscope profile --trace`). */
#ifndef CS_PROF_TRACE_H
#define CS_PROF_TRACE_H

#include "cs_prof_state.h"

/* Declarations of the library's own symbols: hidden, so globals are reached
 * directly, not through the GOT (only the MPI wrappers are exported, CS_EXPORT). */
#pragma GCC visibility push(hidden)

/* The events (CS_EV_*), the file header (cs_trace_header_t) and the record
 * (cs_trace_rec_t) are layout.def's, in cs_layout.h (included by cs_prof_state.h). */
/* A collective's root in a trace record: its rank in comm, or one of these.  CS_NO_ROOT
 * is what the wrappers of collectives without a root pass (MPICH's MPI_PROC_NULL is -1). */
enum { CS_ROOT_NONE = -1,
       CS_ROOT_MPI_ROOT = -2,
       CS_ROOT_PROC_NULL = -3 };
#define CS_NO_ROOT (-2147483647 - 1)

void cs_trace_init(const char *dir, long long limit_bytes, int buffer_records);
/* func: the CS_F_* id of the MPI function the record comes from (-1: unknown);
 * comm_id: the communicator's id (cs_comm_id), -1 when none */
void cs_trace(int event, int func, uint64_t t0, uint64_t request, long long bytes, int peer, int tag,
              int comm_id, int flags);
/* One collective: COLL (request 0) or ICOLL / COLL_DONE of request id `request`;
 * coll: the collective's own function id (func is MPI_Start's or MPI_Wait's for the
 * start and completion of a persistent one). */
void cs_trace_coll(int event, int func, int coll, uint64_t t0, uint64_t request, long long sent,
                   long long received, int root, int comm_id);
/* A CPU record at tick t0 (begin = end): the thread's run-queue wait ns in `request`,
 * its on-CPU ns in `bytes`, both since the thread started. */
void cs_trace_cpu(int func, uint64_t t0, uint64_t wait_ns, uint64_t run_ns);
void cs_trace_finish(void);
/* After cs_trace_finish: the distinct call sites of every record (malloc'd, unsorted,
 * *out 0 when none), so that the loaded objects holding them can be listed. */
size_t cs_trace_sites(uint64_t **out);

/* What a collective's bytes depend on, for the trace only (not on the hot path of an
 * untraced run): the root argument as recorded, whether this rank is the root, the
 * size of the group peers are named in, this rank's rank in comm. */
int cs_coll_root(int root);
int cs_coll_is_root(MPI_Comm comm, int root);
int cs_coll_size(MPI_Comm comm);
int cs_coll_rank(MPI_Comm comm);

#pragma GCC visibility pop

#endif
