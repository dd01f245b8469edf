/* The C interface between generated kernels, the launcher and libTritonCPURuntime.
 *
 * Kernel ABI (emitted by python/triton_cpu/codegen):
 *   void <name>(<TTIR arguments>..., int32_t pid_x, int32_t pid_y, int32_t pid_z,
 *               int32_t grid_x, int32_t grid_y, int32_t grid_z);
 * and, for the launcher, an argument-unpacking entry with one fixed signature:
 *   void <name>_launch(void **args, int32_t pid_x, ..., int32_t grid_z);
 * where args[i] points at the i-th flattened, non-constexpr argument.
 *
 * Each args[i] points at an 8-byte aligned slot holding the value in its natural size
 * (the launcher, third_party/cpu/backend/launcher.c, writes them):
 *   pointers: void *;  i1/u1: one byte, 0 or 1;  i8/u8, i16/u16, i32/u32, i64/u64: the
 *   integer of that width;  fp16, bf16: the 16-bit pattern;  fp32: float;  fp64: double.
 * Programs are numbered linearly with x fastest; the launcher may run any contiguous range
 * of them on one thread and several ranges concurrently, so the entry must be reentrant.
 */
#ifndef TRITON_CPU_RUNTIME_H
#define TRITON_CPU_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*tcpu_kernel_entry)(void **args, int32_t px, int32_t py, int32_t pz,
                                  int32_t gx, int32_t gy, int32_t gz);

/* Device-side assert. Records the first failure of a launch; the kernel then
 * returns from the failing program. The launcher turns it into RuntimeError. */
void tcpu_assert_fail(const char *msg, const char *file, int32_t line, const char *func,
                      int32_t px, int32_t py, int32_t pz);

/* Launcher side: 1 and the message if an assert failed since the last clear. */
int tcpu_error_pending(void);
size_t tcpu_error_message(char *buf, size_t size);
void tcpu_error_clear(void);

/* Per-thread scratch arena for materialized tensors too large for the stack.
 * Returns a 64-byte aligned buffer of at least `bytes`, valid until the next call
 * on the same thread with a larger size. */
void *tcpu_scratch(size_t bytes);

#ifdef __cplusplus
}
#endif
#endif
