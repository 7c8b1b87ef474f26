/* Snapshots: a helper thread inside each rank copies every counter (summed over
 * the thread slabs), the rank-wide words and the MPI_T performance variables to
 * snapshots.<rank>.bin every interval, without the application's help (it calls
 * no MPI function but MPI_T ones, so it works whatever thread level the program
 * asked for).  Each record is appended with one write(): a killed run keeps every
 * complete record.
 *
 * snapshots.<rank>.bin: 64-byte header {"CSSNAP01", u32 version, u32 0,
 * u64 record_words, u64 nonce, 32 bytes 0}, then records of record_words words:
 * seq, ticks, CLOCK_MONOTONIC ns, slab totals [slab_words], rank words
 * [CS_NCOUNTERS], pvar values as doubles [n].
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
            if (p->type == MPI_UNSIGNED) o[k] = ((unsigned *)buf)[k];
            else if (p->type == MPI_UNSIGNED_LONG) o[k] = (double)((unsigned long *)buf)[k];
            else if (p->type == MPI_UNSIGNED_LONG_LONG) o[k] = (double)((unsigned long long *)buf)[k];
            else if (p->type == MPI_INT) o[k] = ((int *)buf)[k];
            else if (p->type == MPI_DOUBLE) o[k] = ((double *)buf)[k];
            else o[k] = (double)((MPI_Count *)buf)[k];
        }
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
static uint64_t *record;
static size_t record_words;
static int write_failed;

static void sum_slabs(uint64_t *totals)
{
    size_t words = cs_hdr->slab_words;
    uint32_t n = cs_slabs_visible();
    memset(totals, 0, words * 8);
    for (uint32_t i = 0; i < n; i++) {
        const volatile uint64_t *s = cs_slab_at(i);
        for (size_t w = 0; w < words; w++) totals[w] += s[w];
    }
}

static void take_snapshot(void)
{
    size_t words = cs_hdr->slab_words;
    cs_hdr->tick1 = cs_ticks();
    cs_hdr->ns1 = cs_now_ns();
    record[0] = cs_hdr->seq + 1;
    record[1] = cs_hdr->tick1;
    record[2] = cs_hdr->ns1;
    sum_slabs(record + 3);
    for (int c = 0; c < CS_NCOUNTERS; c++)
        record[3 + words + c] = __atomic_load_n(&cs_rank_words[c], __ATOMIC_RELAXED);
    if (npvar_values) pvars_read((double *)(record + 3 + words + CS_NCOUNTERS));
    if (snap_fd >= 0 && !write_failed && cs_write_all(snap_fd, record, record_words * 8) != 0) {
        /* a partial record is dropped by readers; stop writing rather than
         * append records after a hole */
        write_failed = 1;
        cs_write_failed(snap_path, errno, "snapshots stop here");
    }
    __atomic_store_n(&cs_hdr->seq, record[0], __ATOMIC_RELEASE);
}

static void *snap_main(void *arg)
{
    (void)arg;
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

int cs_snap_start(const char *dir, double interval_s)
{
    char *path = snap_path;
    snprintf(path, sizeof snap_path, "%s/snapshots.%d.bin", dir, cs_world_rank);
    snap_fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND, 0600);
    if (snap_fd < 0) {
        cs_write_failed(path, errno, "no snapshots");
        return -1;
    }
    record_words = 3 + cs_hdr->slab_words + CS_NCOUNTERS + (size_t)npvar_values;
    record = calloc(record_words, 8);
    uint64_t header[8] = {0};
    memcpy(header, "CSSNAP01", 8);
    header[1] = 1; /* version (u32) + 0 */
    header[2] = record_words;
    header[3] = cs_hdr->nonce;
    if (!record || cs_write_all(snap_fd, header, sizeof header) != 0) {
        if (record)
            cs_write_failed(path, errno, "no snapshots");
        else
            fprintf(stderr, CS_PREFIX "out of memory for %s: no snapshots\n", path);
        close(snap_fd);
        snap_fd = -1;
        return -1;
    }
    snap_interval = interval_s;
    take_snapshot(); /* time zero */
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
    if (session != MPI_T_PVAR_SESSION_NULL) {
        for (int i = 0; i < npvars; i++) MPI_T_pvar_handle_free(session, &pvars[i].handle);
        MPI_T_pvar_session_free(&session);
    }
    if (t_initialised) MPI_T_finalize();
    t_initialised = 0;
}
