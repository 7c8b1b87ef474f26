/* How a rank ends, chosen on the command line (tests/test_failures_launch.py):
 *
 *   endings ok                     every rank finalizes and returns 0
 *   endings segv R                 rank R dereferences NULL (SIGSEGV) after a barrier
 *   endings kill R SIG             rank R raises signal SIG
 *   endings abort R CODE           rank R calls MPI_Abort(MPI_COMM_WORLD, CODE)
 *   endings exit R CODE            rank R calls exit(CODE) without MPI_Finalize
 *   endings nofinalize             every rank returns 0 from main without MPI_Finalize
 *   endings status R CODE          every rank finalizes; rank R then exits with CODE
 *   endings print BYTES            rank 0 writes BYTES bytes of numbered lines to stdout
 *                                  and a line to stderr, then every rank finalizes
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *what = argc > 1 ? argv[1] : "ok";
    int who = argc > 2 ? atoi(argv[2]) : 0;
    int code = argc > 3 ? atoi(argv[3]) : 0;
    int buf = rank, sum = 0;
    MPI_Allreduce(&buf, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    if (!strcmp(what, "print") && rank == 0) {
        long bytes = atol(argv[2]), written = 0;
        for (long line = 0; written < bytes; line++)
            written += printf("endings: line %09ld of the program's own output\n", line);
        fflush(stdout);
        fprintf(stderr, "endings: a line on stderr\n");
    }
    if (rank == who) {
        if (!strcmp(what, "segv")) {
            volatile int *p = 0;
            *p = 1;
        } else if (!strcmp(what, "kill")) {
            raise(code);
        } else if (!strcmp(what, "abort")) {
            MPI_Abort(MPI_COMM_WORLD, code);
        } else if (!strcmp(what, "exit")) {
            exit(code);
        }
    }
    if (!strcmp(what, "nofinalize")) return 0;
    if (!strcmp(what, "segv") || !strcmp(what, "kill") || !strcmp(what, "exit")) {
        /* the others wait for the rank that ends (never comes): the launcher ends them */
        MPI_Recv(&buf, 1, MPI_INT, who, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    if (!strcmp(what, "status") && rank == who) return code;
    return 0;
}
