/* R5 firmware: a libtracer / ROS 2 node on a Cortex-M3 over UART0 (docs/serial.md).
 *
 * Publishes a counter (std_msgs/msg/Int32) on /mcu/counter at 100 Hz, best effort; subscribes
 * to /mcu/led (reliable) and republishes each value on /mcu/echo (reliable). SysTick gives the
 * 1 kHz clock; the core sleeps (WFI) between interrupts. */
#include <stdint.h>

#include "../tracer_mcu.h"
#include "uart.h"

#define REG(a) (*(volatile uint32_t *)(a))
#define SYST_CSR REG(0xE000E010u)
#define SYST_RVR REG(0xE000E014u)
#define SYST_CVR REG(0xE000E018u)
/* The core clock as QEMU models the LM3S6965 out of reset: RCC's reset value selects the
 * 200 MHz PLL divided by SYSDIV 15 + 1. (12 MHz gave a counter at 104 Hz under QEMU.) */
#define CPU_HZ 12500000u

static const char INT32[] = "std_msgs/msg/Int32";
/* From the Jazzy std_msgs type description (share/std_msgs/msg/Int32.json, "type_hashes"). */
static const char INT32_HASH[] =
    "RIHS01_b6578ded3c58c626cfe8d1a6fb6e04f706f97e9f03d2727c9ff4e74b1cef0deb";

static volatile uint32_t ticks;
static tracer_mcu_node node;
static int echo_alias;

/* Received values wait here: a callback must not publish into a full window. */
static uint8_t pending[4][8];
static uint8_t pending_head, pending_count;

void SysTick_Handler(void) { ticks++; }

static size_t io_read(void *ctx, uint8_t *buf, size_t cap)
{
    (void)ctx;
    return uart_read(buf, cap);
}

static void io_write(void *ctx, const uint8_t *buf, size_t len)
{
    (void)ctx;
    uart_write(buf, len);
}

static uint32_t io_now(void *ctx)
{
    (void)ctx;
    return ticks;
}

static int on_led(void *arg, const uint8_t *cdr, size_t len)
{
    uint8_t *slot;
    (void)arg;
    if (len != 8)
        return 0; /* not an Int32: taken and ignored */
    if (pending_count == 4)
        return 1; /* four echoes already wait: the host sends it again */
    slot = pending[(pending_head + pending_count) % 4];
    for (len = 0; len < 8; len++)
        slot[len] = cdr[len];
    pending_count++;
    return 0;
}

int main(void)
{
    static const tracer_mcu_io io = {io_read, io_write, io_now, 0};
    uint8_t msg[8] = {0x00, 0x01, 0x00, 0x00, 0, 0, 0, 0};
    uint32_t counter = 0, next_pub;
    int counter_alias;

    SYST_RVR = CPU_HZ / 1000u - 1u;
    SYST_CVR = 0;
    SYST_CSR = 7u; /* processor clock, interrupt, enable */
    uart_init();

    /* No entropy on this board under QEMU: the host also tells a reboot by the clock. */
    tracer_mcu_init(&node, &io, "/", "mcu", 0x5EED0001u);
    counter_alias = tracer_mcu_publisher(&node, "/mcu/counter", INT32, INT32_HASH,
                                         TRACER_MCU_BEST_EFFORT, 1);
    echo_alias = tracer_mcu_publisher(&node, "/mcu/echo", INT32, INT32_HASH, TRACER_MCU_RELIABLE, 10);
    tracer_mcu_subscription(&node, "/mcu/led", INT32, INT32_HASH, TRACER_MCU_RELIABLE, 10, on_led, 0);

    next_pub = ticks + 10u;
    for (;;) {
        tracer_mcu_spin_once(&node);
        while (pending_count &&
               tracer_mcu_publish(&node, echo_alias, pending[pending_head], 8) == TRACER_MCU_OK) {
            pending_head = (uint8_t)((pending_head + 1u) % 4u);
            pending_count--;
        }
        if ((int32_t)(ticks - next_pub) >= 0) {
            next_pub += 10u; /* 100 Hz without drift */
            msg[4] = (uint8_t)counter;
            msg[5] = (uint8_t)(counter >> 8);
            msg[6] = (uint8_t)(counter >> 16);
            msg[7] = (uint8_t)(counter >> 24);
            tracer_mcu_publish(&node, counter_alias, msg, sizeof msg);
            counter++;
        }
        __asm__ volatile("wfi");
    }
}
