/* ksptrace's timing kernel: a collective called back to back in C, between two clock reads.
 *
 * Built and loaded by ksptrace/collectives/kernel.py (through ksptrace/harness/monitoring/native.py: a
 * private cache folder, the library's digest checked before each load). It includes no MPI
 * header: the MPI functions come as pointers from the library mpi4py loaded, and the handles
 * (communicator, datatype, operation) as values of KSPTRACE_HANDLE, the handle type of that
 * library (a pointer in Open MPI, an int in MPICH), so one source serves both.
 *
 * Per repetition: a barrier, a clock read, `calls` collectives, a clock read; the repetition's
 * figure is the elapsed time over `calls` (the standard benchmarks' back-to-back latency).
 * Warm-up repetitions run first and are not kept. The interpreter is not entered while it
 * runs: a repetition lasts `calls` collectives.
 */

#ifndef KSPTRACE_HANDLE
#error "define KSPTRACE_HANDLE as the MPI library's handle type"
#endif

typedef KSPTRACE_HANDLE handle_t;
typedef int (*allreduce_fn)(const void *, void *, int, handle_t, handle_t, handle_t);
typedef int (*barrier_fn)(handle_t);
typedef double (*wtime_fn)(void);

/* Returns 0, or the first MPI error code (the remaining repetitions are not run). */
int ksptrace_allreduce_back_to_back(void *allreduce, void *barrier, void *wtime,
                                    const void *send, void *recv, int count, handle_t datatype,
                                    handle_t op, handle_t comm, long calls, long warmup,
                                    long repetitions, double *out)
{
    allreduce_fn reduce = (allreduce_fn)allreduce;
    barrier_fn meet = (barrier_fn)barrier;
    wtime_fn now = (wtime_fn)wtime;
    for (long r = 0; r < warmup + repetitions; ++r) {
        int rc = meet(comm);
        if (rc != 0)
            return rc;
        double t0 = now();
        for (long i = 0; i < calls; ++i) {
            rc = reduce(send, recv, count, datatype, op, comm);
            if (rc != 0)
                return rc;
        }
        double t1 = now();
        if (r >= warmup)
            out[r - warmup] = (t1 - t0) / (double)calls;
    }
    return 0;
}
