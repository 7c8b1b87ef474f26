/* CPU contention (cs_prof_cpu.c): how long the rank's threads were runnable but not
 * running (the kernel's run-queue wait), and how long they ran. */
#ifndef CS_PROF_CPU_H
#define CS_PROF_CPU_H

#include "cs_prof_state.h"

/* Declarations of the library's own symbols: hidden, so globals are reached
 * directly, not through the GOT (only the MPI wrappers are exported, CS_EXPORT). */
#pragma GCC visibility push(hidden)

/* The cpu_source counter: where the numbers came from. */
enum { CS_CPU_NONE,      /* not measured (timers off) */
       CS_CPU_SCHEDSTAT, /* /proc/self/task/<tid>/schedstat: wait and on-CPU time */
       CS_CPU_RUSAGE };  /* getrusage: on-CPU time and involuntary switches; wait unmeasured */

/* The trace writes a thread's CPU record at a traced call's entry when at least this
 * long passed since its previous traced call ended (the compute burst before the call
 * is what waited for a core), and at its first: one read of about 1 us per 200 us. */
#define CS_CPU_TRACE_GAP_NS 200000

void cs_cpu_start(int aggregate, int trace); /* MPI_Init: every thread's baseline; the gap */
void cs_cpu_sample(void);                    /* each snapshot: the rank-wide cpu_* words */
void cs_cpu_skip_self(void);                 /* the snapshot thread is not the program's */
void cs_cpu_write(const char *path);         /* MPI_Finalize: the per-thread breakdown */

/* ---- the trace's CPU records (slow path of traced calls only) ---- */
extern uint64_t cs_cpu_gap_ticks; /* CS_CPU_TRACE_GAP_NS in ticks */
extern __thread uint64_t cs_tl_cpu_last __attribute__((tls_model("initial-exec")));
void cs_cpu_trace(int func, uint64_t t0);

/* At a traced call's entry (tick t0): a CPU record if the thread computed long enough
 * since its last traced call (the first call: cs_tl_cpu_last is 0). */
CS_HOT void cs_cpu_enter(int func, uint64_t t0)
{
    if (t0 - cs_tl_cpu_last >= cs_cpu_gap_ticks) cs_cpu_trace(func, t0);
}

#pragma GCC visibility pop

#endif
