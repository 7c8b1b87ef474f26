/* Call sites (`commscope profile --callsites`): where in the program each MPI call
 * was made, counted per thread while it runs and resolved to file:line after the run.
 *
 * Hot path: the return address of the outermost entry into this library (a C
 * wrapper's own, or the one a Fortran entry point saved in cs_tl_site so that a
 * Fortran call reaching a C wrapper still names the Fortran caller) and the function
 * id are the key of a small open-addressing table per thread: calls, bytes and ticks
 * per key.  No unwinding beyond the caller, no symbol lookup, no locks: only the
 * owner thread touches its table until MPI_Finalize writes them all.  The slow path
 * (cs_prof_sites.c) claims and grows tables, and unwinds with backtrace() only when
 * asked for callers above the immediate one (--callsite-depth) or when the immediate
 * caller is the MPI's own Fortran library calling the C MPI_* function (MPICH's
 * mpif.h layer), whose caller is the program's line.
 */
#ifndef CS_PROF_SITES_H
#define CS_PROF_SITES_H

#include <stddef.h>
#include <stdint.h>

/* Entry words: return address, function id, calls, bytes, ticks, then the
 * depth - 1 callers above (when --callsite-depth > 1). */
enum { CS_SITE_RA, CS_SITE_FUNC, CS_SITE_CALLS, CS_SITE_BYTES, CS_SITE_TICKS, CS_SITE_UP };

typedef struct cs_sites {
    struct cs_sites *next; /* every thread's table, for the writer at the end */
    uint64_t *e;           /* cap entries of cs_site_width words; RA 0: empty */
    uint64_t mask;         /* cap - 1 */
    uint64_t used;
    uint64_t lost;         /* calls not recorded: the table could not grow */
} cs_sites_t;

extern int cs_site_depth;  /* 0: call sites off; 1: the immediate caller; N: N callers */
extern int cs_site_width;  /* words per entry */
extern int cs_site_npass;  /* text ranges of the MPI's Fortran libraries (pass-through) */
extern uintptr_t cs_site_pass[8][2];
extern __thread cs_sites_t *cs_tl_sites __attribute__((tls_model("initial-exec")));
extern __thread void *cs_tl_site __attribute__((tls_model("initial-exec")));

void cs_site_slow(int func, uintptr_t ra, uint64_t bytes, uint64_t ticks);
/* At set-up, before cs_sets has the bit: depth > 0 turns the table on; 0 only finds
 * this library's and the MPI's Fortran layer's text (the trace's sites need them). */
void cs_sites_init(int depth);
/* At MPI_Finalize: append this rank's record, listing the objects that hold its
 * sites and the `nextra` addresses of `extra` (the trace's); nothing without either. */
void cs_sites_write(const char *path, int rank, const uint64_t *extra, size_t nextra);
/* Slow path: the first caller outside this library and the MPI's Fortran layer
 * (backtrace()), for a return address in that layer; `ra` without unwind information. */
uintptr_t cs_site_program(uintptr_t ra);

static inline int cs_site_passthrough(uintptr_t ra)
{
    for (int i = 0; i < cs_site_npass; i++)
        if (ra - cs_site_pass[i][0] < cs_site_pass[i][1] - cs_site_pass[i][0]) return 1;
    return 0;
}

/* One call of `func` made from return address `ra0` (unless an outer entry point of
 * ours saved the program's). */
static inline void cs_site_note(int func, void *ra0, uint64_t bytes, uint64_t ticks)
{
    uintptr_t ra = (uintptr_t)(cs_tl_site ? cs_tl_site : ra0);
    cs_sites_t *t = cs_tl_sites;
    if (__builtin_expect(!t || cs_site_depth > 1 || cs_site_passthrough(ra), 0)) {
        cs_site_slow(func, ra, bytes, ticks);
        return;
    }
    uint64_t i = ((ra + (uint64_t)func) * 0x9E3779B97F4A7C15ull) >> 32 & t->mask;
    for (;; i = (i + 1) & t->mask) {
        uint64_t *e = t->e + i * CS_SITE_UP; /* depth 1: width is CS_SITE_UP */
        if (e[CS_SITE_RA] == ra && e[CS_SITE_FUNC] == (uint64_t)func) {
            e[CS_SITE_CALLS]++;
            e[CS_SITE_BYTES] += bytes;
            e[CS_SITE_TICKS] += ticks;
            return;
        }
        if (e[CS_SITE_RA] == 0) break;
    }
    cs_site_slow(func, ra, bytes, ticks); /* a new site: insert (and maybe grow) */
}

/* Entry points that call on into our own code (Fortran wrappers, Fortran Wait/Test)
 * save the program's return address for the C wrapper or hook below them. */
#define CS_SITE_BEGIN                                          \
    void *cs_site_prev_ = cs_tl_site;                          \
    if (!cs_site_prev_) cs_tl_site = __builtin_return_address(0)
#define CS_SITE_END cs_tl_site = cs_site_prev_

#endif
