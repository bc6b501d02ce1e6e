/* PL011 UART0 driver for the LM3S6965 at 115200 8N1 from the 12.5 MHz clock (main.c).
 *
 * Receive: the interrupt moves bytes from the 16-byte FIFO to a 128-byte ring. When the ring is
 * full the receive interrupt is masked, so further bytes stay in the FIFO (under QEMU the
 * character backend then waits: no byte is lost); uart_read unmasks it once it made room. */
#include "uart.h"

#define REG(a) (*(volatile uint32_t *)(a))
#define SYSCTL_RCGC1 REG(0x400FE104u)
#define SYSCTL_RCGC2 REG(0x400FE108u)
#define UART0 0x4000C000u
#define UART_DR REG(UART0 + 0x000u)
#define UART_FR REG(UART0 + 0x018u)
#define UART_IBRD REG(UART0 + 0x024u)
#define UART_FBRD REG(UART0 + 0x028u)
#define UART_LCRH REG(UART0 + 0x02Cu)
#define UART_CTL REG(UART0 + 0x030u)
#define UART_IM REG(UART0 + 0x038u)
#define UART_ICR REG(UART0 + 0x044u)
#define NVIC_ISER0 REG(0xE000E100u)

#define FR_RXFE 0x10u
#define FR_TXFF 0x20u
#define INT_RX 0x10u
#define INT_RT 0x40u
#define UART0_IRQ 5u

#define RING 128u
static volatile uint8_t ring[RING];
static volatile uint8_t head, tail; /* head: written by the interrupt; tail: by uart_read */

void uart_init(void)
{
    SYSCTL_RCGC1 |= 1u;      /* clock UART0 */
    SYSCTL_RCGC2 |= 1u;      /* and GPIO port A (its pins) */
    UART_CTL = 0;
    UART_IBRD = 6;           /* 12.5 MHz / (16 * 115200) = 6.78 */
    UART_FBRD = 50;          /* 0.78 * 64 */
    UART_LCRH = 0x70u;       /* 8 bits, FIFOs on */
    UART_IM = INT_RX | INT_RT;
    UART_CTL = 0x301u;       /* UARTEN, TXE, RXE */
    NVIC_ISER0 = 1u << UART0_IRQ;
}

void UART0_Handler(void)
{
    while (!(UART_FR & FR_RXFE)) {
        uint8_t next = (uint8_t)((head + 1u) % RING);
        if (next == tail) {
            UART_IM = 0; /* ring full: leave the rest in the FIFO until uart_read drains */
            break;
        }
        ring[head] = (uint8_t)UART_DR;
        head = next;
    }
    UART_ICR = INT_RX | INT_RT;
}

size_t uart_read(uint8_t *buf, size_t cap)
{
    size_t n = 0;
    while (n < cap && tail != head) {
        buf[n++] = ring[tail];
        tail = (uint8_t)((tail + 1u) % RING);
    }
    if (n)
        UART_IM = INT_RX | INT_RT;
    return n;
}

void uart_write(const uint8_t *buf, size_t len)
{
    size_t i;
    for (i = 0; i < len; i++) {
        while (UART_FR & FR_TXFF) {
        }
        UART_DR = buf[i];
    }
}
