/* Start and end of profiling: MPI_Init/Init_thread/Finalize and MPI-4 sessions set
 * everything up (the counter file, tables, snapshots, trace) and write the metadata
 * file that describes the counter file.
 *
 * Settings: the COMMSCOPE_* environment (set by `commscope profile`; the library also
 * works when linked or preloaded by hand), read once into cs_settings by the parser
 * generated from settings.def, which lists each with its default.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cs_prof_clocks.h"
#include "cs_prof_cpu.h"
#include "cs_prof_end.h"
#include "cs_prof_init.h"
#include "cs_prof_snap.h"
#include "cs_prof_summary.h"
#include "cs_prof_tables.h"
#include "cs_prof_trace.h"

static char dir[4096];
static char node_key[256];
static double snapshot_s = 0.5;
static int npvar_values;

/* ---- set-up ------------------------------------------------------------ */

/* COMMSCOPE_COUNTERS -> CS_SET_* bits: set names (settings.def), "default", "all" (the
 * same: every set the default holds) or "calls" (none: calls are always counted). */
static int parse_sets(const char *text)
{
    int sets = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", text);
    for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(0, ",", &save)) {
        int found = !strcmp(tok, "calls");
        if (!strcmp(tok, "default") || !strcmp(tok, "all")) sets |= CS_DEFAULT_SETS, found = 1;
        for (int i = 0; i < CS_NSETS; i++)
            if (!strcmp(tok, cs_set_names[i].name)) sets |= cs_set_names[i].bit, found = 1;
        if (!found) fprintf(stderr, CS_PREFIX "unknown counter set '%s' ignored\n", tok);
    }
    return sets;
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static const char *const KIND_NAMES[] = {"regular", "timer", "watermark", "sentinel"};
static const char *set_name(int bit)
{
    for (int i = 0; i < CS_NSETS; i++)
        if (cs_set_names[i].bit == bit) return cs_set_names[i].name;
    return "calls";
}

/* node.<node>.json, written once by the rank that created the node file (temp +
 * rename): the layout every rank of the node shares; returns 0 or an errno. */
static int write_metadata(void)
{
    char path[4200], tmp[4300], host[256] = "", lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int liblen = 0;
    gethostname(host, sizeof host - 1);
    PMPI_Get_library_version(lib, &liblen);
    snprintf(path, sizeof path, "%s/node.%s.json", dir, node_key);
    snprintf(tmp, sizeof tmp, "%s/.node.%s.json.tmp", dir, node_key);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : 0;
    if (!f) return errno ? errno : EIO;
    fprintf(f, "{\n \"schema\": \"commscope.node\",\n \"schema_version\": 5,\n \"node\": ");
    json_string(f, node_key);
    fprintf(f, ",\n \"host\": ");
    json_string(f, host);
    fprintf(f, ",\n \"mpi_library\": ");
    json_string(f, lib);
    fprintf(f, ",\n \"world_size\": %d,\n \"nonce\": \"%016llx\",\n", cs_world_size,
            (unsigned long long)cs_node_nonce);
    fprintf(f, " \"node_file\": \"node.%s.bin\",\n \"snapshot_file\": \"node.%s.snap\",\n", node_key, node_key);
    fprintf(f, " \"comms_file\": \"node.%s.comms.csv\",\n \"files_file\": \"node.%s.files.csv\",\n", node_key, node_key);
#if defined(__x86_64__)
    fprintf(f, " \"tick_source\": \"rdtsc\",\n");
#else
    fprintf(f, " \"tick_source\": \"clock_monotonic_ns\",\n");
#endif
    /* the node's CPUs, against which its ranks x threads are judged */
    fprintf(f, " \"cpus_online\": %ld,\n", sysconf(_SC_NPROCESSORS_ONLN));
    fprintf(f, " \"snapshot_interval_s\": %g,\n \"settings\": ", snapshot_s);
    cs_settings_json(f); /* the numbers in effect (settings.def), for readers and tests */
    fprintf(f, ",\n \"layout\": {");
    int idx = 0;
#define CS_METADATA_JSON(key, value) fprintf(f, "%s\"%s\": %lld", idx++ ? ", " : "", key, value);
    CS_LAYOUT_VALUES(CS_METADATA_JSON)
    fprintf(f, "},\n");
    fprintf(f, " \"canonical\": {");
    idx = 0;
    CS_CANONICAL_VALUES(CS_METADATA_JSON)
    fprintf(f, "},\n");
    fprintf(f, " \"counters\": [\n");
    idx = 0;
#define CS_COUNTER(name, kind, scope, set, unit, desc) \
    fprintf(f, "  {\"name\": \"%s\", \"kind\": \"%s\", \"scope\": \"%s\", \"set\": \"%s\", " \
               "\"unit\": \"%s\", \"offset\": %d, \"description\": ", \
            #name, KIND_NAMES[CS_KIND_##kind], CS_SCOPE_##scope == CS_SCOPE_RANK ? "rank" : "thread", \
            set_name(CS_SET_##set), unit, idx++); \
    json_string(f, desc); \
    fprintf(f, "}%s\n", idx < CS_NCOUNTERS ? "," : "");
#include "counters.def"
#undef CS_METADATA_JSON
    fprintf(f, " ],\n \"functions\": [\n");
    for (int i = 0; i < CS_NFUNC; i++) {
        fprintf(f, "  {\"name\": \"%s\", \"calls_offset\": %d, \"ticks_offset\": %d, \"bytes_offset\": %d",
                cs_function_names[i], CS_FN(i, CS_FN_CALLS), CS_FN(i, CS_FN_TICKS), CS_FN(i, CS_FN_BYTES));
        if (cs_function_bin[i] >= 0) fprintf(f, ", \"bin_row\": %d", cs_function_bin[i]);
        if (cs_function_coll[i] >= 0) fprintf(f, ", \"coll_offset\": %d", CS_OFF_COLL + cs_function_coll[i] * CS_NCOLLBINS);
        fprintf(f, "}%s\n", i + 1 < CS_NFUNC ? "," : "");
    }
    fprintf(f, " ],\n \"bins\": {\"count\": %d, \"rows\": %d, \"row_words\": %d, \"ticks_at\": %d, "
               "\"rule\": \"bin 0: 0 bytes; bin b >= 1: [2^(b-1), 2^b) bytes; the last bin is open; "
               "ticks: time of the function's own calls that moved a message of the bin\"},\n",
            CS_NBINS, CS_NSIZED, CS_BIN_ROW_WORDS, CS_NBINS);
    fprintf(f, " \"collective_bins\": {\"small_bytes_max\": %lld, \"small_comm_max\": %d, \"order\": "
               "[\"small_msg_small_comm\", \"small_msg_large_comm\", \"large_msg_small_comm\", "
               "\"large_msg_large_comm\"]},\n",
            cs_coll_small_bytes, cs_coll_small_comm);
    fprintf(f, " \"peers\": {\"count\": %d, \"arrays\": [", cs_world_size);
    idx = 0;
#define CS_PEER_ARRAY(name, set, unit, desc) \
    fprintf(f, "%s\n  {\"name\": \"%s\", \"set\": \"%s\", \"unit\": \"%s\", \"description\": ", \
            idx++ ? "," : "", #name, set_name(CS_SET_##set), unit); \
    json_string(f, desc); \
    fputc('}', f);
#include "counters.def"
    fprintf(f, "]},\n \"files\": {\"rows\": %d, \"counters\": [", CS_MAX_FILES);
    idx = 0;
#define CS_FILE_COUNTER(name, unit, desc) \
    fprintf(f, "%s\n  {\"name\": \"%s\", \"unit\": \"%s\", \"description\": ", idx++ ? "," : "", #name, unit); \
    json_string(f, desc); \
    fputc('}', f);
#include "counters.def"
    fprintf(f, "]},\n \"pvars\": ");
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

/* The node's name in file names: the Slurm node (several may share a host), else the
 * host name; letters, digits, '.', '_' and '-' only. */
static void find_node_key(void)
{
    const char *slurm = getenv("SLURMD_NODENAME");
    char host[256] = "node";
    if (slurm && *slurm)
        snprintf(host, sizeof host, "%s", slurm);
    else
        gethostname(host, sizeof host - 1);
    size_t n = 0;
    for (const char *c = host; *c && n + 1 < sizeof node_key; c++)
        node_key[n++] = (isalnum((unsigned char)*c) || *c == '.' || *c == '_' || *c == '-') ? *c : '_';
    node_key[n] = 0;
}

/* Rank and world of this process: MPI_COMM_WORLD's, or (a program that only uses
 * sessions) the world process set's through a session of our own. */
static int find_world(cs_session_t session)
{
    if (session == CS_NO_SESSION) {
        PMPI_Comm_rank(MPI_COMM_WORLD, &cs_world_rank);
        PMPI_Comm_size(MPI_COMM_WORLD, &cs_world_size);
        return PMPI_Comm_group(MPI_COMM_WORLD, &cs_world_group);
    }
#ifdef CS_HAVE_MPI_Session_init
    if (PMPI_Group_from_session_pset(session, "mpi://WORLD", &cs_world_group) != MPI_SUCCESS)
        return MPI_ERR_OTHER;
    PMPI_Group_rank(cs_world_group, &cs_world_rank);
    PMPI_Group_size(cs_world_group, &cs_world_size);
    return MPI_SUCCESS;
#else
    return MPI_ERR_OTHER;
#endif
}

static int started;

/* Everything but the clock measurement; returns early (not profiling) on a failure
 * of this rank's files. */
static void set_up(int thread_level, cs_session_t session, int sets)
{
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        cs_write_failed(dir, errno, "not profiling");
        return;
    }
    snapshot_s = cs_settings.snapshot_ms / 1000.0;
    cs_coll_small_bytes = cs_settings.coll_small_bytes;
    cs_coll_small_comm = (int)cs_settings.coll_small_comm;
    char base[4200], path[4300];
    snprintf(base, sizeof base, "%s/node.%s", dir, node_key);
    snprintf(path, sizeof path, "%s.bin", base);
    int slabs = (int)cs_settings.slabs, leader = 0;
    if (cs_reqs_init(cs_settings.max_requests) != 0 ||
        cs_state_map(path, slabs, &leader) != 0)
        return;
    cs_hdr->thread_level = thread_level;
    cs_comms_init(base, session == CS_NO_SESSION);
    cs_files_init(base);
    npvar_values = (sets & CS_SET_PVARS) ? cs_pvars_init(session == CS_NO_SESSION) : 0;
    if (sets & CS_SET_TRACE)
        cs_trace_init(dir, cs_settings.trace_limit, (int)cs_settings.trace_buffer);
    if (leader) {
        int err = write_metadata();
        if (err) {
            snprintf(path, sizeof path, "%s.json", base);
            cs_write_failed(path, err, "this node's counters cannot be read");
        }
    }
    long depth = cs_settings.callsites;
    if (depth > 0 || (sets & CS_SET_TRACE)) /* the trace's call sites need the text ranges */
        cs_sites_init((int)depth);
    if (depth > 0)
        sets |= CS_SET_CALLSITES;
    if (sets & (CS_SET_TIMERS | CS_SET_TRACE)) sets |= CS_SET_CLOCK; /* wrappers read the clock */
    /* below MPI_THREAD_MULTIPLE the program never calls MPI from two threads at once:
     * the rank-wide words and the request table need no atomics and no locks */
    cs_thread_multiple = thread_level >= MPI_THREAD_MULTIPLE;
    __atomic_store_n(&cs_sets, sets, __ATOMIC_RELEASE);
    cs_epoch_bump(); /* every thread takes the sets (and a slab) at its next call */
    /* before the first snapshot, which reads the CPU times */
    cs_cpu_start(sets & CS_SET_TIMERS, sets & CS_SET_TRACE);
    snprintf(path, sizeof path, "%s.snap", base);
    cs_snap_start(path, snapshot_s);
}

void cs_profile_start(int thread_level, cs_session_t session)
{
    if (__atomic_exchange_n(&started, 1, __ATOMIC_ACQ_REL)) return;
    cs_settings_read();
    snprintf(dir, sizeof dir, "%s", cs_settings.profile_dir);
    if (find_world(session) != MPI_SUCCESS) {
        fprintf(stderr, CS_PREFIX "cannot tell this process's world rank: not profiling\n");
        return;
    }
    cs_clocks_skew(cs_world_rank); /* before the first clock pair */
    find_node_key();
    /* collective: every rank gets here, whatever happens to its files below */
    if (session == CS_NO_SESSION) cs_summary_init();
    int sets = parse_sets(cs_settings.counters);
    set_up(thread_level, session, sets);
    cs_end_watch(); /* how this process ends: exit, a fatal signal, MPI_Abort */
    /* collective too (the trace's clock alignment); a rank without files takes part */
    if (session == CS_NO_SESSION && (sets & CS_SET_TRACE)) {
        char path[4400];
        snprintf(path, sizeof path, "%s/clocks.%s.jsonl", dir, node_key);
        cs_clocks_start(cs_hdr ? path : 0, node_key);
    }
}

void cs_profile_finish(void)
{
    if (!cs_hdr || cs_hdr->state == CS_STATE_FINALIZED) return;
    cs_snap_stop(); /* takes the last snapshot */
    char cpu_path[4400];
    snprintf(cpu_path, sizeof cpu_path, "%s/cpu.%s.jsonl", dir, node_key);
    cs_cpu_write(cpu_path);
    cs_summary_reduce(dir);
    cs_pvars_stop();
    cs_trace_finish();
    uint64_t *trace_sites = 0;
    size_t ntrace = (cs_sets & CS_SET_TRACE) ? cs_trace_sites(&trace_sites) : 0;
    if ((cs_sets & CS_SET_CALLSITES) || ntrace) {
        char path[4400];
        snprintf(path, sizeof path, "%s/callsites.%s.jsonl", dir, node_key);
        cs_sites_write(path, cs_world_rank, trace_sites, ntrace);
    }
    free(trace_sites);
    cs_comms_finish();
    cs_files_finish();
    cs_hdr->tick1 = cs_ticks();
    cs_hdr->ns1 = cs_now_ns();
    __atomic_store_n(&cs_hdr->state, CS_STATE_FINALIZED, __ATOMIC_RELEASE);
    cs_state_sync();
}

void cs_count_call(int func) { cs_thread()[CS_FN(func, CS_FN_CALLS)]++; }

/* ---- the wrappers that start and end it ---------------------------------- */

CS_EXPORT int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) {
        int level = MPI_THREAD_SINGLE;
        PMPI_Query_thread(&level);
        cs_profile_start(level, CS_NO_SESSION);
        cs_count_call(CS_F_MPI_Init);
        CS_SITE_CALL(CS_F_MPI_Init);
    }
    return rc;
}

CS_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) {
        cs_profile_start(*provided, CS_NO_SESSION);
        cs_count_call(CS_F_MPI_Init_thread);
        CS_SITE_CALL(CS_F_MPI_Init_thread);
    }
    return rc;
}

/* MPI_Pcontrol(2) takes a snapshot at that point of the program; other levels are
 * only counted (profiling stays on: counts stay exact).  With the trace, every call is
 * a MARK record (its level in bytes): the phases `commscope diagnose` gives
 * efficiencies for start at each mark. */
CS_EXPORT int MPI_Pcontrol(const int level, ...)
{
    cs_count_call(CS_F_MPI_Pcontrol);
    CS_SITE_CALL(CS_F_MPI_Pcontrol);
    if (cs_sets & CS_SET_TRACE) {
        int own = !cs_tl_site; /* a Fortran wrapper saved the program's address already */
        if (own) cs_tl_site = __builtin_return_address(0);
        cs_trace(CS_EV_MARK, CS_F_MPI_Pcontrol, cs_ticks(), 0, level, -1, 0, -1, 0);
        if (own) cs_tl_site = 0;
    }
    if (level == 2 && cs_hdr) cs_snap_now();
    return MPI_SUCCESS;
}

void cs_profile_end(void)
{
    if (cs_hdr && cs_hdr->state == CS_STATE_FINALIZED) return; /* a Fortran wrapper ended it */
    cs_count_call(CS_F_MPI_Finalize);
    CS_SITE_CALL(CS_F_MPI_Finalize);     /* the caller MPI_Finalize or f_finalize saved */
    cs_clocks_finish();                  /* collective: every rank that measured at MPI_Init, profiled or not */
    if (!cs_hdr) cs_summary_reduce(dir); /* not profiled: still takes part (collective) */
    cs_profile_finish();
    __atomic_store_n(&cs_sets, 0, __ATOMIC_RELEASE);
    cs_epoch_bump();
}

CS_EXPORT int MPI_Finalize(void)
{
    CS_SITE_BEGIN;
    cs_profile_end();
    CS_SITE_END;
    return PMPI_Finalize();
}

#ifdef CS_HAVE_MPI_Session_init
/* A program that only uses sessions is profiled from its first MPI_Session_init
 * to the MPI_Session_finalize that ends its last session (or its MPI_Finalize). */
static int open_sessions;

CS_EXPORT int MPI_Session_init(MPI_Info info, MPI_Errhandler errhandler, MPI_Session *session)
{
    int rc = PMPI_Session_init(info, errhandler, session);
    if (rc == MPI_SUCCESS) {
        __atomic_add_fetch(&open_sessions, 1, __ATOMIC_RELAXED);
        int provided = MPI_THREAD_SINGLE, flag = 0;
        MPI_Info got;
        char value[64] = "";
        if (PMPI_Session_get_info(*session, &got) == MPI_SUCCESS) {
            int len = sizeof value - 1;
            PMPI_Info_get_string(got, "thread_level", &len, value, &flag);
            PMPI_Info_free(&got);
        }
        if (flag) provided = !strcmp(value, "MPI_THREAD_MULTIPLE")     ? MPI_THREAD_MULTIPLE
                             : !strcmp(value, "MPI_THREAD_SERIALIZED") ? MPI_THREAD_SERIALIZED
                             : !strcmp(value, "MPI_THREAD_FUNNELED")   ? MPI_THREAD_FUNNELED
                                                                       : MPI_THREAD_SINGLE;
        cs_profile_start(provided, *session);
        cs_count_call(CS_F_MPI_Session_init);
    }
    return rc;
}

CS_EXPORT int MPI_Session_finalize(MPI_Session *session)
{
    cs_count_call(CS_F_MPI_Session_finalize);
    int world_model = 0;
    PMPI_Initialized(&world_model);
    if (__atomic_sub_fetch(&open_sessions, 1, __ATOMIC_RELAXED) == 0 && !world_model) {
        cs_profile_finish();
        __atomic_store_n(&cs_sets, 0, __ATOMIC_RELEASE);
        cs_epoch_bump();
    }
    return PMPI_Session_finalize(session);
}
#endif
