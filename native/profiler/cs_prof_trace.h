/* Event trace of point-to-point calls (cs_prof_trace.c, `commscope profile --trace`). */
#ifndef CS_PROF_TRACE_H
#define CS_PROF_TRACE_H

#include "cs_prof_state.h"

enum { CS_EV_SEND = 1, CS_EV_ISEND, CS_EV_RECV, CS_EV_IRECV, CS_EV_COMPLETE, CS_EV_PROBE };
void cs_trace_init(const char *dir, long long limit_bytes, int buffer_records);
/* comm_id: the communicator's id (cs_comm_id), -1 when none */
void cs_trace(int event, uint64_t t0, uint64_t request, long long bytes, int peer, int tag,
              int comm_id, int flags);
void cs_trace_finish(void);

#endif
