"""The autotuner's timer on the CPU (`CPUDriver.get_benchmarker`): `do_bench_warm`.

Triton's autotuner times each config with the driver's benchmarker. Stock
`triton.testing.do_bench` clears the cache before every timed call by zeroing a buffer
twice the size of the last-level cache (`get_empty_cache_for_benchmark`): on a GPU that
is a fraction of a millisecond, on a CPU with a 260 MB L3 it is a 520 MB memset of ~40 ms.
do_bench also counts that memset in its estimate of the kernel's time, from which it
derives the number of timed calls, so every config of every autotuned kernel costs ~7
memsets (~0.3 s) and is timed from 2 calls whatever its own duration: fla's chunked GLA
(forward and backward, 212 configs) spent ~50 of its ~135 s of first-call autotuning
zeroing that buffer, and its choices rested on 2 cold samples each.

`do_bench_warm` takes do_bench's arguments and returns what it returns (the mean, median,
min, max, all per-call times, or quantiles, in milliseconds: Triton's own
`_summarize_statistics` makes the summary), but times the calls back to
back with warm caches, each on its own (`time.perf_counter_ns`): `warmup` ms of untimed
calls (at least 3), then as many timed calls as fit in `rep` ms (at least 10). On a CPU, a kernel that
runs again on the same tensors finds them in the cache when they fit, which is also what
a kernel called in a loop or in a model sees. `triton.testing.do_bench` itself, called
directly (tutorials, benchmarks), keeps its cold-cache measurement.

The minimum counts matter for long kernels, which the autotuner's defaults (25 ms of warmup,
100 of timing) would time from 1 untimed and 5 timed calls: the first calls of a config
pay for its first touches and the first config for the thread pool's start, and on a
2-core VM whose speed drifts by 10-20% within seconds, 5 samples ranked the tutorial's
matmul configs at 1024^3 differently from run to run (a 64x128x32 tile at 22 ms chosen
over 128x128x64 at 17). With 3 and 10, three fresh runs put the two fastest first each time;
a 20-ms config costs ~0.3 s of tuning instead of ~0.15.
"""
import time

from triton.testing import _summarize_statistics


def do_bench_warm(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean"):
    """Per-call times of `fn` in milliseconds, with warm caches (see the module docstring)."""
    assert return_mode in ("min", "max", "mean", "median", "all")

    def call():
        if grad_to_none is not None:
            for x in grad_to_none:
                x.grad = None
        fn()

    call()  # compiles, loads and first touches: not timed
    clock = time.perf_counter_ns
    deadline = clock() + warmup * 1e6
    warm = 0
    while warm < 3 or clock() < deadline:
        call()
        warm += 1
    times = []
    deadline = clock() + rep * 1e6
    while len(times) < 10 or clock() < deadline:
        t = clock()
        call()
        times.append((clock() - t) * 1e-6)
    return _summarize_statistics(times, quantiles, return_mode)
