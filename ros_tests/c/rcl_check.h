/* What the rcl-level test programs (C and C++) share: CHECK(call) runs an rcl call and ends the
 * program with exit status 1, naming the call, its return code and the rcl error string, when it
 * does not return RCL_RET_OK. */
#ifndef RMW_TRACER_TESTS_RCL_CHECK_H
#define RMW_TRACER_TESTS_RCL_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include <rcl/error_handling.h>
#include <rcl/types.h>

#define CHECK(call)                                                                  \
  do {                                                                               \
    rcl_ret_t rc_ = (call);                                                          \
    if (rc_ != RCL_RET_OK) {                                                         \
      fprintf(stderr, "%s failed (%d): %s\n", #call, (int)rc_,                       \
              rcl_get_error_string().str);                                           \
      exit(1);                                                                       \
    }                                                                                \
  } while (0)

#endif
