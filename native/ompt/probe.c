/* cs_ompt_probe: a small OpenMP program (no MPI) for two jobs.
 *
 *   cs_ompt_probe [REGIONS] [THREADS]
 *
 * runs REGIONS (default 1000) parallel regions of THREADS threads (default
 * OMP_NUM_THREADS), each with a worksharing loop and its closing barrier, and
 * prints "<regions> <threads> <ns per region>" on stdout.  `commscope doctor`
 * runs it under the OMPT tool to check that the runtime reports regions and
 * barriers; scripts/ompt_overhead.py runs it with and without the tool to
 * measure the tool's cost per region instance.
 */
#define _GNU_SOURCE
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(int argc, char **argv)
{
    long regions = argc > 1 ? atol(argv[1]) : 1000;
    int threads = argc > 2 ? atoi(argv[2]) : omp_get_max_threads();
    volatile double sink = 0;
    /* One untimed region: thread creation is not a per-region cost. */
#pragma omp parallel num_threads(threads)
    sink += 0;
    double t0 = now();
    for (long r = 0; r < regions; r++) {
#pragma omp parallel num_threads(threads)
        {
            double local = 0;
#pragma omp for schedule(static)
            for (int i = 0; i < 1000; i++)
                local += i * 1e-9;
#pragma omp atomic
            sink += local;
        }
    }
    double t = now() - t0;
    printf("%ld %d %.1f\n", regions, threads, 1e9 * t / (double)(regions > 0 ? regions : 1));
    return sink < 0;
}
