/* bench_udp: the wire's own round trip for tools/bench/net, beside the rmws in the same run.
 *
 *   bench_udp echo PORT                                  (host B: answers every message)
 *   bench_udp ping ADDR PORT SIZE ITERS [DATAGRAM]       (host A: prints one JSON line)
 *
 * A raw UDP ping-pong between the two network namespaces over the same veth: ping sends SIZE
 * bytes as datagrams of at most DATAGRAM bytes (default 1472, one Ethernet frame of the 1500-byte
 * MTU each, as QUIC sends; 65507 gives Fast DDS's 64 KB datagrams, fragmented by IP), echo
 * takes them all and sends them back the same way, ping takes them all: one round trip, like
 * bench_ping's, with no reliability, no encryption, no serialization and no thread hand-off
 * (each side one thread, blocking in recv). A lower bound for any middleware on this link.
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
  int b = BUFFER;
  (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &b, sizeof b);
  (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &b, sizeof b);
  return fd;
}

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static uint32_t get32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

/* Send one message of `size` bytes of round `round` as datagrams of at most `dgram` bytes. */
static void send_message(int fd, const struct sockaddr_in *to, uint8_t *buf, size_t size, size_t dgram,
                         uint32_t round) {
  size_t data = dgram - HEADER, off = 0;
  size_t total = size > HEADER ? size - HEADER : 0;
  do {
    size_t n = total - off < data ? total - off : data;
    put32(buf, round);
    put32(buf + 4, (uint32_t)off);
    for (;;) {
      ssize_t w = sendto(fd, buf, HEADER + n, 0, (const struct sockaddr *)to, sizeof *to);
      if (w >= 0) break;
      if (errno == EINTR) continue;
      /* A full send buffer: wait for room rather than drop. */
      if (errno == ENOBUFS || errno == EAGAIN) {
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        (void)poll(&p, 1, 10);
        continue;
      }
      die("sendto");
    }
    off += n;
  } while (off < total);
}

static int echo(int port) {
  int fd = udp_socket();
  struct sockaddr_in me = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_ANY)};
  if (bind(fd, (struct sockaddr *)&me, sizeof me) != 0) die("bind");
  static uint8_t buf[MAX_DATAGRAM], out[MAX_DATAGRAM];
  uint32_t round = UINT32_MAX;
  size_t got = 0, dgram = 0;
  for (;;) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 120000) == 0) return 0;
    struct sockaddr_in from;
    socklen_t fl = sizeof from;
    ssize_t r = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) die("recvfrom");
    if (r < HEADER + 8) continue;
    /* The first datagram of a message carries its size and datagram bound after the header. */
    uint32_t rnd = get32(buf);
    if (rnd != round) {
      round = rnd;
      got = 0;
    }
    if (get32(buf + 4) == 0) dgram = get32(buf + HEADER + 4);
    got += (size_t)r - HEADER;
    size_t size = get32(buf + HEADER);
    if (dgram > 0 && size > HEADER && got + HEADER >= size) {
      memcpy(out + HEADER, buf + HEADER, 8);
      send_message(fd, &from, out, size, dgram, round);
      got = 0;
      round = UINT32_MAX;
    }
  }
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int ping(const char *addr, int port, size_t size, int iters, size_t dgram) {
  int fd = udp_socket();
  struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  if (inet_pton(AF_INET, addr, &to.sin_addr) != 1) {
    fprintf(stderr, "bench_udp: bad address %s\n", addr);
    return 2;
  }
  static uint8_t buf[MAX_DATAGRAM], in[MAX_DATAGRAM];
  memset(buf, 0x5a, sizeof buf);
  /* The message's size and the datagram bound ride in the first datagram's first data bytes. */
  put32(buf + HEADER, (uint32_t)size);
  put32(buf + HEADER + 4, (uint32_t)dgram);
  int warm = iters / 10 + 1, measured = 0, lost = 0, done = 0;
  double *t = malloc(sizeof(double) * (size_t)iters);
  if (!t) die("malloc");
  for (uint32_t round = 0; measured < iters; round++) {
    if (lost > iters) {
      fprintf(stderr, "bench_udp: %d rounds lost, giving up\n", lost);
      return 1;
    }
    double t0 = now_us();
    send_message(fd, &to, buf, size, dgram, round);
    size_t got = 0;
    int ok = 1;
    while (got + HEADER < size || got == 0) {
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
      if (r < HEADER || get32(in) != round) continue;
      got += (size_t)r - HEADER;
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
  printf("{\"size\":%zu,\"datagram\":%zu,\"udp_rtt_us\":{\"p50\":%.2f,\"p99\":%.2f},\"rounds\":%d,\"lost_rounds\":%d}\n",
         size, dgram, t[iters / 2], t[i99], iters, lost);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "echo") == 0) return echo(atoi(argv[2]));
  if ((argc == 6 || argc == 7) && strcmp(argv[1], "ping") == 0) {
    size_t size = strtoull(argv[4], NULL, 10);
    int iters = atoi(argv[5]);
    size_t dgram = argc == 7 ? strtoull(argv[6], NULL, 10) : 1472;
    /* The first datagram must hold the header and the size fields. */
    if (size < HEADER + 8 || iters <= 0 || dgram < HEADER + 8 || dgram > MAX_DATAGRAM) return 2;
    return ping(argv[2], atoi(argv[3]), size, iters, dgram);
  }
  fprintf(stderr, "usage: bench_udp echo PORT | bench_udp ping ADDR PORT SIZE ITERS [DATAGRAM]\n");
  return 2;
}
