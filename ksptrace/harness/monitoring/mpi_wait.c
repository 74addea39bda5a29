/* Time spent in MPI reductions, per process (see ksptrace/harness/monitoring/mpiwait.py).

   ksptrace_wait_install(match, ...) rewrites the PLT slots (R_*_JUMP_SLOT relocations) of every
   loaded library whose file name contains `match` (libpetsc) for the MPI entry points below:
   each slot then holds a wrapper here that reads the clock on entry and on exit and calls the
   function the slot would have reached (looked up as the dynamic linker does: the global scope
   first, which holds any PMPI tool preloaded, then the library's own dependencies). This is the
   PMPI profiling interface's interposition, done at run time inside a process that was not
   started with LD_PRELOAD, and only for calls made by PETSc: MPI's calls to itself and the
   harness's own (mpi4py) do not pass through libpetsc's PLT.

   What is counted, into the totals `ksptrace_waits` (which the stamping monitor copies at each
   iteration) and per entry point:
   - the blocking reductions (MPI_Allreduce, MPI_Reduce, MPI_Scan, MPI_Exscan,
     MPI_Reduce_scatter, MPI_Reduce_scatter_block, and MPI-4's large-count MPI_Allreduce_c and
     MPI_Reduce_c): their whole time, and one call each;
   - MPI_Iallreduce (and MPI_Iallreduce_c): the time to start it, one call; the address of its
     request is remembered;
   - the completions (MPI_Wait, MPI_Waitall, MPI_Waitany, MPI_Waitsome, MPI_Test,
     MPI_Testall): their time only when one of their requests is a remembered Iallreduce's,
     so that the halo exchanges of MatMult (also completed by MPI_Waitall) are not counted; no
     call.

   With events asked (ksptrace_events_enable, `--events`), the slots of PETSc's MatMult,
   PCApply and the vector reductions (VecMDot, VecNorm, VecDot, VecTDot and VecMTDot, which CG
   uses for real scalars, and the split phases of pipelined methods: VecMDotBegin/End,
   VecNormBegin/End, VecDotBegin/End) are rewritten too: each outermost call of a kind (a
   MatMult inside a MatMult is its caller's) appends its start, its end and its kind (0
   MatMult, 1 PCApply, 2 the vector reductions) to a growing buffer of spans, which Python
   reads after the solve and sums per iteration (ksptrace/trace/iteration_events.py).

   Handles are forwarded as machine words, never looked at: Open MPI's are pointers, MPICH's
   ints, and on x86-64 and AArch64 both travel in one register or stack word, so one build
   serves both. Request arrays are walked with the handle size given at install time. */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <elf.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__x86_64__)
#define JUMP_SLOT R_X86_64_JUMP_SLOT
#elif defined(__aarch64__)
#define JUMP_SLOT R_AARCH64_JUMP_SLOT
#else
#error "ksptrace's MPI wait accounting knows the PLT of x86-64 and AArch64 only"
#endif

typedef unsigned long word;    /* a handle, count or pointer, forwarded unchanged */
typedef double (*clock_fn)(void);

struct ksptrace_waits {
  double seconds;              /* time inside the entry points below (waits of completions) */
  double calls;                /* reductions started (a double: the monitor copies both alike) */
};
struct ksptrace_waits ksptrace_waits;

enum {
  E_ALLREDUCE, E_REDUCE, E_SCAN, E_EXSCAN, E_REDUCE_SCATTER, E_REDUCE_SCATTER_BLOCK,
  E_IALLREDUCE, E_WAIT, E_WAITALL, E_WAITANY, E_WAITSOME, E_TEST, E_TESTALL, E_ALLREDUCE_C,
  E_REDUCE_C, E_IALLREDUCE_C, E_MATMULT, E_PCAPPLY, E_VECMDOT, E_VECNORM, E_VECDOT, E_VECTDOT,
  E_VECMTDOT, E_VECMDOTBEGIN, E_VECMDOTEND, E_VECNORMBEGIN, E_VECNORMEND, E_VECDOTBEGIN,
  E_VECDOTEND, E_COUNT
};
enum { E_FIRST_EVENT = E_MATMULT };
typedef char entries_fit_a_mask[E_COUNT < 32 ? 1 : -1]; /* `patched` has a bit for each */
static const char *const names[E_COUNT] = {
  "MPI_Allreduce", "MPI_Reduce", "MPI_Scan", "MPI_Exscan", "MPI_Reduce_scatter",
  "MPI_Reduce_scatter_block", "MPI_Iallreduce", "MPI_Wait", "MPI_Waitall", "MPI_Waitany",
  "MPI_Waitsome", "MPI_Test", "MPI_Testall", "MPI_Allreduce_c", "MPI_Reduce_c",
  "MPI_Iallreduce_c", "MatMult", "PCApply", "VecMDot", "VecNorm", "VecDot",
  "VecTDot", "VecMTDot", "VecMDotBegin", "VecMDotEnd", "VecNormBegin", "VecNormEnd",
  "VecDotBegin", "VecDotEnd"};
static void *next[E_COUNT];          /* the function each slot reached before */
static double entry_seconds[E_COUNT];
static double entry_calls[E_COUNT];  /* every call, counted or not in the totals */
static clock_fn wtime;
static long handle_bytes = 8;

enum { PENDING = 64 };
static const char *pending[PENDING]; /* request addresses of unfinished Iallreduces */
static int npending;
static double dropped;               /* remembered requests pushed out by newer ones */

static void remember(const void *request) {
  if (npending == PENDING) {
    memmove(pending, pending + 1, (PENDING - 1) * sizeof pending[0]);
    --npending;
    ++dropped;
  }
  pending[npending++] = request;
}

static int find(const char *request) {
  int i;
  for (i = npending - 1; i >= 0; --i)
    if (pending[i] == request) return i;
  return -1;
}

static void forget(const char *request) {
  int i = find(request);
  if (i >= 0) {
    memmove(pending + i, pending + i + 1, (size_t)(npending - i - 1) * sizeof pending[0]);
    --npending;
  }
}

static int any_pending(word count, const char *requests) {
  word i;
  if (!npending) return 0;
  for (i = 0; i < count; ++i)
    if (find(requests + i * (word)handle_bytes) >= 0) return 1;
  return 0;
}

static void forget_all(word count, const char *requests) {
  word i;
  for (i = 0; i < count && npending; ++i) forget(requests + i * (word)handle_bytes);
}

static void add(int entry, double seconds, int reduction) {
  entry_seconds[entry] += seconds;
  entry_calls[entry] += 1.0;
  ksptrace_waits.seconds += seconds;
  if (reduction) ksptrace_waits.calls += 1.0;
}

typedef int (*fn6)(word, word, word, word, word, word);
typedef int (*fn7)(word, word, word, word, word, word, word);

#define BLOCKING6(fname, entry)                                                        \
  static int fname(word a, word b, word c, word d, word e, word f) {                   \
    double t0 = wtime();                                                               \
    int rc = ((fn6)next[entry])(a, b, c, d, e, f);                                     \
    add(entry, wtime() - t0, 1);                                                       \
    return rc;                                                                         \
  }
BLOCKING6(w_allreduce, E_ALLREDUCE)
BLOCKING6(w_scan, E_SCAN)
BLOCKING6(w_exscan, E_EXSCAN)
BLOCKING6(w_reduce_scatter, E_REDUCE_SCATTER)
BLOCKING6(w_reduce_scatter_block, E_REDUCE_SCATTER_BLOCK)
BLOCKING6(w_allreduce_c, E_ALLREDUCE_C)

/* MPI_Reduce(sendbuf, recvbuf, count, type, op, root, comm) */
#define REDUCE7(fname, entry)                                                          \
  static int fname(word a, word b, word c, word d, word e, word f, word g) {           \
    double t0 = wtime();                                                               \
    int rc = ((fn7)next[entry])(a, b, c, d, e, f, g);                                  \
    add(entry, wtime() - t0, 1);                                                       \
    return rc;                                                                         \
  }
REDUCE7(w_reduce, E_REDUCE)
REDUCE7(w_reduce_c, E_REDUCE_C)

/* MPI_Iallreduce(sendbuf, recvbuf, count, type, op, comm, request) */
#define IALLREDUCE7(fname, entry)                                                      \
  static int fname(word a, word b, word c, word d, word e, word f, word request) {     \
    double t0 = wtime();                                                               \
    int rc = ((fn7)next[entry])(a, b, c, d, e, f, request);                            \
    add(entry, wtime() - t0, 1);                                                       \
    remember((const char *)request);                                                   \
    return rc;                                                                         \
  }
IALLREDUCE7(w_iallreduce, E_IALLREDUCE)
IALLREDUCE7(w_iallreduce_c, E_IALLREDUCE_C)

/* MPI_Wait(request, status) */
static int w_wait(word request, word status) {
  double t0;
  int rc;
  if (find((const char *)request) < 0) {
    entry_calls[E_WAIT] += 1.0;
    return ((int (*)(word, word))next[E_WAIT])(request, status);
  }
  t0 = wtime();
  rc = ((int (*)(word, word))next[E_WAIT])(request, status);
  add(E_WAIT, wtime() - t0, 0);
  forget((const char *)request);
  return rc;
}

/* MPI_Test(request, flag, status) */
static int w_test(word request, word flag, word status) {
  double t0;
  int rc;
  if (find((const char *)request) < 0) {
    entry_calls[E_TEST] += 1.0;
    return ((int (*)(word, word, word))next[E_TEST])(request, flag, status);
  }
  t0 = wtime();
  rc = ((int (*)(word, word, word))next[E_TEST])(request, flag, status);
  add(E_TEST, wtime() - t0, 0);
  if (rc == 0 && *(int *)flag) forget((const char *)request);
  return rc;
}

/* MPI_Waitall(count, requests, statuses) */
static int w_waitall(word count, word requests, word statuses) {
  double t0;
  int rc, n = (int)count;
  if (n <= 0 || !any_pending((word)n, (const char *)requests)) {
    entry_calls[E_WAITALL] += 1.0;
    return ((int (*)(word, word, word))next[E_WAITALL])(count, requests, statuses);
  }
  t0 = wtime();
  rc = ((int (*)(word, word, word))next[E_WAITALL])(count, requests, statuses);
  add(E_WAITALL, wtime() - t0, 0);
  forget_all((word)n, (const char *)requests);
  return rc;
}

/* MPI_Testall(count, requests, flag, statuses) */
static int w_testall(word count, word requests, word flag, word statuses) {
  double t0;
  int rc, n = (int)count;
  if (n <= 0 || !any_pending((word)n, (const char *)requests)) {
    entry_calls[E_TESTALL] += 1.0;
    return ((int (*)(word, word, word, word))next[E_TESTALL])(count, requests, flag, statuses);
  }
  t0 = wtime();
  rc = ((int (*)(word, word, word, word))next[E_TESTALL])(count, requests, flag, statuses);
  add(E_TESTALL, wtime() - t0, 0);
  if (rc == 0 && *(int *)flag) forget_all((word)n, (const char *)requests);
  return rc;
}

/* MPI_Waitany(count, requests, index, status) */
static int w_waitany(word count, word requests, word index, word status) {
  double t0;
  int rc, n = (int)count, i;
  if (n <= 0 || !any_pending((word)n, (const char *)requests)) {
    entry_calls[E_WAITANY] += 1.0;
    return ((int (*)(word, word, word, word))next[E_WAITANY])(count, requests, index, status);
  }
  t0 = wtime();
  rc = ((int (*)(word, word, word, word))next[E_WAITANY])(count, requests, index, status);
  add(E_WAITANY, wtime() - t0, 0);
  i = *(int *)index;
  if (rc == 0 && i >= 0 && i < n) forget((const char *)requests + (word)i * (word)handle_bytes);
  return rc;
}

/* MPI_Waitsome(incount, requests, outcount, indices, statuses) */
static int w_waitsome(word count, word requests, word outcount, word indices, word statuses) {
  double t0;
  int rc, n = (int)count, k, done;
  typedef int (*fn5)(word, word, word, word, word);
  if (n <= 0 || !any_pending((word)n, (const char *)requests)) {
    entry_calls[E_WAITSOME] += 1.0;
    return ((fn5)next[E_WAITSOME])(count, requests, outcount, indices, statuses);
  }
  t0 = wtime();
  rc = ((fn5)next[E_WAITSOME])(count, requests, outcount, indices, statuses);
  add(E_WAITSOME, wtime() - t0, 0);
  done = *(int *)outcount;
  for (k = 0; rc == 0 && k < done && k < n; ++k) {
    int i = ((int *)indices)[k];
    if (i >= 0 && i < n) forget((const char *)requests + (word)i * (word)handle_bytes);
  }
  return rc;
}

/* ---- PETSc's events: spans of the outermost call of each kind ---- */

enum { V_MATMULT, V_PCAPPLY, V_REDUCTION, V_KINDS };
static int events_on;
static int depth[V_KINDS];
static double *spans;                /* [start, end, kind] per span */
static long nspans, capspans;
static double spans_dropped;         /* spans not kept: no memory */

static void span(int kind, double t0, double t1) {
  if (nspans == capspans) {
    long cap = capspans ? 2 * capspans : 4096;
    double *grown = realloc(spans, (size_t)cap * 3 * sizeof(double));
    if (!grown) {
      ++spans_dropped;
      return;
    }
    spans = grown, capspans = cap;
  }
  spans[3 * nspans] = t0, spans[3 * nspans + 1] = t1, spans[3 * nspans + 2] = kind;
  ++nspans;
}

typedef int (*fn4)(word, word, word, word);
/* MatMult(A, x, y), PCApply(pc, x, y), VecNorm(x, type, val), Vec[T]Dot(x, y, val) and
   VecM[T]Dot(x, n, ys, vals): at most four words, a fourth passed to three is never read */
#define EVENT4(fname, entry, kind)                                                     \
  static int fname(word a, word b, word c, word d) {                                   \
    double t0;                                                                         \
    int rc;                                                                            \
    if (depth[kind]++) {                                                               \
      rc = ((fn4)next[entry])(a, b, c, d);                                             \
      --depth[kind];                                                                   \
      return rc;                                                                       \
    }                                                                                  \
    t0 = wtime();                                                                      \
    rc = ((fn4)next[entry])(a, b, c, d);                                               \
    span(kind, t0, wtime());                                                           \
    --depth[kind];                                                                     \
    return rc;                                                                         \
  }
EVENT4(w_matmult, E_MATMULT, V_MATMULT)
EVENT4(w_pcapply, E_PCAPPLY, V_PCAPPLY)
EVENT4(w_vecmdot, E_VECMDOT, V_REDUCTION)
EVENT4(w_vecnorm, E_VECNORM, V_REDUCTION)
EVENT4(w_vecdot, E_VECDOT, V_REDUCTION)
EVENT4(w_vectdot, E_VECTDOT, V_REDUCTION)
EVENT4(w_vecmtdot, E_VECMTDOT, V_REDUCTION)
EVENT4(w_vecmdotbegin, E_VECMDOTBEGIN, V_REDUCTION)
EVENT4(w_vecmdotend, E_VECMDOTEND, V_REDUCTION)
EVENT4(w_vecnormbegin, E_VECNORMBEGIN, V_REDUCTION)
EVENT4(w_vecnormend, E_VECNORMEND, V_REDUCTION)
EVENT4(w_vecdotbegin, E_VECDOTBEGIN, V_REDUCTION)
EVENT4(w_vecdotend, E_VECDOTEND, V_REDUCTION)

static void *const wrappers[E_COUNT] = {
  (void *)w_allreduce, (void *)w_reduce, (void *)w_scan, (void *)w_exscan,
  (void *)w_reduce_scatter, (void *)w_reduce_scatter_block, (void *)w_iallreduce,
  (void *)w_wait, (void *)w_waitall, (void *)w_waitany, (void *)w_waitsome, (void *)w_test,
  (void *)w_testall, (void *)w_allreduce_c, (void *)w_reduce_c, (void *)w_iallreduce_c,
  (void *)w_matmult, (void *)w_pcapply, (void *)w_vecmdot, (void *)w_vecnorm, (void *)w_vecdot,
  (void *)w_vectdot, (void *)w_vecmtdot, (void *)w_vecmdotbegin, (void *)w_vecmdotend,
  (void *)w_vecnormbegin, (void *)w_vecnormend, (void *)w_vecdotbegin, (void *)w_vecdotend};

/* ---- rewriting the PLT slots of the matching libraries ---- */

struct install {
  const char *match;
  int objects;                 /* libraries whose slots were rewritten */
  unsigned patched;            /* bit e: entry point e's slot was rewritten somewhere */
  int error;                   /* 1: a slot's page could not be made writable; 2: no target */
};

static int entry_of(const char *name) {
  int e, last = events_on ? E_COUNT : E_FIRST_EVENT;
  if (strncmp(name, "MPI_", 4) != 0 && (!events_on || (name[0] != 'M' && name[0] != 'P' &&
                                                       name[0] != 'V')))
    return -1;
  for (e = 0; e < last; ++e) /* E_COUNT < 32: `patched` has a bit for each */
    if (strcmp(name, names[e]) == 0) return e;
  return -1;
}

static ElfW(Addr) at(ElfW(Addr) base, ElfW(Addr) ptr) {
  return ptr < base ? base + ptr : ptr; /* glibc relocates most tags in place, not all */
}

static void *target(const char *file, const char *name) {
  void *found = dlsym(RTLD_DEFAULT, name), *self;
  if (found) return found;
  self = dlopen(file, RTLD_LAZY | RTLD_NOLOAD);
  if (!self) return 0;
  found = dlsym(self, name);
  dlclose(self);
  return found;
}

static int write_slot(struct dl_phdr_info *info, void **slot, void *value) {
  long page = sysconf(_SC_PAGESIZE);
  ElfW(Addr) a = (ElfW(Addr))slot, relro_lo = 0, relro_hi = 0;
  void *first = (void *)(a & ~(ElfW(Addr))(page - 1));
  int k;
  for (k = 0; k < info->dlpi_phnum; ++k)
    if (info->dlpi_phdr[k].p_type == PT_GNU_RELRO) {
      relro_lo = info->dlpi_addr + info->dlpi_phdr[k].p_vaddr;
      relro_hi = relro_lo + info->dlpi_phdr[k].p_memsz;
    }
  if (a >= relro_lo && a < relro_hi) {
    if (mprotect(first, (size_t)page, PROT_READ | PROT_WRITE)) return 1;
    *slot = value;
    mprotect(first, (size_t)page, PROT_READ);
    return 0;
  }
  *slot = value;
  return 0;
}

static int patch_object(struct dl_phdr_info *info, size_t size, void *data) {
  struct install *in = data;
  const char *file = info->dlpi_name, *base_name;
  const ElfW(Dyn) *dyn = 0;
  const ElfW(Sym) *symtab = 0;
  const char *strtab = 0;
  const ElfW(Rela) *rel = 0;
  size_t relsz = 0, i;
  int k, hit = 0;
  (void)size;
  if (!file || !*file) return 0;
  base_name = strrchr(file, '/');
  base_name = base_name ? base_name + 1 : file;
  if (!strstr(base_name, in->match)) return 0;
  for (k = 0; k < info->dlpi_phnum; ++k)
    if (info->dlpi_phdr[k].p_type == PT_DYNAMIC)
      dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[k].p_vaddr);
  if (!dyn) return 0;
  for (; dyn->d_tag != DT_NULL; ++dyn) {
    if (dyn->d_tag == DT_SYMTAB) symtab = (const ElfW(Sym) *)at(info->dlpi_addr, dyn->d_un.d_ptr);
    if (dyn->d_tag == DT_STRTAB) strtab = (const char *)at(info->dlpi_addr, dyn->d_un.d_ptr);
    if (dyn->d_tag == DT_JMPREL) rel = (const ElfW(Rela) *)at(info->dlpi_addr, dyn->d_un.d_ptr);
    if (dyn->d_tag == DT_PLTRELSZ) relsz = dyn->d_un.d_val;
  }
  if (!symtab || !strtab || !rel) return 0;
  for (i = 0; i < relsz / sizeof(ElfW(Rela)); ++i) {
    void **slot;
    int e;
    if (ELF64_R_TYPE(rel[i].r_info) != JUMP_SLOT) continue;
    e = entry_of(strtab + symtab[ELF64_R_SYM(rel[i].r_info)].st_name);
    if (e < 0) continue;
    slot = (void **)(info->dlpi_addr + rel[i].r_offset);
    if (*slot == wrappers[e]) {
      hit = 1;
      in->patched |= 1u << e;
      continue;
    }
    if (!next[e]) next[e] = target(file, names[e]);
    if (!next[e]) {
      in->error = 2;
      continue;
    }
    if (write_slot(info, slot, wrappers[e])) {
      in->error = 1;
      continue;
    }
    hit = 1;
    in->patched |= 1u << e;
  }
  in->objects += hit;
  return 0;
}

/* Rewrite the slots of every loaded library whose name contains `match`; the clock is read
   through `clock` and request arrays walked by `handle` bytes. Returns the entry points
   rewritten (bit e: names[e]) in *patched and the libraries in the result, or -1 and -2 as
   `error` above. Calling it again rewrites only the libraries loaded since. */
int ksptrace_wait_install(const char *match, clock_fn clock, long handle, unsigned *patched) {
  struct install in = {match, 0, 0, 0};
  if (!wtime) wtime = clock;
  if (handle > 0) handle_bytes = handle;
  dl_iterate_phdr(patch_object, &in);
  *patched = in.patched;
  return in.error ? -in.error : in.objects;
}

int ksptrace_wait_entries(void) { return E_COUNT; }

const char *ksptrace_wait_name(int entry) { return entry >= 0 && entry < E_COUNT ? names[entry] : 0; }

/* The totals of entry point `entry` so far: out[0] seconds counted, out[1] every call. */
void ksptrace_wait_entry(int entry, double *out) {
  out[0] = entry_seconds[entry];
  out[1] = entry_calls[entry];
}

/* Iallreduce requests forgotten unfinished because more than PENDING were open at once. */
double ksptrace_wait_dropped(void) { return dropped; }

struct ksptrace_waits *ksptrace_wait_totals(void) { return &ksptrace_waits; }

/* Rewrite the slots of PETSc's events too at the next ksptrace_wait_install (on: 1). */
void ksptrace_events_enable(int on) { events_on = on; }

/* The spans so far: *out points at `count` rows of [start, end, kind]; *dropped those lost. */
long ksptrace_events_spans(const double **out, double *dropped_out) {
  *out = spans;
  *dropped_out = spans_dropped;
  return nspans;
}

/* Forget the spans so far (before the timed solve). */
void ksptrace_events_reset(void) { nspans = 0, spans_dropped = 0.0; }
