/* libTritonCPURuntime: helpers that generated kernels and the launcher share. */
#define _GNU_SOURCE
#include "triton_cpu/runtime.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static atomic_int error_flag;
static char error_text[1024];

void tcpu_assert_fail(const char *msg, const char *file, int32_t line, const char *func,
                      int32_t px, int32_t py, int32_t pz) {
  int expected = 0;
  /* First failure wins; later ones (other programs, other threads) are dropped. */
  if (!atomic_compare_exchange_strong(&error_flag, &expected, 2))
    return;
  snprintf(error_text, sizeof error_text,
           "device-side assert triggered: %s:%d: %s: block: [%d, %d, %d] Assertion `%s` failed.",
           file ? file : "<unknown>", (int)line, func ? func : "<unknown>", (int)px, (int)py,
           (int)pz, msg ? msg : "");
  atomic_store(&error_flag, 1);
}

int tcpu_error_pending(void) { return atomic_load(&error_flag) != 0; }

size_t tcpu_error_message(char *buf, size_t size) {
  while (atomic_load(&error_flag) == 2) /* writer still formatting */
    ;
  size_t n = strlen(error_text);
  if (buf && size) {
    size_t m = n < size - 1 ? n : size - 1;
    memcpy(buf, error_text, m);
    buf[m] = 0;
  }
  return n;
}

void tcpu_error_clear(void) {
  error_text[0] = 0;
  atomic_store(&error_flag, 0);
}

static _Thread_local void *scratch_buf;
static _Thread_local size_t scratch_size;

void *tcpu_scratch(size_t bytes) {
  if (bytes <= scratch_size)
    return scratch_buf;
  free(scratch_buf);
  size_t size = (bytes + 63) & ~(size_t)63;
  scratch_buf = aligned_alloc(64, size);
  scratch_size = scratch_buf ? size : 0;
  return scratch_buf;
}
