/* Snapshots: a helper thread inside each rank merges its counters (the thread slabs,
 * their size-bin rows and peer tables, the rank-wide words) and the MPI_T performance
 * variables into one vector in the canonical layout (cs_prof_snap.h) every interval,
 * and appends what changed since the last one to the node's snapshot file, without
 * the application's help (it calls no MPI function but MPI_T ones, so it works
 * whatever thread level the program asked for).  Each record is appended with one
 * write(), so records of the node's ranks never interleave and a killed run keeps
 * every complete record.
 *
 * node.<node>.snap: a header (cs_snap_header_t) written by the rank that creates it,
 * then records: a head (cs_snap_record_t), n x u32 canonical index (padded to 8 bytes),
 * n x u64 value, holding the words that changed since the rank's previous record (its
 * first: every nonzero word); both records are layout.def's.  Pvar values are doubles'
 * bits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cs_prof_cpu.h"
#include "cs_prof_snap.h"

/* ---- MPI_T performance variables ----------------------------------------- */

#define MAX_PVAR_VALUES 4096
typedef struct {
    int index, count, offset, var_class, bind;
    MPI_Datatype type;
    MPI_T_pvar_handle handle;
    char name[128];
    char desc[256];
} pvar_t;

static pvar_t *pvars;
static int npvars, npvar_values;
static MPI_T_pvar_session session = MPI_T_PVAR_SESSION_NULL;
static MPI_Comm world_for_pvars;
static int t_initialised;

static int supported_type(MPI_Datatype t)
{
    return t == MPI_UNSIGNED || t == MPI_UNSIGNED_LONG || t == MPI_UNSIGNED_LONG_LONG ||
           t == MPI_INT || t == MPI_DOUBLE || t == MPI_COUNT;
}

/* Open MPI's MTL pvars describe the cm PML's transport; with another PML forced
 * (commscope's launcher forces ob1 on one node) the MTL's library is never set
 * up, and Open MPI 4.1's psm2 MTL dereferences NULL when a handle is allocated. */
static int unusable_pvar(const char *name)
{
    const char *pml = getenv("OMPI_MCA_pml");
    return strncmp(name, "mtl_", 4) == 0 && pml && *pml && strcmp(pml, "cm") != 0;
}

int cs_pvars_init(int world_model)
{
    int provided, num = 0;
    if (MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) return 0;
    t_initialised = 1;
    if (MPI_T_pvar_get_num(&num) != MPI_SUCCESS || num <= 0) return 0;
    if (MPI_T_pvar_session_create(&session) != MPI_SUCCESS) return 0;
    pvars = calloc((size_t)num, sizeof *pvars);
    if (!pvars) return 0;
    world_for_pvars = MPI_COMM_WORLD;
    for (int i = 0; i < num && npvar_values < MAX_PVAR_VALUES; i++) {
        pvar_t *p = &pvars[npvars];
        int nlen = sizeof p->name, dlen = sizeof p->desc, verb, readonly, continuous, atomic;
        MPI_T_enum en;
        if (MPI_T_pvar_get_info(i, p->name, &nlen, &verb, &p->var_class, &p->type, &en, p->desc, &dlen,
                                &p->bind, &readonly, &continuous, &atomic) != MPI_SUCCESS)
            continue;
        if (!supported_type(p->type) || unusable_pvar(p->name) ||
            (p->bind != MPI_T_BIND_NO_OBJECT && (p->bind != MPI_T_BIND_MPI_COMM || !world_model)))
            continue;
        void *obj = p->bind == MPI_T_BIND_MPI_COMM ? (void *)&world_for_pvars : 0;
        if (MPI_T_pvar_handle_alloc(session, i, obj, &p->handle, &p->count) != MPI_SUCCESS) continue;
        if (p->count <= 0 || npvar_values + p->count > MAX_PVAR_VALUES ||
            (!continuous && MPI_T_pvar_start(session, p->handle) != MPI_SUCCESS)) {
            MPI_T_pvar_handle_free(session, &p->handle);
            continue;
        }
        p->index = i;
        p->offset = npvar_values;
        npvar_values += p->count;
        npvars++;
    }
    return npvar_values;
}

static const char *pvar_class_name(int c)
{
    switch (c) {
    case MPI_T_PVAR_CLASS_STATE: return "state";
    case MPI_T_PVAR_CLASS_LEVEL: return "level";
    case MPI_T_PVAR_CLASS_SIZE: return "size";
    case MPI_T_PVAR_CLASS_PERCENTAGE: return "percentage";
    case MPI_T_PVAR_CLASS_HIGHWATERMARK: return "highwatermark";
    case MPI_T_PVAR_CLASS_LOWWATERMARK: return "lowwatermark";
    case MPI_T_PVAR_CLASS_COUNTER: return "counter";
    case MPI_T_PVAR_CLASS_AGGREGATE: return "aggregate";
    case MPI_T_PVAR_CLASS_TIMER: return "timer";
    default: return "generic";
    }
}

void cs_pvars_describe(void *fh)
{
    FILE *f = fh;
    fprintf(f, "[");
    for (int i = 0; i < npvars; i++) {
        pvar_t *p = &pvars[i];
        fprintf(f, "%s\n  {\"name\": \"", i ? "," : "");
        for (const char *c = p->name; *c; c++)
            if (*c != '"' && *c != '\\' && (unsigned char)*c >= 0x20) fputc(*c, f);
        fprintf(f, "\", \"offset\": %d, \"count\": %d, \"class\": \"%s\", \"bind\": \"%s\", \"description\": \"",
                p->offset, p->count, pvar_class_name(p->var_class),
                p->bind == MPI_T_BIND_MPI_COMM ? "MPI_COMM_WORLD (one value per peer)" : "none");
        for (const char *c = p->desc; *c; c++)
            if (*c != '"' && *c != '\\' && (unsigned char)*c >= 0x20) fputc(*c, f);
        fprintf(f, "\"}");
    }
    fprintf(f, "%s]", npvars ? "\n " : "");
}

static void pvars_read(double *out)
{
    union {
        unsigned u;
        unsigned long ul;
        unsigned long long ull;
        int i;
        double d;
        MPI_Count c;
    } buf[MAX_PVAR_VALUES];
    for (int i = 0; i < npvars; i++) {
        pvar_t *p = &pvars[i];
        double *o = out + p->offset;
        if (MPI_T_pvar_read(session, p->handle, buf) != MPI_SUCCESS) {
            for (int k = 0; k < p->count; k++) o[k] = __builtin_nan("");
            continue;
        }
        for (int k = 0; k < p->count; k++) {
            /* the buffer holds count values of the pvar's own type, packed */
            if (p->type == MPI_UNSIGNED)
                o[k] = ((unsigned *)buf)[k];
            else if (p->type == MPI_UNSIGNED_LONG)
                o[k] = (double)((unsigned long *)buf)[k];
            else if (p->type == MPI_UNSIGNED_LONG_LONG)
                o[k] = (double)((unsigned long long *)buf)[k];
            else if (p->type == MPI_INT)
                o[k] = ((int *)buf)[k];
            else if (p->type == MPI_DOUBLE)
                o[k] = ((double *)buf)[k];
            else
                o[k] = (double)((MPI_Count *)buf)[k];
        }
    }
}

/* ---- the canonical vector ----------------------------------------------------- */

#define CS_COUNTER(name, kind, scope, set, unit, desc) CS_SCOPE_##scope == CS_SCOPE_RANK,
static const char RANK_SCOPE[CS_NCOUNTERS] = {
#include "counters.def"
};

size_t cs_canonical_words(void)
{
    return CS_CAN_PEERS + (size_t)CS_NPEER_ARRAYS * (size_t)cs_world_size + (size_t)npvar_values;
}

size_t cs_canonical_pvars_at(void) { return CS_CAN_PEERS + (size_t)CS_NPEER_ARRAYS * (size_t)cs_world_size; }

/* Add slab s's peer table to the canonical peer arrays, reading it again if its owner
 * moved it meanwhile (odd or changed sequence number). */
static void add_peers(const volatile uint64_t *s, uint64_t *out)
{
    size_t W = (size_t)cs_world_size;
    for (int attempt = 0; attempt < 100; attempt++) {
        uint64_t seq = __atomic_load_n(&s[CS_OFF_PEERSEQ], __ATOMIC_ACQUIRE);
        if (seq & 1) continue;
        uint64_t cap = s[CS_OFF_PEERCAP], at = s[CS_OFF_PEERAT];
        const volatile uint64_t *t = at ? cs_block_at(at, 0) : s + CS_OFF_PEERS;
        if (!t) return;
        uint64_t *tmp = 0;
        if (cap) tmp = malloc(cap * CS_PEER_ENTRY * 8);
        if (!tmp) return;
        for (uint64_t i = 0; i < cap * CS_PEER_ENTRY; i++) tmp[i] = t[i];
        if (__atomic_load_n(&s[CS_OFF_PEERSEQ], __ATOMIC_ACQUIRE) != seq) {
            free(tmp);
            continue;
        }
        for (uint64_t i = 0; i < cap; i++) {
            uint64_t *e = tmp + i * CS_PEER_ENTRY;
            if (e[0] == 0 || e[0] > W) continue;
            for (int a = 0; a < CS_NPEER_ARRAYS; a++) out[CS_CAN_PEERS + a * W + (e[0] - 1)] += e[1 + a];
        }
        free(tmp);
        return;
    }
}

void cs_rank_totals(uint64_t *out)
{
    memset(out, 0, CS_CAN_PEERS * 8 + (size_t)CS_NPEER_ARRAYS * (size_t)cs_world_size * 8);
    uint32_t n = cs_slabs_visible();
    for (uint32_t i = 0; i < n; i++) {
        const volatile uint64_t *s = cs_slab_at(i);
        for (int c = 0; c < CS_NCOUNTERS; c++) out[c] += s[c];
        for (int f = 0; f < CS_NFUNC; f++) {
            out[CS_CAN_CALLS + f] += s[CS_FN(f, CS_FN_CALLS)];
            out[CS_CAN_TICKS + f] += s[CS_FN(f, CS_FN_TICKS)];
            out[CS_CAN_FBYTES + f] += s[CS_FN(f, CS_FN_BYTES)];
        }
        for (int w = 0; w < CS_NCOLL * CS_NCOLLBINS; w++) out[CS_CAN_COLL + w] += s[CS_OFF_COLL + w];
        const uint16_t *map = (const uint16_t *)(s + CS_OFF_BINMAP);
        for (int f = 0; f < CS_NSIZED; f++) {
            unsigned r = __atomic_load_n(&map[f], __ATOMIC_ACQUIRE);
            if (!r--) continue;
            uint64_t at = __atomic_load_n(&s[CS_OFF_BINBLOCKS + r / CS_BIN_BLOCK_ROWS], __ATOMIC_ACQUIRE);
            const volatile uint64_t *block = at ? cs_block_at(at, 0) : 0;
            if (!block) continue;
            const volatile uint64_t *row = block + (r % CS_BIN_BLOCK_ROWS) * CS_BIN_ROW_WORDS;
            for (int b = 0; b < CS_NBINS; b++) out[CS_CAN_BINS + f * CS_NBINS + b] += row[b];
        }
        add_peers(s, out);
    }
    for (int c = 0; c < CS_NCOUNTERS; c++) /* rank-scope counters live in the rank block */
        if (RANK_SCOPE[c]) out[c] = __atomic_load_n(&cs_rank_words[c], __ATOMIC_RELAXED);
    for (int f = 0; f < CS_NFUNC; f++) {
        out[CS_CAN_TOTAL_CALLS] += out[CS_CAN_CALLS + f];
        out[CS_CAN_TOTAL_TICKS] += out[CS_CAN_TICKS + f];
    }
}

/* ---- the snapshot thread -------------------------------------------------- */

static int snap_fd = -1;
static char snap_path[4200];
static pthread_t snap_thread;
static int snap_running;
static pthread_mutex_t snap_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t snap_wake = PTHREAD_COND_INITIALIZER;
static double snap_interval;
static uint64_t *now, *before; /* canonical vectors */
static uint32_t *changed_at;
static uint64_t *record;
static size_t nwords;
static int write_failed;

static void take_snapshot(void)
{
    cs_hdr->tick1 = cs_ticks();
    cs_hdr->ns1 = cs_now_ns();
    uint64_t seq = cs_hdr->seq + 1;
    cs_cpu_sample(); /* the cpu_* rank words, before they are merged */
    cs_rank_totals(now);
    if (npvar_values) pvars_read((double *)(now + cs_canonical_pvars_at()));
    uint32_t n = 0;
    for (size_t w = 0; w < nwords; w++)
        if (now[w] != before[w]) changed_at[n++] = (uint32_t)w;
    size_t index_words = (n + 1) / 2; /* n u32 indices, padded to whole words */
    enum { HEAD = sizeof(cs_snap_record_t) / 8 };
    *(cs_snap_record_t *)record = (cs_snap_record_t){
        .magic = CS_RECORD_MAGIC, .rank = cs_world_rank, .seq = seq, .ticks = cs_hdr->tick1, .ns = cs_hdr->ns1, .n = n};
    memset(record + HEAD, 0, index_words * 8);
    memcpy(record + HEAD, changed_at, (size_t)n * 4);
    for (uint32_t k = 0; k < n; k++) record[HEAD + index_words + k] = now[changed_at[k]];
    size_t bytes = (HEAD + index_words + n) * 8;
    if (snap_fd >= 0 && !write_failed && cs_write_all(snap_fd, record, bytes) != 0) {
        /* a partial record ends the readers' scan; stop writing rather than leave
         * records after it */
        write_failed = 1;
        cs_write_failed(snap_path, errno, "snapshots stop here");
    }
    uint64_t *t = before;
    before = now, now = t;
    __atomic_store_n(&cs_hdr->seq, seq, __ATOMIC_RELEASE);
}

static void *snap_main(void *arg)
{
    (void)arg;
    cs_cpu_skip_self();
    pthread_mutex_lock(&snap_lock);
    while (snap_running) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        long long ns = ts.tv_nsec + (long long)(snap_interval * 1e9);
        ts.tv_sec += ns / 1000000000ll;
        ts.tv_nsec = ns % 1000000000ll;
        pthread_cond_timedwait(&snap_wake, &snap_lock, &ts);
        if (snap_running) take_snapshot();
    }
    pthread_mutex_unlock(&snap_lock);
    return 0;
}

/* MPI_Pcontrol(2): a snapshot now, from the calling thread (programs mark points
 * at which the counters and MPI_T variables should be compared, e.g. "all
 * receives posted").  Serialised with the snapshot thread by snap_lock. */
void cs_snap_now(void)
{
    if (snap_fd < 0) return;
    pthread_mutex_lock(&snap_lock);
    take_snapshot();
    pthread_mutex_unlock(&snap_lock);
}

/* Open the node's snapshot file, writing its header if this rank comes first. */
static int open_snapshots(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0 || flock(fd, LOCK_EX) != 0) return fd < 0 ? -1 : (close(fd), -1);
    struct stat st;
    int rc = fstat(fd, &st);
    if (rc == 0 && st.st_size == 0) {
        cs_snap_header_t header = {.version = CS_SNAP_VERSION, .words = nwords};
        memcpy(header.magic, CS_SNAP_MAGIC, 8);
        rc = cs_write_all(fd, &header, sizeof header);
    }
    int err = errno;
    flock(fd, LOCK_UN);
    if (rc != 0) {
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

int cs_snap_start(const char *path, double interval_s)
{
    snprintf(snap_path, sizeof snap_path, "%s", path);
    nwords = cs_canonical_words();
    now = calloc(nwords, 8);
    before = calloc(nwords, 8);
    changed_at = calloc(nwords, 4);
    record = calloc(sizeof(cs_snap_record_t) / 8 + nwords + (nwords + 1) / 2, 8);
    if (!now || !before || !changed_at || !record) {
        fprintf(stderr, CS_PREFIX "out of memory for %s: no snapshots\n", path);
        return -1;
    }
    snap_fd = open_snapshots(path);
    if (snap_fd < 0) {
        cs_write_failed(path, errno, "no snapshots");
        return -1;
    }
    snap_interval = interval_s;
    take_snapshot();               /* time zero */
    if (interval_s <= 0) return 0; /* start, Pcontrol(2) and end only */
    snap_running = 1;
    if (pthread_create(&snap_thread, 0, snap_main, 0) != 0) {
        snap_running = 0;
        return -1;
    }
    return 0;
}

void cs_snap_stop(void)
{
    if (snap_running) {
        pthread_mutex_lock(&snap_lock);
        snap_running = 0;
        pthread_cond_signal(&snap_wake);
        pthread_mutex_unlock(&snap_lock);
        pthread_join(snap_thread, 0);
    }
    if (snap_fd >= 0) {
        take_snapshot(); /* the final totals */
        close(snap_fd);
        snap_fd = -1;
    }
}

void cs_pvars_stop(void)
{
    if (session != MPI_T_PVAR_SESSION_NULL) {
        for (int i = 0; i < npvars; i++) MPI_T_pvar_handle_free(session, &pvars[i].handle);
        MPI_T_pvar_session_free(&session);
    }
    if (t_initialised) MPI_T_finalize();
    t_initialised = 0;
}
