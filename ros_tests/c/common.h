/* What the rmw-level C test programs share: one "ok <check>" / "FAIL <check>: <why>" line per
 * check (with the rmw error string of a failure), the error state reset after each, the exit
 * status = the number of failures, capped at 100, and a context made as rcl makes one. Each
 * program is one translation unit. */
#ifndef RMW_TRACER_TESTS_COMMON_H
#define RMW_TRACER_TESTS_COMMON_H

#include <stdio.h>

#include <rcutils/allocator.h>
#include <rcutils/strdup.h>
#include <rmw/error_handling.h>
#include <rmw/rmw.h>

static int failures = 0;

static inline void check(int cond, const char *name, const char *why) {
  if (cond) {
    printf("ok %s\n", name);
  } else {
    printf("FAIL %s: %s (error string: %s)\n", name, why, rmw_get_error_string().str);
    failures++;
  }
  rmw_reset_error();
}

static inline int exit_status(void) {
  return failures > 100 ? 100 : failures;
}

/* `ctx` initialized with default init options and the enclave rcl passes ("/"), into `opts`;
 * 0 on success. */
static inline int init_context(rmw_init_options_t *opts, rmw_context_t *ctx) {
  rcutils_allocator_t alloc = rcutils_get_default_allocator();
  *opts = rmw_get_zero_initialized_init_options();
  *ctx = rmw_get_zero_initialized_context();
  if (rmw_init_options_init(opts, alloc) != RMW_RET_OK) return -1;
  opts->enclave = rcutils_strdup("/", alloc);
  return rmw_init(opts, ctx) == RMW_RET_OK ? 0 : -1;
}

#endif
