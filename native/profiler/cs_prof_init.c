/* Start and end of profiling: MPI_Init/Init_thread/Finalize, the mapped counter
 * file with its per-thread slabs, and the metadata file that describes it.
 *
 * Environment (set by `commscope profile`; the library also works when linked
 * or preloaded by hand):
 *   COMMSCOPE_PROFILE_DIR   where counters.<rank>.{bin,json} go (default ./commscope-profile)
 *   COMMSCOPE_COUNTERS      comma-separated sets: bytes,peers,bins,requests,timers,trace,pvars
 *                           (default: every set but timers and trace)
 *   COMMSCOPE_SNAPSHOT_MS   snapshot interval in ms (default 500; 0 = none)
 *   COMMSCOPE_MAX_THREADS   slabs per rank (default 64; the file reserves them all on disk)
 *   COMMSCOPE_MAX_REQUESTS  request-table size (default 131072)
 *   COMMSCOPE_COLL_SMALL_BYTES, COMMSCOPE_COLL_SMALL_COMM  collective-bin breakpoints
 *   COMMSCOPE_TRACE_LIMIT   trace bytes per rank (default 1 GiB), COMMSCOPE_TRACE_BUFFER
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cs_prof_hooks.h"

int cs_sets = 0;
int cs_clock_wanted = 0;
int cs_world_size = 0;
int cs_world_rank = -1;
cs_header_t *cs_hdr = 0;
uint64_t *cs_rank_words = 0;
long long cs_coll_small_bytes = 2048;
int cs_coll_small_comm = 16;

__thread uint64_t *cs_tl_slab __attribute__((tls_model("initial-exec"))) = 0;
static __thread int tl_index __attribute__((tls_model("initial-exec"))) = -1;
static __thread uint64_t tl_request_seq __attribute__((tls_model("initial-exec"))) = 0;
__thread MPI_Datatype cs_tl_type __attribute__((tls_model("initial-exec")));
__thread long long cs_tl_type_size __attribute__((tls_model("initial-exec"))) = 0;
__thread unsigned cs_tl_type_gen __attribute__((tls_model("initial-exec"))) = ~0u;
volatile unsigned cs_type_generation = 0;

void cs_write_failed(const char *path, int err, const char *then)
{
    fprintf(stderr, CS_PREFIX "rank %d: cannot write %s: %s [errno %d]; %s\n", cs_world_rank, path,
            strerror(err), err, then);
}

int cs_write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return -1;
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Calls made before MPI_Init (or with profiling off) land in a scratch slab that
 * nobody reads (no set is on then, so only the fixed part is ever touched). */
static uint64_t scratch_slab[CS_OFF_PEERS + 8];
static size_t slab_words;
static char *base;
static size_t map_bytes;
static int threads_max = 64;
static char dir[4096];
static double snapshot_s = 0.5;
static int chosen_sets; /* cs_sets is only published once everything is set up */

uint64_t cs_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t *cs_slab_at(int i) { return (uint64_t *)(base + CS_HEADER_BYTES + (size_t)i * slab_words * 8); }

int cs_thread_index(void) { return tl_index; }

uint64_t *cs_slab_claim(void)
{
    if (!cs_hdr) return scratch_slab; /* not cached: the thread claims a slab after init */
    uint32_t i = __atomic_fetch_add(&cs_hdr->nslabs, 1, __ATOMIC_RELAXED);
    if (i >= cs_hdr->max_slabs) {
        /* More threads than slabs: share the last one (counts may then be low;
         * the reader says so from overflow_threads). */
        __atomic_fetch_add(&cs_hdr->overflow_threads, 1, __ATOMIC_RELAXED);
        __atomic_store_n(&cs_hdr->nslabs, cs_hdr->max_slabs, __ATOMIC_RELAXED);
        i = cs_hdr->max_slabs - 1;
    } else {
        int64_t *tids = (int64_t *)((char *)cs_hdr + CS_TIDS_AT);
        tids[i] = (int64_t)syscall(SYS_gettid);
    }
    tl_index = (int)i;
    cs_tl_slab = cs_slab_at((int)i);
    return cs_tl_slab;
}

uint64_t cs_next_request_id(void)
{
    if (tl_index < 0) cs_slab();
    return ((uint64_t)(tl_index + 1) << 40) | ++tl_request_seq;
}

long long cs_type_size_slow(MPI_Datatype type)
{
    int size = 0;
    if (type == MPI_DATATYPE_NULL || PMPI_Type_size(type, &size) != MPI_SUCCESS) size = 0;
    cs_tl_type = type;
    cs_tl_type_size = size;
    cs_tl_type_gen = cs_type_generation;
    return size;
}

static int comm_size_of(MPI_Comm comm)
{
    const cs_comm_t *c = comm == MPI_COMM_WORLD ? 0 : cs_comm_lookup(comm);
    return c ? c->size : cs_world_size;
}

long long cs_vbytes(const void *sendbuf, const int *sendcounts, MPI_Datatype sendtype,
                    const int *recvcounts, MPI_Datatype recvtype, MPI_Comm comm)
{
    int n = comm_size_of(comm);
    const int *counts = (sendbuf == MPI_IN_PLACE || !sendcounts) ? recvcounts : sendcounts;
    MPI_Datatype type = (sendbuf == MPI_IN_PLACE || !sendcounts) ? recvtype : sendtype;
    long long total = 0;
    for (int i = 0; counts && i < n; i++) total += counts[i];
    return cs_bytes(total, type);
}

long long cs_wbytes(const void *sendbuf, const int *sendcounts, const MPI_Datatype *sendtypes,
                    const int *recvcounts, const MPI_Datatype *recvtypes, MPI_Comm comm)
{
    int n = comm_size_of(comm);
    int inplace = sendbuf == MPI_IN_PLACE;
    long long total = 0;
    for (int i = 0; i < n; i++)
        total += inplace ? cs_bytes(recvcounts[i], recvtypes[i]) : cs_bytes(sendcounts[i], sendtypes[i]);
    return total;
}

void cs_on_start(int func, MPI_Request req, uint64_t t0)
{
    (void)func;
    cs_req_t e;
    if (!cs_tracking_requests() || !cs_req_get(req, &e, 1)) return;
    uint64_t *s = cs_slab();
    if (cs_sets & CS_SET_REQUESTS) {
        s[CS_C_requests_started]++;
        cs_sentinel_add(CS_C_outstanding_requests, CS_C_outstanding_requests_hwm, 1);
        if (e.kind == CS_REQ_RECV) cs_sentinel_add(CS_C_posted_receives, CS_C_posted_receives_hwm, 1);
    }
    if (e.kind == CS_REQ_SEND) cs_count_sent(s, e.func, e.bytes, e.peer, e.comm);
    if (cs_sets & CS_SET_TRACE)
        cs_trace(e.kind == CS_REQ_SEND ? CS_EV_ISEND : CS_EV_IRECV, t0, e.id, e.bytes, e.peer, e.tag,
                 e.comm, 0);
}

/* ---- set-up ------------------------------------------------------------ */

static long env_long(const char *name, long dflt, long min)
{
    const char *v = getenv(name);
    if (!v || !*v) return dflt;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < min) {
        fprintf(stderr, CS_PREFIX "ignoring %s=%s (expected a whole number >= %ld)\n", name, v, min);
        return dflt;
    }
    return x;
}

static const struct { const char *name; int bit; } SET_NAMES[] = {
    {"bytes", CS_SET_BYTES}, {"peers", CS_SET_PEERS}, {"bins", CS_SET_BINS},
    {"requests", CS_SET_REQUESTS}, {"timers", CS_SET_TIMERS}, {"trace", CS_SET_TRACE},
    {"pvars", CS_SET_PVARS},
};
#define NSETS ((int)(sizeof SET_NAMES / sizeof SET_NAMES[0]))

static int parse_sets(const char *text)
{
    if (!text || !*text || !strcmp(text, "default"))
        return CS_SET_BYTES | CS_SET_PEERS | CS_SET_BINS | CS_SET_REQUESTS | CS_SET_PVARS;
    int sets = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", text);
    for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(0, ",", &save)) {
        int found = !strcmp(tok, "calls");
        if (!strcmp(tok, "all")) {
            sets |= ~CS_SET_TRACE & ((1 << NSETS) - 1);
            found = 1;
        }
        for (int i = 0; i < NSETS; i++)
            if (!strcmp(tok, SET_NAMES[i].name)) sets |= SET_NAMES[i].bit, found = 1;
        if (!found) fprintf(stderr, CS_PREFIX "unknown counter set '%s' ignored\n", tok);
    }
    return sets;
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static const char *const KIND_NAMES[] = {"regular", "timer", "watermark", "sentinel"};
static const char *set_name(int bit)
{
    for (int i = 0; i < NSETS; i++)
        if (SET_NAMES[i].bit == bit) return SET_NAMES[i].name;
    return "calls";
}

/* counters.<rank>.json, written once after the data file exists (temp + rename);
 * returns 0 or the errno of the failed step. */
static int write_metadata(int npvar_values, int thread_level)
{
    char path[4200], tmp[4300], host[256] = "", lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int liblen = 0;
    gethostname(host, sizeof host - 1);
    PMPI_Get_library_version(lib, &liblen);
    snprintf(path, sizeof path, "%s/counters.%d.json", dir, cs_world_rank);
    snprintf(tmp, sizeof tmp, "%s/.counters.%d.json.tmp", dir, cs_world_rank);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : 0;
    if (!f) return errno ? errno : EIO;
    fprintf(f, "{\n \"schema\": \"commscope.counters\",\n \"schema_version\": 1,\n");
    fprintf(f, " \"nonce\": \"%016llx\",\n \"rank\": %d,\n \"world_size\": %d,\n \"host\": ",
            (unsigned long long)cs_hdr->nonce, cs_world_rank, cs_world_size);
    json_string(f, host);
    fprintf(f, ",\n \"pid\": %d,\n \"mpi_library\": ", (int)getpid());
    json_string(f, lib);
    fprintf(f, ",\n \"thread_level\": %d,\n \"data_file\": \"counters.%d.bin\",\n", thread_level,
            cs_world_rank);
    fprintf(f, " \"data_bytes\": %zu,\n \"header_bytes\": %d,\n \"slab_words\": %zu,\n", map_bytes,
            CS_HEADER_BYTES, slab_words);
    fprintf(f, " \"max_slabs\": %d,\n \"rank_words_at\": %d,\n \"tids_at\": %d,\n", threads_max,
            CS_RANK_WORDS_AT, CS_TIDS_AT);
#if defined(__x86_64__)
    fprintf(f, " \"tick_source\": \"rdtsc\",\n");
#else
    fprintf(f, " \"tick_source\": \"clock_monotonic_ns\",\n");
#endif
    fprintf(f, " \"sets\": [");
    for (int i = 0, first = 1; i < NSETS; i++)
        if (chosen_sets & SET_NAMES[i].bit) fprintf(f, "%s\"%s\"", first ? "" : ", ", SET_NAMES[i].name), first = 0;
    fprintf(f, "],\n \"snapshot_interval_s\": %g,\n", snapshot_s);
    fprintf(f, " \"counters\": [\n");
    int idx = 0;
#define CS_COUNTER(name, kind, scope, set, unit, desc)                                          \
    fprintf(f, "  {\"name\": \"%s\", \"kind\": \"%s\", \"scope\": \"%s\", \"set\": \"%s\", "     \
               "\"unit\": \"%s\", \"offset\": %d, \"description\": ",                          \
            #name, KIND_NAMES[CS_KIND_##kind], CS_SCOPE_##scope == CS_SCOPE_RANK ? "rank" : "thread", \
            set_name(CS_SET_##set), unit, idx++);                                               \
    json_string(f, desc);                                                                       \
    fprintf(f, "}%s\n", idx < CS_NCOUNTERS ? "," : "");
#include "counters.def"
#undef CS_COUNTER
    fprintf(f, " ],\n \"functions\": [\n");
    for (int i = 0; i < CS_NFUNC; i++) {
        fprintf(f, "  {\"name\": \"%s\", \"calls_offset\": %d, \"ticks_offset\": %d, \"bytes_offset\": %d",
                cs_function_names[i], CS_OFF_CALLS + i, CS_OFF_TICKS + i, CS_OFF_FBYTES + i);
        if (cs_function_bin[i] >= 0) fprintf(f, ", \"bins_offset\": %d", CS_OFF_BINS + cs_function_bin[i] * CS_NBINS);
        if (cs_function_coll[i] >= 0) fprintf(f, ", \"coll_offset\": %d", CS_OFF_COLL + cs_function_coll[i] * CS_NCOLLBINS);
        fprintf(f, "}%s\n", i + 1 < CS_NFUNC ? "," : "");
    }
    fprintf(f, " ],\n \"bins\": {\"count\": %d, \"rule\": \"bin 0: 0 bytes; bin b >= 1: [2^(b-1), 2^b) bytes; "
               "the last bin is open\"},\n", CS_NBINS);
    fprintf(f, " \"collective_bins\": {\"small_bytes_max\": %lld, \"small_comm_max\": %d, \"order\": "
               "[\"small_msg_small_comm\", \"small_msg_large_comm\", \"large_msg_small_comm\", "
               "\"large_msg_large_comm\"]},\n", cs_coll_small_bytes, cs_coll_small_comm);
    fprintf(f, " \"peers\": {\"offset\": %d, \"count\": %d, \"arrays\": [\"messages_sent\", \"bytes_sent\", "
               "\"messages_received\", \"bytes_received\"]},\n", CS_OFF_PEERS, cs_world_size);
    fprintf(f, " \"snapshot_file\": \"snapshots.%d.bin\",\n \"snapshot_header_bytes\": 64,\n", cs_world_rank);
    fprintf(f, " \"snapshot_record_words\": %zu,\n", 3 + slab_words + CS_NCOUNTERS + (size_t)npvar_values);
    fprintf(f, " \"pvars\": ");
    cs_pvars_describe(f);
    fprintf(f, "\n}\n");
    errno = 0;
    int err = fflush(f) != 0 || ferror(f) ? (errno ? errno : EIO) : 0;
    if (fclose(f) != 0 && !err)
        err = errno;
    if (!err && rename(tmp, path) != 0)
        err = errno;
    if (err)
        unlink(tmp);
    return err;
}

static int map_counter_file(void)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/counters.%d.bin", dir, cs_world_rank);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        cs_write_failed(path, errno, errno == EEXIST ? "a profile is already there, not overwritten; "
                                                     "this rank is not profiled"
                                                   : "this rank is not profiled");
        return -1;
    }
    map_bytes = CS_HEADER_BYTES + (size_t)threads_max * slab_words * 8;
    /* posix_fallocate reserves the blocks now, so a full disk is an error here and
     * not a SIGBUS later when a counter is first touched. */
    int err = posix_fallocate(fd, 0, (off_t)map_bytes);
    if (err) {
        cs_write_failed(path, err, "this rank is not profiled");
        close(fd);
        unlink(path);
        return -1;
    }
    base = mmap(0, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (base == MAP_FAILED) {
        fprintf(stderr, CS_PREFIX "cannot map %s: %s\n", path, strerror(errno));
        base = 0;
        return -1;
    }
    cs_header_t *h = (cs_header_t *)base;
    memcpy(h->magic, "CSCOUNT1", 8);
    h->version = 1;
    h->header_bytes = CS_HEADER_BYTES;
    h->slab_words = slab_words;
    h->max_slabs = (uint32_t)threads_max;
    h->nonce = ((uint64_t)getpid() << 32) ^ cs_now_ns() ^ ((uint64_t)cs_world_rank << 48);
    h->rank = cs_world_rank;
    h->world_size = cs_world_size;
    h->pid = (int32_t)getpid();
    h->tick0 = h->tick1 = cs_ticks();
    h->ns0 = h->ns1 = cs_now_ns();
    cs_rank_words = (uint64_t *)(base + CS_RANK_WORDS_AT);
    __atomic_store_n(&h->state, CS_STATE_RUNNING, __ATOMIC_RELEASE);
    return 0;
}

static void start(int thread_level)
{
    const char *d = getenv("COMMSCOPE_PROFILE_DIR");
    snprintf(dir, sizeof dir, "%s", d && *d ? d : "commscope-profile");
    PMPI_Comm_rank(MPI_COMM_WORLD, &cs_world_rank);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        cs_write_failed(dir, errno, "not profiling");
        return;
    }
    PMPI_Comm_size(MPI_COMM_WORLD, &cs_world_size);
    int sets = chosen_sets = parse_sets(getenv("COMMSCOPE_COUNTERS"));
    threads_max = (int)env_long("COMMSCOPE_MAX_THREADS", 64, 1);
    if (threads_max > CS_MAX_SLABS_LIMIT) threads_max = CS_MAX_SLABS_LIMIT;
    snapshot_s = env_long("COMMSCOPE_SNAPSHOT_MS", 500, 0) / 1000.0;
    cs_coll_small_bytes = env_long("COMMSCOPE_COLL_SMALL_BYTES", 2048, 0);
    cs_coll_small_comm = (int)env_long("COMMSCOPE_COLL_SMALL_COMM", 16, 1);
    slab_words = (CS_OFF_PEERS + 4 * (size_t)cs_world_size + 7) & ~(size_t)7; /* whole cache lines */
    if (cs_reqs_init(env_long("COMMSCOPE_MAX_REQUESTS", 131072, 64)) != 0 || map_counter_file() != 0)
        return;
    cs_hdr = (cs_header_t *)base;
    cs_comms_init(dir);
    int npv = (sets & CS_SET_PVARS) ? cs_pvars_init() : 0;
    if (sets & CS_SET_TRACE)
        cs_trace_init(dir, env_long("COMMSCOPE_TRACE_LIMIT", 1L << 30, 4096),
                      (int)env_long("COMMSCOPE_TRACE_BUFFER", 4096, 16));
    int err = write_metadata(npv, thread_level);
    if (err) {
        char path[4200];
        snprintf(path, sizeof path, "%s/counters.%d.json", dir, cs_world_rank);
        cs_write_failed(path, err, "this rank's counters cannot be read");
    }
    cs_clock_wanted = (sets & (CS_SET_TIMERS | CS_SET_TRACE)) != 0;
    __atomic_store_n(&cs_sets, sets, __ATOMIC_RELEASE);
    cs_snap_start(dir, snapshot_s);
}

static void finish(void)
{
    if (!cs_hdr) return;
    cs_snap_stop(); /* takes the last snapshot */
    cs_trace_finish();
    cs_comms_finish();
    cs_hdr->tick1 = cs_ticks();
    cs_hdr->ns1 = cs_now_ns();
    __atomic_store_n(&cs_hdr->state, CS_STATE_FINALIZED, __ATOMIC_RELEASE);
    msync(base, map_bytes, MS_ASYNC);
}

/* ---- the wrappers that start and end it ---------------------------------- */

CS_EXPORT int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) {
        int level = MPI_THREAD_SINGLE;
        PMPI_Query_thread(&level);
        start(level);
        cs_slab()[CS_OFF_CALLS + CS_F_MPI_Init]++;
    }
    return rc;
}

CS_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) {
        start(*provided);
        cs_slab()[CS_OFF_CALLS + CS_F_MPI_Init_thread]++;
    }
    return rc;
}

/* MPI_Pcontrol(2) takes a snapshot at that point of the program; other levels are
 * only counted (profiling stays on: counts stay exact). */
CS_EXPORT int MPI_Pcontrol(const int level, ...)
{
    cs_slab()[CS_OFF_CALLS + CS_F_MPI_Pcontrol]++;
    if (level == 2 && cs_hdr) cs_snap_now();
    return MPI_SUCCESS;
}

CS_EXPORT int MPI_Finalize(void)
{
    cs_slab()[CS_OFF_CALLS + CS_F_MPI_Finalize]++;
    finish();
    __atomic_store_n(&cs_sets, 0, __ATOMIC_RELEASE);
    return PMPI_Finalize();
}
