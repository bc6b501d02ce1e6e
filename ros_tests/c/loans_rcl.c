/* Loaned messages over rcl (test_loans.py; docs/loans.md), run under rmw_tracer by LD_PRELOAD.
 *
 * Types: "basic" is test_msgs/msg/BasicTypes; "blob:<n>" is rmw_tracer_loans/msg/Blob<n>, a
 * fixed-size type built here by hand as an introspection type support (what rosidl would
 * generate for `uint64 seq` + `uint8[n] data`): the C struct is 8 + n bytes, rounded to 8.
 * Message i has values computed from i, so a reader checks every byte.
 *
 *   loans_rcl pub <type> <topic> <count> <subs> [stay]
 *       wait for <subs> matched subscriptions, then borrow / fill / publish <count> loans, one
 *       every millisecond; print "published <count>" and the RSS and pool (memfd) use after the
 *       first 10 and at the end; then wait until no subscription is left, unless "leave" (exit
 *       at once while readers may hold views), "stay" (stay until stdin closes) or "twice"
 *       (on a line from stdin, wait for <subs> matches again and publish <count> more)
 *   loans_rcl sub <type> <topic> <count> <hold> [depth]
 *       print "ready", then take <count> loaned messages (with [depth]: until message <count>,
 *       losing what a smaller ring cannot keep), checking each (values from the
 *       publication sequence number), holding up to <hold> loans at once (returned oldest
 *       first); "hold-all" as <hold>: keep every loan, print "holding" and wait for stdin to
 *       close (the test kills it there, or checks the views after the publisher is gone);
 *       "stall" as <hold>: take nothing until stdin closes, then take what the ring kept
 *   loans_rcl copy-sub <type> <topic> <count>  as sub, with rcl_take (a copying reader)
 *   loans_rcl intra <type> <count>             publisher and subscription in one process:
 *       the loan taken is the very memory that was borrowed
 *   loans_rcl api                              every documented return code of the six
 *       entry points (rmw level), "ok <check>" / "FAIL <check>" lines
 *
 * Reliable, keep-last, volatile; readers' depth: count (or [depth]), the publisher's 16. Exit status: 0 when all is well, 1 on
 * an rcl error or a wrong value (printed), 2 on a timeout.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rcl/error_handling.h>
#include <rcl/rcl.h>
#include <rmw/rmw.h>
#include <std_msgs/msg/string.h>
#include <test_msgs/msg/basic_types.h>

#include "blob_type.h"
#include "common.h"
#include "rcl_check.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms) {
  struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&d, NULL);
}

/* ---- the type a mode runs on ----------------------------------------------------------- */

/* is_blob, ts, msg_size and pick_type: blob_type.h. */

static void fill(void *m, uint64_t i) {
  if (is_blob) {
    uint8_t *b = m;
    memcpy(b, &i, 8);
    for (size_t j = 0; j < blob_n; j++) b[8 + j] = (uint8_t)(i * 131 + j * 7);
    return;
  }
  test_msgs__msg__BasicTypes *t = m;
  t->bool_value = i & 1;
  t->byte_value = (uint8_t)(i * 3);
  t->char_value = (uint8_t)(i * 5);
  t->float32_value = (float)i * 0.5f;
  t->float64_value = (double)i * 0.25 + 1e-9;
  t->int8_value = (int8_t)-(int64_t)(i % 100);
  t->uint8_value = (uint8_t)i;
  t->int16_value = (int16_t)(-(int64_t)i * 7);
  t->uint16_value = (uint16_t)(i * 11);
  t->int32_value = (int32_t)(-(int64_t)i * 1000);
  t->uint32_value = (uint32_t)(i * 100000);
  t->int64_value = -(int64_t)i * 10000000000LL;
  t->uint64_value = i * 1000000000000ULL + 7;
}

/* NULL when `m` holds message i exactly, else what differs. */
static const char *differs(const void *m, uint64_t i) {
  if (is_blob) {
    const uint8_t *b = m;
    uint64_t seq;
    memcpy(&seq, b, 8);
    if (seq != i) return "seq";
    for (size_t j = 0; j < blob_n; j++)
      if (b[8 + j] != (uint8_t)(i * 131 + j * 7)) return "data";
    return NULL;
  }
  test_msgs__msg__BasicTypes want;
  fill(&want, i);
  const test_msgs__msg__BasicTypes *t = m;
  if (t->bool_value != want.bool_value) return "bool_value";
  if (t->byte_value != want.byte_value) return "byte_value";
  if (t->char_value != want.char_value) return "char_value";
  if (t->float32_value != want.float32_value) return "float32_value";
  if (t->float64_value != want.float64_value) return "float64_value";
  if (t->int8_value != want.int8_value) return "int8_value";
  if (t->uint8_value != want.uint8_value) return "uint8_value";
  if (t->int16_value != want.int16_value) return "int16_value";
  if (t->uint16_value != want.uint16_value) return "uint16_value";
  if (t->int32_value != want.int32_value) return "int32_value";
  if (t->uint32_value != want.uint32_value) return "uint32_value";
  if (t->int64_value != want.int64_value) return "int64_value";
  if (t->uint64_value != want.uint64_value) return "uint64_value";
  return NULL;
}

/* ---- rcl plumbing ---------------------------------------------------------------------- */

static rcl_context_t context;
static rcl_node_t node;

static void init(const char *name) {
  node_up(&context, &node, name);
}

static void fini(void) { node_down(&context, &node); }

static void make_publisher(rcl_publisher_t *pub, const rosidl_message_type_support_t *t,
                           const char *topic, size_t depth) {
  *pub = rcl_get_zero_initialized_publisher();
  rcl_publisher_options_t po = rcl_publisher_get_default_options();
  po.qos = qos(depth);
  CHECK(rcl_publisher_init(pub, &node, t, topic, &po));
}

static void make_subscription(rcl_subscription_t *sub, const rosidl_message_type_support_t *t,
                              const char *topic, size_t depth) {
  *sub = rcl_get_zero_initialized_subscription();
  rcl_subscription_options_t so = rcl_subscription_get_default_options();
  so.qos = qos(depth);
  CHECK(rcl_subscription_init(sub, &node, t, topic, &so));
}

static int wait_readable(rcl_subscription_t *sub, double timeout) {
  rcl_wait_set_t ws = rcl_get_zero_initialized_wait_set();
  CHECK(rcl_wait_set_init(&ws, 1, 0, 0, 0, 0, 0, &context, rcl_get_default_allocator()));
  CHECK(rcl_wait_set_clear(&ws));
  CHECK(rcl_wait_set_add_subscription(&ws, sub, NULL));
  rcl_ret_t rc = rcl_wait(&ws, RCL_S_TO_NS(1) * timeout);
  int ready = rc == RCL_RET_OK && ws.subscriptions[0] != NULL;
  if (rc != RCL_RET_OK && rc != RCL_RET_TIMEOUT) {
    fprintf(stderr, "rcl_wait failed (%d): %s\n", (int)rc, rcl_get_error_string().str);
    exit(1);
  }
  CHECK(rcl_wait_set_fini(&ws));
  return ready;
}

/* Resident set in KiB. */
static long rss_kib(void) {
  long pages = 0, resident = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f == NULL) return -1;
  if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
  fclose(f);
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Bytes of memfd mappings of this process (the pool: "rw-s" here; a reader's views: "r--s"),
 * and the permissions of the mapping that holds `p` ("" if none, "?" if p is not in a memfd). */
static long memfd_bytes(const void *p, char perms_of_p[8]) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (perms_of_p) strcpy(perms_of_p, "?");
  if (f == NULL) return -1;
  char line[512];
  long total = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    char perms[8];
    if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3) continue;
    if (strstr(line, "memfd:") == NULL) continue;
    total += (long)(hi - lo);
    if (perms_of_p && (unsigned long)p >= lo && (unsigned long)p < hi) strcpy(perms_of_p, perms);
  }
  fclose(f);
  return total;
}

static void wait_stdin_closed(void) {
  char buf[64];
  while (read(0, buf, sizeof buf) > 0) {
  }
}

/* ---- modes ----------------------------------------------------------------------------- */

static int run_pub(const char *topic, int count, int subs, const char *after) {
  init("loans_talker");
  rcl_publisher_t pub;
  /* Depth 16: with the network on, a reliable publisher keeps its depth of samples (and so of
   * pool slots) to resend after a cut (docs/network.md section 6). */
  make_publisher(&pub, ts, topic, count < 16 ? (size_t)count : 16);
  if (!rcl_publisher_can_loan_messages(&pub)) {
    fprintf(stderr, "rcl_publisher_can_loan_messages is false for a plain type\n");
    return 1;
  }
  size_t n = 0;
  double deadline = now_s() + 30;
  while ((int)n < subs && now_s() < deadline) {
    CHECK(rcl_publisher_get_subscription_count(&pub, &n));
    if ((int)n < subs) sleep_ms(10);
  }
  if ((int)n < subs) {
    fprintf(stderr, "%zu of %d subscriptions matched\n", n, subs);
    return 2;
  }
  printf("matched\n");
  fflush(stdout);
  for (int i = 0; i < count; i++) {
    void *m = NULL;
    CHECK(rcl_borrow_loaned_message(&pub, ts, &m));
    fill(m, (uint64_t)i + 1);
    CHECK(rcl_publish_loaned_message(&pub, m, NULL));
    if (i + 1 == 10 || i + 1 == count) {
      printf("usage after %d: rss_kib %ld pool_bytes %ld\n", i + 1, rss_kib(), memfd_bytes(NULL, NULL));
      fflush(stdout);
    }
    sleep_ms(1);
  }
  printf("published %d\n", count);
  fflush(stdout);
  if (strcmp(after, "twice") == 0) {
    /* Phase two: when the test writes a line, wait for <subs> matches again and publish as
     * many more. */
    char line[64];
    if (fgets(line, sizeof line, stdin) == NULL) return 1;
    deadline = now_s() + 30;
    do {
      CHECK(rcl_publisher_get_subscription_count(&pub, &n));
      if ((int)n < subs) sleep_ms(10);
    } while ((int)n < subs && now_s() < deadline);
    for (int i = count; i < 2 * count; i++) {
      void *m = NULL;
      CHECK(rcl_borrow_loaned_message(&pub, ts, &m));
      fill(m, (uint64_t)i + 1);
      CHECK(rcl_publish_loaned_message(&pub, m, NULL));
      sleep_ms(1);
    }
    printf("published again %d, pool_bytes %ld\n", count, memfd_bytes(NULL, NULL));
    fflush(stdout);
  }
  if (strcmp(after, "leave") == 0) _exit(0);
  if (strcmp(after, "stay") == 0) {
    wait_stdin_closed();
  } else {
    deadline = now_s() + 60;
    while (n > 0 && now_s() < deadline) {
      CHECK(rcl_publisher_get_subscription_count(&pub, &n));
      sleep_ms(20);
    }
  }
  CHECK(rcl_publisher_fini(&pub, &node));
  fini();
  return 0;
}

static int run_sub(const char *topic, int count, const char *hold_s, int copy, size_t depth,
                   int lossy) {
  init(copy ? "loans_copy_listener" : "loans_listener");
  rcl_subscription_t sub;
  make_subscription(&sub, ts, topic, depth);
  if (!copy && !rcl_subscription_can_loan_messages(&sub)) {
    fprintf(stderr, "rcl_subscription_can_loan_messages is false for a plain type\n");
    return 1;
  }
  int hold_all = strcmp(hold_s, "hold-all") == 0;
  int hold = hold_all ? count : atoi(hold_s);
  if (hold < 1) hold = 1;
  void **held = calloc((size_t)hold, sizeof *held);
  void *copy_msg = calloc(1, msg_size);
  if (!is_blob) test_msgs__msg__BasicTypes__init(copy_msg);
  int stall = strcmp(hold_s, "stall") == 0;
  printf("ready\n");
  fflush(stdout);
  int got = 0, nheld = 0, mapped = 0, bad = 0;
  if (stall) {
    /* Take nothing until stdin closes; then take what the ring kept, until it is empty. */
    wait_stdin_closed();
    count = 0;
    rmw_message_info_t info = rmw_get_zero_initialized_message_info();
    void *m = NULL;
    while (rcl_take_loaned_message(&sub, &m, &info, NULL) == RCL_RET_OK) {
      if (differs(m, info.publication_sequence_number) != NULL) bad++;
      CHECK(rcl_return_loaned_message_from_subscription(&sub, m));
      m = NULL;
      got++;
    }
    rcl_reset_error();
    printf("stalled received %d bad %d\n", got, bad);
    fflush(stdout);
    count = got;
  }
  long rss_start = -1;
  uint64_t last_seq = 0;
  double deadline = now_s() + 60;
  /* Until <count> arrived, or with an explicit [depth] (a ring that may be smaller than the
   * burst, so some are lost: the test sees how many) until message <count> did. */
  while (got < count && !(lossy && last_seq >= (uint64_t)count) && now_s() < deadline) {
    if (!wait_readable(&sub, 1.0)) continue;
    rmw_message_info_t info = rmw_get_zero_initialized_message_info();
    void *m = NULL;
    rcl_ret_t rc;
    if (copy) {
      rc = rcl_take(&sub, copy_msg, &info, NULL);
      m = copy_msg;
    } else {
      rc = rcl_take_loaned_message(&sub, &m, &info, NULL);
    }
    if (rc == RCL_RET_SUBSCRIPTION_TAKE_FAILED) continue;
    CHECK(rc);
    uint64_t seq = info.publication_sequence_number;
    const char *why = differs(m, seq);
    if (why != NULL || seq <= last_seq) {
      fprintf(stderr, "message seq %llu: %s\n", (unsigned long long)seq, why ? why : "out of order");
      bad++;
    }
    last_seq = seq;
    got++;
    if (!copy) {
      char perms[8];
      memfd_bytes(m, perms);
      if (strcmp(perms, "r--s") == 0) mapped++;
      if (nheld == hold) {
        CHECK(rcl_return_loaned_message_from_subscription(&sub, held[0]));
        memmove(held, held + 1, sizeof *held * (size_t)(hold - 1));
        nheld--;
      }
      held[nheld++] = m;
    }
    if (got == 10) rss_start = rss_kib();
  }
  printf("received %d bad %d mapped %d last %llu\n", got, bad, mapped, (unsigned long long)last_seq);
  printf("rss_kib start %ld end %ld views_bytes %ld\n", rss_start, rss_kib(), memfd_bytes(NULL, NULL));
  fflush(stdout);
  if (hold_all) {
    printf("holding %d\n", nheld);
    fflush(stdout);
    wait_stdin_closed();
    /* The publisher may be gone now: the views must still hold the messages. */
    int still = 0;
    for (int k = 0; k < nheld; k++) {
      /* held[k] is the k-th taken; its seq is in the message for blobs, unknown for basic. */
      if (is_blob) {
        uint64_t s;
        memcpy(&s, held[k], 8);
        if (differs(held[k], s) == NULL) still++;
      } else {
        still++;
      }
    }
    printf("still intact %d\n", still);
    fflush(stdout);
  }
  for (int k = 0; k < nheld; k++) CHECK(rcl_return_loaned_message_from_subscription(&sub, held[k]));
  free(held);
  if (!is_blob) test_msgs__msg__BasicTypes__fini(copy_msg);
  free(copy_msg);
  CHECK(rcl_subscription_fini(&sub, &node));
  fini();
  if (bad != 0) return 1;
  return got == count || (lossy && last_seq == (uint64_t)count) ? 0 : 2;
}

static int run_intra(int count) {
  init("loans_intra");
  rcl_subscription_t sub;
  make_subscription(&sub, ts, "/loans_intra", (size_t)count);
  rcl_publisher_t pub;
  make_publisher(&pub, ts, "/loans_intra", (size_t)count);
  int same = 0, ok = 0;
  for (int i = 1; i <= count; i++) {
    void *m = NULL;
    CHECK(rcl_borrow_loaned_message(&pub, ts, &m));
    fill(m, (uint64_t)i);
    CHECK(rcl_publish_loaned_message(&pub, m, NULL));
    if (!wait_readable(&sub, 5.0)) {
      fprintf(stderr, "message %d did not arrive\n", i);
      return 2;
    }
    void *t = NULL;
    rmw_message_info_t info = rmw_get_zero_initialized_message_info();
    CHECK(rcl_take_loaned_message(&sub, &t, &info, NULL));
    if (t == m) same++;
    if (differs(t, (uint64_t)i) == NULL && info.publication_sequence_number == (uint64_t)i &&
        info.from_intra_process)
      ok++;
    CHECK(rcl_return_loaned_message_from_subscription(&sub, t));
  }
  printf("intra ok %d same_memory %d of %d\n", ok, same, count);
  CHECK(rcl_publisher_fini(&pub, &node));
  CHECK(rcl_subscription_fini(&sub, &node));
  fini();
  return ok == count && same == count ? 0 : 1;
}

/* Every return code the rmw header documents for the six entry points. */
static int run_api(void) {
  init("loans_api");
  pick_type("basic");
  rcl_publisher_t pub, spub;
  rcl_subscription_t sub, ssub;
  make_publisher(&pub, ts, "/loans_api", 10);
  make_subscription(&sub, ts, "/loans_api", 10);
  const rosidl_message_type_support_t *str_ts = ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, String);
  make_publisher(&spub, str_ts, "/loans_api_str", 10);
  make_subscription(&ssub, str_ts, "/loans_api_str", 10);
  rmw_publisher_t *p = rcl_publisher_get_rmw_handle(&pub);
  rmw_subscription_t *s = rcl_subscription_get_rmw_handle(&sub);
  rmw_publisher_t *sp = rcl_publisher_get_rmw_handle(&spub);
  rmw_subscription_t *ss = rcl_subscription_get_rmw_handle(&ssub);
  rmw_publisher_t foreign_p = *p;
  foreign_p.implementation_identifier = "rmw_fastrtps_cpp";
  rmw_subscription_t foreign_s = *s;
  foreign_s.implementation_identifier = "rmw_fastrtps_cpp";

  check(p->can_loan_messages && s->can_loan_messages, "can_loan_plain", "BasicTypes is plain");
  check(!sp->can_loan_messages && !ss->can_loan_messages, "can_loan_string", "String has a pointer");

  void *m = NULL;
  check(rmw_borrow_loaned_message(NULL, ts, &m) == RMW_RET_INVALID_ARGUMENT, "borrow_null_publisher", "");
  check(rmw_borrow_loaned_message(p, NULL, &m) == RMW_RET_INVALID_ARGUMENT, "borrow_null_type_support", "");
  check(rmw_borrow_loaned_message(p, ts, NULL) == RMW_RET_INVALID_ARGUMENT, "borrow_null_out", "");
  void *not_null = &m;
  check(rmw_borrow_loaned_message(p, ts, &not_null) == RMW_RET_INVALID_ARGUMENT, "borrow_out_not_null", "");
  check(rmw_borrow_loaned_message(&foreign_p, ts, &m) == RMW_RET_INCORRECT_RMW_IMPLEMENTATION,
        "borrow_foreign", "");
  check(rmw_borrow_loaned_message(p, str_ts, &m) == RMW_RET_INVALID_ARGUMENT, "borrow_other_type", "");
  check(rmw_borrow_loaned_message(sp, str_ts, &m) == RMW_RET_UNSUPPORTED, "borrow_not_plain", "");
  check(m == NULL, "borrow_failures_leave_out", "");

  check(rmw_borrow_loaned_message(p, ts, &m) == RMW_RET_OK && m != NULL && ((uintptr_t)m % 8) == 0,
        "borrow_ok_aligned", "");
  check(rmw_return_loaned_message_from_publisher(NULL, m) == RMW_RET_INVALID_ARGUMENT, "return_pub_null_publisher", "");
  check(rmw_return_loaned_message_from_publisher(p, NULL) == RMW_RET_INVALID_ARGUMENT, "return_pub_null_message", "");
  check(rmw_return_loaned_message_from_publisher(&foreign_p, m) == RMW_RET_INCORRECT_RMW_IMPLEMENTATION,
        "return_pub_foreign", "");
  test_msgs__msg__BasicTypes local;
  check(rmw_return_loaned_message_from_publisher(p, &local) == RMW_RET_INVALID_ARGUMENT, "return_pub_not_a_loan", "");
  check(rmw_return_loaned_message_from_publisher(sp, m) == RMW_RET_UNSUPPORTED, "return_pub_not_plain", "");
  check(rmw_return_loaned_message_from_publisher(p, m) == RMW_RET_OK, "return_pub_ok", "");
  check(rmw_return_loaned_message_from_publisher(p, m) == RMW_RET_INVALID_ARGUMENT, "return_pub_twice", "");

  m = NULL;
  check(rmw_borrow_loaned_message(p, ts, &m) == RMW_RET_OK, "borrow_again", "");
  fill(m, 1);
  check(rmw_publish_loaned_message(NULL, m, NULL) == RMW_RET_INVALID_ARGUMENT, "publish_null_publisher", "");
  check(rmw_publish_loaned_message(p, NULL, NULL) == RMW_RET_INVALID_ARGUMENT, "publish_null_message", "");
  check(rmw_publish_loaned_message(&foreign_p, m, NULL) == RMW_RET_INCORRECT_RMW_IMPLEMENTATION, "publish_foreign", "");
  check(rmw_publish_loaned_message(p, &local, NULL) == RMW_RET_INVALID_ARGUMENT, "publish_not_a_loan", "");
  check(rmw_publish_loaned_message(sp, m, NULL) == RMW_RET_UNSUPPORTED, "publish_not_plain", "");
  check(rmw_publish_loaned_message(p, m, NULL) == RMW_RET_OK, "publish_ok", "");
  check(rmw_publish_loaned_message(p, m, NULL) == RMW_RET_INVALID_ARGUMENT, "publish_twice", "");

  bool taken = false;
  void *t = NULL;
  rmw_message_info_t info = rmw_get_zero_initialized_message_info();
  check(rmw_take_loaned_message(NULL, &t, &taken, NULL) == RMW_RET_INVALID_ARGUMENT, "take_null_subscription", "");
  check(rmw_take_loaned_message(s, NULL, &taken, NULL) == RMW_RET_INVALID_ARGUMENT, "take_null_out", "");
  check(rmw_take_loaned_message(s, &not_null, &taken, NULL) == RMW_RET_INVALID_ARGUMENT, "take_out_not_null", "");
  check(rmw_take_loaned_message(s, &t, NULL, NULL) == RMW_RET_INVALID_ARGUMENT, "take_null_taken", "");
  check(rmw_take_loaned_message(&foreign_s, &t, &taken, NULL) == RMW_RET_INCORRECT_RMW_IMPLEMENTATION, "take_foreign", "");
  check(rmw_take_loaned_message_with_info(s, &t, &taken, NULL, NULL) == RMW_RET_INVALID_ARGUMENT,
        "take_info_null_info", "");
  check(rmw_take_loaned_message_with_info(NULL, &t, &taken, &info, NULL) == RMW_RET_INVALID_ARGUMENT,
        "take_info_null_subscription", "");
  check(rmw_take_loaned_message_with_info(s, &not_null, &taken, &info, NULL) == RMW_RET_INVALID_ARGUMENT,
        "take_info_out_not_null", "");
  check(rmw_take_loaned_message_with_info(&foreign_s, &t, &taken, &info, NULL) ==
            RMW_RET_INCORRECT_RMW_IMPLEMENTATION, "take_info_foreign", "");
  check(rmw_take_loaned_message(ss, &t, &taken, NULL) == RMW_RET_UNSUPPORTED, "take_not_plain", "");
  check(rmw_take_loaned_message_with_info(ss, &t, &taken, &info, NULL) == RMW_RET_UNSUPPORTED,
        "take_info_not_plain", "");
  check(t == NULL, "take_failures_leave_out", "");
  /* The message published above is still there: none of the failed takes lost it. */
  rmw_ret_t rc = rmw_take_loaned_message_with_info(s, &t, &taken, &info, NULL);
  check(rc == RMW_RET_OK && taken && t == m && differs(t, 1) == NULL && info.publication_sequence_number == 1,
        "take_info_ok_same_memory", "");
  void *t2 = NULL;
  check(rmw_take_loaned_message(s, &t2, &taken, NULL) == RMW_RET_OK && !taken && t2 == NULL, "take_empty", "");
  check(rmw_return_loaned_message_from_subscription(NULL, t) == RMW_RET_INVALID_ARGUMENT, "return_sub_null_subscription", "");
  check(rmw_return_loaned_message_from_subscription(s, NULL) == RMW_RET_INVALID_ARGUMENT, "return_sub_null_message", "");
  check(rmw_return_loaned_message_from_subscription(&foreign_s, t) == RMW_RET_INCORRECT_RMW_IMPLEMENTATION,
        "return_sub_foreign", "");
  check(rmw_return_loaned_message_from_subscription(s, &local) == RMW_RET_ERROR, "return_sub_not_a_loan", "");
  check(rmw_return_loaned_message_from_subscription(ss, t) == RMW_RET_UNSUPPORTED, "return_sub_not_plain", "");
  check(rmw_return_loaned_message_from_subscription(s, t) == RMW_RET_OK, "return_sub_ok", "");
  check(rmw_return_loaned_message_from_subscription(s, t) == RMW_RET_ERROR, "return_sub_twice", "");

  /* A copying take of a loaned publication, and a loaned take of a copying publication. */
  m = NULL;
  rmw_borrow_loaned_message(p, ts, &m);
  fill(m, 2);
  rmw_publish_loaned_message(p, m, NULL);
  test_msgs__msg__BasicTypes copy;
  test_msgs__msg__BasicTypes__init(&copy);
  taken = false;
  check(rmw_take(s, &copy, &taken, NULL) == RMW_RET_OK && taken && differs(&copy, 2) == NULL,
        "copy_take_of_loan", "");
  fill(&copy, 3);
  check(rmw_publish(p, &copy, NULL) == RMW_RET_OK, "copy_publish", "");
  t = NULL;
  check(rmw_take_loaned_message(s, &t, &taken, NULL) == RMW_RET_OK && taken && differs(t, 3) == NULL &&
            ((uintptr_t)t % 8) == 0,
        "loaned_take_of_copy", "");
  check(rmw_return_loaned_message_from_subscription(s, t) == RMW_RET_OK, "return_copy_loan", "");
  /* A subscription holds at most 256 loans (docs/loans.md, "Bounds"): the next take is
   * RMW_RET_BAD_ALLOC and leaves its message queued; after a return it is taken. */
  {
    rcl_publisher_t hpub;
    rcl_subscription_t hsub;
    make_publisher(&hpub, ts, "/loans_api_held", 300);
    make_subscription(&hsub, ts, "/loans_api_held", 300);
    rmw_publisher_t *hp = rcl_publisher_get_rmw_handle(&hpub);
    rmw_subscription_t *hs = rcl_subscription_get_rmw_handle(&hsub);
    enum { HELD = 256 };
    for (uint64_t i = 0; i <= HELD; i++) {
      test_msgs__msg__BasicTypes one;
      fill(&one, 100 + i);
      if (rmw_publish(hp, &one, NULL) != RMW_RET_OK) check(0, "held_publish", "");
    }
    static void *held[HELD];
    int ok = 1;
    for (int i = 0; i < HELD; i++) {
      held[i] = NULL;
      ok &= rmw_take_loaned_message(hs, &held[i], &taken, NULL) == RMW_RET_OK && taken &&
            differs(held[i], 100 + (uint64_t)i) == NULL;
    }
    check(ok, "held_256_loans", "");
    t = NULL;
    taken = true;
    check(rmw_take_loaned_message(hs, &t, &taken, NULL) == RMW_RET_BAD_ALLOC && t == NULL && !taken,
          "held_257th_bad_alloc", "");
    rmw_reset_error();
    check(rmw_return_loaned_message_from_subscription(hs, held[0]) == RMW_RET_OK, "held_return_one", "");
    check(rmw_take_loaned_message(hs, &t, &taken, NULL) == RMW_RET_OK && taken && differs(t, 100 + HELD) == NULL,
          "held_257th_after_return", "");
    check(rmw_return_loaned_message_from_subscription(hs, t) == RMW_RET_OK, "held_return_last", "");
    for (int i = 1; i < HELD; i++) rmw_return_loaned_message_from_subscription(hs, held[i]);
    CHECK(rcl_publisher_fini(&hpub, &node));
    CHECK(rcl_subscription_fini(&hsub, &node));
  }
  /* A loan still out when its publisher is destroyed is freed with it. */
  m = NULL;
  rmw_borrow_loaned_message(p, ts, &m);
  test_msgs__msg__BasicTypes__fini(&copy);
  CHECK(rcl_publisher_fini(&pub, &node));
  CHECK(rcl_subscription_fini(&sub, &node));
  CHECK(rcl_publisher_fini(&spub, &node));
  CHECK(rcl_subscription_fini(&ssub, &node));
  fini();
  printf("api done\n");
  return exit_status();
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc >= 2 && strcmp(argv[1], "api") == 0) return run_api();
  if (argc >= 4 && strcmp(argv[1], "intra") == 0) {
    pick_type(argv[2]);
    return run_intra(atoi(argv[3]));
  }
  if (argc >= 6 && strcmp(argv[1], "pub") == 0) {
    pick_type(argv[2]);
    return run_pub(argv[3], atoi(argv[4]), atoi(argv[5]), argc > 6 ? argv[6] : "");
  }
  if (argc >= 6 && strcmp(argv[1], "sub") == 0) {
    pick_type(argv[2]);
    int count = atoi(argv[4]);
    size_t depth = argc > 6 ? (size_t)atoi(argv[6]) : (size_t)count;
    return run_sub(argv[3], count, argv[5], 0, depth, argc > 6);
  }
  if (argc >= 5 && strcmp(argv[1], "copy-sub") == 0) {
    pick_type(argv[2]);
    int count = atoi(argv[4]);
    return run_sub(argv[3], count, "1", 1, (size_t)count, 0);
  }
  fprintf(stderr, "usage: %s api | intra <type> <count> | pub <type> <topic> <count> <subs> [leave|stay]"
                  " | sub <type> <topic> <count> <hold|hold-all> [depth] | copy-sub <type> <topic> <count>\n",
          argv[0]);
  return 1;
}
