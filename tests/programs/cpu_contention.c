/* cpu_contention: ranks that compute or sleep, for the CPU contention counters
 * (tests/test_profile_cpu.py).
 *
 *   cpu_contention spin|sleep ITERATIONS SECONDS
 *
 * Each of ITERATIONS iterations: spin (arithmetic until a CLOCK_MONOTONIC deadline
 * SECONDS away, never yielding: on more ranks than cores each rank waits in the run
 * queue for about the share of the time the others run) or sleep SECONDS (runnable
 * almost never), then MPI_Allreduce of one double.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int spin = argc > 1 && !strcmp(argv[1], "spin");
    long iterations = argc > 2 ? atol(argv[2]) : 10;
    double seconds = argc > 3 ? atof(argv[3]) : 0.01;
    volatile double acc = 1.0;
    double x = 0, sum = 0;
    for (long i = 0; i < iterations; i++) {
        if (spin) {
            double deadline = now() + seconds;
            while (now() < deadline)
                for (int k = 0; k < 1024; k++) acc = acc * 1.000000001 + 1e-9;
        } else {
            struct timespec ts = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
            nanosleep(&ts, 0);
        }
        x = (double)i;
        MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return sum < 0;
}
