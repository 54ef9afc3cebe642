/* cml_cpu_fiber.h: user-level context switch for one fiber per CUDA thread.
 *
 * x86-64: a hand-written switch (callee-saved registers, MXCSR and the x87
 * control word; no signal mask), about 20x faster than swapcontext, which
 * makes a sigprocmask syscall per switch. Elsewhere: swapcontext. */
#ifndef CML_CPU_FIBER_H
#define CML_CPU_FIBER_H

#include <stddef.h>

#if defined(__x86_64__) && !defined(CML_CPU_USE_UCONTEXT)
#define CML_CPU_FAST_SWITCH 1
typedef struct cml_cpu_ctx { void *sp; } cml_cpu_ctx;
#else
#include <ucontext.h>
typedef struct cml_cpu_ctx { ucontext_t uc; } cml_cpu_ctx;
#endif

/* Prepares ctx to call entry(arg) on the stack [stack, stack + size) the
 * first time it is switched to. entry must never return. */
void cml_cpu_ctx_init(cml_cpu_ctx *ctx, void *stack, size_t size, void (*entry)(void *), void *arg);

/* Saves the running context in from and resumes to. */
void cml_cpu_ctx_switch(cml_cpu_ctx *from, cml_cpu_ctx *to);

#endif
