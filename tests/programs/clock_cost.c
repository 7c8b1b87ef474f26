/* What a clock read costs on this machine (scripts/hotpath_instructions.py --clock):
 * the time rdtsc adds to a loop of independent work, best of 9 repetitions of 2
 * million iterations, and what clock_gettime(CLOCK_MONOTONIC) costs.  The work is a
 * memcpy of 8 B to 4 KiB (a receive's copy), then one rdtsc, or one before and one
 * after (a wrapper's timer).  Prints "name ns" lines.  No MPI. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#define TICKS() __rdtsc()
#else
#define TICKS() 0
#endif

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static char src[4096] __attribute__((aligned(64))), dst[4096] __attribute__((aligned(64)));
static volatile uint64_t sink[8];

int main(void)
{
    enum { N = 2000000, REPS = 9 };
    static const size_t sizes[] = {8, 1024, 4096};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        size_t n = sizes[si];
        double b0 = 1e9, b1 = 1e9, b2 = 1e9;
        for (int rep = 0; rep < REPS; rep++) {
            double t0 = now();
            for (int i = 0; i < N; i++) {
                memcpy(dst, src, n);
                __asm__ volatile("" ::: "memory");
            }
            double t1 = now();
            for (int i = 0; i < N; i++) {
                memcpy(dst, src, n);
                __asm__ volatile("" ::: "memory");
                sink[i & 7] += TICKS();
            }
            double t2 = now();
            for (int i = 0; i < N; i++) {
                uint64_t a = TICKS();
                memcpy(dst, src, n);
                __asm__ volatile("" ::: "memory");
                sink[i & 7] += TICKS() - a;
            }
            double t3 = now();
            if (t1 - t0 < b0) b0 = t1 - t0;
            if (t2 - t1 < b1) b1 = t2 - t1;
            if (t3 - t2 < b2) b2 = t3 - t2;
        }
        printf("memcpy_%zu %.2f\n", n, b0 / N * 1e9);
        printf("rdtsc_after_memcpy_%zu %.2f\n", n, (b1 - b0) / N * 1e9);
        printf("rdtsc_pair_around_memcpy_%zu %.2f\n", n, (b2 - b0) / N * 1e9);
    }
    double best = 1e9;
    for (int rep = 0; rep < REPS; rep++) {
        double t0 = now();
        for (int i = 0; i < N; i++) {
            struct timespec t;
            clock_gettime(CLOCK_MONOTONIC, &t);
            sink[i & 7] += (uint64_t)t.tv_nsec;
        }
        double t = now() - t0;
        if (t < best) best = t;
    }
    printf("clock_gettime %.2f\n", best / N * 1e9);
    return 0;
}
