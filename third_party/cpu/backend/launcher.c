/* triton_cpu_launcher: the one generic launcher behind every compiled CPU kernel.
 *
 * It is built once (triton.runtime.build, cached in TRITON_CACHE_DIR) instead of once per
 * kernel signature: a kernel's argument list is described by a short byte string that
 * driver.py computes from the signature, and `Launcher` objects interpret it per call.
 *
 * Argument spec, one byte per entry (see ARG_* below and ARG_CODES in Python):
 *   ARG_CONSTEXPR            the Python argument is skipped (compiled into the kernel)
 *   ARG_TUPLE_BEGIN ... END  the Python argument is a tuple, walked recursively
 *   any other code           one flattened kernel argument of that type
 *
 * Each flattened argument is stored in its own 8-byte slot with the value's natural
 * size at the slot's start (little endian), and args[i] points at slot i; this is the
 * layout the kernel's entry `<name>` reads (include/triton_cpu/runtime.h).
 */
#define _GNU_SOURCE /* sched_getaffinity */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

enum {
  ARG_CONSTEXPR = 'c',
  ARG_TUPLE_BEGIN = '(',
  ARG_TUPLE_END = ')',
  ARG_PTR = 'p',
  ARG_BOOL = '?', /* i1 and u1: one byte holding 0 or 1 */
  ARG_I8 = 'b',
  ARG_I16 = 'h',
  ARG_I32 = 'i',
  ARG_I64 = 'l',
  ARG_U8 = 'B',
  ARG_U16 = 'H',
  ARG_U32 = 'I',
  ARG_U64 = 'L',
  ARG_FP16 = 'e',
  ARG_BF16 = 'w',
  ARG_FP32 = 'f',
  ARG_FP64 = 'd',
};

typedef union {
  void *p;
  uint8_t u8;
  uint16_t u16;
  uint32_t u32;
  uint64_t u64;
  float f32;
  double f64;
} slot_t;

/* Launches with at most this many flattened arguments need no heap allocation. */
#define INLINE_SLOTS 64

static PyObject *str_data_ptr;
static PyObject *str_calls;
static PyObject *str_untyped_storage, *str_nbytes, *str_dtype, *str_numel, *str_element_size;
/* triton.knobs.HookChain, registered from Python: an empty chain is skipped without a
 * Python call, which matters because the stock runtime passes the (usually empty)
 * chains on every launch. */
static PyTypeObject *hook_chain_type;

/* ------------------------------------------------------------------------------------ */
/* Argument conversion                                                                   */

typedef struct {
  PyObject *names;     /* str per flattened kernel argument, for error messages */
  PyObject *top_names; /* str per Python argument */
  const char *kernel;
  PyObject **objs;     /* bounds-checked launches: the Python object of each flattened
                          argument (borrowed), else NULL */
} arg_ctx;

static const char *name_at(PyObject *names, Py_ssize_t i) {
  if (names && i >= 0 && i < PyTuple_GET_SIZE(names)) {
    const char *s = PyUnicode_AsUTF8(PyTuple_GET_ITEM(names, i));
    if (s)
      return s;
    PyErr_Clear();
  }
  return "?";
}

static const char *arg_name(const arg_ctx *ctx, Py_ssize_t i) { return name_at(ctx->names, i); }

static int convert_pointer(const arg_ctx *ctx, Py_ssize_t i, PyObject *obj, slot_t *slot) {
  if (obj == Py_None) {
    slot->p = NULL;
    return 0;
  }
  if (PyLong_Check(obj)) {
    slot->p = PyLong_AsVoidPtr(obj);
    return slot->p == NULL && PyErr_Occurred() ? -1 : 0;
  }
  PyObject *callargs[1] = {obj};
  PyObject *ret = PyObject_VectorcallMethod(str_data_ptr, callargs, 1, NULL);
  if (!ret) {
    if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError,
                   "kernel '%s', argument '%s': a pointer argument must be a tensor (an "
                   "object with data_ptr()), an int address or None, not %.200s",
                   ctx->kernel, arg_name(ctx, i), Py_TYPE(obj)->tp_name);
    }
    return -1;
  }
  if (!PyLong_Check(ret)) {
    PyErr_Format(PyExc_TypeError,
                 "kernel '%s', argument '%s': data_ptr() of %.200s returned %.200s, not an int",
                 ctx->kernel, arg_name(ctx, i), Py_TYPE(obj)->tp_name, Py_TYPE(ret)->tp_name);
    Py_DECREF(ret);
    return -1;
  }
  slot->p = PyLong_AsVoidPtr(ret);
  Py_DECREF(ret);
  return slot->p == NULL && PyErr_Occurred() ? -1 : 0;
}

/* Reads a Python integer for an N-bit kernel integer. Signed and unsigned parameters
 * both accept [-2^(N-1), 2^N - 1] and keep the low N bits, so a bit pattern can be
 * passed either way; a wider value is an OverflowError rather than silently truncated. */
static int convert_int(const arg_ctx *ctx, Py_ssize_t i, PyObject *obj, int bits,
                       uint64_t *out) {
  PyObject *num = obj;
  if (!PyLong_Check(obj)) {
    num = PyNumber_Index(obj);
    if (!num) {
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError, "kernel '%s', argument '%s': expected an int, not %.200s",
                   ctx->kernel, arg_name(ctx, i), Py_TYPE(obj)->tp_name);
      return -1;
    }
  }
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(num, &overflow);
  int ok = 1;
  uint64_t u = 0;
  if (v == -1 && PyErr_Occurred()) {
    ok = 0;
  } else if (overflow > 0) {
    /* Above INT64_MAX: only a u64 bit pattern fits. */
    u = PyLong_AsUnsignedLongLong(num);
    if (u == (uint64_t)-1 && PyErr_Occurred()) {
      PyErr_Clear();
      ok = 0;
    } else {
      ok = bits == 64;
    }
  } else if (overflow < 0) {
    ok = 0;
  } else {
    u = (uint64_t)v;
    if (bits < 64) {
      long long lo = -(1LL << (bits - 1)), hi = (long long)((1ULL << bits) - 1);
      ok = v >= lo && v <= hi;
    }
  }
  if (num != obj)
    Py_DECREF(num);
  if (!ok) {
    if (!PyErr_Occurred())
      PyErr_Format(PyExc_OverflowError,
                   "kernel '%s', argument '%s': value %R does not fit in %d bits", ctx->kernel,
                   arg_name(ctx, i), obj, bits);
    return -1;
  }
  *out = u;
  return 0;
}

static int convert_double(const arg_ctx *ctx, Py_ssize_t i, PyObject *obj, double *out) {
  if (PyFloat_CheckExact(obj)) {
    *out = PyFloat_AS_DOUBLE(obj);
    return 0;
  }
  double d = PyFloat_AsDouble(obj);
  if (d == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "kernel '%s', argument '%s': expected a float, not %.200s",
                 ctx->kernel, arg_name(ctx, i), Py_TYPE(obj)->tp_name);
    return -1;
  }
  *out = d;
  return 0;
}

static uint16_t double_to_fp16(double d) {
  uint16_t h;
  if (PyFloat_Pack2(d, (char *)&h, 1) == 0)
    return h;
  /* Out of range: a cast saturates to infinity rather than failing the launch. */
  PyErr_Clear();
  return signbit(d) ? 0xFC00 : 0x7C00;
}

/* Rounds to nearest even in one step: narrowing to fp32 with round-to-odd first keeps
 * the second rounding (fp32 -> bf16) from double-rounding. */
static uint16_t double_to_bf16(double d) {
  if (isnan(d))
    return signbit(d) ? 0xFFC0 : 0x7FC0;
  float f = (float)d;
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  if ((double)f != d && isfinite(f)) {
    if (fabs((double)f) > fabs(d))
      bits -= 1; /* rounded away from zero: step back towards it (truncation) */
    bits |= 1;   /* sticky bit: inexact */
  } else if (isinf(f) && isfinite(d)) {
    bits = (bits & 0x80000000u) | 0x7F7FFFFFu; /* truncate to FLT_MAX, inexact (odd) */
  }
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return (uint16_t)(bits >> 16);
}

static int convert_scalar(const arg_ctx *ctx, Py_ssize_t i, char code, PyObject *obj,
                          slot_t *slot) {
  uint64_t u;
  double d;
  slot->u64 = 0;
  switch (code) {
  case ARG_PTR:
    if (ctx->objs)
      ctx->objs[i] = obj;
    return convert_pointer(ctx, i, obj, slot);
  case ARG_BOOL: {
    int t = PyObject_IsTrue(obj);
    if (t < 0)
      return -1;
    slot->u8 = (uint8_t)t;
    return 0;
  }
  case ARG_I8:
  case ARG_U8:
    if (convert_int(ctx, i, obj, 8, &u))
      return -1;
    slot->u8 = (uint8_t)u;
    return 0;
  case ARG_I16:
  case ARG_U16:
    if (convert_int(ctx, i, obj, 16, &u))
      return -1;
    slot->u16 = (uint16_t)u;
    return 0;
  case ARG_I32:
  case ARG_U32:
    if (convert_int(ctx, i, obj, 32, &u))
      return -1;
    slot->u32 = (uint32_t)u;
    return 0;
  case ARG_I64:
  case ARG_U64:
    if (convert_int(ctx, i, obj, 64, &u))
      return -1;
    slot->u64 = u;
    return 0;
  case ARG_FP16:
    if (convert_double(ctx, i, obj, &d))
      return -1;
    slot->u16 = double_to_fp16(d);
    return 0;
  case ARG_BF16:
    if (convert_double(ctx, i, obj, &d))
      return -1;
    slot->u16 = double_to_bf16(d);
    return 0;
  case ARG_FP32:
    if (convert_double(ctx, i, obj, &d))
      return -1;
    slot->f32 = (float)d;
    return 0;
  case ARG_FP64:
    if (convert_double(ctx, i, obj, &d))
      return -1;
    slot->f64 = d;
    return 0;
  default:
    PyErr_Format(PyExc_SystemError, "corrupt argument spec (code %d)", (int)code);
    return -1;
  }
}

/* Walks the Python values of one level (the launch's arguments, or the elements of the
 * tuple that is Python argument `top`) against the spec from *pos up to the level's end,
 * filling slots from *k. */
static int convert_args(const arg_ctx *ctx, const char *spec, Py_ssize_t *pos,
                        PyObject *const *values, Py_ssize_t n, Py_ssize_t top, slot_t *slots,
                        Py_ssize_t *k) {
  Py_ssize_t j = 0;
  for (;; ++j) {
    char code = spec[*pos];
    if (code == ARG_TUPLE_END || code == '\0') {
      if (j != n) {
        PyErr_Format(PyExc_ValueError,
                     "kernel '%s', argument '%s': a tuple of %zd elements where the signature "
                     "has %zd", ctx->kernel, name_at(ctx->top_names, top), n, j);
        return -1;
      }
      if (code == ARG_TUPLE_END)
        ++*pos;
      return 0;
    }
    if (j >= n) {
      if (top < 0) /* omitted trailing constexprs: the caller checked n >= nrequired */
        return 0;
      Py_ssize_t want = j, depth = 0;
      for (Py_ssize_t p = *pos; spec[p] && !(depth == 0 && spec[p] == ARG_TUPLE_END); ++p) {
        if (depth == 0)
          ++want;
        depth += spec[p] == ARG_TUPLE_BEGIN ? 1 : spec[p] == ARG_TUPLE_END ? -1 : 0;
      }
      PyErr_Format(PyExc_ValueError,
                   "kernel '%s', argument '%s': a tuple of %zd elements where the signature "
                   "has %zd", ctx->kernel, name_at(ctx->top_names, top), n, want);
      return -1;
    }
    PyObject *v = values[j];
    ++*pos;
    if (code == ARG_CONSTEXPR)
      continue;
    if (code == ARG_TUPLE_BEGIN) {
      if (!PyTuple_Check(v)) {
        PyErr_Format(PyExc_TypeError,
                     "kernel '%s', argument '%s': expected a tuple%s, not %.200s", ctx->kernel,
                     name_at(ctx->top_names, top < 0 ? j : top), top < 0 ? "" : " element",
                     Py_TYPE(v)->tp_name);
        return -1;
      }
      if (convert_args(ctx, spec, pos, &PyTuple_GET_ITEM(v, 0), PyTuple_GET_SIZE(v),
                       top < 0 ? j : top, slots, k))
        return -1;
      continue;
    }
    if (convert_scalar(ctx, *k, code, v, &slots[*k]))
      return -1;
    ++*k;
  }
}

/* ------------------------------------------------------------------------------------ */
/* Grid execution                                                                        */

typedef struct {
  tcpu_kernel_entry fn;
  void **args;
  int32_t gx, gy, gz;
  int64_t total;
  tcpu_launch_t *launch; /* what the programs report into (asserts, bounds violations) */
  _Atomic int *stop;     /* set when a program faulted: the threads run no more programs */
} grid_t;

/* ---- Faults inside a kernel ------------------------------------------------------------
 *
 * A kernel that reads or writes memory that is not mapped (an index out of bounds, a wild
 * pointer) gets SIGSEGV or SIGBUS, whose default action ends the Python process; a GPU
 * reports such a launch as an illegal memory access instead. While a thread runs
 * programs, its fault_guard_t is armed with a jump buffer: the handler jumps back into
 * run_range, which records the failure into the launch (raised as RuntimeError, like a
 * device assert) and stops the launch (this thread runs no more programs, the others none
 * after their current batch). A fault anywhere else goes to the handler installed before
 * this module's (Python's faulthandler, or the default action, which ends the process).
 * The handler runs on an alternate signal stack set up per thread (where the kernel also
 * saves the AMX tile state; a fault from overflowing the thread's own stack could not run
 * on that stack). What the kernel wrote before the fault stays written: the message says
 * so. Not undone either: a lock a faulting kernel held (tt.atomic_cas spin locks) stays
 * held. The runtime leaves a program the same way, through leave_program, when a buffer
 * the program needs cannot be allocated (runtime.h, tcpu_scratch). */
typedef struct {
  sigjmp_buf jump;
  volatile sig_atomic_t armed;
  volatile int sig;
  void *volatile addr;
  int32_t px, py, pz; /* the program running, written before each program */
  int altstack;       /* this thread's alternate signal stack is set up */
  void *altstack_mem; /* ... by ensure_altstack, which allocated it */
} fault_guard_t;

static _Thread_local fault_guard_t fault_guard;
static struct sigaction previous_segv, previous_bus;

static void on_fault(int sig, siginfo_t *info, void *context) {
  fault_guard_t *fg = &fault_guard;
  if (fg->armed) {
    fg->armed = 0;
    fg->sig = sig;
    fg->addr = info ? info->si_addr : NULL;
    /* The buffer was saved without the signal mask: SA_NODEFER left this signal
     * unblocked, so nothing needs restoring. */
    siglongjmp(fg->jump, 1);
  }
  const struct sigaction *prev = sig == SIGBUS ? &previous_bus : &previous_segv;
  if (prev->sa_flags & SA_SIGINFO) {
    prev->sa_sigaction(sig, info, context);
  } else if (prev->sa_handler == SIG_DFL || prev->sa_handler == SIG_IGN) {
    /* Back to it; the faulting instruction runs again and takes the default action. */
    sigaction(sig, prev, NULL);
  } else {
    prev->sa_handler(sig);
  }
}

static void install_fault_handler(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &previous_segv);
  sigaction(SIGBUS, &sa, &previous_bus);
}

/* An alternate signal stack for the calling thread, once, unless it has one as large
 * already (Python's faulthandler gives the main thread one, sized before this process was
 * granted the AMX tile state, whose 8 KiB the kernel also saves on it). Kept for the
 * thread's life. */
static void ensure_altstack(fault_guard_t *fg) {
  if (fg->altstack)
    return;
  fg->altstack = 1;
  size_t size = SIGSTKSZ > 65536 ? SIGSTKSZ : 65536;
  stack_t current;
  if (sigaltstack(NULL, &current) == 0 && !(current.ss_flags & SS_DISABLE) && current.ss_size >= size)
    return;
  void *stack = malloc(size);
  if (!stack)
    return;
  stack_t ss = {.ss_sp = stack, .ss_size = size, .ss_flags = 0};
  if (sigaltstack(&ss, NULL) != 0)
    free(stack);
  else
    fg->altstack_mem = stack;
}

/* Before a thread created for one launch ends (run_grid_pthreads): its stack back. */
static void release_altstack(void) {
  fault_guard_t *fg = &fault_guard;
  if (fg->altstack_mem) {
    stack_t off = {.ss_flags = SS_DISABLE};
    sigaltstack(&off, NULL);
    free(fg->altstack_mem);
    fg->altstack_mem = NULL;
  }
  fg->altstack = 0;
}

/* The runtime's tcpu_set_leave_program hook: back to run_range's sigsetjmp like a fault,
 * with no signal (sig 0): the runtime recorded why before calling it. */
static void leave_program(void) {
  fault_guard_t *fg = &fault_guard;
  if (!fg->armed)
    return;
  fg->armed = 0;
  fg->sig = 0;
  fg->addr = NULL;
  siglongjmp(fg->jump, 1);
}

static void record_fault(const grid_t *g, const fault_guard_t *fg) {
  if (fg->sig == 0) { /* left through leave_program: the reason is recorded already */
    atomic_store_explicit(g->stop, 1, memory_order_relaxed);
    return;
  }
  char text[sizeof g->launch->error_text];
  snprintf(text, sizeof text,
           "an illegal memory access was encountered: %s at address %p in program (%d, %d, %d); "
           "the launch was stopped, and what its programs stored before stays stored. "
           "TRITON_CPU_BOUNDS_CHECK=1 names the access and its source line",
           fg->sig == SIGBUS ? "SIGBUS" : "SIGSEGV", fg->addr, (int)fg->px, (int)fg->py,
           (int)fg->pz);
  tcpu_launch_fail(g->launch, text);
  atomic_store_explicit(g->stop, 1, memory_order_relaxed);
}

/* Programs [begin, end) in linear order, x fastest; the coordinates are stepped rather
 * than divided out per program because tiny programs are common. The caller has bound the
 * launch to this thread. A fault stops the range (see above). */
static void run_range(const grid_t *g, int64_t begin, int64_t end) {
  fault_guard_t *fg = &fault_guard;
  ensure_altstack(fg);
  if (sigsetjmp(fg->jump, 0)) {
    record_fault(g, fg);
    return;
  }
  int64_t plane = (int64_t)g->gx * g->gy;
  int32_t z = (int32_t)(begin / plane);
  int64_t r = begin % plane;
  int32_t y = (int32_t)(r / g->gx);
  int32_t x = (int32_t)(r % g->gx);
  fg->armed = 1;
  for (int64_t i = begin; i < end; ++i) {
    fg->px = x, fg->py = y, fg->pz = z;
    g->fn(g->args, x, y, z, g->gx, g->gy, g->gz);
    if (++x == g->gx) {
      x = 0;
      if (++y == g->gy) {
        y = 0;
        ++z;
      }
    }
  }
  fg->armed = 0;
}

/* What a thread does around the programs it runs. */
static void begin_programs(const grid_t *g) { tcpu_launch_bind(g->launch); }

static void end_programs(void) {
#if defined(__x86_64__) || defined(__i386__)
  /* Streaming stores (tcpu_streaming_bytes) are weakly ordered: drain them before the
   * launch is seen to be over. */
  __builtin_ia32_sfence();
#endif
  tcpu_launch_bind(NULL);
}

static void run_programs(const grid_t *g, int64_t begin, int64_t end) {
  begin_programs(g);
  run_range(g, begin, end);
  end_programs();
}

/* Program range of chunk `id` of `n`: contiguous, sizes differing by at most one, like
 * schedule(static). Neighbouring programs usually touch neighbouring data, so they share a
 * core's caches. */
static void chunk_bounds(int64_t total, int64_t n, int64_t id, int64_t *begin, int64_t *end) {
  int64_t q = total / n, rem = total % n;
  *begin = q * id + (id < rem ? id : rem);
  *end = *begin + q + (id < rem ? 1 : 0);
}

/* One thread's share of the grid, a contiguous range of programs claimed in batches from
 * its front: by its owner, then, once the owner's thread has finished its own share, by
 * the others. Alone on its cache line: the owner's claims do not contend with the other
 * shares' owners. */
typedef struct {
  _Alignas(64) _Atomic int64_t next;
  int64_t end, batch;
} share_t;

/* The calling thread's part of a launch in `threads` shares: its own share first, then the
 * programs left in the others' (the next share first). Static shares alone leave a core
 * idle while the other finishes when one runs slower (another process on it, a virtual
 * machine's stolen time, programs of unequal cost); a thread that finishes early takes
 * the other shares' remaining programs instead. Each claim is an atomic add on the
 * share's counter: a batch of about 1/64 of the share, so that tiny programs do not pay
 * one atomic each, and a program is run exactly once whoever claims it. The owner still
 * runs its programs in increasing order, neighbours after neighbours (the ordering
 * prefetch-next-program relies on). */
static void run_shares(const grid_t *g, share_t *shares, int threads, int me, int stealing) {
  begin_programs(g);
  for (int k = 0; k < (stealing ? threads : 1); ++k) {
    share_t *sh = &shares[(me + k) % threads];
    for (;;) {
      if (atomic_load_explicit(g->stop, memory_order_relaxed))
        break;
      int64_t i = atomic_fetch_add_explicit(&sh->next, sh->batch, memory_order_relaxed);
      if (i >= sh->end)
        break;
      run_range(g, i, i + sh->batch < sh->end ? i + sh->batch : sh->end);
    }
  }
  end_programs();
}

static void init_shares(const grid_t *g, share_t *shares, int threads) {
  for (int i = 0; i < threads; ++i) {
    int64_t begin, end;
    chunk_bounds(g->total, threads, i, &begin, &end);
    atomic_init(&shares[i].next, begin);
    shares[i].end = end;
    shares[i].batch = (end - begin) / 64 > 1 ? (end - begin) / 64 : 1;
  }
}

/* TRITON_CPU_WORK_STEALING=0: each thread runs its own share only (read at each launch). */
static int work_stealing(void) {
  const char *env = getenv("TRITON_CPU_WORK_STEALING");
  return !(env && strcmp(env, "0") == 0);
}

/* libgomp does not survive fork(): in the child, the pool's bookkeeping still lists the
 * parent's worker threads and the next parallel region waits for them forever. The pool
 * may have been started by anyone sharing libgomp.so.1 (torch loads one too), so after a
 * fork this process stops using OpenMP altogether. */
static volatile int forked_child;

static void note_fork_child(void) { forked_child = 1; }

typedef struct {
  const grid_t *grid;
  share_t *shares;
  int threads, me, stealing;
  pthread_t thread;
  int started;
} worker_t;

static void *run_worker(void *p) {
  worker_t *w = p;
  run_shares(w->grid, w->shares, w->threads, w->me, w->stealing);
  return NULL;
}

static void *run_worker_thread(void *p) {
  run_worker(p);
  release_altstack();
  tcpu_thread_release();
  return NULL;
}

/* Plain threads, created for this launch only. */
static void run_grid_pthreads(const grid_t *g, share_t *shares, int threads, int stealing) {
  worker_t *workers = malloc((size_t)threads * sizeof *workers);
  if (!workers) {
    run_programs(g, 0, g->total);
    return;
  }
  for (int i = 0; i < threads; ++i)
    workers[i] = (worker_t){g, shares, threads, i, stealing, 0, 0};
  for (int i = 1; i < threads; ++i)
    workers[i].started = pthread_create(&workers[i].thread, NULL, run_worker_thread, &workers[i]) == 0;
  run_worker(&workers[0]);
  for (int i = 1; i < threads; ++i) {
    if (workers[i].started)
      pthread_join(workers[i].thread, NULL);
    else
      run_worker(&workers[i]); /* out of threads: run its share here */
  }
  free(workers);
}

static void run_grid(const grid_t *g, int threads) {
  if (threads <= 1) {
    run_programs(g, 0, g->total);
    return;
  }
  share_t local[16], *shares = threads <= 16 ? local : aligned_alloc(64, (size_t)threads * sizeof *shares);
  if (!shares) {
    run_programs(g, 0, g->total);
    return;
  }
  init_shares(g, shares, threads);
  int stealing = work_stealing();
#ifdef _OPENMP
  if (!forked_child) {
    /* A team smaller than asked for (nested parallelism, thread limits) leaves the
     * missing threads' shares to the others: taken as they finish their own, even with
     * work stealing off. */
#pragma omp parallel num_threads(threads)
    run_shares(g, shares, threads, omp_get_thread_num(), stealing || omp_get_num_threads() < threads);
  } else
#endif
    run_grid_pthreads(g, shares, threads, stealing);
  if (shares != local)
    free(shares);
}

/* Per-launch option, else TRITON_CPU_NUM_THREADS (read on every launch so that changing
 * os.environ takes effect at once), else OpenMP's default (OMP_NUM_THREADS or the CPUs
 * this process may run on). */
static int resolve_threads(PyObject *packed_metadata, int *threads) {
  PyObject *opt = NULL;
  if (PyTuple_Check(packed_metadata) && PyTuple_GET_SIZE(packed_metadata) > 0)
    opt = PyTuple_GET_ITEM(packed_metadata, 0);
  else if (PyLong_Check(packed_metadata))
    opt = packed_metadata;
  if (opt && PyLong_Check(opt)) {
    long t = PyLong_AsLong(opt);
    if (t == -1 && PyErr_Occurred())
      return -1;
    if (t > 0) {
      *threads = t > INT_MAX ? INT_MAX : (int)t;
      return 0;
    }
  }
  const char *env = getenv("TRITON_CPU_NUM_THREADS");
  if (env && *env) {
    char *end;
    long t = strtol(env, &end, 10);
    if (*end != '\0' || t < 0) {
      PyErr_Format(PyExc_ValueError,
                   "TRITON_CPU_NUM_THREADS must be a non-negative integer, got '%s'", env);
      return -1;
    }
    if (t > 0) {
      *threads = t > INT_MAX ? INT_MAX : (int)t;
      return 0;
    }
  }
#ifdef _OPENMP
  *threads = omp_get_max_threads();
#else
  /* OpenMP's rule without OpenMP: OMP_NUM_THREADS, else the CPUs we may run on. */
  env = getenv("OMP_NUM_THREADS");
  long t = env ? strtol(env, NULL, 10) : 0;
  if (t <= 0) {
    cpu_set_t set;
    t = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  }
  *threads = t > INT_MAX ? INT_MAX : (int)t;
#endif
  return 0;
}

static int grid_dim(PyObject *obj, const char *axis, int32_t *out) {
  long v = PyLong_AsLong(obj);
  if (v == -1 && PyErr_Occurred()) {
    if (PyErr_ExceptionMatches(PyExc_TypeError)) {
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError, "grid dimension %s must be an int, not %.200s", axis,
                   Py_TYPE(obj)->tp_name);
    }
    return -1;
  }
  if (v < 0 || v > INT32_MAX) {
    PyErr_Format(PyExc_ValueError, "grid dimension %s = %ld is outside [0, 2**31 - 1]", axis, v);
    return -1;
  }
  *out = (int32_t)v;
  return 0;
}

/* Calls a launch hook unless it is None or an empty HookChain. */
static int call_hook(PyObject *hook, PyObject *launch_metadata) {
  if (hook == Py_None)
    return 0;
  if (hook_chain_type && Py_IS_TYPE(hook, hook_chain_type)) {
    PyObject *calls = PyObject_GetAttr(hook, str_calls);
    if (!calls)
      return -1;
    int empty = PyList_CheckExact(calls) && PyList_GET_SIZE(calls) == 0;
    Py_DECREF(calls);
    if (empty)
      return 0;
  }
  PyObject *ret = PyObject_CallOneArg(hook, launch_metadata);
  if (!ret)
    return -1;
  Py_DECREF(ret);
  return 0;
}

/* ------------------------------------------------------------------------------------ */
/* Bounds-checked launches (kernels compiled with bounds_check)                          */

static PyObject *call_method0(PyObject *obj, PyObject *name) {
  /* No PY_VECTORCALL_ARGUMENTS_OFFSET: callargs[-1] is not ours to lend. */
  PyObject *callargs[1] = {obj};
  return PyObject_VectorcallMethod(name, callargs, 1, NULL);
}

/* An int result of obj.name(), or -1 with no Python error set when there is none. */
static long long int_method(PyObject *obj, PyObject *name) {
  PyObject *r = call_method0(obj, name);
  if (!r) {
    PyErr_Clear();
    return -1;
  }
  long long v = PyLong_Check(r) ? PyLong_AsLongLong(r) : -1;
  Py_DECREF(r);
  if (v == -1 && PyErr_Occurred())
    PyErr_Clear();
  return v;
}

/* The storage behind a tensor argument: [data_ptr, data_ptr + nbytes) of
 * obj.untyped_storage(). 0 when obj has none (then its accesses are not checked). */
static int storage_range(PyObject *obj, tcpu_range_t *r) {
  PyObject *st = call_method0(obj, str_untyped_storage);
  if (!st) {
    PyErr_Clear();
    return 0;
  }
  long long base = int_method(st, str_data_ptr), n = int_method(st, str_nbytes);
  Py_DECREF(st);
  if (base < 0 || n < 0)
    return 0;
  r->lo = (uintptr_t)base;
  r->hi = (uintptr_t)base + (uintptr_t)n;
  return 1;
}

/* Fills ranges[i] for each flattened argument: tensors by their storage, None as an empty
 * range (every access through it is reported), anything else unchecked. */
static void fill_ranges(PyObject **objs, const char *spec, Py_ssize_t nflat,
                        tcpu_range_t *ranges) {
  Py_ssize_t k = 0;
  for (const char *c = spec; *c && k < nflat; ++c) {
    if (*c == ARG_CONSTEXPR || *c == ARG_TUPLE_BEGIN || *c == ARG_TUPLE_END)
      continue;
    tcpu_range_t *r = &ranges[k];
    r->lo = 0;
    r->hi = UINTPTR_MAX;
    if (*c == ARG_PTR && objs[k]) {
      PyObject *obj = objs[k];
      if (obj == Py_None)
        r->hi = 0;
      else if (!PyLong_Check(obj))
        storage_range(obj, r);
    }
    ++k;
  }
}

static const char *access_name(int32_t kind) {
  return kind == TCPU_ACCESS_STORE ? "store" : kind == TCPU_ACCESS_ATOMIC ? "atomic" : "load";
}

static const char *base_name(const char *path) {
  const char *slash = path ? strrchr(path, '/') : NULL;
  return slash ? slash + 1 : path ? path : "<unknown>";
}

/* "float32 tensor of 4096 elements" (and the size of its storage `r`, the launch's range
 * for it, when that differs), or the type. */
static PyObject *describe_argument(PyObject *obj, const tcpu_range_t *r) {
  if (obj == Py_None)
    return PyUnicode_FromString("None: a null pointer");
  PyObject *dtype = PyObject_GetAttr(obj, str_dtype);
  long long numel = int_method(obj, str_numel), esize = int_method(obj, str_element_size);
  if (!dtype || numel < 0) {
    PyErr_Clear();
    Py_XDECREF(dtype);
    return PyUnicode_FromFormat("%.200s", Py_TYPE(obj)->tp_name);
  }
  PyObject *dstr = PyObject_Str(dtype);
  Py_DECREF(dtype);
  if (!dstr)
    return NULL;
  const char *d = PyUnicode_AsUTF8(dstr);
  if (!d) {
    Py_DECREF(dstr);
    return NULL;
  }
  if (strncmp(d, "torch.", 6) == 0)
    d += 6;
  PyObject *out;
  if (esize > 0 && r->hi != UINTPTR_MAX && r->hi - r->lo != (uintptr_t)(numel * esize))
    out = PyUnicode_FromFormat("%s tensor of %lld elements, in a storage of %zu bytes", d, numel,
                               (size_t)(r->hi - r->lo));
  else
    out = PyUnicode_FromFormat("%s tensor of %lld element%s", d, numel, numel == 1 ? "" : "s");
  Py_DECREF(dstr);
  return out;
}

/* The RuntimeError text for a launch's bounds violations (see README, "Bounds checks"). */
static PyObject *violation_message(const tcpu_launch_t *l, const char *kernel, PyObject *names,
                                   PyObject **objs, const tcpu_range_t *ranges,
                                   Py_ssize_t nflat) {
  const tcpu_violation_t *v = &l->first;
  long long count = (long long)atomic_load((TCPU_ATOMIC(int64_t) *)&l->violations);
  PyObject *where = PyUnicode_FromFormat(
      "out-of-bounds %s in kernel '%s' at %s:%d, program (%d, %d, %d): ", access_name(v->kind),
      kernel, base_name(v->file), (int)v->line, (int)v->px, (int)v->py, (int)v->pz);
  if (!where)
    return NULL;
  PyObject *what;
  if (v->arg >= 0 && v->arg < nflat && objs[v->arg]) {
    PyObject *obj = objs[v->arg];
    const tcpu_range_t *r = &ranges[v->arg];
    PyObject *desc = describe_argument(obj, r);
    if (!desc) {
      Py_DECREF(where);
      return NULL;
    }
    long long data = obj == Py_None ? 0 : int_method(obj, str_data_ptr);
    long long delta = (long long)(v->addr - (uintptr_t)(data < 0 ? 0 : data));
    long long esize = v->elem_bytes > 0 ? v->elem_bytes : 1;
    long long offset = delta >= 0 ? delta / esize : -((-delta + esize - 1) / esize);
    char side[96];
    if (obj == Py_None)
      snprintf(side, sizeof side, "address %p", (void *)v->addr);
    else if (v->addr >= r->hi)
      snprintf(side, sizeof side, "%llu bytes past its end", (unsigned long long)(v->addr - r->hi));
    else if (v->addr < r->lo)
      snprintf(side, sizeof side, "%llu bytes before its start",
               (unsigned long long)(r->lo - v->addr));
    else
      snprintf(side, sizeof side, "the element straddles its end");
    what = PyUnicode_FromFormat("element offset %lld of argument '%s' (%U, %s)", offset,
                                name_at(names, v->arg), desc, side);
    Py_DECREF(desc);
  } else {
    what = PyUnicode_FromFormat("address %p (%d-byte %s)", (void *)v->addr, (int)v->elem_bytes,
                                access_name(v->kind));
  }
  if (!what) {
    Py_DECREF(where);
    return NULL;
  }
  PyObject *msg = count > 1
      ? PyUnicode_FromFormat("%U%U; first of %lld violations", where, what, count)
      : PyUnicode_FromFormat("%U%U; 1 violation", where, what);
  Py_DECREF(where);
  Py_DECREF(what);
  return msg;
}

/* ------------------------------------------------------------------------------------ */
/* The Launcher type                                                                     */

typedef struct {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  char *spec;       /* NUL-terminated argument spec */
  Py_ssize_t ntop;  /* Python arguments expected after the 9 fixed ones */
  Py_ssize_t nrequired; /* ... of which trailing constexprs may be left out (as Triton's own
                           launchers allow: FlagGems' kernel cache calls them that way) */
  Py_ssize_t nflat; /* kernel arguments after dropping constexprs and flattening */
  PyObject *names;  /* tuple of nflat str */
  PyObject *top_names; /* tuple of ntop str */
  char *kernel;        /* the kernel's name, for error messages */
} LauncherObject;

enum { FIXED_ARGS = 9 };

static PyObject *launcher_vectorcall(PyObject *self_obj, PyObject *const *argv, size_t nargsf,
                                     PyObject *kwnames) {
  LauncherObject *self = (LauncherObject *)self_obj;
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (kwnames && PyTuple_GET_SIZE(kwnames)) {
    PyErr_SetString(PyExc_TypeError, "launcher takes no keyword arguments");
    return NULL;
  }
  if (nargs < FIXED_ARGS) {
    PyErr_Format(PyExc_TypeError,
                 "launcher expects (gridX, gridY, gridZ, stream, function, packed_metadata, "
                 "launch_metadata, launch_enter_hook, launch_exit_hook, *args), got %zd "
                 "arguments",
                 nargs);
    return NULL;
  }
  PyObject *packed_metadata = argv[5], *launch_metadata = argv[6];
  PyObject *enter_hook = argv[7], *exit_hook = argv[8];

  arg_ctx ctx = {self->names, self->top_names, self->kernel, NULL};

  if (nargs - FIXED_ARGS > self->ntop || nargs - FIXED_ARGS < self->nrequired) {
    PyErr_Format(PyExc_ValueError,
                 "kernel '%s' was called with %zd arguments, its signature has %zd",
                 ctx.kernel, nargs - FIXED_ARGS, self->ntop);
    return NULL;
  }

  grid_t grid;
  if (grid_dim(argv[0], "x", &grid.gx) || grid_dim(argv[1], "y", &grid.gy) ||
      grid_dim(argv[2], "z", &grid.gz))
    return NULL;
  grid.total = (int64_t)grid.gx * grid.gy;
  if (grid.total && grid.gz > INT64_MAX / grid.total) {
    PyErr_SetString(PyExc_ValueError, "grid has more than 2**63 programs");
    return NULL;
  }
  grid.total *= grid.gz;

  if (!PyLong_Check(argv[4])) {
    PyErr_Format(PyExc_TypeError, "kernel '%s': function must be an int address, not %.200s",
                 ctx.kernel, Py_TYPE(argv[4])->tp_name);
    return NULL;
  }
  grid.fn = (tcpu_kernel_entry)PyLong_AsVoidPtr(argv[4]);
  if (!grid.fn) {
    if (!PyErr_Occurred())
      PyErr_Format(PyExc_ValueError, "kernel '%s': function address is NULL", ctx.kernel);
    return NULL;
  }

  int threads;
  if (resolve_threads(packed_metadata, &threads))
    return NULL;
  int bounds_check = 0;
  if (PyTuple_Check(packed_metadata) && PyTuple_GET_SIZE(packed_metadata) > 2) {
    bounds_check = PyObject_IsTrue(PyTuple_GET_ITEM(packed_metadata, 2));
    if (bounds_check < 0)
      return NULL;
  }

  slot_t inline_slots[INLINE_SLOTS];
  void *inline_ptrs[INLINE_SLOTS];
  PyObject *inline_objs[INLINE_SLOTS];
  tcpu_range_t inline_ranges[INLINE_SLOTS];
  slot_t *slots = inline_slots;
  void **ptrs = inline_ptrs;
  PyObject **objs = inline_objs;
  tcpu_range_t *ranges = inline_ranges;
  if (self->nflat > INLINE_SLOTS) {
    slots = PyMem_Malloc(self->nflat * sizeof(slot_t));
    ptrs = PyMem_Malloc(self->nflat * sizeof(void *));
    objs = PyMem_Malloc(self->nflat * sizeof(PyObject *));
    ranges = PyMem_Malloc(self->nflat * sizeof(tcpu_range_t));
    if (!slots || !ptrs || !objs || !ranges) {
      PyErr_NoMemory();
      goto fail;
    }
  }
  if (bounds_check) {
    memset(objs, 0, self->nflat * sizeof(PyObject *));
    ctx.objs = objs;
  }
  Py_ssize_t pos = 0, k = 0;
  if (convert_args(&ctx, self->spec, &pos, argv + FIXED_ARGS, nargs - FIXED_ARGS, -1, slots,
                   &k))
    goto fail;
  for (Py_ssize_t i = 0; i < k; ++i)
    ptrs[i] = &slots[i];
  grid.args = ptrs;

  /* Per launch, so that concurrent launches never see each other's failures. */
  tcpu_launch_t launch;
  tcpu_launch_init(&launch);
  grid.launch = &launch;
  _Atomic int stop = 0;
  grid.stop = &stop;
  if (bounds_check) {
    fill_ranges(objs, self->spec, k, ranges);
    launch.ranges = ranges;
    launch.nranges = (int32_t)k;
  }

  if (call_hook(enter_hook, launch_metadata))
    goto fail;

  if (grid.total > 0) {
    if (threads > grid.total)
      threads = (int)grid.total;
    /* Released even for one program on one thread: the launcher cannot tell a trivial
     * kernel from one that runs for seconds. */
    Py_BEGIN_ALLOW_THREADS;
    run_grid(&grid, threads);
    Py_END_ALLOW_THREADS;
  }

  PyObject *device_error = NULL;
  if (atomic_load(&launch.violation_state)) {
    device_error = violation_message(&launch, ctx.kernel, self->names, objs, ranges, k);
    if (!device_error)
      goto fail;
  }
  if (tcpu_launch_error_pending(&launch)) {
    char msg[1280];
    tcpu_launch_error_message(&launch, msg, sizeof msg);
    PyObject *text = device_error
        ? PyUnicode_FromFormat("%U; then %s", device_error, msg)
        : PyUnicode_FromFormat("%s (kernel '%s')", msg, ctx.kernel);
    Py_XDECREF(device_error);
    device_error = text;
    if (!device_error)
      goto fail;
  }
  if (call_hook(exit_hook, launch_metadata)) {
    if (device_error) {
      /* Raise the assert, with the hook's failure as its context. */
      PyObject *type, *value, *tb;
      PyErr_Fetch(&type, &value, &tb);
      PyErr_NormalizeException(&type, &value, &tb);
      PyErr_SetObject(PyExc_RuntimeError, device_error);
      PyObject *t2, *v2, *tb2;
      PyErr_Fetch(&t2, &v2, &tb2);
      PyErr_NormalizeException(&t2, &v2, &tb2);
      if (tb)
        PyException_SetTraceback(value, tb);
      PyException_SetContext(v2, value); /* steals value */
      Py_XDECREF(type);
      Py_XDECREF(tb);
      PyErr_Restore(t2, v2, tb2);
      Py_DECREF(device_error);
    }
    goto fail;
  }
  if (device_error) {
    PyErr_SetObject(PyExc_RuntimeError, device_error);
    Py_DECREF(device_error);
    goto fail;
  }

  if (slots != inline_slots) {
    PyMem_Free(slots);
    PyMem_Free(ptrs);
    PyMem_Free(objs);
    PyMem_Free(ranges);
  }
  Py_RETURN_NONE;

fail:
  if (slots != inline_slots) {
    PyMem_Free(slots);
    PyMem_Free(ptrs);
    PyMem_Free(objs);
    PyMem_Free(ranges);
  }
  return NULL;
}

/* Checks the spec once so that calls can trust it; returns through out (ntop, nflat) and
 * nrequired: ntop without its trailing constexpr arguments, which callers may omit. */
static int validate_spec(const char *spec, Py_ssize_t len, Py_ssize_t *ntop, Py_ssize_t *nflat,
                         Py_ssize_t *nrequired) {
  Py_ssize_t depth = 0;
  *ntop = *nflat = *nrequired = 0;
  for (Py_ssize_t p = 0; p < len; ++p) {
    char c = spec[p];
    if (depth == 0 && c != ARG_TUPLE_END) {
      ++*ntop;
      if (c != ARG_CONSTEXPR)
        *nrequired = *ntop;
    }
    switch (c) {
    case ARG_TUPLE_BEGIN:
      ++depth;
      break;
    case ARG_TUPLE_END:
      if (--depth < 0)
        goto bad;
      break;
    case ARG_CONSTEXPR:
      break;
    case ARG_PTR: case ARG_BOOL: case ARG_I8: case ARG_I16: case ARG_I32: case ARG_I64:
    case ARG_U8: case ARG_U16: case ARG_U32: case ARG_U64: case ARG_FP16: case ARG_BF16:
    case ARG_FP32: case ARG_FP64:
      ++*nflat;
      break;
    default:
      goto bad;
    }
  }
  if (depth == 0)
    return 0;
bad:
  PyErr_SetString(PyExc_ValueError, "malformed argument spec");
  return -1;
}

static PyObject *launcher_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
  static char *kwlist[] = {"spec", "names", "top_names", "kernel_name", NULL};
  const char *spec, *kernel;
  Py_ssize_t len;
  PyObject *names, *top_names;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "y#O!O!s", kwlist, &spec, &len, &PyTuple_Type,
                                   &names, &PyTuple_Type, &top_names, &kernel))
    return NULL;
  Py_ssize_t ntop, nflat, nrequired;
  if (validate_spec(spec, len, &ntop, &nflat, &nrequired))
    return NULL;
  if (PyTuple_GET_SIZE(names) != nflat) {
    PyErr_Format(PyExc_ValueError, "%zd names for %zd kernel arguments",
                 PyTuple_GET_SIZE(names), nflat);
    return NULL;
  }
  if (PyTuple_GET_SIZE(top_names) != ntop) {
    PyErr_Format(PyExc_ValueError, "%zd names for %zd Python arguments",
                 PyTuple_GET_SIZE(top_names), ntop);
    return NULL;
  }
  LauncherObject *self = (LauncherObject *)type->tp_alloc(type, 0);
  if (!self)
    return NULL;
  self->spec = PyMem_Malloc(len + 1);
  self->kernel = PyMem_Malloc(strlen(kernel) + 1);
  if (!self->spec || !self->kernel) {
    Py_DECREF(self);
    return PyErr_NoMemory();
  }
  strcpy(self->kernel, kernel);
  memcpy(self->spec, spec, len);
  self->spec[len] = '\0';
  self->ntop = ntop;
  self->nrequired = nrequired;
  self->nflat = nflat;
  self->names = Py_NewRef(names);
  self->top_names = Py_NewRef(top_names);
  self->vectorcall = launcher_vectorcall;
  return (PyObject *)self;
}

static void launcher_dealloc(LauncherObject *self) {
  PyObject_GC_UnTrack(self);
  Py_CLEAR(self->names);
  Py_CLEAR(self->top_names);
  PyMem_Free(self->spec);
  PyMem_Free(self->kernel);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static int launcher_traverse(LauncherObject *self, visitproc visit, void *arg) {
  Py_VISIT(self->names);
  Py_VISIT(self->top_names);
  return 0;
}

static PyObject *launcher_get_spec(LauncherObject *self, void *closure) {
  return PyBytes_FromString(self->spec);
}

static PyObject *launcher_get_num_args(LauncherObject *self, void *closure) {
  return PyLong_FromSsize_t(self->nflat);
}

static PyGetSetDef launcher_getset[] = {
    {"spec", (getter)launcher_get_spec, NULL, "the argument spec", NULL},
    {"num_kernel_args", (getter)launcher_get_num_args, NULL,
     "kernel arguments after dropping constexprs and flattening tuples", NULL},
    {NULL},
};

static PyTypeObject LauncherType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "triton_cpu_launcher.Launcher",
    .tp_basicsize = sizeof(LauncherObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "Launcher(spec: bytes, names: tuple, top_names: tuple, kernel_name: str)(gridX, gridY, gridZ, stream, function, "
              "packed_metadata, launch_metadata, launch_enter_hook, launch_exit_hook, *args)",
    .tp_new = launcher_new,
    .tp_dealloc = (destructor)launcher_dealloc,
    .tp_traverse = (traverseproc)launcher_traverse,
    .tp_vectorcall_offset = offsetof(LauncherObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_getset = launcher_getset,
};

/* ------------------------------------------------------------------------------------ */
/* Module                                                                                */

static PyObject *set_hook_chain_type(PyObject *mod, PyObject *type) {
  if (type != Py_None && !PyType_Check(type)) {
    PyErr_SetString(PyExc_TypeError, "expected a type or None");
    return NULL;
  }
  Py_XDECREF(hook_chain_type);
  hook_chain_type = type == Py_None ? NULL : (PyTypeObject *)Py_NewRef(type);
  Py_RETURN_NONE;
}

static PyObject *default_num_threads(PyObject *mod, PyObject *unused) {
  int threads;
  if (resolve_threads(Py_None, &threads))
    return NULL;
  return PyLong_FromLong(threads);
}

static PyObject *set_streaming_bytes(PyObject *mod, PyObject *arg) {
  long long n = PyLong_AsLongLong(arg);
  if (n == -1 && PyErr_Occurred())
    return NULL;
  tcpu_streaming_bytes = n > 0 ? (int64_t)n : INT64_MAX;
  Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"set_streaming_bytes", set_streaming_bytes, METH_O,
     "Bytes a launch must store for its kernels to use streaming stores (<= 0: never)."},
    {"set_hook_chain_type", set_hook_chain_type, METH_O,
     "Registers the HookChain class whose empty instances are skipped."},
    {"default_num_threads", default_num_threads, METH_NOARGS,
     "Threads a launch without a num_threads option uses."},
    {NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "triton_cpu_launcher",
    "Generic launcher for Triton CPU kernels", -1, module_methods,
};

static int add_code(PyObject *codes, const char *name, int code) {
  PyObject *v = PyLong_FromLong(code);
  if (!v)
    return -1;
  int rc = PyDict_SetItemString(codes, name, v);
  Py_DECREF(v);
  return rc;
}

PyMODINIT_FUNC PyInit_triton_cpu_launcher(void) {
  str_data_ptr = PyUnicode_InternFromString("data_ptr");
  str_calls = PyUnicode_InternFromString("calls");
  str_untyped_storage = PyUnicode_InternFromString("untyped_storage");
  str_nbytes = PyUnicode_InternFromString("nbytes");
  str_dtype = PyUnicode_InternFromString("dtype");
  str_numel = PyUnicode_InternFromString("numel");
  str_element_size = PyUnicode_InternFromString("element_size");
  if (!str_data_ptr || !str_calls)
    return NULL;
  if (PyType_Ready(&LauncherType) < 0)
    return NULL;
  install_fault_handler();
  tcpu_set_leave_program(leave_program);
  if (pthread_atfork(NULL, NULL, note_fork_child) != 0) {
    PyErr_SetString(PyExc_RuntimeError, "pthread_atfork failed");
    return NULL;
  }
  PyObject *m = PyModule_Create(&module_def);
  if (!m)
    return NULL;
  PyObject *codes = PyDict_New();
  if (!codes)
    goto fail;
  static const struct {
    const char *name;
    int code;
  } table[] = {
      {"constexpr", ARG_CONSTEXPR}, {"(", ARG_TUPLE_BEGIN}, {")", ARG_TUPLE_END},
      {"*", ARG_PTR},   {"i1", ARG_BOOL},   {"u1", ARG_BOOL},   {"i8", ARG_I8},
      {"i16", ARG_I16}, {"i32", ARG_I32},   {"i64", ARG_I64},   {"u8", ARG_U8},
      {"u16", ARG_U16}, {"u32", ARG_U32},   {"u64", ARG_U64},   {"fp16", ARG_FP16},
      {"bf16", ARG_BF16}, {"fp32", ARG_FP32}, {"fp64", ARG_FP64},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i)
    if (add_code(codes, table[i].name, table[i].code))
      goto fail;
  if (PyModule_AddObject(m, "ARG_CODES", codes) < 0)
    goto fail;
  codes = NULL;
#ifdef TCPU_LAUNCHER_SOURCE_HASH
  /* Built with the package (CMakeLists.txt): the hash of this file and runtime.h it was
     built from, which driver.py compares with the installed sources before using it. */
  if (PyModule_AddStringConstant(m, "SOURCE_HASH", TCPU_LAUNCHER_SOURCE_HASH) < 0)
    goto fail;
#endif
#ifdef _OPENMP
  if (PyModule_AddIntConstant(m, "HAS_OPENMP", 1) < 0)
#else
  if (PyModule_AddIntConstant(m, "HAS_OPENMP", 0) < 0)
#endif
    goto fail;
  Py_INCREF(&LauncherType);
  if (PyModule_AddObject(m, "Launcher", (PyObject *)&LauncherType) < 0) {
    Py_DECREF(&LauncherType);
    goto fail;
  }
  return m;
fail:
  Py_XDECREF(codes);
  Py_DECREF(m);
  return NULL;
}
