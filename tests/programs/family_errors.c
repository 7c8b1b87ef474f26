/* Requests that end in an error (MPI_ERRORS_RETURN), then many more requests whose
 * handles MPI may give again, on 2 ranks (MPI_Init).
 *
 *   family_errors
 *
 * Both ranks use a duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN.  INT is MPI_INT
 * (4 bytes).
 *  1. Rank 0 sends 3 messages of 8 INT (tag 1) with MPI_Send.  Rank 1 takes each with
 *     MPI_Irecv of 2 INT and MPI_Wait (MPI_STATUS_IGNORE): the wait returns an error
 *     of class MPI_ERR_TRUNCATE and the request handle is MPI_REQUEST_NULL (MPI ended
 *     the request).  The program checks both.
 *  2. Rank 1 sends 20 messages of 1 INT to rank 0 (tag 2), each with MPI_Isend and
 *     MPI_Wait (MPI_STATUS_IGNORE); rank 0 receives them with MPI_Recv.  MPI may hand
 *     these requests the handles of step 1's: none of them is a receive.
 *  3. MPI_Barrier on the duplicate, which is then freed.
 *
 * What that implies (tests/test_profile_families.py derives the same):
 *   rank 0: 3 messages sent (96 bytes), 20 received (80 bytes), no requests;
 *   rank 1: 20 messages sent (80 bytes); a receive that ended in error is a completed
 *           request, not a message (docs/profile.md): 0 received; 23 requests started
 *           and 23 completed, none outstanding; at most 1 outstanding at a time.
 */
#include <mpi.h>
#include <stdio.h>

static int rank;

#define CHECK(cond, what)                                                     \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "rank %d: %s failed\n", rank, what);              \
            MPI_Abort(MPI_COMM_WORLD, 1);                                     \
        }                                                                     \
    } while (0)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 2, "2 ranks");
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);

    int big[8] = {1, 2, 3, 4, 5, 6, 7, 8}, small[2], one;
    for (int i = 0; i < 3; i++) {
        if (rank == 0) {
            CHECK(MPI_Send(big, 8, MPI_INT, 1, 1, comm) == MPI_SUCCESS, "send");
        } else {
            MPI_Request req;
            CHECK(MPI_Irecv(small, 2, MPI_INT, 0, 1, comm, &req) == MPI_SUCCESS, "irecv");
            int rc = MPI_Wait(&req, MPI_STATUS_IGNORE), cls = MPI_SUCCESS;
            if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
            CHECK(cls == MPI_ERR_TRUNCATE, "a truncated receive");
            CHECK(req == MPI_REQUEST_NULL, "the truncated receive's request ended");
        }
    }
    for (int i = 0; i < 20; i++) {
        if (rank == 1) {
            MPI_Request req;
            one = i;
            CHECK(MPI_Isend(&one, 1, MPI_INT, 0, 2, comm, &req) == MPI_SUCCESS, "isend");
            CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS, "wait");
        } else {
            CHECK(MPI_Recv(&one, 1, MPI_INT, 1, 2, comm, MPI_STATUS_IGNORE) == MPI_SUCCESS
                  && one == i, "recv");
        }
    }
    MPI_Barrier(comm);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
