/* Message sizes the generated wrappers cannot compute inline: vector (v, w)
 * collectives and neighbourhood collectives, in their int and large-count forms. */
#include "cs_prof_hooks.h"

static int group_size_of(MPI_Comm comm)
{
    const cs_group_t *g = comm == MPI_COMM_WORLD ? 0 : cs_comm_lookup(comm);
    return g ? g->size : cs_world_size;
}

/* The v collectives: the sum of this rank's send counts (the receive counts when
 * it sends in place). */
#define VBYTES(suffix, count_t) \
    long long cs_vbytes_##suffix(const void *sendbuf, const count_t *sendcounts, MPI_Datatype sendtype, \
                                 const count_t *recvcounts, MPI_Datatype recvtype, MPI_Comm comm) \
    { \
        int n = group_size_of(comm); \
        int inplace = sendbuf == MPI_IN_PLACE || !sendcounts; \
        const count_t *counts = inplace ? recvcounts : sendcounts; \
        long long total = 0; \
        for (int i = 0; counts && i < n; i++) total += counts[i]; \
        return cs_bytes(total, inplace ? recvtype : sendtype); \
    } \
    long long cs_wbytes_##suffix(const void *sendbuf, const count_t *sendcounts, \
                                 const MPI_Datatype *sendtypes, const count_t *recvcounts, \
                                 const MPI_Datatype *recvtypes, MPI_Comm comm) \
    { \
        int n = group_size_of(comm); \
        int inplace = sendbuf == MPI_IN_PLACE; \
        long long total = 0; \
        for (int i = 0; i < n; i++) \
            total += inplace ? cs_bytes(recvcounts[i], recvtypes[i]) : cs_bytes(sendcounts[i], sendtypes[i]); \
        return total; \
    }
VBYTES(i, int)
VBYTES(c, MPI_Count)

/* Neighbourhood collectives move data only to and from real neighbours (a
 * Cartesian slot at a non-periodic edge is MPI_PROC_NULL). */
static const cs_group_t *topology(MPI_Comm comm, int dir, int *degree, const char **real)
{
    const cs_group_t *g = cs_comm_topology(comm);
    *degree = g ? (dir == CS_OUT ? g->outdegree : g->indegree) : 0;
    *real = g ? (dir == CS_OUT ? g->out_real : g->in_real) : 0;
    return g;
}

long long cs_nbytes(MPI_Comm comm, int dir, long long each)
{
    int n;
    const char *real;
    topology(comm, dir, &n, &real);
    long long k = 0;
    for (int i = 0; i < n; i++) k += real ? real[i] : 1;
    return k * each;
}

#define NBYTES(suffix, count_t) \
    long long cs_nbytes_v_##suffix(MPI_Comm comm, int dir, const count_t *counts, MPI_Datatype type) \
    { \
        int n; \
        const char *real; \
        topology(comm, dir, &n, &real); \
        long long total = 0; \
        for (int i = 0; counts && i < n; i++) total += (!real || real[i]) ? counts[i] : 0; \
        return cs_bytes(total, type); \
    } \
    long long cs_nbytes_w_##suffix(MPI_Comm comm, int dir, const count_t *counts, \
                                   const MPI_Datatype *types) \
    { \
        int n; \
        const char *real; \
        topology(comm, dir, &n, &real); \
        long long total = 0; \
        for (int i = 0; counts && types && i < n; i++) \
            total += (!real || real[i]) ? cs_bytes(counts[i], types[i]) : 0; \
        return total; \
    }
NBYTES(i, int)
NBYTES(c, MPI_Count)
