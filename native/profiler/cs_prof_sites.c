/* Call sites: the slow path of cs_prof_sites.h (tables, unwinding) and the record
 * each rank appends at MPI_Finalize.
 *
 * raw/callsites.<node>.jsonl holds one line per rank, appended with a single
 * O_APPEND write (so the ranks of a node share one file and never interleave):
 *   {"rank": R, "pid": P, "depth": N, "lost": L, "trace_sites": T,
 *    "sites": [["MPI_Send", calls, bytes, ticks, addr, caller addr, ...], ...],
 *    "python_sites": [[id, "script.py", line, "function"], ...]   (mpi4py; when any)
 *    "objects": [{"path": ..., "base": ..., "build_id": "hex" or null, "size": ...,
 *                 "mtime_ns": ..., "segments": [[lo, hi], ...]}, ...]}
 * Addresses are absolute; an object's load bias ("base") turns them into the ELF's
 * own addresses, and its GNU build id, read from the PT_NOTE in memory, tells the
 * resolver whether the file on disk is still the one that ran.  Only objects that
 * hold a recorded address are listed: a site of the table, or one of the T distinct
 * call sites of the rank's trace records (--trace; then the line is written even
 * without --callsites, with depth 0 and no sites).  A site whose address is below
 * CS_PY_SITE_MAX is a Python line (mpi4py): that id of "python_sites", in the table
 * and in the trace's records alike.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cs_prof_sites.h"
#include "cs_prof_state.h"

int cs_site_depth, cs_site_width = CS_SITE_UP, cs_site_npass, cs_site_npy;
uintptr_t cs_site_pass[8][2], cs_site_py[4][2];
__thread cs_sites_t *cs_tl_sites __attribute__((tls_model("initial-exec")));
__thread void *cs_tl_site __attribute__((tls_model("initial-exec")));
__thread uint64_t *cs_tl_cur_site __attribute__((tls_model("initial-exec")));

static cs_sites_t *all_tables;   /* pushed atomically by each thread's first call */
static uintptr_t own_lo, own_hi; /* this library's text: frames to skip when unwinding */

/* The MPI's Fortran libraries: a C wrapper called from them was called by a Fortran
 * program (MPICH's mpif.h layer calls MPI_*), whose line is one frame further up. */
static int is_fortran_layer(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    static const char *const names[] = {"libmpichfort", "libmpifort", "libmpichf90", "libfmpich",
                                        "libmpi_mpifh", "libmpi_usempi", "libmpi_usempif08"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strncmp(base, names[i], strlen(names[i]))) return 1;
    return 0;
}

/* mpi4py's extension modules (.../mpi4py/MPI.cpython-311-x86_64-linux-gnu.so): a C
 * wrapper called from them was called by a Python line.  Their package directory
 * (with the trailing '/') tells the Python frames of mpi4py's own .py files. */
static char py_pkgdir[4096];

static int is_mpi4py(const char *path)
{
    const char *base = strrchr(path, '/');
    if (!base || base - path < 7 || strncmp(base - 7, "/mpi4py", 7) || strncmp(base + 1, "MPI.", 4))
        return 0;
    if (!py_pkgdir[0] && (size_t)(base + 1 - path) < sizeof py_pkgdir)
        memcpy(py_pkgdir, path, (size_t)(base + 1 - path));
    return 1;
}

static int find_ranges(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size, (void)data;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type != PT_LOAD || !(p->p_flags & PF_X)) continue;
        uintptr_t a = info->dlpi_addr + p->p_vaddr;
        if (a < lo) lo = a;
        if (a + p->p_memsz > hi) hi = a + p->p_memsz;
    }
    if (!hi) return 0;
    uintptr_t me = (uintptr_t)&find_ranges;
    if (me >= lo && me < hi)
        own_lo = lo, own_hi = hi;
    else if (info->dlpi_name && is_mpi4py(info->dlpi_name) && cs_site_npy < 4) {
        cs_site_py[cs_site_npy][0] = lo;
        cs_site_py[cs_site_npy][1] = hi;
        cs_site_npy++;
    } else if (info->dlpi_name && is_fortran_layer(info->dlpi_name) && cs_site_npass < 8) {
        cs_site_pass[cs_site_npass][0] = lo;
        cs_site_pass[cs_site_npass][1] = hi;
        cs_site_npass++;
    }
    return 0;
}

static void py_find_api(void);

void cs_sites_init(int depth)
{
    static int scanned;
    if (depth > 0) {
        cs_site_depth = depth > 16 ? 16 : depth;
        cs_site_width = CS_SITE_UP + cs_site_depth - 1;
    }
    if (!scanned) {
        scanned = 1;
        dl_iterate_phdr(find_ranges, 0);
    }
    if (cs_site_npy) py_find_api();           /* mpi4py is loaded: its Python, now (one thread) */
    if (cs_site_depth > 1 || cs_site_npass) { /* load the unwinder now, not inside a call */
        void *warm[4];
        backtrace(warm, 4);
    }
}

/* ---- Python call sites (mpi4py) ---------------------------------------------
 *
 * Only for a call whose return address is in mpi4py's extension module, and only
 * with --callsites or --trace.  The CPython C API is found with dlsym (nothing links against
 * Python; a C program has none of it and never gets here).  Everything below runs
 * with the GIL held (taken for the moment when mpi4py released it around the MPI
 * call, as it does for the blocking ones), which also guards the global tables:
 *   code objects seen (kept alive, so a pointer is never reused): file, function,
 *   and whether the frame is mpi4py's own (its package's .py files) or importlib's;
 *   (code object, bytecode offset) -> Python site id; site id -> file, line, function.
 * Per call: the GIL (when released), one frame or a few, two hash look-ups; a new
 * site: its line (PyFrame_GetLineNumber) and names, once.  No Python (interpreter
 * not initialised or finalising: mpi4py's MPI_Finalize runs from Py_AtExit), no
 * Python frame, or a call re-entered from inside this code: the return address. */
typedef void PyObject_;
static struct { /* found at MPI_Init (cs_sites_init) when mpi4py is loaded */
    int tried, ok;
    int (*is_initialized)(void), (*finalizing)(void), (*gil_check)(void);
    int (*gil_ensure)(void);
    void (*gil_release)(int);
    PyObject_ *(*get_frame)(void), *(*frame_back)(PyObject_ *), *(*frame_code)(PyObject_ *);
    int (*frame_line)(PyObject_ *), (*frame_lasti)(PyObject_ *);
    PyObject_ *(*getattr)(PyObject_ *, const char *);
    const char *(*utf8)(PyObject_ *);
    void (*incref)(PyObject_ *), (*decref)(PyObject_ *);
    void (*err_fetch)(PyObject_ **, PyObject_ **, PyObject_ **);
    void (*err_restore)(PyObject_ *, PyObject_ *, PyObject_ *);
    void (*err_clear)(void);
} py;
static __thread int py_busy __attribute__((tls_model("initial-exec")));

typedef struct {
    PyObject_ *code;
    char *file, *func;
    int skip;
} py_code_t;
typedef struct {
    PyObject_ *code;
    int64_t at;
    uint32_t id;
} py_key_t;
typedef struct {
    char *file, *func;
    int line;
} py_site_t;
static py_code_t *py_codes; /* open addressing by code pointer */
static uint64_t py_codes_mask, py_codes_used;
static py_key_t *py_keys; /* open addressing by (code, offset) */
static uint64_t py_keys_mask, py_keys_used;
static py_site_t *py_sites; /* by id - 1 */
static uint32_t py_nsites, py_sites_cap;

static void py_find_api(void)
{
    if (py.tried) return;
    py.tried = 1;
#define CS_PY(field, name) *(void **)&py.field = dlsym(RTLD_DEFAULT, name)
    CS_PY(is_initialized, "Py_IsInitialized");
    CS_PY(finalizing, "Py_IsFinalizing");
    if (!py.finalizing) CS_PY(finalizing, "_Py_IsFinalizing");
    CS_PY(gil_check, "PyGILState_Check");
    CS_PY(gil_ensure, "PyGILState_Ensure");
    CS_PY(gil_release, "PyGILState_Release");
    CS_PY(get_frame, "PyEval_GetFrame");
    CS_PY(frame_back, "PyFrame_GetBack");
    CS_PY(frame_code, "PyFrame_GetCode");
    CS_PY(frame_line, "PyFrame_GetLineNumber");
    CS_PY(frame_lasti, "PyFrame_GetLasti"); /* 3.11+; else the line is the key */
    CS_PY(getattr, "PyObject_GetAttrString");
    CS_PY(utf8, "PyUnicode_AsUTF8");
    CS_PY(incref, "Py_IncRef");
    CS_PY(decref, "Py_DecRef");
    CS_PY(err_fetch, "PyErr_Fetch");
    CS_PY(err_restore, "PyErr_Restore");
    CS_PY(err_clear, "PyErr_Clear");
#undef CS_PY
    py.ok = py.is_initialized && py.gil_check && py.gil_ensure && py.gil_release && py.get_frame &&
            py.frame_back && py.frame_code && py.frame_line && py.getattr && py.utf8 && py.incref &&
            py.decref && py.err_fetch && py.err_restore && py.err_clear;
}

static uint64_t py_hash(uint64_t x) { return (x * 0x9E3779B97F4A7C15ull) >> 32; }

static char *py_attr(PyObject_ *o, const char *name, const char *fallback)
{
    PyObject_ *v = py.getattr(o, name);
    if (!v) {
        py.err_clear();
        return fallback ? py_attr(o, fallback, 0) : strdup("?");
    }
    const char *u = py.utf8(v);
    char *out = strdup(u ? u : "?");
    if (!u) py.err_clear();
    py.decref(v);
    return out;
}

/* Doubles an open-addressing table of `size`-byte items whose first word is the key
 * pointer (0: empty); `rehash` gives an item's home slot. */
static int py_grow(void **tab, uint64_t *mask, size_t size, uint64_t (*home)(const void *))
{
    uint64_t cap = *tab ? (*mask + 1) * 2 : 64, old_cap = *tab ? *mask + 1 : 0;
    char *fresh = calloc(cap, size), *old = *tab;
    if (!fresh) return -1;
    for (uint64_t i = 0; i < old_cap; i++) {
        const void *it = old + i * size;
        if (!*(void *const *)it) continue;
        uint64_t j = home(it) & (cap - 1);
        while (*(void **)(fresh + j * size)) j = (j + 1) & (cap - 1);
        memcpy(fresh + j * size, it, size);
    }
    free(old);
    *tab = fresh;
    *mask = cap - 1;
    return 0;
}

static uint64_t code_home(const void *it) { return py_hash((uintptr_t)((const py_code_t *)it)->code); }
static uint64_t key_home(const void *it)
{
    const py_key_t *k = it;
    return py_hash((uintptr_t)k->code * 31 + (uint64_t)k->at);
}

/* What this code object is (inserted and kept alive on first sight); 0: out of memory. */
static py_code_t *py_code(PyObject_ *code)
{
    if (py_codes)
        for (uint64_t i = code_home(&(py_code_t){code}) & py_codes_mask;; i = (i + 1) & py_codes_mask) {
            if (py_codes[i].code == code) return &py_codes[i];
            if (!py_codes[i].code) break;
        }
    if ((py_codes_used + 1) * 2 > (py_codes ? py_codes_mask + 1 : 0) &&
        py_grow((void **)&py_codes, &py_codes_mask, sizeof *py_codes, code_home) != 0)
        return 0;
    py_code_t c = {code, py_attr(code, "co_filename", 0), py_attr(code, "co_qualname", "co_name"), 0};
    c.skip = (py_pkgdir[0] && !strncmp(c.file, py_pkgdir, strlen(py_pkgdir))) ||
             !strncmp(c.file, "<frozen importlib", 17);
    py.incref(code);
    uint64_t i = code_home(&c) & py_codes_mask;
    while (py_codes[i].code) i = (i + 1) & py_codes_mask;
    py_codes[i] = c;
    py_codes_used++;
    return &py_codes[i];
}

/* The site id of (code, offset) of frame f, inserted on first sight; 0: none. */
static uint32_t py_site_of(PyObject_ *f, PyObject_ *code, const py_code_t *c)
{
    int64_t at = py.frame_lasti ? py.frame_lasti(f) : py.frame_line(f);
    py_key_t k = {code, at, 0};
    if (py_keys)
        for (uint64_t i = key_home(&k) & py_keys_mask;; i = (i + 1) & py_keys_mask) {
            if (py_keys[i].code == code && py_keys[i].at == at) return py_keys[i].id;
            if (!py_keys[i].code) break;
        }
    if (py_nsites + 1 >= CS_PY_SITE_MAX) return 0;
    if ((py_keys_used + 1) * 2 > (py_keys ? py_keys_mask + 1 : 0) &&
        py_grow((void **)&py_keys, &py_keys_mask, sizeof *py_keys, key_home) != 0)
        return 0;
    if (py_nsites == py_sites_cap) {
        uint32_t cap = py_sites_cap ? 2 * py_sites_cap : 64;
        py_site_t *more = realloc(py_sites, sizeof *more * cap);
        if (!more) return 0;
        py_sites = more, py_sites_cap = cap;
    }
    py_sites[py_nsites] = (py_site_t){c->file, c->func, py.frame_line(f)};
    k.id = ++py_nsites;
    uint64_t i = key_home(&k) & py_keys_mask;
    while (py_keys[i].code) i = (i + 1) & py_keys_mask;
    py_keys[i] = k;
    py_keys_used++;
    return k.id;
}

/* The Python site ids of this call (made from mpi4py's module) into key: the first
 * frame outside mpi4py, then (--callsite-depth N) the N - 1 Python callers above it,
 * `depth_max` ids at most; 0 when there is none (key untouched). */
static uint32_t py_site(uintptr_t *key, int depth_max)
{
    if (!py.ok || py_busy || !py.is_initialized() || (py.finalizing && py.finalizing())) return 0;
    py_busy = 1; /* a call made while we run Python code (a finaliser) is not walked */
    int held = py.gil_check(), gil = held ? 0 : py.gil_ensure();
    PyObject_ *et, *ev, *etb;
    py.err_fetch(&et, &ev, &etb); /* the program's pending exception, untouched */
    uint32_t id = 0;
    PyObject_ *f = py.get_frame(), *owned = 0; /* borrowed; `owned` is a new reference */
    int k = 0;
    for (int depth = 0; f && depth < 256 && k < depth_max; depth++) {
        PyObject_ *code = py.frame_code(f);
        if (!code) break;
        const py_code_t *c = py_code(code);
        uint32_t at = c && !c->skip ? py_site_of(f, code, c) : 0;
        py.decref(code);
        if (!c || (!at && !c->skip)) break;
        if (at) {
            if (!k) id = at;
            key[k++] = at;
        }
        PyObject_ *back = py.frame_back(f);
        if (owned) py.decref(owned);
        f = owned = back;
    }
    if (owned) py.decref(owned);
    py.err_restore(et, ev, etb);
    if (!held) py.gil_release(gil);
    py_busy = 0;
    return id;
}

uintptr_t cs_site_python_line(uintptr_t ra, const uint64_t *e)
{
    if (e) return e[CS_SITE_RA]; /* the site id the table keyed the call by, or ra */
    uintptr_t key[1] = {ra};
    return py_site(key, 1) ? key[0] : ra;
}

static int in_own(uintptr_t a) { return a >= own_lo && a < own_hi; }

/* The program's frames from this call up, cs_site_depth of them at most, into out
 * (zeros past the end).  They start at `ra` when the unwinder sees it (the caller the
 * hot path saw); else, or when ra is in the MPI's Fortran layer, at the first frame
 * that is neither ours nor that layer's. */
static void unwind(uintptr_t ra, uintptr_t *out)
{
    void *frames[64];
    int got = backtrace(frames, 64), i0 = -1;
    if (!cs_site_passthrough(ra))
        for (int i = 0; i < got && i0 < 0; i++)
            if ((uintptr_t)frames[i] == ra) i0 = i;
    if (i0 < 0)
        for (int i = 0; i < got && i0 < 0; i++)
            if (!in_own((uintptr_t)frames[i]) && !cs_site_passthrough((uintptr_t)frames[i])) i0 = i;
    if (i0 < 0) { /* no unwind information: the immediate caller only */
        out[0] = ra;
        return;
    }
    int k = 0;
    if (!cs_site_passthrough(ra) && (uintptr_t)frames[i0] != ra) out[k++] = ra;
    for (int i = i0; i < got && k < cs_site_depth; i++) out[k++] = (uintptr_t)frames[i];
}

uintptr_t cs_site_program(uintptr_t ra)
{
    void *frames[64];
    int got = backtrace(frames, 64);
    for (int i = 0; i < got; i++) {
        uintptr_t a = (uintptr_t)frames[i];
        if (!in_own(a) && !cs_site_passthrough(a)) return a;
    }
    return ra; /* no unwind information: the MPI's Fortran layer is the site */
}

static cs_sites_t *table_new(void)
{
    cs_sites_t *t = calloc(1, sizeof *t);
    if (!t) return 0;
    t->mask = 255;
    t->slot = calloc(t->mask + 1, sizeof *t->slot);
    if (!t->slot) {
        free(t);
        return 0;
    }
    cs_sites_t *head = __atomic_load_n(&all_tables, __ATOMIC_RELAXED);
    do t->next = head;
    while (!__atomic_compare_exchange_n(&all_tables, &head, t, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
    return t;
}

static uint64_t hash(const uintptr_t *key, int func)
{
    uint64_t h = key[0] + (uint64_t)func;
    for (int i = 1; i < cs_site_depth; i++) h = h * 31 + key[i];
    return (h * 0x9E3779B97F4A7C15ull) >> 32;
}

static int same_key(const uint64_t *e, const uintptr_t *key, int func)
{
    return e[CS_SITE_RA] == key[0] && e[CS_SITE_FUNC] == (uint64_t)func &&
           (cs_site_depth == 1 || !memcmp(e + CS_SITE_UP, key + 1, sizeof(uint64_t) * (size_t)(cs_site_depth - 1)));
}

/* The slot of key: the one holding its entry, or the empty one where it goes. */
static uint64_t **slot(cs_sites_t *t, const uintptr_t *key, int func)
{
    for (uint64_t i = hash(key, func) & t->mask;; i = (i + 1) & t->mask)
        if (!t->slot[i] || same_key(t->slot[i], key, func)) return &t->slot[i];
}

/* Twice the slots; the entries stay where they are. */
static int grow(cs_sites_t *t)
{
    uint64_t cap = (t->mask + 1) * 2, old_cap = t->mask + 1;
    uint64_t **old = t->slot, **fresh = calloc(cap, sizeof *fresh);
    if (!fresh) return -1;
    t->slot = fresh;
    t->mask = cap - 1;
    for (uint64_t i = 0; i < old_cap; i++) {
        uint64_t *e = old[i];
        if (!e) continue;
        uintptr_t key[16];
        key[0] = e[CS_SITE_RA];
        for (int k = 1; k < cs_site_depth; k++) key[k] = e[CS_SITE_UP + k - 1];
        *slot(t, key, (int)e[CS_SITE_FUNC]) = e;
    }
    free(old);
    return 0;
}

/* A zeroed entry that never moves, from the thread's current block of 256. */
static uint64_t *entry_new(cs_sites_t *t)
{
    if (!t->block_left) {
        uint64_t *b = calloc(256, sizeof(uint64_t) * (size_t)cs_site_width);
        if (!b) return 0;
        t->block = b;
        t->block_left = 256;
    }
    uint64_t *e = t->block;
    t->block += cs_site_width;
    t->block_left--;
    return e;
}

uint64_t *cs_site_slow(int func, uintptr_t ra)
{
    cs_sites_t *t = cs_tl_sites;
    if (!t && !(t = cs_tl_sites = table_new())) return 0;
    uintptr_t key[16] = {ra};
    if (cs_site_python(ra) && py_site(key, cs_site_depth)) {
        /* the Python line and its Python callers */
    } else if (cs_site_depth > 1 || cs_site_passthrough(ra))
        unwind(ra, key);
    uint64_t **at = slot(t, key, func);
    if (*at) return *at;
    if ((t->used + 1) * 2 > t->mask + 1) {
        if (grow(t) != 0) {
            t->lost++;
            return 0;
        }
        at = slot(t, key, func);
    }
    uint64_t *e = entry_new(t);
    if (!e) {
        t->lost++;
        return 0;
    }
    e[CS_SITE_RA] = key[0];
    e[CS_SITE_FUNC] = (uint64_t)func;
    for (int i = 1; i < cs_site_depth; i++) e[CS_SITE_UP + i - 1] = key[i];
    *at = e;
    t->used++;
    return e;
}

/* ---- the record written at the end ----------------------------------------- */

typedef struct {
    FILE *f;
    uintptr_t *addrs; /* every recorded address, sorted */
    size_t naddrs;
    int first;
} objects_ctx;

static int has_address(const objects_ctx *c, uintptr_t lo, uintptr_t hi)
{
    size_t a = 0, b = c->naddrs; /* first address >= lo */
    while (a < b) {
        size_t m = (a + b) / 2;
        if (c->addrs[m] < lo)
            a = m + 1;
        else
            b = m;
    }
    return a < c->naddrs && c->addrs[a] < hi;
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

/* The GNU build id from the object's PT_NOTE segments, as mapped in memory. */
static void build_id(struct dl_phdr_info *info, FILE *f)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type != PT_NOTE) continue;
        const char *at = (const char *)(info->dlpi_addr + p->p_vaddr), *end = at + p->p_memsz;
        while (at + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)at;
            const char *name = at + sizeof *n, *desc = name + ((n->n_namesz + 3) & ~3u);
            if (desc + n->n_descsz > end) break;
            if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && !memcmp(name, "GNU", 4)) {
                fputc('"', f);
                for (unsigned k = 0; k < n->n_descsz; k++) fprintf(f, "%02x", (unsigned char)desc[k]);
                fputc('"', f);
                return;
            }
            at = desc + ((n->n_descsz + 3) & ~3u);
        }
    }
    fputs("null", f);
}

static int write_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    objects_ctx *c = data;
    int any = 0;
    for (int i = 0; i < info->dlpi_phnum && !any; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + p->p_vaddr;
        any = p->p_type == PT_LOAD && (p->p_flags & PF_X) && has_address(c, lo, lo + p->p_memsz);
    }
    if (!any) return 0;
    char path[4096] = "";
    if (info->dlpi_name && info->dlpi_name[0])
        snprintf(path, sizeof path, "%s", info->dlpi_name);
    else { /* the main program */
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
        path[n > 0 ? n : 0] = 0;
    }
    struct stat st;
    int have = path[0] && stat(path, &st) == 0;
    fprintf(c->f, "%s{\"path\": ", c->first ? "" : ", ");
    c->first = 0;
    json_str(c->f, path);
    fprintf(c->f, ", \"base\": %llu, \"build_id\": ", (unsigned long long)info->dlpi_addr);
    build_id(info, c->f);
    if (have)
        fprintf(c->f, ", \"size\": %lld, \"mtime_ns\": %lld", (long long)st.st_size,
                (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec);
    fprintf(c->f, ", \"segments\": [");
    for (int i = 0, first = 1; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type != PT_LOAD || !(p->p_flags & PF_X)) continue;
        uintptr_t lo = info->dlpi_addr + p->p_vaddr;
        fprintf(c->f, "%s[%llu, %llu]", first ? "" : ", ", (unsigned long long)lo,
                (unsigned long long)(lo + p->p_memsz));
        first = 0;
    }
    fprintf(c->f, "]}");
    return 0;
}

static int cmp_addr(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

void cs_sites_write(const char *path, int rank, const uint64_t *extra, size_t nextra)
{
    if (!cs_site_depth && !nextra) return;
    char *buf = 0;
    size_t len = 0, naddrs = 0, cap = 0;
    uint64_t lost = 0;
    uintptr_t *addrs = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) goto fail;
    fprintf(f, "{\"rank\": %d, \"pid\": %d, \"depth\": %d, \"sites\": [", rank, (int)getpid(), cs_site_depth);
    int first = 1;
    for (cs_sites_t *t = __atomic_load_n(&all_tables, __ATOMIC_ACQUIRE); t; t = t->next) {
        lost += t->lost;
        for (uint64_t i = 0; i <= t->mask; i++) {
            const uint64_t *e = t->slot[i];
            if (!e) continue;
            uint64_t bytes = e[CS_SITE_BYTES] + __atomic_load_n(&e[CS_SITE_LATE], __ATOMIC_RELAXED);
            fprintf(f, "%s[\"%s\", %llu, %llu, %llu, %llu", first ? "" : ", ",
                    cs_function_names[e[CS_SITE_FUNC]], (unsigned long long)e[CS_SITE_CALLS],
                    (unsigned long long)bytes, (unsigned long long)e[CS_SITE_TICKS],
                    (unsigned long long)e[CS_SITE_RA]);
            first = 0;
            for (int k = 1; k < cs_site_depth && e[CS_SITE_UP + k - 1]; k++)
                fprintf(f, ", %llu", (unsigned long long)e[CS_SITE_UP + k - 1]);
            fputc(']', f);
            for (int k = 0; k < cs_site_depth; k++) {
                uint64_t a = k ? e[CS_SITE_UP + k - 1] : e[CS_SITE_RA];
                if (a < CS_PY_SITE_MAX) continue; /* none, or a Python site id */
                if (naddrs == cap) {
                    uintptr_t *more = realloc(addrs, sizeof *addrs * (cap = cap ? 2 * cap : 256));
                    if (!more) goto fail;
                    addrs = more;
                }
                addrs[naddrs++] = a - 1; /* the call instruction: a return address may end a text segment */
            }
        }
    }
    /* the trace's sites: their objects are listed too (a Python site id is in python_sites) */
    for (size_t i = 0; i < nextra; i++) {
        if (extra[i] < CS_PY_SITE_MAX) continue;
        if (naddrs == cap) {
            uintptr_t *more = realloc(addrs, sizeof *addrs * (cap = cap ? 2 * cap : 256));
            if (!more) goto fail;
            addrs = more;
        }
        addrs[naddrs++] = (uintptr_t)extra[i] - 1;
    }
    if (addrs) qsort(addrs, naddrs, sizeof *addrs, cmp_addr);
    fprintf(f, "], \"lost\": %llu, \"trace_sites\": %zu", (unsigned long long)lost, nextra);
    if (py_nsites) { /* [id, file, line, function] of the Python sites (mpi4py) */
        fprintf(f, ", \"python_sites\": [");
        for (uint32_t i = 0; i < py_nsites; i++) {
            fprintf(f, "%s[%u, ", i ? ", " : "", i + 1);
            json_str(f, py_sites[i].file);
            fprintf(f, ", %d, ", py_sites[i].line);
            json_str(f, py_sites[i].func);
            fputc(']', f);
        }
        fputc(']', f);
    }
    fprintf(f, ", \"objects\": [");
    objects_ctx c = {f, addrs, naddrs, 1};
    dl_iterate_phdr(write_object, &c);
    fprintf(f, "]}\n");
    if (fclose(f) != 0) {
        f = 0;
        goto fail;
    }
    f = 0;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0 || cs_write_all(fd, buf, len) != 0) { /* one write: ranks never interleave */
        int err = errno;
        if (fd >= 0) close(fd);
        cs_write_failed(path, err, "this rank's call sites are lost");
    } else if (close(fd) != 0) {
        cs_write_failed(path, errno, "this rank's call sites are lost");
    }
    free(buf);
    free(addrs);
    return;
fail:
    if (f) fclose(f);
    free(buf);
    free(addrs);
    cs_write_failed(path, ENOMEM, "this rank's call sites are lost");
}
