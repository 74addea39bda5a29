/* One cache line bounced between two processes pinned to CPUs 0 and 1, no MPI: the median round
 * trip of each half second, printed one per line in ns. bench/plogp_steps.py --core-latency runs
 * it beside each PLogP run: small messages between two ranks cost about one such transfer, so a
 * shift of this figure moves every small-message figure of a run alike.
 *
 *     cc -O2 -o core_to_core core_to_core.c && ./core_to_core SECONDS
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        perror("sched_setaffinity");
        exit(2);
    }
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    _Atomic long *flag = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (flag == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    atomic_store(flag, 0);
    pid_t peer = fork();
    if (peer == 0) { /* answers v with v + 1 until told to stop (a negative value) */
        pin(1);
        for (long v = 1;; v += 2) {
            long seen;
            while ((seen = atomic_load(flag)) != v)
                if (seen < 0)
                    _exit(0);
            atomic_store(flag, v + 1);
        }
    }
    pin(0);
    static double trips[20000];
    long v = 0;
    double start = now();
    while (now() - start < seconds) {
        double begin = now();
        int n = 0;
        while (now() - begin < 0.5 && n < 20000) {
            double t0 = now();
            atomic_store(flag, v + 1);
            while (atomic_load(flag) != v + 2)
                ;
            v += 2;
            trips[n++] = now() - t0;
        }
        qsort(trips, n, sizeof trips[0], by_value);
        printf("%.1f\n", trips[n / 2] * 1e9);
    }
    atomic_store(flag, -1);
    waitpid(peer, NULL, 0);
    return 0;
}
