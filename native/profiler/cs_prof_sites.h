/* Call sites (`commscope profile --callsites`): where in the program each MPI call
 * was made, counted per thread while it runs and resolved to file:line after the run.
 *
 * Hot path: the return address of the outermost entry into this library (a C
 * wrapper's own, or the one a Fortran entry point saved in cs_tl_site so that a
 * Fortran call reaching a C wrapper still names the Fortran caller) and the function
 * id are the key of a small open-addressing table per thread: calls, bytes and ticks
 * per key.  Bytes are credited to the call that carries the buffer: a receive that a
 * Wait/Test call completes counts at the site of the MPI_Irecv that posted it.  No unwinding beyond the caller, no symbol lookup, no locks: only the
 * owner thread touches its table until MPI_Finalize writes them all.  The slow path
 * (cs_prof_sites.c) claims and grows tables, and unwinds with backtrace() only when
 * asked for callers above the immediate one (--callsite-depth) or when the immediate
 * caller is the MPI's own Fortran library calling the C MPI_* function (MPICH's
 * mpif.h layer), whose caller is the program's line.
 *
 * Python (mpi4py): a return address inside mpi4py's extension module is the same for
 * every Python line that calls one method, so such calls (and only those: the check is
 * a range compare, and only with --callsites) take the slow path, which keys them by
 * the first Python frame outside mpi4py (cs_prof_sites.c: code object and bytecode
 * offset, read through the CPython C API found with dlsym).  Their entry's "address"
 * is then a small Python site id (< CS_PY_SITE_MAX), resolved to file:line in function
 * by the record's "python_sites" list.
 */
#ifndef CS_PROF_SITES_H
#define CS_PROF_SITES_H

#include <stddef.h>
#include <stdint.h>

/* Declarations of the library's own symbols: hidden, so globals are reached
 * directly, not through the GOT (only the MPI wrappers are exported, CS_EXPORT). */
#pragma GCC visibility push(hidden)

/* Entry words: return address, function id, calls, bytes, ticks, late bytes, then the
 * depth - 1 callers above (when --callsite-depth > 1).  Bytes are what the calls made
 * here added to their function's count, written by the owner thread only; late bytes
 * are those counted after the call returned for a request it created (a receive's
 * size when a Wait/Test call completes it, a persistent send's at each MPI_Start),
 * added atomically by whichever thread counts them.  The writer sums the two. */
enum { CS_SITE_RA,
       CS_SITE_FUNC,
       CS_SITE_CALLS,
       CS_SITE_BYTES,
       CS_SITE_TICKS,
       CS_SITE_LATE,
       CS_SITE_UP };

/* A thread's table: open addressing over pointers to entries that never move (they
 * are carved out of blocks that live until the end), so a request can keep the entry
 * of the call that created it and credit it later from any thread. */
typedef struct cs_sites {
    struct cs_sites *next; /* every thread's table, for the writer at the end */
    uint64_t **slot;       /* cap pointers; 0: empty */
    uint64_t mask;         /* cap - 1 */
    uint64_t used;
    uint64_t lost;   /* calls not recorded: the table could not grow */
    uint64_t *block; /* entries not handed out yet */
    uint64_t block_left;
} cs_sites_t;

extern int cs_site_depth; /* 0: call sites off; 1: the immediate caller; N: N callers */
extern int cs_site_width; /* words per entry */
extern int cs_site_npass; /* text ranges of the MPI's Fortran libraries (pass-through) */
extern uintptr_t cs_site_pass[8][2];
extern int cs_site_npy; /* text ranges of mpi4py's extension modules (Python sites) */
extern uintptr_t cs_site_py[4][2];
enum { CS_PY_SITE_MAX = 1 << 20 }; /* entry addresses below this are Python site ids */
extern __thread cs_sites_t *cs_tl_sites __attribute__((tls_model("initial-exec")));
extern __thread void *cs_tl_site __attribute__((tls_model("initial-exec")));
/* The entry of the call this thread is in (set when the call is counted), which a
 * request the call creates remembers (cs_req_t.site). */
extern __thread uint64_t *cs_tl_cur_site __attribute__((tls_model("initial-exec")));

uint64_t *cs_site_slow(int func, uintptr_t ra); /* the entry, inserted; 0 when lost */
/* At set-up, before cs_sets has the bit: depth > 0 turns the table on; 0 only finds
 * this library's and the MPI's Fortran layer's text (the trace's sites need them). */
void cs_sites_init(int depth);
/* At MPI_Finalize: append this rank's record, listing the objects that hold its
 * sites and the `nextra` addresses of `extra` (the trace's); nothing without either. */
void cs_sites_write(const char *path, int rank, const uint64_t *extra, size_t nextra);
/* Slow path: the first caller outside this library and the MPI's Fortran layer
 * (backtrace()), for a return address in that layer; `ra` without unwind information. */
uintptr_t cs_site_program(uintptr_t ra);

/* Slow path, for the trace: the Python site id of a call made from mpi4py's module at
 * return address `ra`: entry e's key when the call-site table keyed it (--callsites),
 * else read from the Python stack; `ra` when there is no Python line. */
uintptr_t cs_site_python_line(uintptr_t ra, const uint64_t *e);

static inline int cs_site_passthrough(uintptr_t ra)
{
    for (int i = 0; i < cs_site_npass; i++)
        if (ra - cs_site_pass[i][0] < cs_site_pass[i][1] - cs_site_pass[i][0]) return 1;
    return 0;
}

static inline int cs_site_python(uintptr_t ra)
{
    for (int i = 0; i < cs_site_npy; i++)
        if (ra - cs_site_py[i][0] < cs_site_py[i][1] - cs_site_py[i][0]) return 1;
    return 0;
}

/* One call of `func` made from return address `ra0` (unless an outer entry point of
 * ours saved the program's): its entry, with the call counted (0 when it could not be
 * recorded); also this thread's current site. */
static inline uint64_t *cs_site_enter(int func, void *ra0)
{
    uintptr_t ra = (uintptr_t)(cs_tl_site ? cs_tl_site : ra0);
    cs_sites_t *t = cs_tl_sites;
    uint64_t *e = 0;
    /* The table's keys are program addresses (a return address in the MPI's Fortran
     * layer is unwound to one by the slow path, and never a key itself unless it
     * cannot be unwound, which the slow path would find again), so a hit needs no
     * test of the pass-through ranges; a miss, or deeper call sites, go the slow way.
     * A return address in mpi4py is keyed by its Python line, never by itself, unless
     * the Python stack could not be read (cs_site_slow), so it always goes that way
     * (no range to test in a C program: cs_site_npy is 0). */
    if (__builtin_expect(t != 0 && cs_site_depth == 1 && !cs_site_python(ra), 1)) {
        for (uint64_t i = ((ra + (uint64_t)func) * 0x9E3779B97F4A7C15ull) >> 32 & t->mask;; i = (i + 1) & t->mask) {
            uint64_t *x = t->slot[i];
            if (!x) break;
            if (x[CS_SITE_RA] == ra && x[CS_SITE_FUNC] == (uint64_t)func) {
                e = x;
                break;
            }
        }
    }
    if (!e) e = cs_site_slow(func, ra); /* a new site (insert, maybe grow), or unwind */
    if (e) e[CS_SITE_CALLS]++;
    cs_tl_cur_site = e;
    return e;
}

/* The call of entry e (cs_site_enter) returns: the bytes it added to its function's
 * count and its ticks.  Bytes are added only when there are some, so the word a
 * late credit never touches stays the owner's alone. */
static inline void cs_site_leave(uint64_t *e, uint64_t bytes, uint64_t ticks)
{
    if (!e) return;
    if (bytes) e[CS_SITE_BYTES] += bytes;
    e[CS_SITE_TICKS] += ticks;
}

/* Bytes counted later for a request created at entry e (any thread; atomic).  A
 * negative count (a cancelled send taken back) wraps and sums back exactly. */
static inline void cs_site_credit(uint64_t *e, uint64_t bytes)
{
    if (e && bytes) __atomic_add_fetch(&e[CS_SITE_LATE], bytes, __ATOMIC_RELAXED);
}

static inline void cs_site_note(int func, void *ra0, uint64_t bytes, uint64_t ticks)
{
    cs_site_leave(cs_site_enter(func, ra0), bytes, ticks);
}

/* Entry points that call on into our own code (Fortran wrappers, Fortran Wait/Test)
 * save the program's return address for the C wrapper or hook below them. */
#define CS_SITE_BEGIN \
    void *cs_site_prev_ = cs_tl_site; \
    if (!cs_site_prev_) cs_tl_site = __builtin_return_address(0)
#define CS_SITE_END cs_tl_site = cs_site_prev_

#pragma GCC visibility pop

#endif
