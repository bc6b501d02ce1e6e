/* tracer_mcu: the MCU side of docs/serial.md. C99, static memory only, no recursion.
 *
 * Layout: CRCs, COBS in place, packet encoders, the receive path (bytes -> frames -> packets),
 * the reliable window, the timers, then the public API. */
#include "tracer_mcu.h"

#include <string.h>

enum {
    K_HELLO = 0x01, K_DECLARE = 0x02, K_READY = 0x03, K_SYNC = 0x04, K_HEARTBEAT = 0x05,
    K_ACK = 0x06, K_NACK = 0x07, K_DATA = 0x10, K_FRAG = 0x11, K_CDATA = 0x80
};
enum { F_SUB = 0x01, F_RELIABLE = 0x02 };

/* Largest packet: the frame minus its largest check. */
#define PMAX (TRACER_MCU_MAX_FRAME - 2)

/* Sizes that the wire cannot carry fail the build, not the field. */
typedef char tracer_mcu_check_frame[(TRACER_MCU_MAX_FRAME >= 16 && TRACER_MCU_MAX_FRAME <= 254) ? 1 : -1];
typedef char tracer_mcu_check_msg[(TRACER_MCU_MAX_MSG >= 8 && TRACER_MCU_MAX_MSG <= 65535L &&
                                   TRACER_MCU_MAX_MSG <= 256L * (PMAX - 6)) ? 1 : -1];
typedef char tracer_mcu_check_window[(TRACER_MCU_WINDOW >= 1 && TRACER_MCU_WINDOW <= 127) ? 1 : -1];
typedef char tracer_mcu_check_eps[(TRACER_MCU_MAX_ENDPOINTS >= 1 && TRACER_MCU_MAX_ENDPOINTS <= 64) ? 1 : -1];

static const uint8_t CDR_HEADER[4] = {0x00, 0x01, 0x00, 0x00};

/* Bitwise CRCs: a table would cost 512 bytes of flash for a few bytes per frame. */
uint16_t tracer_mcu_crc16(const uint8_t *p, size_t n)
{
    uint16_t crc = 0xFFFFu;
    size_t i;
    int b;
    for (i = 0; i < n; i++) {
        crc ^= (uint16_t)((uint16_t)p[i] << 8);
        for (b = 0; b < 8; b++)
            crc = (crc & 0x8000u) ? (uint16_t)((crc << 1) ^ 0x1021u) : (uint16_t)(crc << 1);
    }
    return crc;
}

uint8_t tracer_mcu_crc8(const uint8_t *p, size_t n)
{
    uint8_t crc = 0;
    size_t i;
    int b;
    for (i = 0; i < n; i++) {
        crc ^= p[i];
        for (b = 0; b < 8; b++)
            crc = (crc & 0x80u) ? (uint8_t)((crc << 1) ^ 0x07u) : (uint8_t)(crc << 1);
    }
    return crc;
}

static uint32_t now(tracer_mcu_node *n) { return n->io.now_ms(n->io.ctx); }

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* Appends a length-prefixed string at p[*off], if it fits in the packet. */
static int put_str(uint8_t *p, size_t *off, const char *s)
{
    size_t len = strlen(s);
    if (len > 255 || *off + 1 + len > PMAX)
        return -1;
    p[(*off)++] = (uint8_t)len;
    memcpy(p + *off, s, len);
    *off += len;
    return 0;
}

/* The packet is at tx[1..1+plen]: append its check, COBS-encode in place and write it.
 * In place works because a decoded frame is at most 254 bytes: every COBS block then fits in
 * one code byte, and each code byte takes the place of the 0x00 it stands for (tx[0] stands
 * for the one before the frame). */
static void send_frame(tracer_mcu_node *n, size_t plen, int lead_zero)
{
    uint8_t *f = n->tx + 1;
    size_t flen = plen, next, i;
    if (f[0] & K_CDATA) {
        f[flen++] = tracer_mcu_crc8(f, plen);
    } else {
        uint16_t c = tracer_mcu_crc16(f, plen);
        f[flen++] = (uint8_t)c;
        f[flen++] = (uint8_t)(c >> 8);
    }
    n->tx[0] = 0;
    next = flen + 1;
    for (i = flen + 1; i-- > 0;) {
        if (n->tx[i] == 0) {
            n->tx[i] = (uint8_t)(next - i);
            next = i;
        }
    }
    n->tx[flen + 1] = 0;
    if (lead_zero) {
        /* Flushes whatever the host collected since our last frame (after a silence). */
        static const uint8_t zero = 0;
        n->io.write(n->io.ctx, &zero, 1);
    }
    n->io.write(n->io.ctx, n->tx, flen + 2);
    n->last_tx_ms = now(n);
}

static void send_small(tracer_mcu_node *n, uint8_t kind, int has_args, uint8_t a, uint8_t b)
{
    uint8_t *p = n->tx + 1;
    p[0] = kind;
    if (has_args) {
        p[1] = a;
        p[2] = b;
    }
    send_frame(n, has_args ? 3 : 1, kind == K_HEARTBEAT);
}

/* One message: CDATA when small and best effort, DATA when it fits a frame, else FRAGs. */
static void send_msg(tracer_mcu_node *n, uint8_t alias, uint32_t seq, const uint8_t *body,
                     size_t len, int reliable)
{
    uint8_t *p = n->tx + 1;
    size_t off = 0;
    uint8_t index = 0;
    if (TRACER_MCU_CDATA && !reliable && alias < 8 && len <= 8) {
        p[0] = (uint8_t)(K_CDATA | (alias << 4) | (seq & 0x0Fu));
        memcpy(p + 1, body, len);
        send_frame(n, 1 + len, 0);
        return;
    }
    if (len + 3 <= PMAX) {
        p[0] = K_DATA; p[1] = alias; p[2] = (uint8_t)seq;
        memcpy(p + 3, body, len);
        send_frame(n, 3 + len, 0);
        return;
    }
    while (off < len) {
        size_t h = 4, take = len - off;
        p[0] = K_FRAG; p[1] = alias; p[2] = (uint8_t)seq; p[3] = index;
        if (index == 0) {
            p[4] = (uint8_t)len;
            p[5] = (uint8_t)(len >> 8);
            h = 6;
        }
        if (take > PMAX - h)
            take = PMAX - h;
        memcpy(p + h, body + off, take);
        send_frame(n, h + take, 0);
        off += take;
        index++;
    }
}

static uint32_t declared_seq(const tracer_mcu_node *n, const tracer_mcu_endpoint *e)
{
    /* A reliable publisher restarts from its oldest unacknowledged message. */
    if (e->window >= 0)
        return n->win[e->window].base;
    return e->seq;
}

/* HELLO and every DECLARE; the lengths were checked when each was declared. */
static void send_hello(tracer_mcu_node *n)
{
    uint8_t *p = n->tx + 1;
    size_t off = 15;
    uint8_t i;
    p[0] = K_HELLO; p[1] = 1;
    put32(p + 2, n->session);
    put32(p + 6, now(n));
    p[10] = (uint8_t)TRACER_MCU_MAX_FRAME;
    p[11] = n->boot ? 1 : 0;
    p[12] = n->n_ep;
    p[13] = (uint8_t)(TRACER_MCU_MAX_MSG & 0xFF);
    p[14] = (uint8_t)((TRACER_MCU_MAX_MSG >> 8) & 0xFF);
    (void)put_str(p, &off, n->ns);
    (void)put_str(p, &off, n->name);
    send_frame(n, off, 1);
    for (i = 0; i < n->n_ep; i++) {
        tracer_mcu_endpoint *e = &n->ep[i];
        off = 9;
        p[0] = K_DECLARE; p[1] = i; p[2] = e->flags; p[3] = e->depth; p[4] = 1;
        put32(p + 5, declared_seq(n, e));
        (void)put_str(p, &off, e->topic);
        (void)put_str(p, &off, e->type);
        (void)put_str(p, &off, e->hash);
        send_frame(n, off, 0);
    }
    n->last_hello_ms = now(n);
    n->hello_due = 0;
}

static void resend_window(tracer_mcu_node *n, uint8_t alias, uint32_t from)
{
    tracer_mcu_window *w = &n->win[n->ep[alias].window];
    uint32_t s;
    for (s = from; s != w->base + w->count; s++) {
        uint8_t slot = (uint8_t)(s % TRACER_MCU_WINDOW);
        send_msg(n, alias, s, w->buf[slot], w->len[slot], 1);
        n->stats.retransmits++;
    }
    w->sent_ms = now(n);
}

/* ACK / NACK of a reliable publisher: both say every message before seq arrived. */
static void on_ack(tracer_mcu_node *n, uint8_t alias, uint8_t low, int nack)
{
    tracer_mcu_window *w = &n->win[n->ep[alias].window];
    uint32_t d = (uint32_t)(uint8_t)(low - (uint8_t)w->base);
    if (d > w->count)
        return; /* outside the window: stale or corrupt */
    w->base += d;
    w->count = (uint8_t)(w->count - d);
    if (d)
        w->sent_ms = now(n);
    if (nack && w->count > 0)
        resend_window(n, alias, w->base);
}

static void nack(tracer_mcu_node *n, uint8_t alias)
{
    tracer_mcu_endpoint *e = &n->ep[alias];
    uint32_t t = now(n);
    if (e->nack_seq != e->seq || t - e->nack_ms >= TRACER_MCU_RTO_MS) {
        e->nack_seq = e->seq;
        e->nack_ms = t;
        send_small(n, K_NACK, 1, alias, (uint8_t)e->seq);
    }
}

static void deliver(tracer_mcu_node *n, uint8_t alias, uint8_t low, unsigned bits, size_t len)
{
    tracer_mcu_endpoint *e = &n->ep[alias];
    uint32_t mask = (1u << bits) - 1u;
    memcpy(n->msg, CDR_HEADER, 4);
    if (e->cb && e->cb(e->arg, n->msg, 4 + len) != 0 && (e->flags & F_RELIABLE))
        return; /* refused: not acknowledged, the host sends it again */
    /* Best effort: the smallest forward distance from the next expected seq. */
    e->seq += (uint32_t)((low - e->seq) & mask) + 1u;
    if (e->flags & F_RELIABLE)
        send_small(n, K_ACK, 1, alias, (uint8_t)e->seq);
}

/* DATA, FRAG or CDATA for one of our subscriptions. */
static void on_msg(tracer_mcu_node *n, const uint8_t *p, size_t plen)
{
    uint8_t kind = p[0], alias, low, index = 0;
    unsigned bits = 8;
    size_t h = 3;
    tracer_mcu_endpoint *e;
    if (kind & K_CDATA) {
        alias = (uint8_t)((kind >> 4) & 7u); low = (uint8_t)(kind & 0x0Fu); bits = 4; h = 1;
    } else {
        alias = p[1]; low = p[2];
        if (kind == K_FRAG) {
            if (plen < 5)
                return;
            index = p[3];
            h = index == 0 ? 6 : 4;
            if (plen < h + 1)
                return;
        }
    }
    if (alias >= n->n_ep || !(n->ep[alias].flags & F_SUB))
        return;
    e = &n->ep[alias];
    if (e->flags & F_RELIABLE) {
        uint8_t d = (uint8_t)(low - (uint8_t)e->seq);
        if (bits != 8)
            return; /* CDATA is best effort only */
        if (d != 0) {
            n->msg_active = 0;
            if (d >= 128)
                send_small(n, K_ACK, 1, alias, (uint8_t)e->seq); /* a copy: ack again */
            else
                nack(n, alias);
            return;
        }
    }
    if (kind != K_FRAG) {
        if (plen - h > TRACER_MCU_MAX_MSG)
            return;
        memcpy(n->msg + 4, p + h, plen - h);
        deliver(n, alias, low, bits, plen - h);
        return;
    }
    if (index == 0) {
        uint16_t total = (uint16_t)(p[4] | (p[5] << 8));
        n->msg_active = 0;
        if (total == 0 || total > TRACER_MCU_MAX_MSG)
            return;
        n->msg_active = 1; n->msg_alias = alias; n->msg_seq = low; n->msg_index = 0;
        n->msg_total = total; n->msg_got = 0;
    } else if (!n->msg_active || n->msg_alias != alias || n->msg_seq != low || n->msg_index != index) {
        n->msg_active = 0;
        if (e->flags & F_RELIABLE)
            nack(n, alias);
        return;
    }
    if (plen - h > (size_t)(n->msg_total - n->msg_got)) {
        n->msg_active = 0;
        return;
    }
    memcpy(n->msg + 4 + n->msg_got, p + h, plen - h);
    n->msg_got = (uint16_t)(n->msg_got + (plen - h));
    n->msg_index++;
    if (n->msg_got == n->msg_total) {
        n->msg_active = 0;
        deliver(n, alias, low, bits, n->msg_total);
    }
}

static int reliable_pub(const tracer_mcu_node *n, uint8_t alias)
{
    return alias < n->n_ep && n->ep[alias].window >= 0;
}

static void handle_packet(tracer_mcu_node *n, const uint8_t *p, size_t plen)
{
    uint8_t kind = p[0];
    n->last_rx_ms = now(n);
    n->stats.frames_in++;
    if (kind & K_CDATA) {
        if (n->synced)
            on_msg(n, p, plen);
        return;
    }
    /* Without READY we have no session: an ACK, NACK or message now is a host's answer to a
     * previous boot (a reset with no silence) or to declarations it has since lost. Acting on
     * it could move a window past messages no host has, or send DATA before our HELLO. */
    if (!n->synced && kind != K_READY && kind != K_SYNC)
        return;
    switch (kind) {
    case K_READY:
        if (plen == 6 && get32(p + 1) == n->session && p[5] == n->n_ep && !n->synced) {
            uint8_t i;
            n->synced = 1;
            n->boot = 0;
            /* Reliable messages held while unsynced go out now, from the declared seq. */
            for (i = 0; i < n->n_ep; i++)
                if (n->ep[i].window >= 0 && n->win[n->ep[i].window].count)
                    resend_window(n, i, n->win[n->ep[i].window].base);
        }
        break;
    case K_SYNC:
        if (plen == 1) {
            n->synced = 0;
            n->hello_due = 1;
        }
        break;
    case K_ACK:
    case K_NACK:
        if (plen == 3 && reliable_pub(n, p[1]))
            on_ack(n, p[1], p[2], kind == K_NACK);
        break;
    case K_DATA:
    case K_FRAG:
        if (plen >= 3)
            on_msg(n, p, plen);
        break;
    default:
        break; /* HEARTBEAT, or a kind we do not know: only liveness */
    }
}

/* One collected frame (without its 0x00): COBS-decode in place, check, handle. */
static void handle_encoded(tracer_mcu_node *n)
{
    uint8_t *r = n->rx;
    size_t m = n->rx_len, i = 0, out = 0;
    while (i < m) {
        uint8_t code = r[i++], j;
        for (j = 1; j < code; j++) {
            if (i >= m)
                goto bad;
            r[out++] = r[i++];
        }
        if (code < 0xFF && i < m)
            r[out++] = 0;
    }
    if (out < 2)
        goto bad;
    if (r[0] & K_CDATA) {
        if (out > 10 || tracer_mcu_crc8(r, out - 1) != r[out - 1])
            goto bad;
        handle_packet(n, r, out - 1);
    } else {
        if (out < 3 || tracer_mcu_crc16(r, out - 2) != (uint16_t)(r[out - 2] | (r[out - 1] << 8)))
            goto bad;
        handle_packet(n, r, out - 2);
    }
    return;
bad:
    n->stats.bad_frames++;
}

static void rx_byte(tracer_mcu_node *n, uint8_t b)
{
    if (b == 0) {
        if (!n->rx_skip && n->rx_len > 0)
            handle_encoded(n);
        n->rx_len = 0;
        n->rx_skip = 0;
    } else if (n->rx_skip) {
        /* dropping an oversize frame up to the next delimiter */
    } else if (n->rx_len >= sizeof n->rx) {
        n->rx_skip = 1;
        n->stats.bad_frames++;
    } else {
        n->rx[n->rx_len++] = b;
    }
}

int tracer_mcu_init(tracer_mcu_node *n, const tracer_mcu_io *io, const char *ns,
                    const char *name, uint32_t boot_nonce)
{
    uint32_t t;
    if (!n || !io || !io->read || !io->write || !io->now_ms || !ns || !name)
        return TRACER_MCU_EINVAL;
    if (strlen(ns) + strlen(name) + 17 > PMAX)
        return TRACER_MCU_ETOOBIG;
    memset(n, 0, sizeof *n);
    n->io = *io;
    n->ns = ns;
    n->name = name;
    n->session = boot_nonce;
    n->boot = 1;
    n->hello_due = 1;
    t = now(n);
    n->last_rx_ms = t;
    n->last_tx_ms = t;
    n->last_hello_ms = t;
    return TRACER_MCU_OK;
}

static int declare(tracer_mcu_node *n, const char *topic, const char *type, const char *hash,
                   unsigned qos, uint8_t depth, uint8_t flags)
{
    tracer_mcu_endpoint *e;
    if (!n || !topic || !type)
        return TRACER_MCU_EINVAL;
    if (!hash)
        hash = "";
    if (strlen(topic) > 255 || strlen(type) > 255 || strlen(hash) > 255 ||
        12 + strlen(topic) + strlen(type) + strlen(hash) > PMAX)
        return TRACER_MCU_ETOOBIG;
    if (n->n_ep >= TRACER_MCU_MAX_ENDPOINTS)
        return TRACER_MCU_ENOSPC;
    if (qos == TRACER_MCU_RELIABLE)
        flags |= F_RELIABLE;
    if ((flags & (F_RELIABLE | F_SUB)) == F_RELIABLE && n->n_win >= TRACER_MCU_MAX_RELIABLE_PUBS)
        return TRACER_MCU_ENOSPC;
    e = &n->ep[n->n_ep];
    memset(e, 0, sizeof *e);
    e->topic = topic; e->type = type; e->hash = hash;
    e->flags = flags;
    e->depth = depth ? depth : 1;
    e->seq = 1;
    e->window = -1;
    if ((flags & (F_RELIABLE | F_SUB)) == F_RELIABLE) {
        e->window = (int8_t)n->n_win;
        n->win[n->n_win].base = 1;
        n->n_win++;
    }
    /* The host learns the new endpoint from a fresh HELLO + DECLAREs. */
    n->synced = 0;
    n->hello_due = 1;
    return n->n_ep++;
}

int tracer_mcu_publisher(tracer_mcu_node *n, const char *topic, const char *type,
                         const char *type_hash, unsigned qos, uint8_t depth)
{
    return declare(n, topic, type, type_hash, qos, depth, 0);
}

int tracer_mcu_subscription(tracer_mcu_node *n, const char *topic, const char *type,
                            const char *type_hash, unsigned qos, uint8_t depth,
                            tracer_mcu_on_message cb, void *arg)
{
    int alias = declare(n, topic, type, type_hash, qos, depth, F_SUB);
    if (alias >= 0) {
        n->ep[alias].cb = cb;
        n->ep[alias].arg = arg;
    }
    return alias;
}

int tracer_mcu_publish(tracer_mcu_node *n, int alias, const uint8_t *cdr, size_t len)
{
    tracer_mcu_endpoint *e;
    const uint8_t *body;
    size_t blen;
    if (!n || alias < 0 || alias >= n->n_ep || (n->ep[alias].flags & F_SUB) || !cdr || len < 4 ||
        memcmp(cdr, CDR_HEADER, 4) != 0)
        return TRACER_MCU_EINVAL;
    body = cdr + 4;
    blen = len - 4;
    if (blen > TRACER_MCU_MAX_MSG)
        return TRACER_MCU_ETOOBIG;
    e = &n->ep[alias];
    if (e->window < 0) {
        uint32_t seq = e->seq++;
        if (n->synced)
            send_msg(n, (uint8_t)alias, seq, body, blen, 0);
        else
            n->stats.dropped++;
        return TRACER_MCU_OK;
    }
    {
        tracer_mcu_window *w = &n->win[e->window];
        uint32_t seq;
        uint8_t slot;
        if (w->count >= TRACER_MCU_WINDOW)
            return TRACER_MCU_EAGAIN;
        seq = e->seq++;
        slot = (uint8_t)(seq % TRACER_MCU_WINDOW);
        memcpy(w->buf[slot], body, blen);
        w->len[slot] = (uint16_t)blen;
        w->count++;
        if (n->synced) {
            send_msg(n, (uint8_t)alias, seq, body, blen, 1);
            if (w->count == 1)
                w->sent_ms = now(n);
        }
    }
    return TRACER_MCU_OK;
}

void tracer_mcu_spin_once(tracer_mcu_node *n)
{
    uint8_t buf[32];
    size_t total = 0, got, i;
    uint32_t t;
    uint8_t a;
    while (total < TRACER_MCU_READ_PER_SPIN && (got = n->io.read(n->io.ctx, buf, sizeof buf)) > 0) {
        if (got > sizeof buf)
            got = sizeof buf; /* a misbehaving read must not overrun us */
        for (i = 0; i < got; i++)
            rx_byte(n, buf[i]);
        total += got;
    }
    t = now(n);
    if (n->synced && t - n->last_rx_ms >= TRACER_MCU_HOST_TIMEOUT_MS)
        n->synced = 0; /* the host is gone: declare again until a host answers */
    if (!n->synced) {
        if (n->hello_due || t - n->last_hello_ms >= TRACER_MCU_HELLO_MS)
            send_hello(n);
        return;
    }
    for (a = 0; a < n->n_ep; a++) {
        tracer_mcu_endpoint *e = &n->ep[a];
        if (e->window >= 0) {
            tracer_mcu_window *w = &n->win[e->window];
            if (w->count && t - w->sent_ms >= TRACER_MCU_RTO_MS)
                resend_window(n, a, w->base);
        }
    }
    if (t - n->last_tx_ms >= TRACER_MCU_HEARTBEAT_MS)
        send_small(n, K_HEARTBEAT, 0, 0, 0);
}

int tracer_mcu_synced(const tracer_mcu_node *n) { return n->synced; }
