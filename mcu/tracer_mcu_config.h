/* Compile-time sizes and timers of tracer_mcu (docs/serial.md section 7).
 *
 * Every setting can be overridden with -D on the compiler's command line, so an application
 * sizes the library's static memory without editing this file. The whole state is one
 * tracer_mcu_node whose size follows from these numbers (sizeof(tracer_mcu_node)). */
#ifndef TRACER_MCU_CONFIG_H
#define TRACER_MCU_CONFIG_H

/* Endpoints (publishers + subscriptions) of the node; each costs ~28 bytes of RAM. */
#ifndef TRACER_MCU_MAX_ENDPOINTS
#define TRACER_MCU_MAX_ENDPOINTS 4
#endif

/* Reliable publishers that can be declared: each holds a window of messages. */
#ifndef TRACER_MCU_MAX_RELIABLE_PUBS
#define TRACER_MCU_MAX_RELIABLE_PUBS 2
#endif

/* Largest decoded frame (packet + check), 16..254: the receive and send buffers are this
 * large (plus 2), and HELLO announces it so the host sends nothing larger. */
#ifndef TRACER_MCU_MAX_FRAME
#define TRACER_MCU_MAX_FRAME 254
#endif

/* Largest message body (the CDR after its 4-byte encapsulation header), published or
 * received; larger ones are fragmented on the line. Each reliable window slot and the one
 * receive buffer are this large. At most 65535. */
#ifndef TRACER_MCU_MAX_MSG
#define TRACER_MCU_MAX_MSG 64
#endif

/* Messages a reliable publisher may have sent and not yet acknowledged (1..127). */
#ifndef TRACER_MCU_WINDOW
#define TRACER_MCU_WINDOW 4
#endif

/* 1: small best-effort messages go as CDATA (CRC-8, 8 bytes for an Int32); 0: always DATA
 * with CRC-16 (11 bytes), for a line too noisy for an 8-bit check. */
#ifndef TRACER_MCU_CDATA
#define TRACER_MCU_CDATA 1
#endif

#ifndef TRACER_MCU_HEARTBEAT_MS
#define TRACER_MCU_HEARTBEAT_MS 250u
#endif
#ifndef TRACER_MCU_HOST_TIMEOUT_MS
#define TRACER_MCU_HOST_TIMEOUT_MS 1000u
#endif
#ifndef TRACER_MCU_HELLO_MS
#define TRACER_MCU_HELLO_MS 500u
#endif
#ifndef TRACER_MCU_RTO_MS
#define TRACER_MCU_RTO_MS 100u
#endif

/* Bytes read from the application per spin at most, so a flood cannot hold the caller. */
#ifndef TRACER_MCU_READ_PER_SPIN
#define TRACER_MCU_READ_PER_SPIN 512u
#endif

#endif
