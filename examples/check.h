/* The examples' one error check: a failed call prints what failed, the result's name and
 * libtracer's last error (tracer_last_error: the message of this thread's last failure). */
#ifndef LIBTRACER_EXAMPLES_CHECK_H
#define LIBTRACER_EXAMPLES_CHECK_H

#include <stdio.h>

#include "tracer.h"

/* 1 (and a line on stderr) when r is not TRACER_OK, else 0. */
static int check(tracer_result_t r, const char *what) {
  if (r != TRACER_OK) {
    fprintf(stderr, "%s: %s: %s\n", what, tracer_result_str(r), tracer_last_error());
    return 1;
  }
  return 0;
}

#endif
