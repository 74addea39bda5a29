/* Part of solve_hook.c (included after output.c: one translation unit): MPI wait accounting in
   a traced program (issue 65). When KSPTRACE_HOOK_WAITS names ksptrace's interposer
   (ksptrace/harness/monitoring/mpi_wait.c, built and digest-checked by `ksptrace trace`), the hook loads
   it at its first PETSc call and has it rewrite the PLT slots of MPI's reductions in the
   libpetsc the program loaded, as `ksptrace run` and `record` do: only PETSc's calls are
   timed, the program's own are not. The stamping monitor then copies its two running totals
   (seconds inside reductions, reductions started) at each iteration beside the stamp
   (solve_hook.c's stamp); their differences are a trace's wait_seconds and mpi_calls. At the
   end a REC_WAITS record says whether it was installed (or why not) and what each entry point
   carried over the whole program. With KSPTRACE_HOOK_EVENTS=1 (`trace --events`) the
   interposer also times PETSc's MatMult, PCApply and vector reductions, and a REC_SPANS
   record holds its spans (start, end, kind) for Python to sum per iteration. */

char *dlerror(void);
enum { WAIT_ENTRIES = 32, WAIT_NAME = 32 };
enum { WAIT_UNASKED = 0, WAIT_ON = 1, WAIT_LOAD = -3, WAIT_SYMBOL = -4, WAIT_NOTHING = -5 };
/* -1 and -2 are ksptrace_wait_install's: a slot not writable, an entry point not found */

static struct {
  int status;                   /* WAIT_*, or ksptrace_wait_install's error */
  unsigned patched;             /* bit e: entry point e's slot was rewritten */
  int events;                   /* PETSc's events timed too */
  int (*entries)(void);
  const char *(*name)(int);
  void (*entry)(int, double *);
  long (*spans)(const double **, double *);
} W;

static void install_waits(void) {
  const char *path = getenv("KSPTRACE_HOOK_WAITS");
  int (*install)(const char *, wtime_fn, long, unsigned *);
  const double *(*totals)(void);
  void *lib;
  int found;
  char text[256];
  if (!path || !*path) return;
  if (!(lib = dlopen(path, RTLD_NOW))) {
    snprintf(text, sizeof text, "the MPI wait interposer cannot be loaded: %s", dlerror());
    note(text);
    W.status = WAIT_LOAD;
    return;
  }
  install = dlsym(lib, "ksptrace_wait_install"), totals = dlsym(lib, "ksptrace_wait_totals");
  W.entries = dlsym(lib, "ksptrace_wait_entries"), W.name = dlsym(lib, "ksptrace_wait_name");
  W.entry = dlsym(lib, "ksptrace_wait_entry"), W.spans = dlsym(lib, "ksptrace_events_spans");
  W.events = getenv("KSPTRACE_HOOK_EVENTS") && !strcmp(getenv("KSPTRACE_HOOK_EVENTS"), "1");
  if (!install || !totals || !W.entries || !W.name || !W.entry || !W.spans) {
    W.status = WAIT_SYMBOL;
    return;
  }
  if (W.events) {
    void (*enable)(int) = dlsym(lib, "ksptrace_events_enable");
    if (!enable) {
      W.status = WAIT_SYMBOL;
      return;
    }
    enable(1);
  }
  /* Open MPI's requests are pointers, MPICH's (and its ABI's) ints */
  found = install("libpetsc", H.wtime, H.ompi ? 8 : 4, &W.patched);
  if (found < 0) W.status = found;
  else if (!W.patched) W.status = WAIT_NOTHING;
  else W.status = WAIT_ON, wait_totals = totals();
}

static void write_waits(void) {
  int ints[4] = {REC_WAITS, W.status, (int)W.patched, 0}, e;
  double values[2 * WAIT_ENTRIES] = {0};
  char names[WAIT_ENTRIES * WAIT_NAME] = {0};
  struct iovec iov[3] = {{ints, sizeof ints}, {values, sizeof values}, {names, sizeof names}};
  if (W.status == WAIT_ON) {
    ints[3] = W.entries() < WAIT_ENTRIES ? W.entries() : WAIT_ENTRIES;
    for (e = 0; e < ints[3]; ++e) {
      const char *name = W.name(e);
      W.entry(e, values + 2 * e);
      if (name) strncpy(names + e * WAIT_NAME, name, WAIT_NAME - 1);
    }
  }
  put(iov, 3);
  if (W.status == WAIT_ON && W.events) {  /* the spans: header, then count rows of three */
    const double *rows = 0;
    double dropped = 0.0;
    long long count = W.spans(&rows, &dropped);
    int head[2] = {REC_SPANS, 0};
    struct iovec span_iov[4] = {{head, sizeof head}, {&count, sizeof count},
                                {&dropped, sizeof dropped},
                                {rows, rows ? 3 * (size_t)count * sizeof(double) : 0}};
    if (!rows) count = 0;
    put(span_iov, 4);
  }
}
