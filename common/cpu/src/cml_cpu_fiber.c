/* Fiber contexts: see cml_cpu_fiber.h. */
#include "cml_cpu_fiber.h"

#include <stdint.h>

#ifdef CML_CPU_FAST_SWITCH

/* cml_cpu_switch_sp(void **save, void *to): push the callee-saved registers,
 * store rsp in *save, load to, pop, return into the other context. The FP
 * control words (MXCSR, x87) are not switched: every fiber runs with the
 * process's defaults, and ldmxcsr/fldcw cost more than the rest of the
 * switch. The trampoline starts a fresh fiber: entry in r13, its argument
 * in r12 (both popped from the initial frame). */
__asm__(".text\n"
        ".globl cml_cpu_switch_sp\n"
        ".type cml_cpu_switch_sp,@function\n"
        "cml_cpu_switch_sp:\n"
        "  pushq %rbp\n"
        "  pushq %rbx\n"
        "  pushq %r12\n"
        "  pushq %r13\n"
        "  pushq %r14\n"
        "  pushq %r15\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  popq %r15\n"
        "  popq %r14\n"
        "  popq %r13\n"
        "  popq %r12\n"
        "  popq %rbx\n"
        "  popq %rbp\n"
        "  ret\n"
        ".size cml_cpu_switch_sp, .-cml_cpu_switch_sp\n"
        ".globl cml_cpu_fiber_trampoline\n"
        ".type cml_cpu_fiber_trampoline,@function\n"
        "cml_cpu_fiber_trampoline:\n"
        "  movq %r12, %rdi\n"
        "  callq *%r13\n"
        "  ud2\n"
        ".size cml_cpu_fiber_trampoline, .-cml_cpu_fiber_trampoline\n");

void cml_cpu_switch_sp(void **save, void *to);
void cml_cpu_fiber_trampoline(void);

void cml_cpu_ctx_init(cml_cpu_ctx *ctx, void *stack, size_t size, void (*entry)(void *), void *arg)
{
    uintptr_t top = ((uintptr_t)stack + size) & ~(uintptr_t)15;
    uint64_t *frame = (uint64_t *)(top - 56);  /* the trampoline starts with rsp = top, 16-aligned */
    frame[0] = 0;                                   /* r15 */
    frame[1] = 0;                                   /* r14 */
    frame[2] = (uint64_t)(uintptr_t)entry;          /* r13 */
    frame[3] = (uint64_t)(uintptr_t)arg;            /* r12 */
    frame[4] = 0;                                   /* rbx */
    frame[5] = 0;                                   /* rbp */
    frame[6] = (uint64_t)(uintptr_t)cml_cpu_fiber_trampoline;
    ctx->sp = frame;
}

void cml_cpu_ctx_switch(cml_cpu_ctx *from, cml_cpu_ctx *to) { cml_cpu_switch_sp(&from->sp, to->sp); }

#else

/* makecontext passes int arguments only: the pointer goes in two halves. */
static void start(unsigned hi, unsigned lo, unsigned ehi, unsigned elo)
{
    void *arg = (void *)(((uintptr_t)hi << 32) | lo);
    void (*entry)(void *) = (void (*)(void *))(((uintptr_t)ehi << 32) | elo);
    entry(arg);
}

void cml_cpu_ctx_init(cml_cpu_ctx *ctx, void *stack, size_t size, void (*entry)(void *), void *arg)
{
    getcontext(&ctx->uc);
    ctx->uc.uc_stack.ss_sp = stack;
    ctx->uc.uc_stack.ss_size = size;
    ctx->uc.uc_link = NULL;
    uint64_t a = (uint64_t)(uintptr_t)arg, e = (uint64_t)(uintptr_t)entry;
    makecontext(&ctx->uc, (void (*)(void))start, 4, (unsigned)(a >> 32), (unsigned)a, (unsigned)(e >> 32),
                (unsigned)e);
}

void cml_cpu_ctx_switch(cml_cpu_ctx *from, cml_cpu_ctx *to) { swapcontext(&from->uc, &to->uc); }

#endif
