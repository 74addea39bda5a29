/* The stamping KSP monitor of ksptrace in C (see ksptrace/harness/monitoring/native.py).

   PETSc calls ksptrace_stamp(ksp, its, rnorm, ctx) at every iteration. It stores the clock
   (MPI_Wtime, through a pointer) and the residual norm at index `its` of two arrays that
   Python owns, exactly as the Python monitor does, without entering the interpreter: a Python
   monitor costs about 0.45 us per iteration through petsc4py, this one some 30 ns.

   With MPI wait accounting (ksptrace/harness/monitoring/mpi_wait.c) it also copies the running totals
   of time in MPI reductions and of reductions started, two doubles, into row `its` of a
   third array, [capacity][2] (ksptrace_stamp_marks); the differences of consecutive rows are
   each iteration's wait and reduction count.

   Every `poll_every` seconds of the clock it lets the interpreter in: it releases and retakes
   the GIL (the lifeline watchdog thread runs then) and runs Python's signal handlers; when a
   handler raises (KeyboardInterrupt), it returns -1, petsc4py's code for "a Python exception
   is set", and KSPSolve raises that exception as a Python monitor's would.

   No header is included: PETSc's and Python's types are passed as plain pointers and the
   integer and real types of this PETSc build come in as KSPTRACE_INT and KSPTRACE_REAL. */

#ifndef KSPTRACE_INT
#define KSPTRACE_INT int
#endif
#ifndef KSPTRACE_REAL
#define KSPTRACE_REAL double
#endif

void *calloc(unsigned long count, unsigned long size);
void *realloc(void *ptr, unsigned long size);
void free(void *ptr);
void *memcpy(void *dest, const void *src, unsigned long n);

typedef double (*clock_fn)(void);
typedef int (*gil_ensure_fn)(void);
typedef void (*gil_release_fn)(int);
typedef void *(*save_thread_fn)(void);
typedef void (*restore_thread_fn)(void *);
typedef int (*check_signals_fn)(void);

struct stamp_ctx {
  double *stamps;            /* capacity slots, Python's numpy array */
  double *norms;             /* capacity slots, Python's numpy array */
  long long *beyond;         /* highest iteration number beyond the capacity (0: none) */
  long long capacity;
  long long owner;           /* which Python monitor the arrays belong to (0: none) */
  int enabled;               /* 0: PETSc calls a no-op (the monitor was detached) */
  int refs;                  /* PETSc's (until its destroy), the registry's, each monitor's */
  void *ksp;                 /* the KSP this context was registered on */
  int in_petsc;              /* PETSc still holds it (cleared by ksptrace_stamp_destroy) */
  clock_fn wtime;
  double poll_every;         /* seconds between visits to the interpreter; <= 0: never */
  double next_poll;
  gil_ensure_fn gil_ensure;
  gil_release_fn gil_release;
  save_thread_fn save_thread;
  restore_thread_fn restore_thread;
  check_signals_fn check_signals;
  const double *totals;      /* the wait totals (seconds, calls), or 0: no wait accounting */
  double *marks;             /* capacity rows of two, Python's numpy array (or 0) */
};

/* The compiler that built this library (GCC's and Clang's __VERSION__), for the trace. */
const char *ksptrace_compiler(void) {
#ifdef __VERSION__
  return __VERSION__;
#else
  return "unknown";
#endif
}

static void drop(struct stamp_ctx *c) {
  if (--c->refs == 0) free(c);
}

/* A context with one reference for Python's registry of contexts and one for PETSc (given
   when registered). Each Python monitor bound to it takes one more (ksptrace_stamp_retain) and
   gives it back when it is unbound or collected (ksptrace_stamp_release): the memory lives
   until the last of them lets go, so no holder ever touches freed memory. */
struct stamp_ctx *ksptrace_stamp_new(clock_fn wtime, double poll_every, gil_ensure_fn ensure,
                                     gil_release_fn release, save_thread_fn save,
                                     restore_thread_fn restore, check_signals_fn check) {
  struct stamp_ctx *c = calloc(1, sizeof(struct stamp_ctx));
  if (!c) return 0;
  c->refs = 2;
  c->wtime = wtime;
  c->poll_every = poll_every;
  c->gil_ensure = ensure;
  c->gil_release = release;
  c->save_thread = save;
  c->restore_thread = restore;
  c->check_signals = check;
  return c;
}

/* Point the context at a monitor's arrays and enable it. */
void ksptrace_stamp_target(struct stamp_ctx *c, double *stamps, double *norms,
                           long long *beyond, long long capacity, long long owner) {
  c->stamps = stamps;
  c->norms = norms;
  c->beyond = beyond;
  c->capacity = capacity;
  c->owner = owner;
  c->next_poll = 0.0;
  c->marks = 0;              /* a new window: ksptrace_stamp_marks sets its marks */
  c->enabled = 1;
}

/* Copy the wait totals at `totals` (two doubles) into `marks` (capacity rows of two) at each
   call from now on; `marks` 0 stops it. */
void ksptrace_stamp_marks(struct stamp_ctx *c, const double *totals, double *marks) {
  c->totals = totals;
  c->marks = totals ? marks : 0;
}

/* Stop writing into the arrays of monitor `owner` (any owner when 0). */
void ksptrace_stamp_disable(struct stamp_ctx *c, long long owner) {
  if (owner == 0 || c->owner == owner) {
    c->enabled = 0;
    c->owner = 0;
  }
}

void ksptrace_stamp_bind(struct stamp_ctx *c, void *ksp) {
  c->ksp = ksp;
  c->in_petsc = 1;
}

/* 1 when PETSc still calls this context for `ksp`, else 0. */
int ksptrace_stamp_serves(const struct stamp_ctx *c, void *ksp) {
  return c->in_petsc && c->ksp == ksp;
}

/* A Python holder takes a reference. */
void ksptrace_stamp_retain(struct stamp_ctx *c) {
  ++c->refs;
}

/* A Python holder lets go of its reference. */
void ksptrace_stamp_release(struct stamp_ctx *c) {
  drop(c);
}

/* PETSc's monitor destroy: KSPMonitorCancel or KSPDestroy. */
int ksptrace_stamp_destroy(void **vctx) {
  struct stamp_ctx *c = *vctx;
  if (c) {
    c->enabled = 0;
    c->in_petsc = 0;
    drop(c);
  }
  *vctx = 0;
  return 0;
}

int ksptrace_stamp(void *ksp, KSPTRACE_INT its, KSPTRACE_REAL rnorm, void *vctx) {
  struct stamp_ctx *c = vctx;
  double t;
  (void)ksp;
  if (!c->enabled) return 0;
  t = c->wtime();
  if (its >= 0 && its < c->capacity) {
    c->stamps[its] = t;
    c->norms[its] = (double)rnorm;
    if (c->marks) {
      c->marks[2 * its] = c->totals[0];
      c->marks[2 * its + 1] = c->totals[1];
    }
  } else if ((long long)its > *c->beyond) {
    *c->beyond = its;
  }
  if (c->poll_every > 0.0 && t >= c->next_poll) {
    int raised, state;
    void *thread;
    c->next_poll = t + c->poll_every;
    state = c->gil_ensure();
    thread = c->save_thread();      /* other Python threads (the watchdog) may run now */
    c->restore_thread(thread);
    raised = c->check_signals();    /* -1 with the handler's exception set */
    c->gil_release(state);
    if (raised) return -1;          /* petsc4py's PETSC_ERR_PYTHON: raise the set exception */
  }
  return 0;
}

/* ---- ksptrace.record's pre- and post-solve hooks (KSPSetPreSolve, KSPSetPostSolve) ----

   Every recorded solve stamps into one buffer: the pre-solve hook points the monitor at the
   free slots after the last solve and notes the clock and PETSc's message counters; the
   post-solve hook notes them again, with the iteration count and the converged reason, in
   per-solve arrays, and moves the free slots on. Nothing enters the interpreter. The buffers
   are this context's own and grow by realloc, which moves large blocks by remapping pages
   rather than copying them; slots are set to NaN ("not reported") only as far as the next
   solve may reach, so a solve never pays for a whole growth at once. A solve that cannot be
   recorded (no memory, no iteration reported, more iterations than its slots) stops the
   recording with an error code that Python turns into a message after the block, where it
   also copies the buffers out (ksptrace_record_copy). With MPI wait accounting
   (ksptrace_record_marks) a third buffer, two doubles per slot, receives the monitor's copies
   of the wait totals the same way (ksptrace_record_copy_marks). */

typedef int (*ksp_count_fn)(void *ksp, KSPTRACE_INT *value);
typedef int (*ksp_reason_fn)(void *ksp, int *reason);
typedef int (*ksp_tolerances_fn)(void *ksp, KSPTRACE_REAL *rtol, KSPTRACE_REAL *abstol,
                                 KSPTRACE_REAL *dtol, KSPTRACE_INT *maxits);

enum { REC_OK = 0, REC_NO_ROOM = 1, REC_NONE_REPORTED = 2, REC_BEYOND = 3, REC_PETSC = 4 };

struct record_ctx {
  struct stamp_ctx *monitor;
  long long owner;           /* the Python monitor whose window is moved */
  long long *beyond;         /* that monitor's count of iterations beyond its window */
  double *stamps, *norms;    /* the buffer: `slots` of each, NaN or stamped up to `filled` */
  double *marks;             /* 2 * `slots` wait totals, with `totals` (else 0) */
  const double *totals;      /* the wait totals the monitor copies (0: none) */
  long long slots, filled;
  double *seconds, *blocking, *split;   /* per solve: `rows` of each */
  long long *ends, *its, *reasons;
  long long rows;
  long long solves;          /* solves recorded so far */
  long long start;           /* first free slot of the buffer */
  long long window;          /* slots of the solve now open */
  int open;                  /* a solve began and has not ended (an error inside KSPSolve) */
  int error;                 /* REC_*: the recording stopped */
  long long failed_solve;    /* which solve stopped it */
  long long spare;           /* slots beyond max_it (pipelined methods report one more) */
  const double *counted[4];  /* PETSc's allreduce, gather, scatter and wait counters */
  double t0, blocking0, split0;
  clock_fn wtime;
  ksp_count_fn iterations;
  ksp_reason_fn reason;
  ksp_tolerances_fn tolerances;
};

struct record_ctx *ksptrace_record_new(struct stamp_ctx *monitor, long long owner,
                                       long long *beyond, const double *allreduce,
                                       const double *gather, const double *scatter,
                                       const double *wait, long long spare, clock_fn wtime,
                                       ksp_count_fn iterations, ksp_reason_fn reason,
                                       ksp_tolerances_fn tolerances) {
  struct record_ctx *r = calloc(1, sizeof(struct record_ctx));
  if (!r) return 0;
  r->monitor = monitor;
  r->owner = owner;
  r->beyond = beyond;
  r->counted[0] = allreduce;
  r->counted[1] = gather;
  r->counted[2] = scatter;
  r->counted[3] = wait;
  r->spare = spare;
  r->wtime = wtime;
  r->iterations = iterations;
  r->reason = reason;
  r->tolerances = tolerances;
  return r;
}

/* Copy the wait totals at `totals` (two doubles) at every monitor call of every solve. */
void ksptrace_record_marks(struct record_ctx *r, const double *totals) {
  r->totals = totals;
}

void ksptrace_record_free(struct record_ctx *r) {
  free(r->marks);
  free(r->stamps);
  free(r->norms);
  free(r->seconds);
  free(r->blocking);
  free(r->split);
  free(r->ends);
  free(r->its);
  free(r->reasons);
  free(r);
}

/* solves, start, error, failed_solve, window, filled: what Python reads after the block. */
void ksptrace_record_state(const struct record_ctx *r, long long *out) {
  out[0] = r->solves;
  out[1] = r->start;
  out[2] = r->error;
  out[3] = r->failed_solve;
  out[4] = r->window;
  out[5] = r->filled;
}

/* Copy the first `upto` slots (at most `filled`) and every solve's row into Python's arrays. */
void ksptrace_record_copy(const struct record_ctx *r, long long upto, double *stamps,
                          double *norms, double *seconds, double *blocking, double *split,
                          long long *ends, long long *its, long long *reasons) {
  unsigned long n = (unsigned long)r->solves;
  if (upto > r->filled) upto = r->filled;
  if (upto > 0) {
    memcpy(stamps, r->stamps, (unsigned long)upto * sizeof(double));
    memcpy(norms, r->norms, (unsigned long)upto * sizeof(double));
  }
  if (n) {
    memcpy(seconds, r->seconds, n * sizeof(double));
    memcpy(blocking, r->blocking, n * sizeof(double));
    memcpy(split, r->split, n * sizeof(double));
    memcpy(ends, r->ends, n * sizeof(long long));
    memcpy(its, r->its, n * sizeof(long long));
    memcpy(reasons, r->reasons, n * sizeof(long long));
  }
}

/* Copy the first `upto` slots' wait totals (two doubles each) into Python's array. */
void ksptrace_record_copy_marks(const struct record_ctx *r, long long upto, double *marks) {
  if (upto > r->filled) upto = r->filled;
  if (upto > 0 && r->marks) memcpy(marks, r->marks, 2 * (unsigned long)upto * sizeof(double));
}

static int grow(void **p, long long count, unsigned long size) {
  void *q = realloc(*p, (unsigned long)count * size);
  if (!q) return 1;
  *p = q;
  return 0;
}

/* Room for `need` slots after `start` and one more row; 1 when there is no memory. */
static int make_room(struct record_ctx *r, long long need) {
  long long k, slots = r->slots, rows = r->rows;
  if (r->start + need > slots) {
    slots = 2 * slots > r->start + need ? 2 * slots : r->start + need;
    if (grow((void **)&r->stamps, slots, sizeof(double)) ||
        grow((void **)&r->norms, slots, sizeof(double)) ||
        (r->totals && grow((void **)&r->marks, 2 * slots, sizeof(double))))
      return 1;
    r->slots = slots;
  }
  if (r->solves >= rows) {
    rows = rows ? 2 * rows : 64;
    if (grow((void **)&r->seconds, rows, sizeof(double)) ||
        grow((void **)&r->blocking, rows, sizeof(double)) ||
        grow((void **)&r->split, rows, sizeof(double)) ||
        grow((void **)&r->ends, rows, sizeof(long long)) ||
        grow((void **)&r->its, rows, sizeof(long long)) ||
        grow((void **)&r->reasons, rows, sizeof(long long)))
      return 1;
    r->rows = rows;
  }
  for (k = r->filled; k < r->start + need; ++k) {
    r->stamps[k] = r->norms[k] = 0.0 / 0.0;
    if (r->marks) r->marks[2 * k] = r->marks[2 * k + 1] = 0.0 / 0.0;
  }
  if (r->filled < r->start + need) r->filled = r->start + need;
  return 0;
}

static double blocking_now(const struct record_ctx *r) {
  return *r->counted[0] + *r->counted[1] + *r->counted[2];
}

static void stop(struct record_ctx *r, int error) {
  r->error = error;
  r->failed_solve = r->solves;
  ksptrace_stamp_disable(r->monitor, r->owner);
}

int ksptrace_presolve(void *ksp, void *b, void *x, void *vctx) {
  struct record_ctx *r = vctx;
  KSPTRACE_INT maxits = 0;
  long long need, k;
  (void)b;
  (void)x;
  if (r->error) return 0;
  if (r->tolerances(ksp, 0, 0, 0, &maxits)) {
    stop(r, REC_PETSC);
    return 0;
  }
  need = (long long)maxits + 1 + r->spare;
  if (r->open) /* the last solve never ended: its slots are free again */
    for (k = r->start; k < r->start + r->window; ++k) {
      r->stamps[k] = r->norms[k] = 0.0 / 0.0;
      if (r->marks) r->marks[2 * k] = r->marks[2 * k + 1] = 0.0 / 0.0;
    }
  if (make_room(r, need)) {
    stop(r, REC_NO_ROOM);
    return 0;
  }
  r->window = need;
  ksptrace_stamp_target(r->monitor, r->stamps + r->start, r->norms + r->start, r->beyond,
                        need, r->owner);
  if (r->marks) ksptrace_stamp_marks(r->monitor, r->totals, r->marks + 2 * r->start);
  r->open = 1;
  r->blocking0 = blocking_now(r);
  r->split0 = *r->counted[3];
  r->t0 = r->wtime();
  return 0;
}

int ksptrace_postsolve(void *ksp, void *b, void *x, void *vctx) {
  struct record_ctx *r = vctx;
  double t = r->wtime();
  const double *w;
  KSPTRACE_INT its = 0;
  int reason = 0;
  long long last, row;
  (void)b;
  (void)x;
  if (r->error || !r->open) return 0;
  if (r->iterations(ksp, &its) || r->reason(ksp, &reason)) {
    stop(r, REC_PETSC);
    return 0;
  }
  if (*r->beyond) {
    stop(r, REC_BEYOND);
    return 0;
  }
  w = r->stamps + r->start;
  /* PETSc's count is the last call the monitor saw, unless a method says otherwise */
  if (its >= 0 && its < r->window && w[its] == w[its] &&
      (its + 1 == r->window || w[its + 1] != w[its + 1])) {
    last = its;
  } else {
    for (last = r->window - 1; last >= 0 && w[last] != w[last]; --last) {
    }
    if (last < 0) {
      stop(r, REC_NONE_REPORTED);
      return 0;
    }
  }
  row = r->solves;
  r->seconds[row] = t - r->t0;
  r->blocking[row] = blocking_now(r) - r->blocking0;
  r->split[row] = *r->counted[3] - r->split0;
  r->its[row] = its;
  r->reasons[row] = reason;
  r->ends[row] = r->start + last + 1;
  r->start = r->ends[row];
  r->solves = row + 1;
  r->open = 0;
  return 0;
}
