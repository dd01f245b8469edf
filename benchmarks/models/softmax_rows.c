/* A C model of the row softmax the backend generates for tutorial 02 (4096 x 1024 fp32,
 * AVX-512), to measure what reordering its passes could buy before building it into the
 * compiler. Not part of the package; nothing imports it.
 *
 *   gcc -O3 -march=native -fopenmp benchmarks/models/softmax_rows.c -o /tmp/softmax_rows -lm
 *   OMP_NUM_THREADS=2 /tmp/softmax_rows
 *
 * Three variants, each thread taking a contiguous block of rows, medians of 100 calls:
 *   sequential  the backend's order today: per row a max pass, an exp pass that sums and
 *               keeps exp(x - max) in a row buffer, and a store pass dividing the buffer by
 *               the sum into the output with streaming stores;
 *   pipelined   the store pass of row r interleaved into the exp pass of row r + 1 (two row
 *               buffers), so the streaming stores drain while the exps are computed;
 *   copy        the rows copied with streaming stores: the memory floor.
 * The exp is a plain polynomial with vscalefps (not the backend's, which is exact to 0.87
 * ulp); both softmax variants are checked against a double-precision reference.
 */
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ROWS 4096
#define COLS 1024
#define VECS (COLS / 16)
#define CALLS 100

static inline __m512 exp16(__m512 x) {
  __m512 q = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)), 8);
  __m512 s = _mm512_fnmadd_ps(q, _mm512_set1_ps(0.693145752f), x);
  s = _mm512_fnmadd_ps(q, _mm512_set1_ps(1.42860677e-6f), s);
  __m512 p = _mm512_set1_ps(1.0f / 720);
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, q);
}

static __m512 row_max(const float *x) {
  __m512 m[4];
  for (int i = 0; i < 4; i++)
    m[i] = _mm512_set1_ps(-INFINITY);
  for (int v = 0; v < VECS; v += 4)
    for (int i = 0; i < 4; i++)
      m[i] = _mm512_max_ps(m[i], _mm512_loadu_ps(x + 16 * (v + i)));
  __m512 all = _mm512_max_ps(_mm512_max_ps(m[0], m[1]), _mm512_max_ps(m[2], m[3]));
  return _mm512_set1_ps(_mm512_reduce_max_ps(all));
}

/* The exp pass of row x into buf, returning the sum splat; with prev_out, also the store
 * pass of the previous row (prev_buf / prev_sum into prev_out), one vector per exp. */
static __m512 exp_pass(const float *x, float *buf, const float *prev_buf, __m512 prev_sum,
                       float *prev_out) {
  __m512 max = row_max(x), s[4];
  for (int i = 0; i < 4; i++)
    s[i] = _mm512_setzero_ps();
  for (int v = 0; v < VECS; v += 4)
    for (int i = 0; i < 4; i++) {
      int o = 16 * (v + i);
      __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + o), max));
      _mm512_store_ps(buf + o, e);
      s[i] = _mm512_add_ps(s[i], e);
      if (prev_out)
        _mm512_stream_ps(prev_out + o, _mm512_div_ps(_mm512_load_ps(prev_buf + o), prev_sum));
    }
  __m512 all = _mm512_add_ps(_mm512_add_ps(s[0], s[1]), _mm512_add_ps(s[2], s[3]));
  return _mm512_set1_ps(_mm512_reduce_add_ps(all));
}

static void store_pass(float *out, const float *buf, __m512 sum) {
  for (int v = 0; v < VECS; v++)
    _mm512_stream_ps(out + 16 * v, _mm512_div_ps(_mm512_load_ps(buf + 16 * v), sum));
}

static void sequential(const float *x, float *y) {
#pragma omp parallel
  {
    float buf[COLS] __attribute__((aligned(64)));
#pragma omp for schedule(static)
    for (int r = 0; r < ROWS; r++) {
      __m512 sum = exp_pass(x + (long)r * COLS, buf, NULL, _mm512_setzero_ps(), NULL);
      store_pass(y + (long)r * COLS, buf, sum);
    }
    _mm_sfence();
  }
}

static void pipelined(const float *x, float *y) {
#pragma omp parallel
  {
    float bufs[2][COLS] __attribute__((aligned(64)));
    int n = omp_get_num_threads(), t = omp_get_thread_num();
    int lo = ROWS * t / n, hi = ROWS * (t + 1) / n;
    __m512 sum = _mm512_set1_ps(1.0f);
    for (int r = lo; r < hi; r++) {
      float *prev_out = r > lo ? y + (long)(r - 1) * COLS : NULL;
      sum = exp_pass(x + (long)r * COLS, bufs[r & 1], bufs[(r - 1) & 1], sum, prev_out);
    }
    if (hi > lo)
      store_pass(y + (long)(hi - 1) * COLS, bufs[(hi - 1) & 1], sum);
    _mm_sfence();
  }
}

static void copy(const float *x, float *y) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < (long)ROWS * COLS; i += 16)
    _mm512_stream_ps(y + i, _mm512_loadu_ps(x + i));
  _mm_sfence();
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double worst_error(const float *x, const float *y) {
  double worst = 0;
  for (int r = 0; r < ROWS; r += 97) {
    const float *xr = x + (long)r * COLS;
    double max = -INFINITY, sum = 0;
    for (int c = 0; c < COLS; c++)
      max = fmax(max, xr[c]);
    for (int c = 0; c < COLS; c++)
      sum += exp(xr[c] - max);
    for (int c = 0; c < COLS; c++) {
      double ref = exp(xr[c] - max) / sum;
      worst = fmax(worst, fabs(y[(long)r * COLS + c] - ref) / ref);
    }
  }
  return worst;
}

int main(void) {
  float *x = aligned_alloc(64, (size_t)ROWS * COLS * 4), *y = aligned_alloc(64, (size_t)ROWS * COLS * 4);
  srand(0);
  for (long i = 0; i < (long)ROWS * COLS; i++)
    x[i] = 6.0f * rand() / RAND_MAX - 3.0f;
  void (*fns[3])(const float *, float *) = {sequential, pipelined, copy};
  const char *names[3] = {"sequential", "pipelined", "copy"};
  for (int f = 0; f < 2; f++) {
    fns[f](x, y);
    printf("%s: worst relative error %.2e\n", names[f], worst_error(x, y));
  }
  for (int round = 0; round < 3; round++) {
    double times[3][CALLS];
    for (int call = 0; call < CALLS; call++)
      for (int f = 0; f < 3; f++) {
        double t0 = now_ms();
        fns[f](x, y);
        times[f][call] = now_ms() - t0;
      }
    for (int f = 0; f < 3; f++) {
      qsort(times[f], CALLS, sizeof(double), by_value);
      printf("%s %.3f ms%s", names[f], times[f][CALLS / 2], f < 2 ? ", " : "\n");
    }
  }
  return 0;
}
