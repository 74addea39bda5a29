/* ksptrace's solve hook (docs/own-solver.md): preloaded into an unmodified PETSc program by
   `ksptrace trace`, it defines KSPSolve, KSPSetUp and PCSetUp and calls PETSc's own, found with
   dlsym (RTLD_NEXT, else in the loaded library defining them: petsc4py loads libpetsc
   RTLD_LOCAL). libpetsc calls its exported functions through its PLT, so solves made inside
   PETSc (SNESSolve's) reach it too. A solve's depth is 1 for the program's outermost solves,
   one more per KSPSolve around it, and one more inside a set-up the program called itself.
   Solves selected by KSPTRACE_HOOK_DEPTH/_SETUP/_PREFIX get a stamping monitor on their KSP;
   others are counted, as are a selected preonly KSP's (a monitor would make PETSc compute a
   residual it otherwise skips). A KSP is known by its address and PETSc's object id (a new KSP
   at a destroyed one's address is another). A set-up is timed only before the first iteration
   of the solve around it (PCApply's PCSetUp in every iteration is that iteration's). Each
   process writes <KSPTRACE_HOOK_DIR>/rank-<rank>-<pid>.bin (output.c; read by records.py).
   With KSPTRACE_HOOK_WAITS the monitor also copies the MPI wait totals at each iteration
   (waits.c: ksptrace's interposer, mpi_wait.c, rewrites libpetsc's PLT slots of MPI's
   reductions, as `ksptrace run` and `record` do). No
   header is included: PETSc's objects are pointers and its integer and real sizes are asked of
   the PETSc the program loaded, at run time. */

enum { RTLD_LAZY = 1, RTLD_NOW = 2, RTLD_NOLOAD = 4 };
#define RTLD_NEXT ((void *)-1l)

typedef unsigned long size_t;
void *dlsym(void *handle, const char *name), *dlopen(const char *file, int mode);
int dlclose(void *handle);
typedef struct { const char *dli_fname; void *base; const char *sname; void *saddr; } Dl_info;
int dladdr(const void *addr, Dl_info *info);
struct dl_phdr_info { unsigned long addr; const char *name; /* more fields unused */ };
int dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data);
void *calloc(size_t n, size_t size), *realloc(void *p, size_t size), free(void *p);
char *getenv(const char *name);
int snprintf(char *s, size_t n, const char *fmt, ...);
struct iovec { const void *base; size_t len; };
long writev(int fd, const struct iovec *iov, int count);
int open(const char *path, int flags, ...), close(int fd), fprintf(void *f, const char *fmt, ...);
extern void *stderr;
#define O_FLAGS 02000301  /* Linux: O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC */
int getpid(void), gethostname(char *name, size_t len), *__errno_location(void);
char *strncpy(char *d, const char *s, size_t n);
void *memcpy(void *d, const void *s, size_t n);
int strcmp(const char *a, const char *b);
long strtol(const char *s, char **end, int base);

typedef int (*solve_fn)(void *, void *, void *);
typedef int (*setup_fn)(void *);
typedef int (*get_ptr_fn)(void *, const void **);
typedef int (*get_int_fn)(void *, void *);
typedef double (*wtime_fn)(void);

enum { HOOK_VERSION = 3, REC_SOLVE = 1, REC_KSP = 2, REC_NOTE = 3, REC_WAITS = 4, REC_SPANS = 5,
       REC_END = 9 };
enum { NAME = 64, MAX_FRAMES = 256 };

struct ksp_ctx {                /* one KSP seen by this process */
  void *ksp;
  long long oid;                /* PETSc's object id: a new KSP at an old address differs */
  int id, comm_size, attached, refused, recorded, direct;
  long long skipped;            /* its solves not recorded */
  int min_depth, setup_seen, active;  /* active: a recorded solve of it is running */
  char type[NAME], prefix[NAME];
  double *stamps, *norms, *marks;  /* marks: the wait totals at each stamp (waits.c), or 0 */
  long long cap, count;
  struct ksp_ctx *next;
};

static struct {
  int ready, broken, int_bytes, real_bytes, rank, size, ompi, max_depth, with_setup, ids;
  int fd, pid, ended;           /* the raw file (-1: none), the process that opened it, and
                                   whether its end mark is written */
  const char *prefix;
  solve_fn solve;
  setup_fn ksp_setup, pc_setup;
  wtime_fn wtime;
  int (*monitor_set)(void *, void *, void *, int (*)(void **));
  get_ptr_fn ksp_type, pc_type, ksp_prefix;
  int (*get_pc)(void *, void **), (*operators)(void *, void **, void **);
  int (*get_id)(void *, long long *), (*mat_size)(void *, long long *, void *);
  get_int_fn iterations, reason, get_comm;
  int (*comm_size_i)(int, int *), (*comm_size_p)(void *, int *);
  int (*push_handler)(void *, void *), (*pop_handler)(void);
  void *ignore_handler, *lib;
  const char *const **reasons;
  struct ksp_ctx *ksps;
  char frames[MAX_FRAMES];      /* 's': a KSPSolve, 'u': a set-up */
  double setup_acc[MAX_FRAMES + 1];
  struct ksp_ctx *fctx[MAX_FRAMES]; /* the recorded solve of each 's' frame, else 0 */
  int nframes;
} H = {.fd = -1};

int KSPSolve(void *ksp, void *b, void *x);
static void write_waits(void);
static const double *wait_totals;  /* the interposer's running totals (waits.c), or 0 */
#include "output.c"  /* the raw file: opened, written through a buffer, ended at exit or exec */
#include "waits.c"   /* MPI wait accounting: the interposer loaded, its totals at exit */

static int find_in(struct dl_phdr_info *info, size_t size, void *data) {
  void **found = data, *h, *f;
  (void)size;
  if (!info->name || !info->name[0]) return 0;
  h = dlopen(info->name, RTLD_LAZY | RTLD_NOLOAD);
  if (!h) return 0;
  f = dlsym(h, "KSPSolve");
  if (f && f != (void *)KSPSolve) return found[0] = h, found[1] = f, 1;
  dlclose(h);
  return 0;
}

static int ask_size(int (*from)(const char *, int *, int *), int (*size_of)(int, size_t *),
                    const char *name) {
  int type = 0, found = 0;
  size_t bytes = 0;
  if (!from || !size_of || from(name, &type, &found) || !found || size_of(type, &bytes)) return 0;
  return (int)bytes;
}

/* Find PETSc's functions and this PETSc's sizes; 0 when the hook can run. */
static int resolve(void) {
  void *found[2] = {0, 0};
  Dl_info info = {0};
  int (*from)(const char *, int *, int *), (*size_of)(int, size_t *), *rank, *size;
  found[1] = dlsym(RTLD_NEXT, "KSPSolve"), H.ready = 1;
  if (found[1] && dladdr(found[1], &info) && info.dli_fname)
    found[0] = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (!found[0]) dl_iterate_phdr(find_in, found);
  if (!found[0] || !found[1]) return H.broken = 1;
  H.lib = found[0], H.solve = (solve_fn)found[1];
  if (!info.dli_fname) dladdr(found[1], &info);
  H.ksp_setup = (setup_fn)dlsym(H.lib, "KSPSetUp"), H.pc_setup = dlsym(H.lib, "PCSetUp");
  H.wtime = (wtime_fn)dlsym(H.lib, "MPI_Wtime"), H.monitor_set = dlsym(H.lib, "KSPMonitorSet");
  H.ksp_type = dlsym(H.lib, "KSPGetType"), H.pc_type = dlsym(H.lib, "PCGetType");
  H.ksp_prefix = dlsym(H.lib, "KSPGetOptionsPrefix"), H.get_pc = dlsym(H.lib, "KSPGetPC");
  H.operators = dlsym(H.lib, "KSPGetOperators"), H.mat_size = dlsym(H.lib, "MatGetSize");
  H.iterations = dlsym(H.lib, "KSPGetIterationNumber");
  H.get_comm = dlsym(H.lib, "PetscObjectGetComm"), H.get_id = dlsym(H.lib, "PetscObjectGetId");
  H.reason = dlsym(H.lib, "KSPGetConvergedReason"), H.reasons = dlsym(H.lib, "KSPConvergedReasons");
  H.push_handler = dlsym(H.lib, "PetscPushErrorHandler"), H.pop_handler = dlsym(H.lib,
      "PetscPopErrorHandler"), H.ignore_handler = dlsym(H.lib, "PetscIgnoreErrorHandler");
  H.ompi = dlsym(H.lib, "ompi_mpi_comm_world") != 0;
  if (H.ompi) H.comm_size_p = dlsym(H.lib, "MPI_Comm_size");
  else H.comm_size_i = dlsym(H.lib, "MPI_Comm_size");
  from = dlsym(H.lib, "PetscDataTypeFromString"), size_of = dlsym(H.lib, "PetscDataTypeGetSize");
  H.int_bytes = ask_size(from, size_of, "int"), H.real_bytes = ask_size(from, size_of, "real");
  rank = dlsym(H.lib, "PetscGlobalRank"), size = dlsym(H.lib, "PetscGlobalSize");
  H.rank = rank ? *rank : 0, H.size = size ? *size : 1;
  H.prefix = getenv("KSPTRACE_HOOK_PREFIX") && *getenv("KSPTRACE_HOOK_PREFIX")
                 ? getenv("KSPTRACE_HOOK_PREFIX") : 0;
  H.max_depth = getenv("KSPTRACE_HOOK_DEPTH") ? (int)strtol(getenv("KSPTRACE_HOOK_DEPTH"), 0, 10)
                                              : (H.prefix ? 1 << 20 : 1);
  H.with_setup = getenv("KSPTRACE_HOOK_SETUP") && !strcmp(getenv("KSPTRACE_HOOK_SETUP"), "1");
  open_file(info.dli_fname);
  if (H.wtime) install_waits();
  if (!H.ksp_setup || !H.pc_setup || !H.wtime || !H.monitor_set || !H.ksp_type || !H.pc_type ||
      !H.ksp_prefix || !H.get_pc || !H.iterations || !H.reason || !H.get_comm) {
    note("this PETSc lacks a function the hook needs; nothing is recorded");
    return H.broken = 1;
  }
  if ((H.int_bytes != 4 && H.int_bytes != 8) || (H.real_bytes != 4 && H.real_bytes != 8)) {
    note("this PETSc's integer or real size is not 4 or 8 bytes; nothing is recorded");
    return H.broken = 1;
  }
  return 0;
}

static void stamp(struct ksp_ctx *c, long long its, double rnorm) {
  double t = c->active ? H.wtime() : 0.0;
  long long k;
  if (!c->active || its < 0) return;
  if (its >= c->cap) {
    long long cap = 2 * c->cap > its + 1 ? 2 * c->cap : its + 1;
    double *s = realloc(c->stamps, (size_t)cap * sizeof(double)), *n = 0, *m = 0;
    if (s) c->stamps = s, n = realloc(c->norms, (size_t)cap * sizeof(double));
    if (n) c->norms = n, m = wait_totals ? realloc(c->marks, 2 * (size_t)cap * sizeof *m) : n;
    if (m && wait_totals) c->marks = m;
    if (!m) { c->active = 0; c->count = -1; return; }   /* no memory: the solve is lost */
    c->cap = cap;
  }
  for (k = c->count; k < its; ++k) {
    c->stamps[k] = c->norms[k] = 0.0 / 0.0;
    if (c->marks) c->marks[2 * k] = c->marks[2 * k + 1] = 0.0 / 0.0;
  }
  c->stamps[its] = t, c->norms[its] = rnorm;
  if (c->marks) c->marks[2 * its] = wait_totals[0], c->marks[2 * its + 1] = wait_totals[1];
  if (its >= c->count) c->count = its + 1;
}

#define MONITOR(NAME, ITYPE, RTYPE) static int NAME(void *ksp, ITYPE its, RTYPE rnorm, \
  void *ctx) { (void)ksp; stamp(ctx, (long long)its, (double)rnorm); return 0; }
MONITOR(monitor_i4_r4, int, float) MONITOR(monitor_i4_r8, int, double)
MONITOR(monitor_i8_r4, long long, float) MONITOR(monitor_i8_r8, long long, double)

static int monitor_destroy(void **vctx) {   /* KSPDestroy or KSPMonitorCancel */
  struct ksp_ctx *c = *vctx;
  if (c) c->attached = 0;                     /* the KSP stays known by its address and id */
  return 0;
}

static void copy_name(char *dst, get_ptr_fn get, void *obj) {
  const char *s = 0;
  dst[0] = 0;
  if (obj && !get(obj, (const void **)&s) && s) strncpy(dst, s, NAME - 1);
}

static int comm_size(void *ksp) {
  union { void *p; int i; long long l; } comm = {0};
  int n = 1;
  if (!H.get_comm(ksp, &comm)) {
    if (H.ompi && H.comm_size_p) H.comm_size_p(comm.p, &n);
    else if (H.comm_size_i) H.comm_size_i(comm.i, &n);
  }
  return n;
}

/* The context of `ksp`: the last one used, one in the list with its address and id, a destroyed
   KSP's context that has nothing left to report, or a new one. A context at this address with
   another id was a destroyed KSP's: it is marked so, its buffers freed, its counts kept. */
static struct ksp_ctx *context(void *ksp) {
  static struct ksp_ctx *last;
  struct ksp_ctx *c, *dead = 0;
  long long oid = -1;
  if (H.get_id && H.get_id(ksp, &oid)) oid = -1;
  if (last && last->ksp == ksp && last->oid == oid) return last;
  for (c = H.ksps; c; c = c->next) {
    if (c->ksp == ksp && c->oid == oid) return last = c;
    if (c->ksp == ksp) {
      c->ksp = 0, c->attached = 0, c->cap = 0;
      free(c->stamps), free(c->norms), free(c->marks), c->stamps = c->norms = c->marks = 0;
    }
    if (!c->ksp && !c->skipped && !dead) dead = c;
  }
  if (!(c = dead)) {
    if (!(c = calloc(1, sizeof *c))) return 0;
    c->next = H.ksps, H.ksps = c;
  }
  c->ksp = ksp, c->oid = oid, c->min_depth = 1 << 20, c->id = -1;
  c->recorded = c->refused = c->setup_seen = c->direct = 0;
  copy_name(c->type, H.ksp_type, ksp), copy_name(c->prefix, H.ksp_prefix, ksp);
  c->comm_size = comm_size(ksp);
  return last = c;
}

static void attach(struct ksp_ctx *c) {
  void *fn = H.int_bytes == 4 ? (H.real_bytes == 4 ? (void *)monitor_i4_r4 : (void *)monitor_i4_r8)
                              : (H.real_bytes == 4 ? (void *)monitor_i8_r4 : (void *)monitor_i8_r8);
  int err;
  char text[256];
  if (H.push_handler && H.ignore_handler) H.push_handler(H.ignore_handler, 0);
  err = H.monitor_set(c->ksp, fn, c, monitor_destroy);
  if (H.push_handler && H.ignore_handler && H.pop_handler) H.pop_handler();
  if (!err) { c->attached = 1; return; }
  c->refused = 1;
  snprintf(text, sizeof text, "KSP %d (%s, prefix '%s') refused a monitor (error %d): it has "
           "MAXKSPMONITORS monitors already; its solves are counted, not stamped", c->id,
           c->type, c->prefix, err);
  note(text);
}

static void write_solve(struct ksp_ctx *c, int depth, int setup, const double *times) {
  char names[4 * NAME] = {0};
  long long its = 0, head[4];
  int reason = 0;
  void *pc = 0, *mat = 0;
  const char *rname = 0;
  H.iterations(c->ksp, &its);             /* a PetscInt: 4 or 8 bytes, zero-extended */
  if (H.int_bytes == 4) its = (long long)(int)its;
  H.reason(c->ksp, &reason);
  copy_name(names, H.ksp_type, c->ksp);
  if (!H.get_pc(c->ksp, &pc)) copy_name(names + NAME, H.pc_type, pc);
  copy_name(names + 2 * NAME, H.ksp_prefix, c->ksp);
  /* names of -11..9 exist in every PETSc since 3.14; others are written as numbers only */
  if (H.reasons && *H.reasons && reason >= -11 && reason <= 9) rname = (*H.reasons)[reason];
  if (rname) strncpy(names + 3 * NAME, rname, NAME - 1);
  head[0] = its;
  head[1] = c->count < 0 ? 0 : c->count;
  head[2] = c->count < 0;
  head[3] = -1;                           /* the operator's rows, when PETSc says */
  if (H.operators && H.mat_size && !H.operators(c->ksp, &mat, 0) && mat &&
      !H.mat_size(mat, &head[3], 0) && H.int_bytes == 4)
    head[3] = (long long)(int)head[3];
  {
    int marked = c->marks != 0;  /* the wait totals at each stamp follow the norms */
    int ints[8] = {REC_SOLVE, c->id, depth, setup, c->comm_size, reason, c->refused, marked};
    struct iovec iov[7] = {{ints, sizeof ints}, {head, sizeof head},
                           {times, 4 * sizeof(double)}, {names, sizeof names},
                           {c->stamps, (size_t)head[1] * sizeof(double)},
                           {c->norms, (size_t)head[1] * sizeof(double)},
                           {c->marks, 2 * (size_t)head[1] * sizeof(double)}};
    put(iov, 6 + marked);
  }
}

/* The depth a solve starting now would have, and whether it runs inside a set-up. */
static int depth_now(int *setup) {
  int k, solves = 0;
  for (k = 0; k < H.nframes; ++k) solves += H.frames[k] == 's';
  *setup = H.nframes > 0 && H.frames[H.nframes - 1] == 'u';
  return 1 + solves + (H.nframes > 0 && H.frames[0] == 'u');
}

/* preonly (KSPNONE since 3.19) applies the preconditioner once: no iteration to stamp. */
static int direct(void *ksp) {
  char type[NAME];
  copy_name(type, H.ksp_type, ksp);
  return !strcmp(type, "preonly") || !strcmp(type, "none");
}

static int selected(struct ksp_ctx *c, int depth, int setup) {
  if (H.prefix && strcmp(H.prefix, c->prefix)) return 0;
  return depth <= H.max_depth || (H.with_setup && setup && depth <= H.max_depth + 1);
}

int KSPSolve(void *ksp, void *b, void *x) {
  struct ksp_ctx *c = 0;
  int depth, setup, record, err, level;
  double times[4] = {0.0, 0.0, 0.0, 0.0};  /* begin, end, set-up inside, set-up before */
  if (!H.ready) resolve();
  if (!H.solve) return fprintf(stderr, "ksptrace trace: the hook found no KSPSolve to call\n"), 76;
  if (H.broken || H.fd < 0 || H.nframes >= MAX_FRAMES) return H.solve(ksp, b, x);
  depth = depth_now(&setup);
  c = context(ksp);
  record = c && selected(c, depth, setup);
  if (record && direct(ksp)) record = 0, c->direct = 1;
  if (c && depth < c->min_depth) c->min_depth = depth;
  if (c && setup) c->setup_seen = 1;
  if (record) {
    if (c->id < 0) c->id = H.ids++, c->comm_size = comm_size(ksp);
    if (!c->attached && !c->refused) attach(c);
    c->count = 0, c->active = c->attached;
  } else if (c) {
    ++c->skipped;
  }
  level = H.nframes;
  H.fctx[level] = record ? c : 0;
  H.frames[H.nframes++] = 's';
  H.setup_acc[level + 1] = 0.0;
  if (record) times[0] = H.wtime();
  err = H.solve(ksp, b, x);
  if (record) times[1] = H.wtime();
  --H.nframes;
  if (record) {
    times[2] = H.setup_acc[level + 1], times[3] = level == 0 ? H.setup_acc[0] : 0.0;
    c->active = 0, ++c->recorded;
    write_solve(c, depth, setup, times);
  }
  if (level == 0) H.setup_acc[0] = 0.0;
  return err;
}

/* A set-up is timed when the program called it, or a recorded solve did before its first
   iteration, and no other set-up is around it. */
static int timed_setup(setup_fn real, void *obj) {
  int err, outer, top = H.nframes - 1;
  double t0 = 0.0;
  if (!real) return 76;  /* PETSC_ERR_LIB: no PETSc function to call */
  if (H.broken || H.fd < 0 || H.nframes >= MAX_FRAMES) return real(obj);
  outer = top < 0 || (H.frames[top] == 's' && H.fctx[top] && H.fctx[top]->count == 0);
  if (outer) t0 = H.wtime();
  H.frames[H.nframes++] = 'u';
  err = real(obj);
  --H.nframes;
  if (outer) H.setup_acc[H.nframes] += H.wtime() - t0;  /* [0]: the program's, [k]: solve k-1's */
  return err;
}

int KSPSetUp(void *ksp) {
  if (!H.ready) resolve();
  return timed_setup(H.ksp_setup ? H.ksp_setup : (setup_fn)dlsym(RTLD_NEXT, "KSPSetUp"), ksp);
}

int PCSetUp(void *pc) {
  if (!H.ready) resolve();
  return timed_setup(H.pc_setup ? H.pc_setup : (setup_fn)dlsym(RTLD_NEXT, "PCSetUp"), pc);
}

