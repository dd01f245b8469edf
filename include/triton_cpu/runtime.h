/* The C interface between generated kernels, the launcher and libTritonCPURuntime.
 *
 * Kernel ABI (emitted by python/triton_cpu/codegen): every kernel has one fixed signature,
 *   void <name>(void **args, int32_t pid_x, int32_t pid_y, int32_t pid_z,
 *               int32_t grid_x, int32_t grid_y, int32_t grid_z);
 * where args[i] points at the i-th flattened, non-constexpr argument (the kernel loads them
 * at entry). The kernel's own device functions take their arguments directly, then the same
 * six integers.
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
 * returns from the failing program. The launcher turns it into RuntimeError with
 *   "device-side assert triggered: <file>:<line>: <func>: block: [<x>, <y>, <z>]
 *    Assertion `<msg>` failed."
 * (one line; CUDA's __assertfail text, with the program id as the block). */
void tcpu_assert_fail(const char *msg, const char *file, int32_t line, const char *func,
                      int32_t px, int32_t py, int32_t pz);

/* tt.print: writes ONE line to stdout in the format of Triton's GPU backend
 * (lib/Conversion/TritonGPUToLLVM/PrintOpToLLVM.cpp plus the NVIDIA printf promotion):
 *
 *   num_operands == 0:  "pid (<x>, <y>, <z>)<prefix>\n"   (all other arguments ignored)
 *   otherwise:          "pid (<x>, <y>, <z>) idx (<i0>, <i1>, ...)<prefix>[(operand <n>) ]<value>\n"
 *
 * prefix        the op's prefix attribute, written verbatim (the frontend already made it
 *               " name: "; it is never interpreted as a format string). NULL means "".
 * pid_x/y/z     the program id.
 * rank          the rank of the printed operand; 0 for a scalar operand, which prints "idx ()".
 * idx           `rank` indices of this element (may be NULL when rank == 0).
 * shape         `rank` extents of the operand; index d is right-aligned to width
 *               ceil(log10(shape[d])) (0 for extents <= 1). NULL means no padding.
 *               Like the GPU (32 printf operands), dimension 27 on prints "... (truncated)".
 * operand       which operand of the print op this element belongs to (0-based);
 * num_operands  how many the op has: "(operand <n>) " is written only when it is > 1.
 * type, bits    the element type, TCPU_PRINT_* below:
 *                 TCPU_PRINT_UINT  integer of `bits` (1, 8, 16, 32, 64) printed unsigned
 *                 TCPU_PRINT_SINT  integer of `bits` printed signed (the op's isSigned[operand])
 *                 TCPU_PRINT_FLOAT IEEE float of `bits` (16 = fp16, 32 = fp32, 64 = fp64)
 *                 TCPU_PRINT_BF16  bfloat16 (`bits` ignored)
 *                 TCPU_PRINT_PTR   pointer (`bits` ignored)
 * hex           the op's hex flag: integers as "0x" + bits/4 zero-padded hex digits
 *               (integers narrower than 32 bits are promoted first, signed ones by
 *               sign extension, so int8 -1 is 0xffffffff as on the GPU), floats as %a.
 * value         the element's bits in the low `bits` bits (floats: the bit pattern; pointers:
 *               the address); higher bits are ignored, so zext, sext or anyext all work.
 *
 * Values: ints %i/%u (%lli/%llu for 64 bits), floats widened to double and printed %f,
 * pointers %p. The line is written with one locked stdio call and stdout is flushed, so
 * lines of concurrent programs never interleave and all output is visible when the launch
 * returns. */
#define TCPU_PRINT_UINT 0
#define TCPU_PRINT_SINT 1
#define TCPU_PRINT_FLOAT 2
#define TCPU_PRINT_BF16 3
#define TCPU_PRINT_PTR 4
void tcpu_print(const char *prefix, int32_t pid_x, int32_t pid_y, int32_t pid_z, int32_t rank,
                const int32_t *idx, const int32_t *shape, int32_t operand, int32_t num_operands,
                int32_t type, int32_t bits, int32_t hex, uint64_t value);

/* tt.atomic_poll: spins until the 2-, 4- or 8-byte integer at `p` equals `expected`
   (relaxed loads; an acquire fence after a match when `acquire`), or until the monotonic
   clock passes `deadline_ns` (< 0: no deadline). Loads at least once. 1 on a match. */
int32_t tcpu_atomic_poll(const void *p, int32_t bytes, int64_t expected, int64_t deadline_ns,
                         int32_t acquire);
/* The monotonic clock in nanoseconds (the start of an atomic_poll's time budget). */
int64_t tcpu_clock_ns(void);

/* ---- Per-launch state ----------------------------------------------------------------
 *
 * Everything a launch can report (an assert failure, bounds violations) lives in one
 * tcpu_launch_t owned by the launcher. Each thread that runs programs of the launch binds
 * it first (tcpu_launch_bind), so two launches running at the same time (two Python
 * threads) never see each other's failures. A kernel entered with no launch bound (called
 * directly, e.g. through ctypes) reports into a process-wide fallback launch. */

/* Byte range [lo, hi) of the storage behind one pointer argument. lo = 0, hi = UINTPTR_MAX:
 * not checked (the argument is not a pointer, or is a plain int address). */
typedef struct {
  uintptr_t lo, hi;
} tcpu_range_t;

/* Access kinds of a bounds violation. */
#define TCPU_ACCESS_LOAD 0
#define TCPU_ACCESS_STORE 1
#define TCPU_ACCESS_ATOMIC 2

typedef struct {
  int32_t kind;        /* TCPU_ACCESS_* */
  int32_t arg;         /* flattened argument the pointer derives from */
  uintptr_t addr;      /* the first violating lane's address */
  int32_t elem_bytes;  /* the access's element size */
  const char *file;    /* kernel source location of the access */
  int32_t line;
  int32_t px, py, pz;  /* program id */
} tcpu_violation_t;

/* C++ (native.cpp) only passes tcpu_launch_t around; its atomics are C11's. */
#ifdef __cplusplus
#define TCPU_ATOMIC(T) T
#else
#define TCPU_ATOMIC(T) _Atomic T
#endif

typedef struct {
  TCPU_ATOMIC(int32_t) error_state;   /* 0 none, 2 being written, 1 recorded */
  char error_text[1024];
  /* Bounds-checked kernels: ranges[i] for flattened argument i (nranges of them). */
  const tcpu_range_t *ranges;
  int32_t nranges;
  TCPU_ATOMIC(int64_t) violations;    /* lanes that failed a check */
  TCPU_ATOMIC(int32_t) violation_state; /* 0 none, 2 being written, 1 recorded */
  tcpu_violation_t first;
  int64_t id;                          /* unique per launch in the process (from 1) */
} tcpu_launch_t;

/* Zeroes `l` (no error, no ranges: every access unchecked). */
void tcpu_launch_init(tcpu_launch_t *l);
/* Makes `l` the launch the calling thread's programs report into; NULL unbinds. */
void tcpu_launch_bind(tcpu_launch_t *l);

/* Bounds-checked kernels, once per program: the range table of the bound launch, with at
 * least `nargs` entries (a permissive table when the launch has none). */
const tcpu_range_t *tcpu_bounds_ranges(int32_t nargs);
/* Records `lanes` violating lanes of one access; the first violation of the launch is kept
 * with its details. The access itself is then performed without those lanes. */
void tcpu_bounds_fail(int32_t kind, int32_t arg, uintptr_t addr, int32_t elem_bytes,
                      int64_t lanes, const char *file, int32_t line, int32_t px, int32_t py,
                      int32_t pz);

/* Records `text` as the launch's failure unless one was recorded before (the launcher
 * raises it as RuntimeError): a device assert, or a fault inside a kernel (launcher.c). */
void tcpu_launch_fail(tcpu_launch_t *l, const char *text);

/* Launcher side, on the calling thread's current launch (the bound one, else the
 * fallback): 1 and the message if an assert failed since the last clear. */
int tcpu_error_pending(void);
size_t tcpu_error_message(char *buf, size_t size);
void tcpu_error_clear(void);
/* The same for one given launch. */
int tcpu_launch_error_pending(const tcpu_launch_t *l);
size_t tcpu_launch_error_message(tcpu_launch_t *l, char *buf, size_t size);

/* Per-thread scratch arena for materialized tensors too large for the stack.
 * Returns a 64-byte aligned buffer of at least `bytes`, valid until the next call
 * on the same thread with a larger size. If it cannot be allocated: the current launch
 * fails ("out of memory") and the program is left through the hook below; NULL only
 * where that hook returns. */
void *tcpu_scratch(size_t bytes);

/* The launcher's way out of the running program (back to where its range of programs
 * started, as after a fault), for a buffer the program needs that could not be allocated.
 * The hook returns when no program runs under the launcher's guard on this thread. */
void tcpu_set_leave_program(void (*hook)(void));

/* Per-thread cache of packed dot operands shared by the programs of one launch (the
 * shared-panels pass, tile kernels of convert-triton-to-tcpu/dot.py). Returns a 64-byte
 * aligned buffer of at least `bytes` whose first `tag_bytes` are zero at the calling
 * thread's first call in each launch, and at every call of a thread with no launch bound
 * (nothing is then shared between calls): a kernel marks what it packed there with tags
 * and finds it again in the later programs of the launch. Its other contents persist
 * between calls while the size asked for does not grow. Allocation failure: as
 * tcpu_scratch's. */
void *tcpu_panel_cache(size_t tag_bytes, size_t bytes);

/* Frees the calling thread's scratch arena and panel cache (a thread about to end). */
void tcpu_thread_release(void);

/* Streaming (non-temporal) stores: a launch whose full-vector stores write more than this
 * many bytes in all (counted by the kernel from its grid and its loops' trip counts)
 * bypasses the caches for the aligned ones, saving the read of each line it overwrites.
 * Set by the launcher to a quarter of the L3 (TRITON_CPU_STREAMING_STORES=0 or no L3 known:
 * INT64_MAX, never). Programs end with an sfence (launcher.c), so the stores are visible
 * when the launch returns. */
extern int64_t tcpu_streaming_bytes;

#ifdef __cplusplus
}
#endif
#endif
