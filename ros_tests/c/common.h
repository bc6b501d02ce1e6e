/* What the rmw-level C test programs share: one "ok <check>" / "FAIL <check>: <why>" line per
 * check (with the rmw error string of a failure), the error state reset after each, and the exit
 * status = the number of failures, capped at 100. Each program is one translation unit. */
#ifndef RMW_TRACER_TESTS_COMMON_H
#define RMW_TRACER_TESTS_COMMON_H

#include <stdio.h>

#include <rmw/error_handling.h>

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

#endif
