/* What the oracle programs (lifecycle_oracle.c, contract_oracle.c) share: one
 * "case <name> rc=<rmw_ret_t | ptr | null | true | false | crash> err=<0|1>" line per call, the
 * error state reset after each, and ISOLATED for a call that crashes Fast DDS. The pytest driver
 * runs a program on rmw_tracer and on Fast DDS and compares the lines. */
#ifndef RMW_TRACER_TESTS_ORACLE_H
#define RMW_TRACER_TESTS_ORACLE_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rmw/error_handling.h>
#include <rmw/rmw.h>

static void report_rc(const char *name, rmw_ret_t rc) {
  printf("case %s rc=%d err=%d\n", name, (int)rc, rmw_error_is_set() ? 1 : 0);
  rmw_reset_error();
}

static void report_ptr(const char *name, const void *p) {
  printf("case %s rc=%s err=%d\n", name, p ? "ptr" : "null", rmw_error_is_set() ? 1 : 0);
  rmw_reset_error();
}

static void report_bool(const char *name, bool b) {
  printf("case %s rc=%s err=%d\n", name, b ? "true" : "false", rmw_error_is_set() ? 1 : 0);
  rmw_reset_error();
}

/* A call that crashes Fast DDS (it does not check every pointer), made in a forked child so
 * that it is reported as "rc=crash" and the run goes on. Only for such calls: a forked child of
 * a threaded process can hang on a lock another thread held at the fork (alarm() ends it). */
#define ISOLATED(report, name, expr)                 \
  do {                                               \
    fflush(stdout);                                  \
    pid_t pid_ = fork();                             \
    if (pid_ == 0) {                                 \
      alarm(10);                                     \
      report(name, expr);                            \
      fflush(stdout);                                \
      _exit(0);                                      \
    }                                                \
    int st_ = 0;                                     \
    waitpid(pid_, &st_, 0);                          \
    if (!WIFEXITED(st_) || WEXITSTATUS(st_) != 0) {  \
      printf("case %s rc=crash err=0\n", name);      \
    }                                                \
  } while (0)
#define ISO_RC(name, expr) ISOLATED(report_rc, name, expr)
#define ISO_PTR(name, expr) ISOLATED(report_ptr, name, expr)

/* A handle that claims another implementation: the identifier check must refuse it. */
static const char *const FOREIGN = "rmw_foreign_impl";

#endif
