#define _POSIX_C_SOURCE 200809L
#include "bench_common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <rcl/error_handling.h>
#include <rosidl_runtime_c/primitives_sequence_functions.h>
#include <rosidl_runtime_c/message_type_support_struct.h>

static const char *bench_name = "bench";

void bench_set_name(const char *who) { bench_name = who; }

void bench_die_rcl(const char *what, rcl_ret_t rc)
{
  fprintf(stderr, "%s: %s failed (rcl_ret_t %d): %s\n", bench_name, what, (int)rc,
          rcl_get_error_string().str);
  rcl_reset_error();
  exit(1);
}

void bench_die(const char *fmt, ...)
{
  va_list ap;
  fprintf(stderr, "%s: ", bench_name);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  exit(1);
}

int64_t bench_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t bench_cpu_ns(void)
{
  struct rusage u;
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  return ((int64_t)u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1000000000LL +
         ((int64_t)u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1000LL;
}

uint64_t bench_threads(void)
{
  FILE *f = fopen("/proc/self/status", "r");
  if (f == NULL) return 0;
  char line[256];
  unsigned long long n = 0;
  while (fgets(line, sizeof line, f) != NULL)
    if (sscanf(line, "Threads: %llu", &n) == 1) break;
  fclose(f);
  return (uint64_t)n;
}

void bench_sleep_ns(int64_t ns)
{
  struct timespec ts = {.tv_sec = ns / 1000000000LL, .tv_nsec = ns % 1000000000LL};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

void bench_rcl_init(bench_rcl *b, const char *node_name) { bench_rcl_init_domain(b, node_name, -1); }

void bench_rcl_init_domain(bench_rcl *b, const char *node_name, long domain)
{
  rcl_allocator_t alloc = rcutils_get_default_allocator();
  rcl_ret_t rc;

  b->init_options = rcl_get_zero_initialized_init_options();
  rc = rcl_init_options_init(&b->init_options, alloc);
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_init_options_init", rc);
  if (domain >= 0) {
    rc = rcl_init_options_set_domain_id(&b->init_options, (size_t)domain);
    if (rc != RCL_RET_OK) bench_die_rcl("rcl_init_options_set_domain_id", rc);
  }
  b->context = rcl_get_zero_initialized_context();
  rc = rcl_init(0, NULL, &b->init_options, &b->context);
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_init", rc);

  b->node = rcl_get_zero_initialized_node();
  rcl_node_options_t no = rcl_node_get_default_options();
  no.enable_rosout = false; /* keep the graph to the three bench topics */
  rc = rcl_node_init(&b->node, node_name, "", &b->context, &no);
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_node_init", rc);

  b->ts = ROSIDL_GET_MSG_TYPE_SUPPORT(std_msgs, msg, UInt8MultiArray);
  if (b->ts == NULL) bench_die("no C type support for std_msgs/msg/UInt8MultiArray");
}

void bench_rcl_fini(bench_rcl *b)
{
  rcl_ret_t rc = rcl_node_fini(&b->node);
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_node_fini", rc);
  rc = rcl_shutdown(&b->context);
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_shutdown", rc);
  rc = rcl_context_fini(&b->context);
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_context_fini", rc);
  rc = rcl_init_options_fini(&b->init_options);
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_init_options_fini", rc);
}

rmw_qos_profile_t bench_qos(size_t depth)
{
  rmw_qos_profile_t q = rmw_qos_profile_default;
  q.history = depth == 0 ? RMW_QOS_POLICY_HISTORY_KEEP_ALL : RMW_QOS_POLICY_HISTORY_KEEP_LAST;
  q.depth = depth;
  q.reliability = RMW_QOS_POLICY_RELIABILITY_RELIABLE;
  q.durability = RMW_QOS_POLICY_DURABILITY_VOLATILE;
  return q;
}

void bench_pub_init(bench_rcl *b, rcl_publisher_t *pub, const char *topic, size_t depth)
{
  *pub = rcl_get_zero_initialized_publisher();
  rcl_publisher_options_t po = rcl_publisher_get_default_options();
  po.qos = bench_qos(depth);
  rcl_ret_t rc = rcl_publisher_init(pub, &b->node, b->ts, topic, &po);
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_publisher_init", rc);
}

void bench_sub_init(bench_rcl *b, rcl_subscription_t *sub, const char *topic, size_t depth)
{
  *sub = rcl_get_zero_initialized_subscription();
  rcl_subscription_options_t so = rcl_subscription_get_default_options();
  so.qos = bench_qos(depth);
  rcl_ret_t rc = rcl_subscription_init(sub, &b->node, b->ts, topic, &so);
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_subscription_init", rc);
}

void bench_msg_init_empty(std_msgs__msg__UInt8MultiArray *msg)
{
  if (!std_msgs__msg__UInt8MultiArray__init(msg)) bench_die("UInt8MultiArray__init: out of memory");
}

void bench_msg_alloc(std_msgs__msg__UInt8MultiArray *msg, size_t size)
{
  if (size < BENCH_MIN_PAYLOAD)
    bench_die("payload size %zu is below the minimum of %zu bytes", size, BENCH_MIN_PAYLOAD);
  bench_msg_init_empty(msg);
  if (!rosidl_runtime_c__uint8__Sequence__init(&msg->data, size))
    bench_die("cannot allocate a %zu byte payload", size);
  for (size_t i = 0; i < size; i++) msg->data.data[i] = (uint8_t)(i * 131u + 7u);
}

void bench_msg_fini(std_msgs__msg__UInt8MultiArray *msg) { std_msgs__msg__UInt8MultiArray__fini(msg); }

void bench_put_hdr(std_msgs__msg__UInt8MultiArray *msg, const bench_hdr *h)
{
  memcpy(msg->data.data, h, sizeof *h);
}

bool bench_get_hdr(const std_msgs__msg__UInt8MultiArray *msg, bench_hdr *h)
{
  if (msg->data.size < sizeof *h) return false;
  memcpy(h, msg->data.data, sizeof *h);
  return h->magic == BENCH_MAGIC;
}

void bench_put_tail(std_msgs__msg__UInt8MultiArray *msg, uint64_t v)
{
  memcpy(msg->data.data + msg->data.size - sizeof v, &v, sizeof v);
}

uint64_t bench_get_tail(const std_msgs__msg__UInt8MultiArray *msg)
{
  uint64_t v;
  memcpy(&v, msg->data.data + msg->data.size - sizeof v, sizeof v);
  return v;
}

bool bench_take(rcl_subscription_t *sub, std_msgs__msg__UInt8MultiArray *msg)
{
  rmw_message_info_t info = rmw_get_zero_initialized_message_info();
  rcl_ret_t rc = rcl_take(sub, msg, &info, NULL);
  if (rc == RCL_RET_OK) return true;
  if (rc == RCL_RET_SUBSCRIPTION_TAKE_FAILED) {
    rcl_reset_error();
    return false;
  }
  bench_die_rcl("rcl_take", rc);
}

void bench_publish(rcl_publisher_t *pub, const std_msgs__msg__UInt8MultiArray *msg)
{
  rcl_ret_t rc = rcl_publish(pub, msg, NULL);
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_publish", rc);
}

size_t bench_pub_matches(const rcl_publisher_t *p)
{
  size_t n = 0;
  rcl_ret_t rc = rcl_publisher_get_subscription_count(p, &n);
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_publisher_get_subscription_count", rc);
  return n;
}

size_t bench_sub_matches(const rcl_subscription_t *s)
{
  size_t n = 0;
  rcl_ret_t rc = rcl_subscription_get_publisher_count(s, &n);
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_subscription_get_publisher_count", rc);
  return n;
}

static int cmp_i64(const void *a, const void *b)
{
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

void bench_sort_i64(int64_t *v, size_t n) { qsort(v, n, sizeof *v, cmp_i64); }

/* Nearest-rank percentile of a sorted array. */
double bench_pct_us(const int64_t *v, size_t n, double q)
{
  size_t rank = (size_t)(q * (double)n + 0.999999999);
  if (rank < 1) rank = 1;
  if (rank > n) rank = n;
  return v[rank - 1] / 1e3;
}
