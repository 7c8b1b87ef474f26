/* The fixed program whose library instructions scripts/hotpath_instructions.py counts
 * under valgrind's callgrind (2 ranks, `libcommscope.so` preloaded).
 *
 *   hotpath ITERS [PHASE ...]
 *
 * Phases (default: all three), each ITERS iterations on MPI_COMM_WORLD between ranks
 * 0 and 1, after ITERS / 10 + 10 untimed ones (first calls take the slow paths: a
 * thread's slab, size-bin row, peer entry, the type-size cache):
 *
 *   blocking_8      ping-pong, MPI_Send / MPI_Recv(MPI_STATUS_IGNORE) of 8 bytes
 *   blocking_1k     the same with 1,024 bytes
 *   nonblocking_8   both ranks MPI_Irecv, MPI_Isend, MPI_Waitall(2) of 8 bytes
 *
 * A phase's counts are zeroed (CALLGRIND_ZERO_STATS) after its warm-up and dumped
 * (CALLGRIND_DUMP_STATS_AT(phase name)) after it, so each dump holds exactly ITERS
 * iterations: 2 wrapped calls per rank and iteration in the blocking phases, 3 in the
 * nonblocking one.  Run with --instr-atstart=no: instrumentation starts after
 * MPI_Init and stops before MPI_Finalize.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/callgrind.h>

static char sbuf[1024], rbuf[1024];

static void blocking(int rank, int n, int bytes)
{
    int peer = 1 - rank;
    for (int i = 0; i < n; i++) {
        if (rank == 0) {
            MPI_Send(sbuf, bytes, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
            MPI_Recv(rbuf, bytes, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rbuf, bytes, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(sbuf, bytes, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
        }
    }
}

static void nonblocking(int rank, int n, int bytes)
{
    int peer = 1 - rank;
    MPI_Request req[2];
    for (int i = 0; i < n; i++) {
        MPI_Irecv(rbuf, bytes, MPI_CHAR, peer, 2, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(sbuf, bytes, MPI_CHAR, peer, 2, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iters = argc > 1 ? atoi(argv[1]) : 1000;
    if (size != 2 || iters < 1) {
        if (rank == 0) fprintf(stderr, "hotpath: 2 ranks and ITERS >= 1, please\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    static const char *all[] = {"blocking_8", "blocking_1k", "nonblocking_8"};
    int nphases = argc > 2 ? argc - 2 : 3;
    const char **phases = argc > 2 ? (const char **)argv + 2 : all;
    memset(sbuf, 1, sizeof sbuf);
    CALLGRIND_START_INSTRUMENTATION;
    for (int p = 0; p < nphases; p++) {
        const char *ph = phases[p];
        int nb = !strncmp(ph, "nonblocking", 11);
        int bytes = strstr(ph, "_1k") ? 1024 : 8;
        if (strcmp(ph, "blocking_8") && strcmp(ph, "blocking_1k") && strcmp(ph, "nonblocking_8")) {
            if (rank == 0) fprintf(stderr, "hotpath: unknown phase %s\n", ph);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        (nb ? nonblocking : blocking)(rank, iters / 10 + 10, bytes);
        MPI_Barrier(MPI_COMM_WORLD);
        CALLGRIND_ZERO_STATS;
        (nb ? nonblocking : blocking)(rank, iters, bytes);
        CALLGRIND_DUMP_STATS_AT(ph);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    CALLGRIND_STOP_INSTRUMENTATION;
    MPI_Finalize();
    return 0;
}
