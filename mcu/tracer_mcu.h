/* tracer_mcu: a libtracer / ROS 2 node on a microcontroller over a byte stream, no agent.
 *
 * The wire is docs/serial.md. C99, no malloc, no OS: the application allocates one
 * tracer_mcu_node (statically), gives byte read/write functions and a millisecond clock, declares
 * its endpoints, and calls tracer_mcu_spin_once() often (every millisecond or two at 115200
 * baud, or whenever bytes arrive). Not thread-safe: call it from one context only. */
#ifndef TRACER_MCU_H
#define TRACER_MCU_H

#include <stddef.h>
#include <stdint.h>

#include "tracer_mcu_config.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    TRACER_MCU_OK = 0,
    TRACER_MCU_EINVAL = -1,  /* bad argument (e.g. CDR without the 00 01 00 00 header) */
    TRACER_MCU_ENOSPC = -2,  /* no endpoint or window slot left (raise the config sizes) */
    TRACER_MCU_EAGAIN = -3,  /* reliable window full: try again after spinning */
    TRACER_MCU_ETOOBIG = -4  /* message above TRACER_MCU_MAX_MSG, or DECLARE above a frame */
};

/* QoS of an endpoint. */
#define TRACER_MCU_BEST_EFFORT 0u
#define TRACER_MCU_RELIABLE 1u

typedef struct tracer_mcu_io {
    /* Copies up to cap received bytes into buf and returns how many; 0 when none are waiting.
     * Must not block. */
    size_t (*read)(void *ctx, uint8_t *buf, size_t cap);
    /* Sends all len bytes (may block until they are in the UART's hands). */
    void (*write)(void *ctx, const uint8_t *buf, size_t len);
    /* A millisecond clock (wraps at 2^32; only differences are used). */
    uint32_t (*now_ms)(void *ctx);
    void *ctx;
} tracer_mcu_io;

/* Called from tracer_mcu_spin_once with a received message: full CDR (header included).
 * Returns 0 when it took the message, non-zero when it cannot now (its queue is full): on a
 * reliable subscription the message is then not acknowledged, and the host sends it again
 * after its retransmission timeout; on a best-effort one it is dropped. */
typedef int (*tracer_mcu_on_message)(void *arg, const uint8_t *cdr, size_t len);

typedef struct tracer_mcu_endpoint {
    const char *topic;
    const char *type;
    const char *hash;
    tracer_mcu_on_message cb;
    void *arg;
    uint32_t seq;       /* publisher: next sequence to assign; subscription: next expected */
    uint32_t nack_seq;  /* subscription: the expected seq last NACKed, and when */
    uint32_t nack_ms;
    uint8_t flags;      /* DECLARE flags: bit 0 subscription, bit 1 reliable */
    uint8_t depth;
    int8_t window;      /* reliable publisher: index of its window, else -1 */
} tracer_mcu_endpoint;

typedef struct tracer_mcu_window {
    uint8_t buf[TRACER_MCU_WINDOW][TRACER_MCU_MAX_MSG];
    uint16_t len[TRACER_MCU_WINDOW];
    uint32_t base;      /* oldest unacknowledged seq; slot = seq % TRACER_MCU_WINDOW */
    uint32_t sent_ms;   /* when the oldest was last sent */
    uint8_t count;      /* messages base .. base+count-1 are held */
} tracer_mcu_window;

typedef struct tracer_mcu_stats {
    uint32_t frames_in;      /* valid frames received */
    uint32_t bad_frames;     /* COBS, length or check failures, and oversize frames */
    uint32_t dropped;        /* best-effort messages published while not synced */
    uint32_t retransmits;    /* reliable messages sent again */
} tracer_mcu_stats;

typedef struct tracer_mcu_node {
    tracer_mcu_io io;
    const char *ns;
    const char *name;
    uint32_t session;
    uint32_t last_rx_ms, last_tx_ms, last_hello_ms;
    tracer_mcu_endpoint ep[TRACER_MCU_MAX_ENDPOINTS];
    tracer_mcu_window win[TRACER_MCU_MAX_RELIABLE_PUBS];
    uint8_t n_ep, n_win;
    uint8_t synced;          /* the host READY'd our current declarations */
    uint8_t boot;            /* no READY yet since init */
    uint8_t hello_due;       /* send HELLO at the next spin */
    uint8_t rx_skip;         /* frame too long: drop until the next 0x00 */
    uint16_t rx_len;
    uint8_t rx[TRACER_MCU_MAX_FRAME + 1];   /* one encoded frame, decoded in place */
    uint8_t tx[TRACER_MCU_MAX_FRAME + 2];   /* COBS byte + frame, encoded in place + 0x00 */
    /* Reassembly of a received message, with its 4 CDR header bytes in front. */
    uint8_t msg[4 + TRACER_MCU_MAX_MSG];
    uint16_t msg_total, msg_got;
    uint8_t msg_alias, msg_seq, msg_index, msg_active;
    tracer_mcu_stats stats;
} tracer_mcu_node;

/* Starts a node: namespace ("/" or "/robot") and name are kept by pointer (use literals).
 * boot_nonce should differ between boots when the board can tell (RNG, noise, no-init RAM); the
 * host also detects a reboot by the clock going backwards (docs/serial.md section 6). */
int tracer_mcu_init(tracer_mcu_node *node, const tracer_mcu_io *io, const char *ns,
                    const char *name, uint32_t boot_nonce);

/* Declares a publisher; returns its alias (>= 0) or a negative error. Strings by pointer. */
int tracer_mcu_publisher(tracer_mcu_node *node, const char *topic, const char *type,
                         const char *type_hash, unsigned qos, uint8_t depth);

/* Declares a subscription; cb gets each message's full CDR. Returns its alias or an error. */
int tracer_mcu_subscription(tracer_mcu_node *node, const char *topic, const char *type,
                            const char *type_hash, unsigned qos, uint8_t depth,
                            tracer_mcu_on_message cb, void *arg);

/* Publishes full CDR (starting 00 01 00 00). Best effort: sent at once when synced, else
 * dropped (counted), TRACER_MCU_OK both ways. Reliable: kept until acknowledged;
 * TRACER_MCU_EAGAIN when the window is full. Never blocks beyond io.write. */
int tracer_mcu_publish(tracer_mcu_node *node, int alias, const uint8_t *cdr, size_t len);

/* Reads and handles what has arrived, calls subscription callbacks, runs the timers. */
void tracer_mcu_spin_once(tracer_mcu_node *node);

/* 1 when the host has acknowledged the declarations (data flows), else 0. */
int tracer_mcu_synced(const tracer_mcu_node *node);

/* CRC-16/CCITT-FALSE and CRC-8/SMBUS as the wire uses them (exposed for tests). */
uint16_t tracer_mcu_crc16(const uint8_t *p, size_t n);
uint8_t tracer_mcu_crc8(const uint8_t *p, size_t n);

#ifdef __cplusplus
}
#endif

#endif
