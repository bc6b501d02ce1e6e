/* bench_pong: the passive half of the rcl benchmark.
 *
 * Echoes every BENCH_ECHO message from /bench/ping back on /bench/pong unchanged, counts
 * BENCH_BURST messages from /bench/burst (keep_last) and /bench/burst_all (keep_all) and answers each complete round with a BENCH_ACK.
 * It blocks in rcl_wait on one wait set; it never polls. It exits 0 on BENCH_QUIT if it saw no
 * loss, 1 on any loss, malformed message, rcl error, or when nothing arrives for --idle-timeout.
 *
 * usage: bench_pong --burst-depth N [--idle-timeout SECONDS] */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rcl/error_handling.h>

#include "bench_common.h"

typedef struct burst_state {
  bench_ack ack;      /* counters of the current round */
  bool active;        /* a round has started */
  uint64_t next_seq;
  uint64_t lost_total; /* over all rounds, found when a round ends incomplete */
  uint64_t bad_total;
  int64_t cpu_at_ack; /* bench_cpu_ns() when the last round was acknowledged */
} burst_state;

static void usage(void)
{
  bench_die("usage: bench_pong --burst-depth N [--idle-timeout SECONDS]");
}

static uint64_t parse_u64(const char *s, const char *what)
{
  char *end = NULL;
  unsigned long long v = strtoull(s, &end, 10);
  if (s[0] == '\0' || s[0] == '-' || *end != '\0') bench_die("bad %s: '%s'", what, s);
  return (uint64_t)v;
}

static void send_ack(rcl_publisher_t *pub, std_msgs__msg__UInt8MultiArray *msg, const bench_ack *a)
{
  bench_hdr h = {.magic = BENCH_MAGIC, .kind = BENCH_ACK, .seq = 0, .round = a->round, .count = a->expected};
  bench_put_hdr(msg, &h);
  memcpy(msg->data.data + sizeof h, a, sizeof *a);
  bench_publish(pub, msg);
}

/* A round that ends before all its messages arrived has lost some: reliable QoS must not. */
static void close_round(burst_state *st)
{
  if (st->active && st->ack.received < st->ack.expected) {
    uint64_t lost = st->ack.expected - st->ack.received;
    fprintf(stderr, "bench_pong: round %" PRIu64 " ended with %" PRIu64 " of %" PRIu64 " messages (%" PRIu64 " lost)\n",
            st->ack.round, st->ack.received, st->ack.expected, lost);
    st->lost_total += lost;
  }
  st->active = false;
}

static void on_burst(burst_state *st, const std_msgs__msg__UInt8MultiArray *msg, int64_t now,
                     rcl_publisher_t *pong_pub, std_msgs__msg__UInt8MultiArray *ack_msg)
{
  bench_hdr h;
  if (!bench_get_hdr(msg, &h) || h.kind != BENCH_BURST)
    bench_die("malformed message on %s (size %zu)", BENCH_TOPIC_BURST, msg->data.size);
  if (!st->active || h.round != st->ack.round) {
    close_round(st);
    memset(&st->ack, 0, sizeof st->ack);
    st->ack.round = h.round;
    st->ack.expected = h.count;
    st->ack.first_rx_ns = now;
    st->active = true;
    st->next_seq = 0;
  }
  if (h.seq != st->next_seq) st->ack.misordered++;
  st->next_seq = h.seq + 1;
  if (bench_get_tail(msg) != h.seq) {
    st->ack.bad_payload++;
    st->bad_total++;
  }
  st->ack.received++;
  st->ack.bytes += msg->data.size;
  st->ack.last_rx_ns = now;
  if (st->ack.received == st->ack.expected) {
    st->ack.complete = 1;
    int64_t cpu = bench_cpu_ns();
    st->ack.cpu_ns = cpu - st->cpu_at_ack;
    st->cpu_at_ack = cpu;
    st->ack.threads = bench_threads();
    send_ack(pong_pub, ack_msg, &st->ack);
    st->active = false;
  }
}

int main(int argc, char **argv)
{
  bench_set_name("bench_pong");
  uint64_t burst_depth = 0;
  uint64_t idle_timeout_s = 120;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--burst-depth") == 0 && i + 1 < argc)
      burst_depth = parse_u64(argv[++i], "--burst-depth");
    else if (strcmp(argv[i], "--idle-timeout") == 0 && i + 1 < argc)
      idle_timeout_s = parse_u64(argv[++i], "--idle-timeout");
    else
      usage();
  }
  if (burst_depth == 0) usage();

  bench_rcl b;
  bench_rcl_init(&b, "bench_pong");
  rcl_subscription_t ping_sub, burst_sub, burst_all_sub;
  rcl_publisher_t pong_pub;
  bench_sub_init(&b, &ping_sub, BENCH_TOPIC_PING, BENCH_CONTROL_DEPTH);
  bench_sub_init(&b, &burst_sub, BENCH_TOPIC_BURST, burst_depth);
  bench_sub_init(&b, &burst_all_sub, BENCH_TOPIC_BURST_ALL, 0);
  bench_pub_init(&b, &pong_pub, BENCH_TOPIC_PONG, BENCH_CONTROL_DEPTH);

  rcl_wait_set_t ws = rcl_get_zero_initialized_wait_set();
  rcl_ret_t rc = rcl_wait_set_init(&ws, 3, 0, 0, 0, 0, 0, &b.context, rcutils_get_default_allocator());
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_wait_set_init", rc);

  std_msgs__msg__UInt8MultiArray ctl, data, ack_msg;
  bench_msg_init_empty(&ctl);
  bench_msg_init_empty(&data);
  bench_msg_alloc(&ack_msg, BENCH_ACK_PAYLOAD);

  burst_state st;
  memset(&st, 0, sizeof st);
  st.cpu_at_ack = bench_cpu_ns();
  int64_t last_activity = bench_now_ns();
  bool quit = false;
  while (!quit) {
    rc = rcl_wait_set_clear(&ws);
    if (rc != RCL_RET_OK) bench_die_rcl("rcl_wait_set_clear", rc);
    rc = rcl_wait_set_add_subscription(&ws, &burst_sub, NULL);
    if (rc != RCL_RET_OK) bench_die_rcl("rcl_wait_set_add_subscription", rc);
    rc = rcl_wait_set_add_subscription(&ws, &burst_all_sub, NULL);
    if (rc != RCL_RET_OK) bench_die_rcl("rcl_wait_set_add_subscription", rc);
    rc = rcl_wait_set_add_subscription(&ws, &ping_sub, NULL);
    if (rc != RCL_RET_OK) bench_die_rcl("rcl_wait_set_add_subscription", rc);
    rc = rcl_wait(&ws, RCL_S_TO_NS(1));
    int64_t now = bench_now_ns();
    if (rc == RCL_RET_TIMEOUT) {
      rcl_reset_error();
      if (now - last_activity > (int64_t)idle_timeout_s * 1000000000LL)
        bench_die("nothing received for %" PRIu64 " s, giving up", idle_timeout_s);
      continue;
    }
    if (rc != RCL_RET_OK) bench_die_rcl("rcl_wait", rc);
    last_activity = now;

    /* Burst data first: a STATUS request must see every burst message that arrived before it. */
    if (ws.subscriptions[0] != NULL) {
      while (bench_take(&burst_sub, &data)) on_burst(&st, &data, bench_now_ns(), &pong_pub, &ack_msg);
    }
    if (ws.subscriptions[1] != NULL) {
      while (bench_take(&burst_all_sub, &data)) on_burst(&st, &data, bench_now_ns(), &pong_pub, &ack_msg);
    }
    if (ws.subscriptions[2] != NULL) {
      while (!quit && bench_take(&ping_sub, &ctl)) {
        bench_hdr h;
        if (!bench_get_hdr(&ctl, &h))
          bench_die("malformed message on %s (size %zu)", BENCH_TOPIC_PING, ctl.data.size);
        switch (h.kind) {
        case BENCH_ECHO:
          bench_publish(&pong_pub, &ctl);
          break;
        case BENCH_HELLO:
          /* Answer only once every endpoint of ours is matched, so ping knows the whole
           * graph is up when it gets the answer. */
          if (bench_sub_matches(&ping_sub) > 0 && bench_sub_matches(&burst_sub) > 0 && bench_sub_matches(&burst_all_sub) > 0 &&
              bench_pub_matches(&pong_pub) > 0)
            bench_publish(&pong_pub, &ctl);
          break;
        case BENCH_STATUS: {
          bench_ack a = st.ack;
          a.complete = 0;
          send_ack(&pong_pub, &ack_msg, &a);
          break;
        }
        case BENCH_QUIT:
          /* Echoed so that ping knows we stopped cleanly before it tears down its side. */
          bench_publish(&pong_pub, &ctl);
          quit = true;
          break;
        default:
          bench_die("unknown message kind %u on %s", h.kind, BENCH_TOPIC_PING);
        }
      }
    }
  }
  close_round(&st);

  bench_msg_fini(&ctl);
  bench_msg_fini(&data);
  bench_msg_fini(&ack_msg);
  rc = rcl_wait_set_fini(&ws);
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_wait_set_fini", rc);
  rc = rcl_publisher_fini(&pong_pub, &b.node);
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_publisher_fini", rc);
  rc = rcl_subscription_fini(&burst_all_sub, &b.node);
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_subscription_fini", rc);
  rc = rcl_subscription_fini(&burst_sub, &b.node);
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_subscription_fini", rc);
  rc = rcl_subscription_fini(&ping_sub, &b.node);
  if (rc != RCL_RET_OK) bench_die_rcl("rcl_subscription_fini", rc);
  bench_rcl_fini(&b);

  if (st.lost_total > 0 || st.bad_total > 0)
    bench_die("%" PRIu64 " burst messages lost, %" PRIu64 " with a bad payload", st.lost_total, st.bad_total);
  return 0;
}
