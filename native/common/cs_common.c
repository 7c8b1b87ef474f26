#define _GNU_SOURCE
#include "cs_common.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int read_int_file(const char *path, int fallback)
{
    FILE *f = fopen(path, "r");
    int v = fallback;
    if (!f)
        return fallback;
    if (fscanf(f, "%d", &v) != 1)
        v = fallback;
    fclose(f);
    return v;
}

static int numa_of_cpu(int cpu)
{
    char path[256];
    for (int node = 0; node < 1024; node++) {
        snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpu%d", node, cpu);
        if (access(path, F_OK) == 0)
            return node;
        snprintf(path, sizeof path, "/sys/devices/system/node/node%d", node);
        if (access(path, F_OK) != 0 && node > 0)
            break;
    }
    return -1;
}

/* The affinity mask as a Linux CPU list: "0-3,8"; "?" when it does not fit. */
static void cpu_list(const cpu_set_t *mask, char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, mask))
            continue;
        int last = c;
        while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, mask))
            last++;
        int n = last > c ? snprintf(out + used, len - used, "%s%d-%d", used ? "," : "", c, last)
                         : snprintf(out + used, len - used, "%s%d", used ? "," : "", c);
        if (n < 0 || (size_t)n >= len - used) {
            snprintf(out, len, "?");
            return;
        }
        used += n;
        c = last;
    }
}

void cs_place_self(cs_place_t *p, int rank)
{
    char path[256];
    cpu_set_t mask;
    const char *slurm_node = getenv("SLURMD_NODENAME");
    memset(p, 0, sizeof *p);
    p->rank = rank;
    gethostname(p->host, CS_HOST_MAX - 1);
    snprintf(p->node, CS_HOST_MAX, "%s", slurm_node && *slurm_node ? slurm_node : p->host);
    p->cpu = sched_getcpu();
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", p->cpu);
    p->socket = read_int_file(path, -1);
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/core_id", p->cpu);
    p->core = read_int_file(path, -1);
    p->numa = numa_of_cpu(p->cpu);
    if (sched_getaffinity(0, sizeof mask, &mask) == 0) {
        p->bound = CPU_COUNT(&mask) == 1;
        cpu_list(&mask, p->cpus, sizeof p->cpus);
    } else {
        snprintf(p->cpus, sizeof p->cpus, "?");
    }
}

void cs_check_world(void)
{
    const char *want = getenv("COMMSCOPE_NRANKS");
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (want && atoi(want) > 0 && size != atoi(want)) {
        /* every singleton is a rank 0 and would go on as a 1-rank job: stop all of them */
        fprintf(stderr, "@singleton %d %s\n", size, want);
        fflush(stderr);
        MPI_Finalize();
        exit(3);
    }
}

void cs_place_allgather(MPI_Comm comm, cs_place_t *all)
{
    int rank;
    cs_place_t me;
    MPI_Comm_rank(comm, &rank);
    cs_place_self(&me, rank);
    MPI_Allgather(&me, sizeof me, MPI_BYTE, all, sizeof me, MPI_BYTE, comm);
}

const char *cs_locality(const cs_place_t *a, const cs_place_t *b)
{
    if (strcmp(a->node, b->node) != 0)
        return "inter-node";
    if (a->socket >= 0 && b->socket >= 0 && a->socket != b->socket)
        return "cross-socket";
    return "intra-socket";
}

int cs_mkdir_p(const char *dir)
{
    char buf[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, dir, n + 1);
    for (char *q = buf + 1; *q; q++) {
        if (*q == '/') {
            *q = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return -1;
            *q = '/';
        }
    }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

void cs_write_placement(const char *dir, const cs_place_t *all, int n)
{
    FILE *f = cs_open_table(dir, "placement.csv",
                            "rank,node,host,cpu,cpus,socket,core,numa,bound");
    for (int i = 0; i < n; i++)
        cs_row(f, "%d,%s,%s,%d,\"%s\",%d,%d,%d,%d\n", all[i].rank, all[i].node, all[i].host,
               all[i].cpu, all[i].cpus, all[i].socket, all[i].core, all[i].numa, all[i].bound);
    cs_close_table(f);
}

/* Which path each open table writes, so a failed write can name its file. */
#define CS_MAX_TABLES 32
static struct {
    FILE *f;
    char path[4096];
} open_tables[CS_MAX_TABLES];

static const char *table_path(FILE *f)
{
    for (int i = 0; i < CS_MAX_TABLES; i++)
        if (open_tables[i].f == f)
            return open_tables[i].path;
    return "(table)";
}

static void write_failed(FILE *f, int err)
{
    /* The Python driver reads this line: path, reason, errno. */
    cs_die("cannot write %s: %s [errno %d]", table_path(f), strerror(err ? err : EIO),
           err ? err : EIO);
}

FILE *cs_open_table(const char *dir, const char *name, const char *header)
{
    char path[4096];
    FILE *f;
    /* A file-size limit (ulimit -f) must fail the write, not kill the rank silently. */
    signal(SIGXFSZ, SIG_IGN);
    if (cs_mkdir_p(dir) != 0)
        cs_die("cannot create output directory %s: %s", dir, strerror(errno));
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "w");
    if (!f)
        cs_die("cannot write %s: %s [errno %d]", path, strerror(errno), errno);
    for (int i = 0; i < CS_MAX_TABLES; i++)
        if (!open_tables[i].f) {
            open_tables[i].f = f;
            snprintf(open_tables[i].path, sizeof open_tables[i].path, "%s", path);
            break;
        }
    setvbuf(f, NULL, _IOLBF, 0);
    cs_row(f, "%s\n", header);
    return f;
}

void cs_row(FILE *f, const char *fmt, ...)
{
    va_list ap;
    errno = 0;
    va_start(ap, fmt);
    int rc = vfprintf(f, fmt, ap);
    va_end(ap);
    if (rc < 0 || ferror(f))
        write_failed(f, errno);
}

void cs_close_table(FILE *f)
{
    errno = 0;
    if (fflush(f) != 0 || ferror(f))
        write_failed(f, errno);
    const char *path = table_path(f);
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", path);
    for (int i = 0; i < CS_MAX_TABLES; i++)
        if (open_tables[i].f == f)
            open_tables[i].f = NULL;
    if (fclose(f) != 0)
        cs_die("cannot write %s: %s [errno %d]", copy, strerror(errno), errno);
}

void cs_progress(long done, long total, const char *label)
{
    fprintf(stderr, "@progress %ld %ld %s\n", done, total, label ? label : "");
    fflush(stderr);
}

void cs_die(const char *fmt, ...)
{
    /* One write for the whole line: another rank's message cannot split it (the Python
     * side reads "commscope native: cannot write ..." from the start of a line). */
    char line[8192];
    int n = snprintf(line, sizeof line, "commscope native: ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    strcat(line, "\n");
    fputs(line, stderr);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2);
}

/* The grammar of commscope.units.parse_size (docs/conventions.md), so a size means the
 * same given to a benchmark directly or through commscope: a whole or decimal number,
 * then a unit, any case: none or B (bytes); K, Ki, KiB, M, ... (binary, 2^10); KB, MB,
 * GB (SI, 10^3); whole bytes at most 2^63 - 1. */
long long cs_parse_size(const char *s)
{
    static const struct {
        const char *unit;
        double scale;
    } units[] = {{"", 1}, {"b", 1}, {"k", 1024.0}, {"ki", 1024.0}, {"kib", 1024.0}, {"kb", 1e3}, {"m", 1048576.0}, {"mi", 1048576.0}, {"mib", 1048576.0}, {"mb", 1e6}, {"g", 1073741824.0}, {"gi", 1073741824.0}, {"gib", 1073741824.0}, {"gb", 1e9}};
    char *end, unit[4];
    if (!s) return -1;
    while (*s == ' ') s++;
    if (!((*s >= '0' && *s <= '9') || *s == '.')) return -1; /* no sign, no "inf" */
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s) return -1;
    while (*end == ' ') end++;
    size_t n = 0;
    for (; isalpha((unsigned char)*end) && n < sizeof unit - 1; end++)
        unit[n++] = (char)tolower((unsigned char)*end);
    unit[n] = 0;
    while (*end == ' ') end++;
    if (*end) return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(unit, units[i].unit)) continue;
        double bytes = v * units[i].scale;
        if (bytes != floor(bytes) || bytes > 9223372036854775807.0) return -1;
        return (long long)bytes;
    }
    return -1;
}

/* "MIN:MAX", ":MAX" (from 0) or a lone MAX (from 1), as units.parse_size_range. */
int cs_parse_range(const char *s, long long *min, long long *max)
{
    char buf[128];
    char *colon;
    if (!s || strlen(s) >= sizeof buf)
        return -1;
    strcpy(buf, s);
    colon = strchr(buf, ':');
    if (colon) {
        *colon = '\0';
        *min = colon == buf ? 0 : cs_parse_size(buf);
        *max = cs_parse_size(colon + 1);
    } else {
        *max = cs_parse_size(buf);
        *min = *max == 0 ? 0 : 1;
    }
    return (*min < 0 || *max < 0 || *min > *max) ? -1 : 0;
}

long cs_parse_long(const char *option, const char *text, long min)
{
    char *end;
    errno = 0; /* strtol reports overflow only through errno */
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < min)
        cs_die("%s: expected an integer >= %ld, got '%s'", option, min, text);
    return v;
}

double cs_parse_double(const char *option, const char *text)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !isfinite(v) || v < 0)
        cs_die("%s: expected a number >= 0, got '%s'", option, text);
    return v;
}

int cs_parse_choice(const char *option, const char *what, const char *text,
                    const char *const *names, int n)
{
    char list[256] = "";
    for (int i = 0; i < n; i++)
        if (strcmp(text, names[i]) == 0)
            return i;
    for (int i = 0; i < n; i++) {
        size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", names[i]);
    }
    cs_die("%s: unknown %s '%s' (%s)", option, what, text, list);
    return -1;
}

/* The parsing half of cs_parse_size_list: how many entries, or -1 when one is
 * not a size or is below min, or there are more than max.  Empty entries
 * ("8,,16") are skipped, as strtok does. */
static int split_size_list(const char *text, long long min, long long *out, int max)
{
    char buf[4096], *save = NULL;
    int n = 0;
    if (strlen(text) >= sizeof buf)
        return -1;
    strcpy(buf, text);
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == max)
            return -1;
        out[n] = cs_parse_size(tok); /* -1 when malformed */
        if (out[n] < 0 || out[n] < min)
            return -1;
        n++;
    }
    return n;
}

int cs_parse_size_list(const char *option, const char *text, long long min, long long *out,
                       int max)
{
    int n = split_size_list(text, min, out, max);
    if (n < 1)
        cs_die("%s: expected a comma-separated list of at most %d sizes >= %lld "
               "(such as 8,1K,64K), got '%s'",
               option, max, min, text);
    return n;
}

uint64_t cs_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

double cs_uniform01(uint64_t *state)
{
    /* the top 53 bits, centred in their interval of width 2^-53 */
    return ((cs_splitmix64(state) >> 11) + 0.5) * 0x1.0p-53;
}

double cs_normal(uint64_t *state)
{
    double u1 = cs_uniform01(state), u2 = cs_uniform01(state);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

void *cs_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        cs_die("out of memory (%zu bytes)", n);
    return p;
}

const char *cs_time_text(double seconds, char *buf, size_t n)
{
    static const struct {
        const char *unit;
        double scale;
    } units[] = {
        {"s", 1.0}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};
    char digits[40];
    if (!isfinite(seconds)) {
        snprintf(buf, n, "-");
        return buf;
    }
    snprintf(digits, sizeof digits, "%.3g", seconds); /* first: 0.9996 ms is 1 ms */
    double r = strtod(digits, NULL);
    if (r == 0.0) {
        snprintf(buf, n, "0 s");
        return buf;
    }
    int i = 0;
    while (i < 3 && fabs(r) < units[i].scale)
        i++;
    double v = r / units[i].scale;
    if (fabs(v) >= 1000.0)
        snprintf(buf, n, "%.0f %s", v, units[i].unit);
    else
        snprintf(buf, n, "%.3g %s", v, units[i].unit);
    return buf;
}

void cs_sum_min_max(const double *v, size_t n, double *sum, double *min, double *max)
{
    *sum = 0;
    *min = *max = v[0];
    for (size_t k = 0; k < n; k++) {
        *sum += v[k];
        *min = v[k] < *min ? v[k] : *min;
        *max = v[k] > *max ? v[k] : *max;
    }
}

int cs_usage_exit(int rank, int help, void (*usage)(void))
{
    if (rank == 0)
        usage();
    MPI_Finalize();
    return help ? 0 : 2;
}

int cs_pvar_index(const char *name, int bind, MPI_Datatype *dt, int *continuous)
{
    int num = 0;
    if (MPI_T_pvar_get_num(&num) != MPI_SUCCESS)
        return -1;
    for (int i = 0; i < num; i++) {
        char got[256], desc[256];
        int nlen = sizeof got, dlen = sizeof desc, verb, vclass, b, ro, cont, atomic;
        MPI_T_enum en;
        MPI_Datatype t;
        if (MPI_T_pvar_get_info(i, got, &nlen, &verb, &vclass, &t, &en, desc, &dlen, &b, &ro,
                                &cont, &atomic) == MPI_SUCCESS &&
            strcmp(got, name) == 0 && b == bind) {
            *dt = t;
            *continuous = cont;
            return i;
        }
    }
    return -1;
}

double cs_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

void cs_spin(double seconds)
{
    double end = cs_clock() + seconds;
    while (cs_clock() < end)
        ;
}

#ifdef COMMSCOPE_HAVE_PARTITIONED
int cs_partitioned_accepted(MPI_Comm comm, int rank, int tag)
{
    MPI_Request probe = MPI_REQUEST_NULL;
    char dummy[1] = {0};
    int ok = rank == 0 ? MPI_Psend_init(dummy, 1, 1, MPI_BYTE, 1, tag, comm, MPI_INFO_NULL, &probe)
                       : MPI_Precv_init(dummy, 1, 1, MPI_BYTE, 0, tag, comm, MPI_INFO_NULL, &probe);
    int good = ok == MPI_SUCCESS, all_good;
    MPI_Allreduce(&good, &all_good, 1, MPI_INT, MPI_MIN, comm);
    if (all_good) {
        good = MPI_Start(&probe) == MPI_SUCCESS;
        if (good && rank == 0)
            good = MPI_Pready(0, probe) == MPI_SUCCESS;
        if (good)
            good = MPI_Wait(&probe, MPI_STATUS_IGNORE) == MPI_SUCCESS;
        MPI_Allreduce(&good, &all_good, 1, MPI_INT, MPI_MIN, comm);
    }
    if (probe != MPI_REQUEST_NULL)
        MPI_Request_free(&probe);
    return all_good;
}
#endif
