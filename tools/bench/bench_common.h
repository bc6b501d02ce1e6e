/* Shared pieces of the rcl ping-pong benchmark: the in-payload header, rcl set-up, fatal errors.
 *
 * Every message is a std_msgs/msg/UInt8MultiArray with an empty layout, so its CDR body is a
 * plain uint8 sequence (after the empty dim sequence and data_offset). The first bytes of the
 * payload carry a bench_hdr in host byte order (both processes run on one host); the last 8
 * bytes of a burst message repeat its sequence number so that a truncated or mixed-up payload
 * is caught without comparing the whole buffer. */
#ifndef RMW_TRACER_BENCH_COMMON_H
#define RMW_TRACER_BENCH_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rcl/rcl.h>
#include <std_msgs/msg/u_int8_multi_array.h>

#define BENCH_MAGIC 0x42454e43u /* "BENC" */

#define BENCH_TOPIC_PING "/bench/ping"   /* ping -> pong: hello, echo requests, status, quit */
#define BENCH_TOPIC_PONG "/bench/pong"   /* pong -> ping: echo replies, acks */
#define BENCH_TOPIC_BURST "/bench/burst" /* ping -> pong: throughput bursts, keep_last(burst depth) */
#define BENCH_TOPIC_BURST_ALL "/bench/burst_all" /* ping -> pong: throughput bursts, keep_all */

/* Depth of the ping/pong topics: one echo is in flight at a time, plus a few hellos. */
#define BENCH_CONTROL_DEPTH 16

enum bench_kind {
  BENCH_HELLO = 1, /* ping asks "are you there and matched?"; pong echoes it once it is */
  BENCH_ECHO = 2,  /* latency sample: pong publishes the same message back */
  BENCH_BURST = 3, /* throughput sample: pong counts it */
  BENCH_STATUS = 4, /* ping asks pong for its burst counters (after a timeout) */
  BENCH_ACK = 5,   /* pong -> ping: burst counters, carried in a bench_ack after the header */
  BENCH_QUIT = 6,  /* ping is done: pong exits */
};

typedef struct bench_hdr {
  uint32_t magic;
  uint32_t kind;
  uint64_t seq;   /* echo: iteration number; burst: index inside the round */
  uint64_t round; /* burst round number (unique over the whole run) */
  uint64_t count; /* burst: messages in the round */
} bench_hdr;

typedef struct bench_ack {
  uint64_t round;
  uint64_t expected;   /* messages announced for the round */
  uint64_t received;
  uint64_t misordered; /* messages whose seq was not the one expected next (gap or duplicate) */
  uint64_t bad_payload; /* wrong size or wrong tail marker */
  uint64_t bytes;
  int64_t first_rx_ns; /* CLOCK_MONOTONIC, comparable with ping's clock: same host */
  int64_t last_rx_ns;
  uint64_t complete;   /* 1 when received == expected, 0 for an answer to BENCH_STATUS */
  int64_t cpu_ns;      /* pong's CPU time (every thread, user and system) since its last ack */
  uint64_t threads;    /* pong's thread count when it acknowledged */
} bench_ack;

#define BENCH_MIN_PAYLOAD (sizeof(bench_hdr) + sizeof(uint64_t))
#define BENCH_ACK_PAYLOAD (sizeof(bench_hdr) + sizeof(bench_ack))

/* Print "bench_<who>: <what>: <rcl error string>" to stderr and exit(1). */
void bench_die_rcl(const char *what, rcl_ret_t rc) __attribute__((noreturn));
/* Print "bench_<who>: <printf message>" to stderr and exit(1). */
void bench_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void bench_set_name(const char *who);

int64_t bench_now_ns(void);
/* CPU time of the whole process (every thread, user plus system), in ns: what a message costs
 * the host, the middleware's own threads included. */
int64_t bench_cpu_ns(void);
/* Threads of the process now (/proc/self/status), 0 if unknown. */
uint64_t bench_threads(void);
void bench_sleep_ns(int64_t ns);

typedef struct bench_rcl {
  rcl_init_options_t init_options;
  rcl_context_t context;
  rcl_node_t node;
  const rosidl_message_type_support_t *ts;
} bench_rcl;

void bench_rcl_init(bench_rcl *b, const char *node_name);
/* The same in domain `domain` (negative: ROS_DOMAIN_ID, as bench_rcl_init). */
void bench_rcl_init_domain(bench_rcl *b, const char *node_name, long domain);
void bench_rcl_fini(bench_rcl *b);

/* Reliable, volatile, keep_last(depth); depth 0 = keep_all. */
rmw_qos_profile_t bench_qos(size_t depth);
void bench_pub_init(bench_rcl *b, rcl_publisher_t *pub, const char *topic, size_t depth);
void bench_sub_init(bench_rcl *b, rcl_subscription_t *sub, const char *topic, size_t depth);

/* Allocate msg->data with `size` bytes (size >= BENCH_MIN_PAYLOAD) and fill it with a pattern. */
void bench_msg_alloc(std_msgs__msg__UInt8MultiArray *msg, size_t size);
void bench_msg_init_empty(std_msgs__msg__UInt8MultiArray *msg);
void bench_msg_fini(std_msgs__msg__UInt8MultiArray *msg);

/* Header access; bench_get_hdr returns false when the payload is too short or the magic is wrong. */
void bench_put_hdr(std_msgs__msg__UInt8MultiArray *msg, const bench_hdr *h);
bool bench_get_hdr(const std_msgs__msg__UInt8MultiArray *msg, bench_hdr *h);
void bench_put_tail(std_msgs__msg__UInt8MultiArray *msg, uint64_t v);
uint64_t bench_get_tail(const std_msgs__msg__UInt8MultiArray *msg);

/* Matched endpoints of a publisher / a subscription; dies on errors. */
size_t bench_pub_matches(const rcl_publisher_t *p);
size_t bench_sub_matches(const rcl_subscription_t *s);

/* Sort round-trip times ascending; then the nearest-rank percentile q (0..1) in microseconds. */
void bench_sort_i64(int64_t *v, size_t n);
double bench_pct_us(const int64_t *v, size_t n, double q);

/* Take one message. Returns true if one was taken, false if none was available; dies on errors. */
bool bench_take(rcl_subscription_t *sub, std_msgs__msg__UInt8MultiArray *msg);
void bench_publish(rcl_publisher_t *pub, const std_msgs__msg__UInt8MultiArray *msg);

#endif
