/* bench_udp: the wire's own round trip for tools/bench/net, beside the rmws in the same run.
 *
 *   bench_udp echo PORT                                  (host B: answers every message)
 *   bench_udp ping ADDR PORT SIZE ITERS [DATAGRAM|gso]   (host A: prints one JSON line)
 *
 * A raw UDP ping-pong between the two network namespaces over the same veth: ping sends SIZE
 * bytes as datagrams of at most DATAGRAM bytes (default 1472, one Ethernet frame of the 1500-byte
 * MTU each, as QUIC sends; 65507 gives Fast DDS's 64 KB datagrams, fragmented by IP), echo
 * takes them all and sends them back the same way, ping takes them all: one round trip, like
 * bench_ping's, with no reliability, no encryption, no serialization and no thread hand-off
 * (each side one thread, blocking in recv). A lower bound for any middleware on this link.
 * `gso`: the same 1472-byte datagrams, but handed to the kernel 44 at a time (UDP_SEGMENT, one
 * 64 KB sendmsg) and taken coalesced (UDP_GRO), as quinn sends (10 at a time) and receives.
 *
 * Each datagram starts with an 8-byte header (round number, byte offset), counted in SIZE (a
 * 64 B message is one 64-byte datagram). A round that loses a datagram (the kernel dropped one)
 * is abandoned after 200 ms and counted in "lost_rounds", not measured. ITERS/10 + 1 unmeasured
 * rounds come first. Sockets get 8 MiB buffers (as rmw_tracer's QUIC endpoints ask), so a
 * 1 MiB burst fits the receiver's buffer.
 *
 * Prints {"size":..,"datagram":..,"udp_rtt_us":{"p50":..,"p99":..},"rounds":..,"lost_rounds":..}.
 * echo runs until killed (or until it has seen nothing for 120 s). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HEADER 8
#define BUFFER (8 << 20)
#define MAX_DATAGRAM 65507
/* Datagrams per sendmsg with `gso` (44 x 1472 fits one 64 KB send). */
#define GSO_SEGMENTS 44
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void die(const char *what) {
  fprintf(stderr, "bench_udp: %s: %s\n", what, strerror(errno));
  exit(1);
}

static int udp_socket(void) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) die("socket");
  int b = BUFFER, on = 1;
  (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &b, sizeof b);
  (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &b, sizeof b);
  /* Coalesced datagrams are split again below, by the datagram size every segment has. */
  if (setsockopt(fd, IPPROTO_UDP, UDP_GRO, &on, sizeof on) != 0) die("UDP_GRO");
  return fd;
}

static void send_one(int fd, const struct sockaddr_in *to, const uint8_t *buf, size_t n) {
  for (;;) {
    ssize_t w = sendto(fd, buf, n, 0, (const struct sockaddr *)to, sizeof *to);
    if (w >= 0) return;
    if (errno == EINTR) continue;
    /* A full send buffer: wait for room rather than drop. */
    if (errno == ENOBUFS || errno == EAGAIN) {
      struct pollfd p = {.fd = fd, .events = POLLOUT};
      (void)poll(&p, 1, 10);
      continue;
    }
    die("sendto");
  }
}

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static uint32_t get32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

/* Send one message of `size` bytes of round `round` as datagrams of at most `dgram` bytes, each
 * with its header; `fields` (the message's size, datagram size and gso flag) start every
 * datagram's data. With `gso` up to GSO_SEGMENTS datagrams go in one sendmsg. */
static void send_message(int fd, const struct sockaddr_in *to, size_t size, size_t dgram, int gso,
                         uint32_t round) {
  static uint8_t out[GSO_SEGMENTS * 1472 > MAX_DATAGRAM ? GSO_SEGMENTS * 1472 : MAX_DATAGRAM];
  size_t data = dgram - HEADER, off = 0, used = 0;
  size_t total = size > HEADER ? size - HEADER : 0;
  int segs = 0;
  do {
    size_t n = total - off < data ? total - off : data;
    uint8_t *p = out + used;
    put32(p, round);
    put32(p + 4, (uint32_t)off);
    put32(p + HEADER, (uint32_t)size);
    put32(p + HEADER + 4, (uint32_t)dgram);
    put32(p + HEADER + 8, (uint32_t)gso);
    used += HEADER + n;
    off += n;
    segs++;
    if (!gso || segs == GSO_SEGMENTS || off >= total) {
      send_one(fd, to, out, used);
      used = 0;
      segs = 0;
    }
  } while (off < total);
}

/* Data bytes of round `round` in a received buffer: one datagram, or with GRO several of `dgram`
 * bytes each (the last one shorter). `*round` < 0: take the round of the first datagram. */
static size_t data_in(const uint8_t *buf, size_t r, size_t dgram, int64_t *round) {
  size_t got = 0;
  for (size_t at = 0; at + HEADER <= r; at += dgram) {
    size_t seg = r - at < dgram ? r - at : dgram;
    if (*round < 0) *round = get32(buf + at);
    if (get32(buf + at) == (uint32_t)*round) got += seg - HEADER;
  }
  return got;
}

static int echo(int port) {
  int fd = udp_socket();
  struct sockaddr_in me = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_ANY)};
  if (bind(fd, (struct sockaddr *)&me, sizeof me) != 0) die("bind");
  static uint8_t buf[1 << 16];
  int64_t round = -1;
  size_t got = 0;
  for (;;) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 120000) == 0) return 0;
    struct sockaddr_in from;
    socklen_t fl = sizeof from;
    ssize_t r = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) die("recvfrom");
    if (r < HEADER + 12) continue;
    size_t size = get32(buf + HEADER), dgram = get32(buf + HEADER + 4);
    int gso = (int)get32(buf + HEADER + 8);
    if (dgram < HEADER + 12 || dgram > MAX_DATAGRAM) continue;
    /* A new round (the last one lost a datagram) starts the count again. */
    if (round >= 0 && get32(buf) != (uint32_t)round) {
      round = -1;
      got = 0;
    }
    got += data_in(buf, (size_t)r, dgram, &round);
    if (got + HEADER >= size) {
      send_message(fd, &from, size, dgram, gso, (uint32_t)round);
      got = 0;
      round = -1;
    }
  }
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int ping(const char *addr, int port, size_t size, int iters, size_t dgram, int gso) {
  int fd = udp_socket();
  struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  if (inet_pton(AF_INET, addr, &to.sin_addr) != 1) {
    fprintf(stderr, "bench_udp: bad address %s\n", addr);
    return 2;
  }
  if (gso) {
    int seg = (int)dgram;
    if (setsockopt(fd, IPPROTO_UDP, UDP_SEGMENT, &seg, sizeof seg) != 0) die("UDP_SEGMENT");
  }
  static uint8_t in[1 << 16];
  int warm = iters / 10 + 1, measured = 0, lost = 0, done = 0;
  double *t = malloc(sizeof(double) * (size_t)iters);
  if (!t) die("malloc");
  for (uint32_t round = 0; measured < iters; round++) {
    if (lost > iters) {
      fprintf(stderr, "bench_udp: %d rounds lost, giving up\n", lost);
      return 1;
    }
    double t0 = now_us();
    send_message(fd, &to, size, dgram, gso, round);
    size_t got = 0;
    int ok = 1;
    while (got + HEADER < size) {
      struct pollfd p = {.fd = fd, .events = POLLIN};
      int n = poll(&p, 1, 200);
      if (n < 0 && errno == EINTR) continue;
      if (n == 0) {
        ok = 0;
        break;
      }
      ssize_t r = recv(fd, in, sizeof in, 0);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) die("recv");
      int64_t want = round;
      got += data_in(in, (size_t)r, dgram, &want);
    }
    double dt = now_us() - t0;
    if (!ok) {
      lost++;
      continue;
    }
    if (done++ >= warm) t[measured++] = dt;
  }
  qsort(t, (size_t)iters, sizeof *t, cmp);
  int i99 = (int)(iters * 0.99) < iters ? (int)(iters * 0.99) : iters - 1;
  printf("{\"size\":%zu,\"datagram\":%zu,\"gso\":%s,\"udp_rtt_us\":{\"p50\":%.2f,\"p99\":%.2f},\"rounds\":%d,"
         "\"lost_rounds\":%d}\n",
         size, dgram, gso ? "true" : "false", t[iters / 2], t[i99], iters, lost);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "echo") == 0) return echo(atoi(argv[2]));
  if ((argc == 6 || argc == 7) && strcmp(argv[1], "ping") == 0) {
    size_t size = strtoull(argv[4], NULL, 10);
    int iters = atoi(argv[5]);
    int gso = argc == 7 && strcmp(argv[6], "gso") == 0;
    size_t dgram = argc == 7 && !gso ? strtoull(argv[6], NULL, 10) : 1472;
    /* The first datagram must hold the header and the message's fields. */
    if (size < HEADER + 12 || iters <= 0 || dgram < HEADER + 12 || dgram > MAX_DATAGRAM) return 2;
    return ping(argv[2], atoi(argv[3]), size, iters, dgram, gso);
  }
  fprintf(stderr, "usage: bench_udp echo PORT | bench_udp ping ADDR PORT SIZE ITERS [DATAGRAM|gso]\n");
  return 2;
}
