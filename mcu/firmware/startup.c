/* Reset and the vector table of the Cortex-M3 (LM3S6965): copy .data, zero .bss, run main.
 * Only the handlers the firmware uses are named; the rest stop in default_handler, where a
 * debugger finds them. */
#include <stdint.h>

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;

int main(void);
void Reset_Handler(void);
void SysTick_Handler(void);
void UART0_Handler(void);

static void default_handler(void)
{
    for (;;) {
    }
}

typedef void (*handler_t)(void);

/* 16 system exceptions then the chip's IRQs up to UART0 (IRQ 5). */
struct vector_table {
    void *initial_sp;
    handler_t handlers[15 + 6];
};

__attribute__((section(".isr_vector"), used)) static const struct vector_table vectors = {
    &_estack,
    {
        Reset_Handler,   /* 1 reset */
        default_handler, /* 2 NMI */
        default_handler, /* 3 hard fault */
        default_handler, /* 4 memory management */
        default_handler, /* 5 bus fault */
        default_handler, /* 6 usage fault */
        0, 0, 0, 0,      /* 7-10 reserved */
        default_handler, /* 11 SVCall */
        default_handler, /* 12 debug monitor */
        0,               /* 13 reserved */
        default_handler, /* 14 PendSV */
        SysTick_Handler, /* 15 SysTick */
        default_handler, /* IRQ 0 GPIO A */
        default_handler, /* IRQ 1 GPIO B */
        default_handler, /* IRQ 2 GPIO C */
        default_handler, /* IRQ 3 GPIO D */
        default_handler, /* IRQ 4 GPIO E */
        UART0_Handler,   /* IRQ 5 UART0 */
    },
};

void Reset_Handler(void)
{
    uint32_t *src = &_sidata, *dst = &_sdata;
    while (dst < &_edata)
        *dst++ = *src++;
    for (dst = &_sbss; dst < &_ebss;)
        *dst++ = 0;
    main();
    for (;;) {
    }
}
