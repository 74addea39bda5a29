/* Part of solve_hook.c (included at its end: one translation unit): how a process's records
   end. At exit the KSP summaries and the end mark are written; so they are before the process
   becomes another program (exec), whose file would otherwise look cut short by a kill. The
   other program, when it loads the hook too, writes a file of its own
   (rank-<rank>-<pid>-<k>.bin). glibc's execl, execlp and execle call execve inside libc, not
   through the dynamic linker, so they are wrapped as well; posix_spawn and system() start
   another process and end nothing (a forked child never writes to the parent's file). */

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
  for (c = H.ksps; c; c = c->next) {
    int ints[8] = {REC_KSP, c->id, c->comm_size, c->min_depth, c->setup_seen, c->recorded,
                   c->refused, c->direct};
    struct iovec iov[4] = {{ints, sizeof ints}, {&c->skipped, sizeof c->skipped},
                           {c->type, NAME}, {c->prefix, NAME}};
    put(iov, 4);
  }
  put(&end, 1), H.ended = 1;
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
