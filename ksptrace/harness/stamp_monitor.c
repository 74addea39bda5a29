/* The stamping KSP monitor of ksptrace in C (see ksptrace/harness/native.py).

   PETSc calls ksptrace_stamp(ksp, its, rnorm, ctx) at every iteration. It stores the clock
   (MPI_Wtime, through a pointer) and the residual norm at index `its` of two arrays that
   Python owns, exactly as the Python monitor does, without entering the interpreter: a Python
   monitor costs about 0.45 us per iteration through petsc4py, this one some 30 ns.

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
void free(void *ptr);

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
};

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
  c->enabled = 1;
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
