/* Part of solve_hook.c (included after its state H: one translation unit): the process's raw
   file. It is opened at the first PETSc call (rank-<rank>-<pid>.bin, or -<k> for the k-th
   program the process became by exec), written through a buffer (a record costs a copy, not a
   system call: a short solve's share), flushed when the buffer is full and at the end. The end
   is the wait accounting's records (waits.c), the KSP summaries and an end mark, written at
   exit, and before the process becomes another
   program (exec), whose file would otherwise look cut short by a kill; a file without its end
   mark is refused. glibc's execl, execlp and execle call execve inside libc, not through the
   dynamic linker, so they are wrapped as well; posix_spawn and system() start another process
   and end nothing, and a forked child writes nothing (its copy of the file is closed by an
   atfork handler). */

int pthread_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void));
long write(int fd, const void *buf, size_t n);
static char out_buf[1 << 16];
static size_t out_used;

/* The buffer to the file; after a short write (a full disk) nothing more, and no end mark. */
static void flush(void) {
  if (H.fd >= 0 && out_used && write(H.fd, out_buf, out_used) != (long)out_used)
    close(H.fd), H.fd = -1;
  out_used = 0;
}

static void put(const struct iovec *iov, int count) {
  size_t want = 0;
  int k;
  if (H.fd < 0) return;
  for (k = 0; k < count; ++k) want += iov[k].len;
  if (out_used + want > sizeof out_buf) flush();
  if (want > sizeof out_buf) {  /* a long solve's stamps: straight to the file */
    if (H.fd >= 0 && writev(H.fd, iov, count) != (long)want) close(H.fd), H.fd = -1;
    return;
  }
  for (k = 0; k < count; ++k)
    memcpy(out_buf + out_used, iov[k].base, iov[k].len), out_used += iov[k].len;
}

static void note(const char *text) {
  int kind = REC_NOTE;
  char buf[256] = {0};
  struct iovec iov[2] = {{&kind, sizeof kind}, {buf, sizeof buf}};
  strncpy(buf, text, sizeof buf - 1);
  put(iov, 2);
}

static void forked(void) {  /* in a forked child: the parent's file is not this process's */
  if (H.fd >= 0) close(H.fd), H.fd = -1;
  out_used = 0;
}

static void open_file(const char *petsc_path) {
  const char *dir = getenv("KSPTRACE_HOOK_DIR");
  char path[4096], header[1536] = {0};
  int (*version)(char *, size_t) = dlsym(H.lib, "PetscGetVersion");
  int ints[8] = {0x4b535054 /* "TPSK" */, HOOK_VERSION, H.rank, H.size, getpid(), H.int_bytes,
                 H.real_bytes, H.ompi};
  if (!dir) return;
  struct iovec iov = {header, sizeof header};
  H.pid = getpid();
  for (int k = 0; k < 100; ++k) {  /* -k: the k-th program this process became (exec) */
    snprintf(path, sizeof path, k ? "%s/rank-%d-%d-%d.bin" : "%s/rank-%d-%d.bin", dir, H.rank,
             H.pid, k);
    if ((H.fd = open(path, O_FLAGS, 0600)) >= 0 || *__errno_location() != 17 /* EEXIST */) break;
  }
  if (H.fd < 0) return (void)fprintf(stderr, "ksptrace trace: cannot write %s; this rank is "
                                     "not traced\n", path);
  memcpy(header, ints, sizeof ints);
  gethostname(header + 32, 255);
  if (version) version(header + 288, 255);
  strncpy(header + 544, petsc_path ? petsc_path : "", 991);
  put(&iov, 1);
  pthread_atfork(0, 0, forked);
}


typedef char *const *argv_t;
typedef __builtin_va_list va_list;
enum { MAX_EXEC_ARGS = 4096, E2BIG = 7 };

/* The KSP summaries and the end mark: at exit, or before the process becomes another program
   (exec), so that its file is whole. A failed exec leaves a note after the end mark: the file
   is then refused, not read as whole without the solves made after it. */
static void end_records(void) {
  struct ksp_ctx *c;
  int kind = REC_END;
  struct iovec end = {&kind, sizeof kind};
  if (H.ended || H.fd < 0 || getpid() != H.pid) return;
  write_waits();
  for (c = H.ksps; c; c = c->next) {
    int ints[8] = {REC_KSP, c->id, c->comm_size, c->min_depth, c->setup_seen, c->recorded,
                   c->refused, c->direct};
    struct iovec iov[4] = {{ints, sizeof ints}, {&c->skipped, sizeof c->skipped},
                           {c->type, NAME}, {c->prefix, NAME}};
    put(iov, 4);
  }
  put(&end, 1), H.ended = 1;
  flush();
}

__attribute__((destructor)) static void finish(void) {
  end_records();
  if (H.fd >= 0 && getpid() == H.pid) close(H.fd), H.fd = -1;
}

static int failed_exec(int err) {
  if (H.ended) note("exec failed after the records were ended; later solves are not recorded");
  return err;
}

int execve(const char *f, argv_t a, argv_t e) {
  int (*real)(const char *, argv_t, argv_t) = dlsym(RTLD_NEXT, "execve");
  return end_records(), failed_exec(real ? real(f, a, e) : -1);
}
int execvpe(const char *f, argv_t a, argv_t e) {
  int (*real)(const char *, argv_t, argv_t) = dlsym(RTLD_NEXT, "execvpe");
  return end_records(), failed_exec(real ? real(f, a, e) : -1);
}
int execv(const char *f, argv_t a) {
  int (*real)(const char *, argv_t) = dlsym(RTLD_NEXT, "execv");
  return end_records(), failed_exec(real ? real(f, a) : -1);
}
int execvp(const char *f, argv_t a) {
  int (*real)(const char *, argv_t) = dlsym(RTLD_NEXT, "execvp");
  return end_records(), failed_exec(real ? real(f, a) : -1);
}

/* execl's arguments up to the NULL into args; how many, or -1 (E2BIG) when they do not fit. */
#define GATHER(first, list, args, n)                                                     \
  do {                                                                                   \
    args[0] = (char *)first;                                                             \
    for (n = 1; n < MAX_EXEC_ARGS && (args[n] = __builtin_va_arg(list, char *)); ++n) {} \
    if (n == MAX_EXEC_ARGS) n = -1, *__errno_location() = E2BIG;                         \
  } while (0)

int execl(const char *f, const char *arg, ...) {
  char *args[MAX_EXEC_ARGS];
  int n;
  va_list list;
  __builtin_va_start(list, arg);
  GATHER(arg, list, args, n);
  __builtin_va_end(list);
  return n < 0 ? -1 : execv(f, args);
}
int execlp(const char *f, const char *arg, ...) {
  char *args[MAX_EXEC_ARGS];
  int n;
  va_list list;
  __builtin_va_start(list, arg);
  GATHER(arg, list, args, n);
  __builtin_va_end(list);
  return n < 0 ? -1 : execvp(f, args);
}
int execle(const char *f, const char *arg, ...) {
  char *args[MAX_EXEC_ARGS], **env;
  int n;
  va_list list;
  __builtin_va_start(list, arg);
  GATHER(arg, list, args, n);
  env = n < 0 ? 0 : __builtin_va_arg(list, char **);
  __builtin_va_end(list);
  return n < 0 ? -1 : execve(f, args, env);
}
