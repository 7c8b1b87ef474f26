/* Neighbourhood collectives: blocking, nonblocking and persistent, on three
 * topologies of 2 ranks (MPI_Init).
 *
 *   family_neighbor
 *
 * Topologies (rank r, o = 1 - r), made in this order:
 *   P  MPI_Cart_create 1-D, dims {2}, periodic: both slots (lower, upper) are o,
 *      2 real in- and out-neighbours on each rank
 *   N  MPI_Cart_create 1-D, dims {2}, not periodic: rank 0 has slots {MPI_PROC_NULL, 1},
 *      rank 1 {0, MPI_PROC_NULL}: 1 real in- and out-neighbour each
 *   G  MPI_Dist_graph_create_adjacent with the edges 0 -> 0 and 0 -> 1: rank 0 has
 *      sources {0} and destinations {0, 1}; rank 1 sources {0} and no destinations
 *
 * On each topology, in order (INT is MPI_INT, 4 bytes; DBL MPI_DOUBLE, 8 bytes):
 *   MPI_Neighbor_allgather    2 INT to each out-neighbour, 2 INT from each in-neighbour
 *   MPI_Neighbor_alltoall     3 DBL per neighbour slot, both ways
 *   MPI_Neighbor_allgatherv   1 INT to each out-neighbour, recvcounts 1 per in-slot
 *   MPI_Neighbor_alltoallv    INT, per-slot counts S (send) and R (receive) below
 *   MPI_Neighbor_alltoallw    DBL, the same per-slot counts S and R
 *   MPI_Ineighbor_allgather (2 INT) + MPI_Ineighbor_alltoall (3 DBL), one MPI_Waitall
 *   MPI_Neighbor_allgather_init (2 INT) and MPI_Neighbor_alltoall_init (3 DBL), then
 *   3 x (MPI_Startall of both, MPI_Waitall), then MPI_Request_free of both
 * then MPI_Comm_free of the topology.
 *
 * Per-slot counts S and R of the v and w calls:
 *   P  S = {2, 2}, R = {2, 2} on both ranks
 *   N  rank 0: S = {7, 3}, R = {13, 4}; rank 1: S = {4, 11}, R = {3, 9}
 *      (7, 13, 11 and 9 are for MPI_PROC_NULL slots: nothing moves there)
 *   G  rank 0: S = {2, 5} (to 0, to 1), R = {2}; rank 1: S = {}, R = {5}
 *
 * What that implies: with out/in the real out- and in-neighbours (P: 2/2; N: 1/1;
 * G: rank 0 2/1, rank 1 0/1) and S', R' the sums of S, R over real slots (P: 4/4;
 * N rank 0: 3/4, rank 1: 4/3; G rank 0: 7/2, rank 1: 0/5), each topology adds
 *   neighbor_bytes_sent     = out*8 + out*24 + out*4 + 4*S' + 8*S' + out*(8 + 24)
 *                             + 3*out*(8 + 24)
 *   neighbor_bytes_received = the same with in and R'
 * The program checks the data it receives.  No point-to-point messages, no
 * collective_bytes; requests: 2 + 3 x 2 = 8 started and completed per topology.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank;

#define CHECK(cond, what)                                                     \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "rank %d: %s failed\n", rank, what);              \
            MPI_Abort(MPI_COMM_WORLD, 1);                                     \
        }                                                                     \
    } while (0)

/* One topology's calls.  slots_out/slots_in: neighbour slots; S, R: per-slot counts
 * of the v and w calls; src[i]: the rank behind in-slot i (MPI_PROC_NULL: none). */
static void exercise(MPI_Comm comm, int slots_out, int slots_in, const int *S, const int *R,
                     const int *src)
{
    int ibuf[64], irecv[64], sdispl[8], rdispl[8], dummy_counts[1] = {0};
    double dbuf[64], drecv[64];
    MPI_Aint sdispw[8], rdispw[8];
    MPI_Datatype dtypes_out[8], dtypes_in[8];
    int ones[8];
    for (int i = 0; i < 64; i++) ibuf[i] = 100 * rank + i, dbuf[i] = 100 * rank + i;
    for (int i = 0; i < 8; i++) ones[i] = 1, dtypes_out[i] = dtypes_in[i] = MPI_DOUBLE;
    const int *sc = slots_out ? S : dummy_counts;

    /* allgather: 2 INT */
    for (int i = 0; i < 64; i++) irecv[i] = -1;
    MPI_Neighbor_allgather(ibuf, 2, MPI_INT, irecv, 2, MPI_INT, comm);
    for (int i = 0; i < slots_in; i++)
        if (src[i] != MPI_PROC_NULL) CHECK(irecv[2 * i] == 100 * src[i] && irecv[2 * i + 1] == 100 * src[i] + 1,
                                           "MPI_Neighbor_allgather");
    /* alltoall: 3 DBL per slot */
    MPI_Neighbor_alltoall(dbuf, 3, MPI_DOUBLE, drecv, 3, MPI_DOUBLE, comm);
    /* allgatherv: 1 INT */
    for (int i = 0; i < slots_in; i++) rdispl[i] = i;
    MPI_Neighbor_allgatherv(ibuf, 1, MPI_INT, irecv, ones, rdispl, MPI_INT, comm);
    for (int i = 0; i < slots_in; i++)
        if (src[i] != MPI_PROC_NULL) CHECK(irecv[i] == 100 * src[i], "MPI_Neighbor_allgatherv");
    /* alltoallv and alltoallw: counts S, R */
    int at = 0;
    for (int i = 0; i < slots_out; i++) sdispl[i] = at, sdispw[i] = (MPI_Aint)at * 8, at += S[i];
    at = 0;
    for (int i = 0; i < slots_in; i++) rdispl[i] = at, rdispw[i] = (MPI_Aint)at * 8, at += R[i];
    MPI_Neighbor_alltoallv(ibuf, sc, sdispl, MPI_INT, irecv, R, rdispl, MPI_INT, comm);
    MPI_Neighbor_alltoallw(dbuf, sc, sdispw, dtypes_out, drecv, R, rdispw, dtypes_in, comm);
    /* nonblocking */
    MPI_Request r[2];
    MPI_Ineighbor_allgather(ibuf, 2, MPI_INT, irecv, 2, MPI_INT, comm, &r[0]);
    MPI_Ineighbor_alltoall(dbuf, 3, MPI_DOUBLE, drecv, 3, MPI_DOUBLE, comm, &r[1]);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    /* persistent */
    int precv[16];
    double pdrecv[16];
    MPI_Neighbor_allgather_init(ibuf, 2, MPI_INT, precv, 2, MPI_INT, comm, MPI_INFO_NULL, &r[0]);
    MPI_Neighbor_alltoall_init(dbuf, 3, MPI_DOUBLE, pdrecv, 3, MPI_DOUBLE, comm, MPI_INFO_NULL, &r[1]);
    for (int k = 0; k < 3; k++) {
        MPI_Startall(2, r);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    }
    for (int i = 0; i < slots_in; i++)
        if (src[i] != MPI_PROC_NULL) CHECK(precv[2 * i] == 100 * src[i], "MPI_Neighbor_allgather_init");
    MPI_Request_free(&r[0]);
    MPI_Request_free(&r[1]);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 2, "2 ranks");
    int o = 1 - rank, dims[1] = {2}, periodic[1] = {1}, open_[1] = {0};
    MPI_Comm P, N, G;

    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periodic, 0, &P);
    {
        int S[2] = {2, 2}, R[2] = {2, 2}, src[2] = {o, o};
        exercise(P, 2, 2, S, R, src);
    }
    MPI_Comm_free(&P);

    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, open_, 0, &N);
    {
        int S0[2] = {7, 3}, R0[2] = {13, 4}, S1[2] = {4, 11}, R1[2] = {3, 9};
        int src0[2] = {MPI_PROC_NULL, 1}, src1[2] = {0, MPI_PROC_NULL};
        exercise(N, 2, 2, rank ? S1 : S0, rank ? R1 : R0, rank ? src1 : src0);
    }
    MPI_Comm_free(&N);

    {
        int sources[1] = {0}, dests0[2] = {0, 1}, none[1] = {0}, weights[2] = {1, 1};
        MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, sources, weights, rank ? 0 : 2,
                                       rank ? none : dests0, weights, MPI_INFO_NULL, 0, &G);
        int S0[2] = {2, 5}, R0[1] = {2}, R1[1] = {5}, src[1] = {0};
        exercise(G, rank ? 0 : 2, 1, S0, rank ? R1 : R0, src);
    }
    MPI_Comm_free(&G);

    if (rank == 0) printf("family_neighbor: done\n");
    MPI_Finalize();
    return 0;
}
