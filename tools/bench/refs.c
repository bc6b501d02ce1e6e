/* bench_refs: the machine's own references for tools/bench, beside the rmws in the same run.
 *
 *   bench_refs SIZE ITERS
 *
 * - raw Unix-socket ping-pong: two processes (fork) on a socketpair; the parent writes SIZE bytes,
 *   the child reads them all and writes them back, the parent reads them all: one round trip,
 *   like bench_ping's (no framing, no serialization, no wake-up machinery beyond the socket).
 * - raw Unix-socket stream: the parent writes messages of SIZE bytes back to back, one send each,
 *   the child reads each with its own reads and answers one byte after the last; messages per
 *   second from the first send to that answer. What the kernel alone costs per message, one way,
 *   a send and a receive each: the limit a keep_all subscriber's take path is compared with.
 * - memcpy: SIZE bytes from one warmed buffer to another (what one copy of a sample costs).
 *
 * Prints one JSON line: {"size":..,"socket_rtt_us":{"p50":..,"p99":..},"socket_stream_msgs_per_s":..,
 * "memcpy_us":{"p50":..,"p99":..}}. The round trip and memcpy are ITERS samples after ITERS/10
 * unmeasured ones; the stream sends 512 MiB or 200,000 messages, whichever is fewer (at least
 * 50), after a tenth of that unmeasured. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void die(const char *what) {
  fprintf(stderr, "bench_refs: %s: %s\n", what, strerror(errno));
  exit(1);
}

static void write_all(int fd, const uint8_t *p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) die("send");
    p += w;
    n -= (size_t)w;
  }
}

static int read_all(int fd, uint8_t *p, size_t n) {
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return 0;
    if (r < 0) die("read");
    p += r;
    n -= (size_t)r;
  }
  return 1;
}

/* Messages per second of a one-way stream of `count` messages of `size` bytes (see above). */
static double stream_rate(uint8_t *a, uint8_t *b, size_t size, long count) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) die("socketpair");
  pid_t child = fork();
  if (child < 0) die("fork");
  long warm = count / 10 + 1;
  if (child == 0) {
    close(sv[0]);
    for (int phase = 0; phase < 2; phase++) {
      long n = phase == 0 ? warm : count;
      for (long i = 0; i < n; i++)
        if (!read_all(sv[1], b, size)) _exit(1);
      uint8_t done = 1;
      write_all(sv[1], &done, 1);
    }
    _exit(0);
  }
  close(sv[1]);
  double rate = 0;
  for (int phase = 0; phase < 2; phase++) {
    long n = phase == 0 ? warm : count;
    double t0 = now_us();
    for (long i = 0; i < n; i++) write_all(sv[0], a, size);
    uint8_t done;
    if (!read_all(sv[0], &done, 1)) die("stream reader ended");
    if (phase == 1) rate = count / ((now_us() - t0) / 1e6);
  }
  close(sv[0]);
  waitpid(child, NULL, 0);
  return rate;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void stats(double *v, int n, double *p50, double *p99) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  *p50 = v[n / 2];
  *p99 = v[(int)(n * 0.99) < n ? (int)(n * 0.99) : n - 1];
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: bench_refs SIZE ITERS\n");
    return 2;
  }
  size_t size = strtoull(argv[1], NULL, 10);
  int iters = atoi(argv[2]);
  if (size == 0 || iters <= 0) return 2;
  int warm = iters / 10 + 1;
  uint8_t *a = malloc(size), *b = malloc(size);
  double *t = malloc(sizeof(double) * (size_t)iters);
  if (!a || !b || !t) die("malloc");
  memset(a, 0x5a, size);
  memset(b, 0, size);

  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) die("socketpair");
  pid_t child = fork();
  if (child < 0) die("fork");
  if (child == 0) {
    close(sv[0]);
    while (read_all(sv[1], b, size)) write_all(sv[1], b, size);
    _exit(0);
  }
  close(sv[1]);
  for (int i = 0; i < warm + iters; i++) {
    double t0 = now_us();
    write_all(sv[0], a, size);
    if (!read_all(sv[0], b, size)) die("echo ended");
    if (i >= warm) t[i - warm] = now_us() - t0;
  }
  close(sv[0]);
  waitpid(child, NULL, 0);
  double s50, s99;
  stats(t, iters, &s50, &s99);

  long count = (long)((512ull << 20) / size);
  if (count > 200000) count = 200000;
  if (count < 50) count = 50;
  double stream = stream_rate(a, b, size, count);

  for (int i = 0; i < warm + iters; i++) {
    a[i % size] = (uint8_t)i;
    double t0 = now_us();
    memcpy(b, a, size);
    __asm__ volatile("" ::"r"(b) : "memory");
    if (i >= warm) t[i - warm] = now_us() - t0;
  }
  double m50, m99;
  stats(t, iters, &m50, &m99);
  printf("{\"size\":%zu,\"socket_rtt_us\":{\"p50\":%.2f,\"p99\":%.2f},\"socket_stream_msgs_per_s\":%.1f,"
         "\"memcpy_us\":{\"p50\":%.2f,\"p99\":%.2f}}\n",
         size, s50, s99, stream, m50, m99);
  return 0;
}
