/* UART0 of the LM3S6965 (a PL011): interrupt-driven receive into a ring, polled transmit. */
#ifndef FIRMWARE_UART_H
#define FIRMWARE_UART_H

#include <stddef.h>
#include <stdint.h>

void uart_init(void);
/* Non-blocking: moves up to cap received bytes into buf. */
size_t uart_read(uint8_t *buf, size_t cap);
/* Blocks until every byte is in the transmit FIFO. */
void uart_write(const uint8_t *buf, size_t len);

#endif
