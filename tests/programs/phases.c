/* phases: two phases marked with MPI_Pcontrol, one balanced and one not.
 *
 * 4 ranks, N iterations per phase.  Phase 0 (MPI_Init to the first MPI_Pcontrol):
 * every rank spins U, then MPI_Allreduce.  Phase 1 (to the second MPI_Pcontrol): rank
 * 3 spins 3U, the others U, then MPI_Allreduce.  Phase 2 (to MPI_Finalize): one
 * MPI_Barrier.
 *
 * Expected (commscope diagnose, efficiency per phase): phase 0's load balance near 1;
 * phase 1's near mean(U, U, U, 3U) / 3U = 0.5, its communication efficiency near 1
 * (rank 3 is busy the whole phase); three phases, bounded by the two MPI_Pcontrol
 * lines.  Not a diagnose case (tests/diagnose_cases.py, tests/programs/diagnose/): it
 * checks the per-phase level.
 */
#include "diagnose/diag.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    diag_t d = diag_options(argc, argv, 40);
    diag_ranks(&d, 4);
    double U = d.unit, x = 1, sum;
    for (long i = 0; i < d.iters; i++) {
        work(U);
        MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Pcontrol(1); /* the end of the balanced phase */
    for (long i = 0; i < d.iters; i++) {
        work(d.rank == 3 ? 3 * U : U);
        MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Pcontrol(1); /* the end of the imbalanced phase */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
