/* cs_mpiinfo: what the MPI library says about itself, as JSON on stdout.
 *
 * Library version string, standard version, thread level provided for
 * MPI_THREAD_MULTIPLE, whether MPI-4 partitioned calls were compiled in, and the
 * MPI_T variables: every control variable whose name mentions an eager or
 * rendezvous limit (with its value when it is an integer scalar), the number of
 * performance variables, and the names of the queue-related ones.
 */
#include "cs_common.h"

#include <stdlib.h>
#include <string.h>

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            printf("\\%c", *s);
        else if (*s == '\n')
            printf("\\n");
        else if ((unsigned char)*s >= 0x20)
            putchar(*s);
    }
    putchar('"');
}

static int interesting_cvar(const char *name)
{
    static const char *keys[] = {"eager", "EAGER", "rndv", "RNDV", "rendezvous", "short_limit",
                                 "max_send_size", "SHORT", NULL};
    for (int i = 0; keys[i]; i++)
        if (strstr(name, keys[i]))
            return 1;
    return 0;
}

/* Collective algorithm switch points are not point-to-point protocol limits. */
static int collective_cvar(const char *name)
{
    static const char *keys[] = {"BCAST", "GATHER", "SCATTER", "ALLTOALL", "REDUCE", "CTXID",
                                 "accelerator", "coll_", NULL};
    for (int i = 0; keys[i]; i++)
        if (strstr(name, keys[i]))
            return 1;
    return 0;
}

static int queue_pvar(const char *name)
{
    return strstr(name, "queue") || strstr(name, "msgq") || strstr(name, "recvq") ||
           strstr(name, "unexpected") || strstr(name, "posted");
}

int main(int argc, char **argv)
{
    int provided, tprovided, rank, len, major, minor;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    cs_check_world();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Get_library_version(lib, &len);
    MPI_Get_version(&major, &minor);
    if (rank != 0) {
        MPI_Finalize();
        return 0;
    }
    printf("{\n  \"library_version\": ");
    json_string(lib);
    printf(",\n  \"mpi_version\": \"%d.%d\",\n", major, minor);
    printf("  \"thread_level_provided\": \"%s\",\n",
           provided == MPI_THREAD_MULTIPLE     ? "MPI_THREAD_MULTIPLE"
           : provided == MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED"
           : provided == MPI_THREAD_FUNNELED   ? "MPI_THREAD_FUNNELED"
                                               : "MPI_THREAD_SINGLE");
#ifdef COMMSCOPE_HAVE_PARTITIONED
    printf("  \"partitioned\": true,\n");
#else
    printf("  \"partitioned\": false,\n");
#endif

    int ncvar = 0, npvar = 0, first = 1;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &tprovided) != MPI_SUCCESS) {
        printf("  \"mpi_t\": false\n}\n");
        MPI_Finalize();
        return 0;
    }
    MPI_T_cvar_get_num(&ncvar);
    MPI_T_pvar_get_num(&npvar);
    printf("  \"mpi_t\": true,\n  \"cvar_count\": %d,\n  \"pvar_count\": %d,\n", ncvar, npvar);
    printf("  \"eager_cvars\": [");
    for (int i = 0; i < ncvar; i++) {
        char name[256], desc[1024];
        int nlen = sizeof name, dlen = sizeof desc, verb, bind, scope;
        MPI_Datatype dt;
        MPI_T_enum en;
        if (MPI_T_cvar_get_info(i, name, &nlen, &verb, &dt, &en, desc, &dlen, &bind, &scope) !=
                MPI_SUCCESS ||
            !interesting_cvar(name) || collective_cvar(name))
            continue;
        printf("%s\n    {\"name\": ", first ? "" : ",");
        json_string(name);
        first = 0;
        int tsize = 0;
        if (dt != MPI_CHAR && dt != MPI_DOUBLE && dt != MPI_FLOAT)
            MPI_Type_size(dt, &tsize);
        if (bind == MPI_T_BIND_NO_OBJECT && (tsize == 4 || tsize == 8)) {
            MPI_T_cvar_handle h;
            int count;
            if (MPI_T_cvar_handle_alloc(i, NULL, &h, &count) == MPI_SUCCESS) {
                if (count == 1) {
                    long long v = 0;
                    unsigned char buf[16] = {0};
                    if (MPI_T_cvar_read(h, buf) == MPI_SUCCESS) {
                        /* integer control variables: int, unsigned, long, size_t ... */
                        if (tsize == 4)
                            v = dt == MPI_INT ? *(int *)buf : (long long)*(unsigned *)buf;
                        else
                            v = *(long long *)buf;
                        printf(", \"value\": %lld", v);
                    }
                }
                MPI_T_cvar_handle_free(&h);
            }
        }
        desc[sizeof desc > 160 ? 160 : sizeof desc - 1] = '\0';
        printf(", \"description\": ");
        json_string(desc);
        printf("}");
    }
    printf("\n  ],\n  \"queue_pvars\": [");
    first = 1;
    for (int i = 0; i < npvar; i++) {
        char name[256], desc[1024];
        int nlen = sizeof name, dlen = sizeof desc, verb, vclass, bind, ro, cont, atomic;
        MPI_Datatype dt;
        MPI_T_enum en;
        if (MPI_T_pvar_get_info(i, name, &nlen, &verb, &vclass, &dt, &en, desc, &dlen, &bind, &ro,
                                &cont, &atomic) != MPI_SUCCESS ||
            !queue_pvar(name))
            continue;
        printf("%s\n    {\"name\": ", first ? "" : ",");
        json_string(name);
        printf(", \"bound_to_communicator\": %s}", bind == MPI_T_BIND_MPI_COMM ? "true" : "false");
        first = 0;
    }
    printf("\n  ]\n}\n");
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
