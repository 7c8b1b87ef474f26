/* compare_spin: a program to compare before and after a change (tests/test_compare.py).
 *
 * Any number of ranks, N iterations (--iters, default 30) of: rank r spins
 * U (1 + r) (diag.h's work(), a timed spin, never a sleep), then MPI_Allreduce of one
 * double.  --unit U (default 0.002 s) is the change: a smaller U makes the run faster
 * by about N x P x (U_before - U_after) and every rank but the last waits less in the
 * Allreduce.  The call site of the Allreduce is this file's line of MPI_Allreduce.
 */
#include "diagnose/diag.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    diag_t d = diag_options(argc, argv, 30);
    double x = 0, sum = 0;
    for (long i = 0; i < d.iters; i++) {
        work(d.unit * (1 + d.rank));
        x = (double)i;
        MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return sum < 0;
}
