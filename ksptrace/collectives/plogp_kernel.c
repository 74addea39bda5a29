/* ksptrace's PLogP kernel: the timed exchanges of ksptrace/collectives/plogp.py in C.
 *
 * Built and loaded by ksptrace/collectives/plogp_kernel.py like the back-to-back timing kernel
 * (timing_kernel.c): no MPI header; MPI_Send, MPI_Recv, MPI_Iprobe, MPI_Barrier and MPI_Wtime
 * come as pointers from the library mpi4py loaded, the communicator and MPI_BYTE as values of
 * KSPTRACE_HANDLE, that library's handle type.
 *
 * Each function is one barrier-started exchange of plogp.py's method, on both ranks (`mine`:
 * this rank measures): the clock is read here, around the MPI calls only, so no interpreter call
 * is timed. Python drives the rounds, sizes and roles, keeps the medians and checks every
 * received payload between these calls (outside the clock reads). Messages carry tag 0; a
 * status is written into a scratch buffer (MPI_STATUS_IGNORE differs between libraries).
 * Each returns 0 or the first MPI error code.
 */

#ifndef KSPTRACE_HANDLE
#error "define KSPTRACE_HANDLE as the MPI library's handle type"
#endif

typedef KSPTRACE_HANDLE handle_t;
typedef int (*send_fn)(const void *, int, handle_t, int, int, handle_t);
typedef int (*recv_fn)(void *, int, handle_t, int, int, handle_t, void *);
typedef int (*iprobe_fn)(int, int, handle_t, int *, void *);
typedef int (*barrier_fn)(handle_t);
typedef double (*wtime_fn)(void);

/* Mirrored by a ctypes Structure in plogp_kernel.py (same order). */
struct ksptrace_mpi {
    send_fn send;
    recv_fn recv;
    iprobe_fn iprobe;
    barrier_fn barrier;
    wtime_fn wtime;
    handle_t comm;
    handle_t byte;
    int peer;
};

#define TAG 0
#define STATUS_BYTES 256 /* plogp_kernel.py checks that the library's MPI_Status fits */

/* `count` ping-pongs of `nbytes` after one barrier, each timed on its own into out[i]. */
int ksptrace_plogp_round_trips(const struct ksptrace_mpi *m, const void *send, void *recv,
                               int nbytes, int mine, long count, double *out)
{
    _Alignas(16) unsigned char status[STATUS_BYTES];
    int rc = m->barrier(m->comm);
    for (long i = 0; i < count && rc == 0; ++i) {
        double t0 = m->wtime();
        if (mine) {
            rc = m->send(send, nbytes, m->byte, m->peer, TAG, m->comm);
            if (rc == 0)
                rc = m->recv(recv, nbytes, m->byte, m->peer, TAG, m->comm, status);
        } else {
            rc = m->recv(recv, nbytes, m->byte, m->peer, TAG, m->comm, status);
            if (rc == 0)
                rc = m->send(send, nbytes, m->byte, m->peer, TAG, m->comm);
        }
        out[i] = m->wtime() - t0;
    }
    return rc;
}

/* o_s: after a barrier the measuring rank times its send; the peer receives. */
int ksptrace_plogp_send(const struct ksptrace_mpi *m, const void *send, void *recv, int nbytes,
                        int mine, double *out)
{
    _Alignas(16) unsigned char status[STATUS_BYTES];
    int rc = m->barrier(m->comm);
    if (rc != 0)
        return rc;
    if (!mine)
        return m->recv(recv, nbytes, m->byte, m->peer, TAG, m->comm, status);
    double t0 = m->wtime();
    rc = m->send(send, nbytes, m->byte, m->peer, TAG, m->comm);
    *out = m->wtime() - t0;
    return rc;
}

/* Seconds beyond `wait` the peer stays out of MPI after its send in o_r: see below. */
#define QUIET 20e-6

/* o_r: after a barrier the peer sends; the measuring rank waits `wait` seconds and then until
 * MPI_Iprobe sees the message (a late sender's lateness is no overhead), and times its receive.
 * The peer then spins on its clock for `wait` + QUIET instead of entering the next barrier at
 * once, so that it does not poll the shared-memory transport while the receive is timed (the
 * receives below 4 KiB sit at two levels, about 0.11 or 0.21-0.31 us, and a run's o_r moves
 * with its share of slow rounds). The evidence is weak: in alternating blocks of 10 runs on a
 * quiet machine, 8, 10, 2 and 1 of 21 sizes were within 10 % in every pair with the peer in
 * the barrier, and 21, 17, 10 and 0 with it quiet (3 in a block alternating with mpi4py runs);
 * the two levels remain. */
int ksptrace_plogp_recv(const struct ksptrace_mpi *m, const void *send, void *recv, int nbytes,
                        int mine, double wait, double *out)
{
    _Alignas(16) unsigned char status[STATUS_BYTES];
    int rc = m->barrier(m->comm);
    if (rc != 0)
        return rc;
    if (!mine) {
        rc = m->send(send, nbytes, m->byte, m->peer, TAG, m->comm);
        double quiet = m->wtime() + wait + QUIET;
        while (m->wtime() < quiet)
            ;
        return rc;
    }
    double until = m->wtime() + wait;
    while (m->wtime() < until)
        ;
    int arrived = 0;
    while (!arrived) {
        rc = m->iprobe(m->peer, TAG, m->comm, &arrived, status);
        if (rc != 0)
            return rc;
    }
    double t0 = m->wtime();
    rc = m->recv(recv, nbytes, m->byte, m->peer, TAG, m->comm, status);
    *out = m->wtime() - t0;
    return rc;
}

/* g: after a barrier the measuring rank sends a train of `count` messages and waits for the
 * peer's zero-byte acknowledgement; both ranks time the train (the measuring rank's is kept). */
int ksptrace_plogp_train(const struct ksptrace_mpi *m, const void *send, void *recv, int nbytes,
                         int mine, long count, double *out)
{
    _Alignas(16) unsigned char status[STATUS_BYTES];
    int rc = m->barrier(m->comm);
    if (rc != 0)
        return rc;
    double t0 = m->wtime();
    if (mine) {
        for (long i = 0; i < count && rc == 0; ++i)
            rc = m->send(send, nbytes, m->byte, m->peer, TAG, m->comm);
        if (rc == 0)
            rc = m->recv(recv, 0, m->byte, m->peer, TAG, m->comm, status);
    } else {
        for (long i = 0; i < count && rc == 0; ++i)
            rc = m->recv(recv, nbytes, m->byte, m->peer, TAG, m->comm, status);
        if (rc == 0)
            rc = m->send(send, 0, m->byte, m->peer, TAG, m->comm);
    }
    *out = m->wtime() - t0;
    return rc;
}
