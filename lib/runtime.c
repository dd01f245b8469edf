/* libTritonCPURuntime: helpers that generated kernels and the launcher share. */
#define _GNU_SOURCE
#include "triton_cpu/runtime.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- Per-launch state: device asserts and bounds violations ---------------------------- */

static tcpu_launch_t fallback_launch; /* kernels run with no launch bound */
static _Thread_local tcpu_launch_t *bound_launch;

static tcpu_launch_t *current_launch(void) {
  return bound_launch ? bound_launch : &fallback_launch;
}

static _Atomic int64_t launches;

void tcpu_launch_init(tcpu_launch_t *l) {
  /* Not the whole struct: the message buffers are written only on a failure, and this
   * runs on every launch. */
  l->error_text[0] = 0;
  l->ranges = NULL;
  l->nranges = 0;
  memset(&l->first, 0, sizeof l->first);
  atomic_init(&l->error_state, 0);
  atomic_init(&l->violations, 0);
  atomic_init(&l->violation_state, 0);
  l->id = atomic_fetch_add_explicit(&launches, 1, memory_order_relaxed) + 1;
}

void tcpu_launch_bind(tcpu_launch_t *l) { bound_launch = l; }

void tcpu_launch_fail(tcpu_launch_t *l, const char *text) {
  int32_t expected = 0;
  /* First failure wins; later ones (other programs, other threads) are dropped. */
  if (!atomic_compare_exchange_strong(&l->error_state, &expected, 2))
    return;
  snprintf(l->error_text, sizeof l->error_text, "%s", text);
  atomic_store(&l->error_state, 1);
}

void tcpu_assert_fail(const char *msg, const char *file, int32_t line, const char *func,
                      int32_t px, int32_t py, int32_t pz) {
  tcpu_launch_t *l = current_launch();
  if (atomic_load(&l->error_state) != 0)
    return; /* an earlier failure is kept */
  char text[sizeof l->error_text];
  snprintf(text, sizeof text,
           "device-side assert triggered: %s:%d: %s: block: [%d, %d, %d] Assertion `%s` failed.",
           file ? file : "<unknown>", (int)line, func ? func : "<unknown>", (int)px, (int)py,
           (int)pz, msg ? msg : "");
  tcpu_launch_fail(l, text);
}

int tcpu_launch_error_pending(const tcpu_launch_t *l) {
  return atomic_load((TCPU_ATOMIC(int32_t) *)&l->error_state) != 0;
}

size_t tcpu_launch_error_message(tcpu_launch_t *l, char *buf, size_t size) {
  while (atomic_load(&l->error_state) == 2) /* writer still formatting */
    ;
  size_t n = strlen(l->error_text);
  if (buf && size) {
    size_t m = n < size - 1 ? n : size - 1;
    memcpy(buf, l->error_text, m);
    buf[m] = 0;
  }
  return n;
}

int tcpu_error_pending(void) { return tcpu_launch_error_pending(current_launch()); }

size_t tcpu_error_message(char *buf, size_t size) {
  return tcpu_launch_error_message(current_launch(), buf, size);
}

void tcpu_error_clear(void) {
  tcpu_launch_t *l = current_launch();
  l->error_text[0] = 0;
  atomic_store(&l->error_state, 0);
}

/* Entries {0, UINTPTR_MAX}: nothing is out of bounds. Kernels index the table with their
 * argument numbers, so it must be at least as long as the longest argument list the code
 * generator checks (TCPU_MAX_CHECKED_ARGS in codegen). */
enum { PERMISSIVE_ENTRIES = 1024 };
static tcpu_range_t permissive[PERMISSIVE_ENTRIES];
static pthread_once_t permissive_once = PTHREAD_ONCE_INIT;

static void fill_permissive(void) {
  for (int i = 0; i < PERMISSIVE_ENTRIES; ++i)
    permissive[i].hi = UINTPTR_MAX;
}

const tcpu_range_t *tcpu_bounds_ranges(int32_t nargs) {
  tcpu_launch_t *l = current_launch();
  if (l->ranges && nargs <= l->nranges)
    return l->ranges;
  pthread_once(&permissive_once, fill_permissive);
  return permissive;
}

void tcpu_bounds_fail(int32_t kind, int32_t arg, uintptr_t addr, int32_t elem_bytes,
                      int64_t lanes, const char *file, int32_t line, int32_t px, int32_t py,
                      int32_t pz) {
  tcpu_launch_t *l = current_launch();
  atomic_fetch_add(&l->violations, lanes);
  int32_t expected = 0;
  if (!atomic_compare_exchange_strong(&l->violation_state, &expected, 2))
    return;
  l->first = (tcpu_violation_t){kind, arg, addr, elem_bytes, file, line, px, py, pz};
  atomic_store(&l->violation_state, 1);
}

/* ---- tt.atomic_poll ----------------------------------------------------------------- */

int64_t tcpu_clock_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t poll_load(const void *p, int32_t bytes) {
  switch (bytes) {
  case 2: return atomic_load_explicit((const _Atomic int16_t *)p, memory_order_relaxed);
  case 4: return atomic_load_explicit((const _Atomic int32_t *)p, memory_order_relaxed);
  default: return atomic_load_explicit((const _Atomic int64_t *)p, memory_order_relaxed);
  }
}

int32_t tcpu_atomic_poll(const void *p, int32_t bytes, int64_t expected, int64_t deadline_ns,
                         int32_t acquire) {
  for (;;) {
    if (poll_load(p, bytes) == expected) {
      if (acquire)
        atomic_thread_fence(memory_order_acquire);
      return 1;
    }
    if (deadline_ns >= 0 && tcpu_clock_ns() >= deadline_ns)
      return 0;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
}

/* ---- tt.print ---------------------------------------------------------------------- */

/* Width of index d: ceil(log10(extent)), computed without floating point. */
static int index_width(int32_t extent) {
  int w = 0;
  for (int64_t p = 1; p < extent; p *= 10)
    ++w;
  return w;
}

static double half_to_double(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, u;
  if (exp == 0) {
    double v = (double)man * 0x1p-24; /* zero or subnormal: exact */
    return sign ? -v : v;
  }
  if (exp == 31)
    u = sign | 0x7f800000u | (man << 13); /* inf / nan (payload kept) */
  else
    u = sign | ((exp + 112) << 23) | (man << 13);
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static double float_value(int32_t type, int32_t bits, uint64_t value) {
  if (type == TCPU_PRINT_BF16) {
    uint32_t u = (uint32_t)(value & 0xffff) << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  if (bits == 16)
    return half_to_double((uint16_t)value);
  if (bits == 32) {
    uint32_t u = (uint32_t)value;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  double d;
  memcpy(&d, &value, 8);
  return d;
}

/* Appends the formatted value the way PrintOpToLLVM's format substring and the NVIDIA
 * printf promotion (ints < 32 bits to i32 by sext/zext, floats to f64) print it. */
static int format_value(char *out, size_t size, int32_t type, int32_t bits, int32_t hex,
                        uint64_t value) {
  if (type == TCPU_PRINT_PTR)
    return snprintf(out, size, "%p", (void *)(uintptr_t)value);
  if (type == TCPU_PRINT_BF16 ||
      (type == TCPU_PRINT_FLOAT && (bits == 16 || bits == 32 || bits == 64))) {
    double d = float_value(type, bits, value);
    return snprintf(out, size, hex ? "%a" : "%f", d);
  }
  if ((type != TCPU_PRINT_UINT && type != TCPU_PRINT_SINT) || bits < 1 || bits > 64)
    return snprintf(out, size, "<tcpu_print: unsupported type %d/%d>", (int)type, (int)bits);
  int is_signed = type == TCPU_PRINT_SINT;
  uint64_t v = value;
  if (bits < 64) {
    uint64_t mask = ((uint64_t)1 << bits) - 1;
    v &= mask;
    if (is_signed && (v >> (bits - 1)) & 1)
      v |= ~mask; /* sign-extend to 64 */
  }
  if (hex) {
    /* "0x%0<bits/4>x", or with ll above 32 bits; ignoring the index width. */
    int digits = bits / 4;
    if (bits > 32)
      return snprintf(out, size, "0x%0*llx", digits, (unsigned long long)v);
    return snprintf(out, size, "0x%0*x", digits, (unsigned)(uint32_t)v);
  }
  if (bits > 32)
    return is_signed ? snprintf(out, size, "%lli", (long long)v)
                     : snprintf(out, size, "%llu", (unsigned long long)v);
  return is_signed ? snprintf(out, size, "%i", (int)(int32_t)(uint32_t)v)
                   : snprintf(out, size, "%u", (unsigned)(uint32_t)v);
}

/* PrintOpToLLVM passes at most 32 printf operands: 3 pids, the value, and so at most
 * 27 indices (it reserves 2); dimension 27 on prints "... (truncated)" instead. */
enum { MAX_PRINTED_RANK = 32 - 3 - 2 };

void tcpu_print(const char *prefix, int32_t pid_x, int32_t pid_y, int32_t pid_z, int32_t rank,
                const int32_t *idx, const int32_t *shape, int32_t operand, int32_t num_operands,
                int32_t type, int32_t bits, int32_t hex, uint64_t value) {
  if (!prefix)
    prefix = "";
  size_t prefix_len = strlen(prefix);
  /* Fixed part: pids 3*10, idx at most 28 entries of <= 12 chars, "(operand n) ", a value
   * (%f of a double is at most ~320 chars). */
  size_t cap = prefix_len + 1024;
  char stack_buf[2048];
  char *buf = cap <= sizeof stack_buf ? stack_buf : malloc(cap);
  if (!buf)
    return;
  size_t n = 0;
#define APPEND(...)                                                                          \
  do {                                                                                       \
    int k_ = snprintf(buf + n, cap - n, __VA_ARGS__);                                        \
    if (k_ > 0)                                                                              \
      n += (size_t)k_ < cap - n ? (size_t)k_ : cap - n - 1;                                  \
  } while (0)
  /* pids are i32 formatted "%u" (getFormatSubstr of a signless int). */
  APPEND("pid (%u, %u, %u)", (unsigned)pid_x, (unsigned)pid_y, (unsigned)pid_z);
  if (num_operands > 0) {
    APPEND(" idx (");
    for (int32_t d = 0; d < rank; ++d) {
      if (d != 0)
        APPEND(", ");
      if (d == MAX_PRINTED_RANK) {
        APPEND("... (truncated)");
        break;
      }
      int w = shape ? index_width(shape[d]) : 0;
      APPEND("%*u", w, (unsigned)(idx ? idx[d] : 0));
    }
    APPEND(")");
  }
  if (prefix_len < cap - n) {
    memcpy(buf + n, prefix, prefix_len);
    n += prefix_len;
    buf[n] = 0;
  }
  if (num_operands > 0) {
    if (num_operands > 1)
      APPEND("(operand %d) ", (int)operand);
    int k = format_value(buf + n, cap - n, type, bits, hex, value);
    if (k > 0)
      n += (size_t)k < cap - n ? (size_t)k : cap - n - 1;
  }
#undef APPEND
  buf[n++] = '\n';
  /* One locked write per line, then flush: lines of concurrent programs stay whole, and
   * everything is on fd 1 before the launch returns to Python (stdout is a pipe or file
   * when captured, i.e. fully buffered). */
  flockfile(stdout);
  fwrite_unlocked(buf, 1, n, stdout);
  fflush_unlocked(stdout);
  funlockfile(stdout);
  if (buf != stack_buf)
    free(buf);
}

int64_t tcpu_streaming_bytes = INT64_MAX;

static _Thread_local void *scratch_buf;
static _Thread_local size_t scratch_size;

static void (*leave_program_hook)(void);

void tcpu_set_leave_program(void (*hook)(void)) { leave_program_hook = hook; }

/* A buffer a program needs could not be allocated: the launch fails with that reason, and
 * the program is left through the launcher's hook (it does not return then). Without a
 * launcher's guard the hook returns and so does NULL. */
static void *out_of_memory(const char *what, size_t bytes) {
  char text[256];
  snprintf(text, sizeof text,
           "out of memory: %zu bytes per thread for this kernel's %s could not be "
           "allocated; the launch was stopped",
           bytes, what);
  tcpu_launch_fail(current_launch(), text);
  if (leave_program_hook)
    leave_program_hook();
  return NULL;
}

void *tcpu_scratch(size_t bytes) {
  if (bytes <= scratch_size)
    return scratch_buf;
  free(scratch_buf);
  size_t size = (bytes + 63) & ~(size_t)63;
  scratch_buf = aligned_alloc(64, size);
  scratch_size = scratch_buf ? size : 0;
  if (!scratch_buf)
    return out_of_memory("scratch arena (intermediate tensors too large for the stack)", size);
  return scratch_buf;
}

static _Thread_local void *panel_buf;
static _Thread_local size_t panel_size;
static _Thread_local int64_t panel_launch; /* the launch whose tags panel_buf holds, 0 none */

void *tcpu_panel_cache(size_t tag_bytes, size_t bytes) {
  if (bytes > panel_size) {
    free(panel_buf);
    size_t size = (bytes + 63) & ~(size_t)63;
    panel_buf = aligned_alloc(64, size);
    panel_size = panel_buf ? size : 0;
    panel_launch = 0;
    if (!panel_buf)
      return out_of_memory("cache of packed dot operands", size);
  }
  int64_t id = bound_launch ? bound_launch->id : 0;
  if (id == 0 || id != panel_launch) {
    memset(panel_buf, 0, tag_bytes);
    panel_launch = id;
  }
  return panel_buf;
}

void tcpu_thread_release(void) {
  free(scratch_buf);
  scratch_buf = NULL;
  scratch_size = 0;
  free(panel_buf);
  panel_buf = NULL;
  panel_size = 0;
  panel_launch = 0;
}
