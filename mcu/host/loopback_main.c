/* The MCU library built for the host, speaking over stdin/stdout (pipes or a pty), for the
 * interop tests and benchmarks in serial/tests/: the same node as the firmware (publishers
 * /mcu/counter and /mcu/echo, subscription /mcu/led echoed back on /mcu/echo).
 *
 *   loopback_main COUNT RELIABLE BODY_LEN NONCE [PERIOD_MS [pty]]
 *
 * COUNT counter values are published on /mcu/counter (reliable if bit 0 of RELIABLE is set; bit
 * 1 makes the /mcu/led subscription best effort instead of reliable; bit 2 publishes before
 * READY too, as the firmware does, so reliable values wait in the window) as fast as
 * the window allows, or one every PERIOD_MS; each is CDR of BODY_LEN bytes (an Int32 when 4)
 * whose first 4 bytes are the counter. Exits when stdin reaches EOF.
 *
 * With "pty" the node speaks on a new pseudo-terminal instead of stdin/stdout, as on a serial
 * port: it prints "pty <slave path>" on stdout, puts the slave in raw mode and keeps it open
 * (so the settings hold while a host opens and closes it). A host opens that path like
 * /dev/ttyACM0; stdin still only tells the program when to exit. */
#define _XOPEN_SOURCE 600

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "../tracer_mcu.h"

static const char *INT32 = "std_msgs/msg/Int32";
static const char *INT32_HASH =
    "RIHS01_b6578ded3c58c626cfe8d1a6fb6e04f706f97e9f03d2727c9ff4e74b1cef0deb";

static int eof_seen;
static int in_fd = 0, out_fd = 1;

static size_t io_read(void *ctx, uint8_t *buf, size_t cap)
{
    ssize_t n;
    (void)ctx;
    n = read(in_fd, buf, cap);
    if (n == 0 && in_fd == 0)
        eof_seen = 1;
    return n > 0 ? (size_t)n : 0;
}

/* A pseudo-terminal pair; the master becomes the line. Returns 0 or -1. */
static int open_pty(void)
{
    struct termios t;
    const char *name;
    int slave, m = posix_openpt(O_RDWR | O_NOCTTY);
    if (m < 0 || grantpt(m) != 0 || unlockpt(m) != 0 || (name = ptsname(m)) == NULL)
        return -1;
    slave = open(name, O_RDWR | O_NOCTTY);
    if (slave < 0 || tcgetattr(slave, &t) != 0)
        return -1;
    /* Raw: no echo, no line editing, no CR/NL or flow-control translation, 8 bits. */
    t.c_iflag &= ~(tcflag_t)(IGNBRK | BRKINT | PARMRK | ISTRIP | INLCR | IGNCR | ICRNL | IXON);
    t.c_oflag &= ~(tcflag_t)OPOST;
    t.c_lflag &= ~(tcflag_t)(ECHO | ECHONL | ICANON | ISIG | IEXTEN);
    t.c_cflag &= ~(tcflag_t)(CSIZE | PARENB);
    t.c_cflag |= CS8;
    t.c_cc[VMIN] = 1;
    t.c_cc[VTIME] = 0;
    if (tcsetattr(slave, TCSANOW, &t) != 0)
        return -1;
    fcntl(m, F_SETFL, fcntl(m, F_GETFL) | O_NONBLOCK);
    in_fd = out_fd = m;
    printf("pty %s\n", name);
    fflush(stdout);
    return 0; /* the slave fd stays open for the program's life */
}

static void io_write(void *ctx, const uint8_t *buf, size_t len)
{
    (void)ctx;
    while (len > 0) {
        ssize_t n = write(out_fd, buf, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN) {
                /* A pty nobody reads fills up; a UART with nobody listening still sends, so
                 * bytes that cannot go within 10 ms are dropped, as on that line. */
                struct pollfd w;
                w.fd = out_fd;
                w.events = POLLOUT;
                if (poll(&w, 1, 10) <= 0)
                    return;
                continue;
            }
            exit(2); /* the host is gone */
        }
        buf += n;
        len -= (size_t)n;
    }
}

static uint32_t io_now(void *ctx)
{
    struct timespec ts;
    (void)ctx;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint32_t)((uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u);
}

/* Echoes wait here: a callback must not spin the node itself. */
static uint8_t pending[8][4 + TRACER_MCU_MAX_MSG];
static size_t pending_len[8];
static unsigned pending_head, pending_count;

static int on_led(void *arg, const uint8_t *cdr, size_t len)
{
    unsigned slot;
    (void)arg;
    if (pending_count == 8)
        return 1; /* full: the host sends it again later */
    slot = (pending_head + pending_count) % 8;
    memcpy(pending[slot], cdr, len);
    pending_len[slot] = len;
    pending_count++;
    return 0;
}

int main(int argc, char **argv)
{
    static tracer_mcu_node node;
    static uint8_t msg[4 + TRACER_MCU_MAX_MSG];
    tracer_mcu_io io;
    unsigned long count, next = 0, period;
    unsigned reliable;
    size_t body_len;
    int counter, echo, led;
    uint32_t last_pub = 0;

    if (argc < 5) {
        fprintf(stderr, "usage: %s COUNT RELIABLE BODY_LEN NONCE [PERIOD_MS]\n", argv[0]);
        return 1;
    }
    count = strtoul(argv[1], NULL, 10);
    reliable = (unsigned)strtoul(argv[2], NULL, 10);
    body_len = strtoul(argv[3], NULL, 10);
    period = argc > 5 ? strtoul(argv[5], NULL, 10) : 0;
    if (body_len < 4 || body_len > TRACER_MCU_MAX_MSG)
        return 1;
    fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
    if (argc > 6 && strcmp(argv[6], "pty") == 0 && open_pty() != 0) {
        perror("pty");
        return 1;
    }

    io.read = io_read;
    io.write = io_write;
    io.now_ms = io_now;
    io.ctx = NULL;
    if (tracer_mcu_init(&node, &io, "/", "mcu_host", (uint32_t)strtoul(argv[4], NULL, 0)) != 0)
        return 1;
    counter = tracer_mcu_publisher(&node, "/mcu/counter", INT32, INT32_HASH,
                                   (reliable & 1u) ? TRACER_MCU_RELIABLE : TRACER_MCU_BEST_EFFORT, 10);
    echo = tracer_mcu_publisher(&node, "/mcu/echo", INT32, INT32_HASH, TRACER_MCU_RELIABLE, 10);
    led = tracer_mcu_subscription(&node, "/mcu/led", INT32, INT32_HASH,
                                  (reliable & 2u) ? TRACER_MCU_BEST_EFFORT : TRACER_MCU_RELIABLE, 10,
                                  on_led, NULL);
    if (counter < 0 || echo < 0 || led < 0)
        return 1;

    memset(msg, 0, sizeof msg);
    msg[1] = 0x01; /* CDR little-endian */
    while (!eof_seen) {
        struct pollfd pfd;
        int busy = 0;
        tracer_mcu_spin_once(&node);
        while (pending_count > 0 && tracer_mcu_synced(&node) &&
               tracer_mcu_publish(&node, echo, pending[pending_head], pending_len[pending_head]) == 0) {
            pending_head = (pending_head + 1) % 8;
            pending_count--;
        }
        if (next < count && (tracer_mcu_synced(&node) || (reliable & 4)) && (period == 0 || io_now(NULL) - last_pub >= period)) {
            uint32_t v = (uint32_t)next;
            msg[4] = (uint8_t)v; msg[5] = (uint8_t)(v >> 8);
            msg[6] = (uint8_t)(v >> 16); msg[7] = (uint8_t)(v >> 24);
            if (tracer_mcu_publish(&node, counter, msg, 4 + body_len) == 0) {
                next++;
                last_pub = io_now(NULL);
                busy = period == 0;
            }
        }
        if (in_fd != 0) {
            uint8_t probe;
            if (read(0, &probe, 1) == 0)
                eof_seen = 1; /* pty mode: stdin only says when to stop */
        }
        pfd.fd = in_fd;
        pfd.events = POLLIN;
        pfd.revents = 0;
        poll(&pfd, 1, busy ? 0 : 1);
    }
    return 0;
}
