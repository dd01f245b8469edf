"""The tutorials' kernels on the CPU backend against torch eager, torch.compile and Triton's
interpreter, in one run, with the project's performance floors.

    python benchmarks/bench_tutorials.py [--threads 2] [--no-compile] [--no-interp]

Problems: vector add 2^24, softmax 4096 x 1024, layer norm forward 4096 x 1024, matmul
1024^3 and 2048^3 (fp32), matmul 1024^3 with bf16 inputs (fp32 accumulation), fused
attention forward (1 x 8 x 1024 x 64 fp32, not causal). The kernels and host functions are
the tutorials' own (python/tutorials/0*.py). Ratios are reference time / triton-cpu time
(> 1: the CPU backend is faster); a floor is the smallest acceptable ratio. The reference
is torch eager (`torch.matmul`, `F.scaled_dot_product_attention`, ...), except for the
bf16 matmul on a host without bf16 dot instructions (AVX512-BF16 or AMX), where torch's
bf16 matmul is an emulation and the reference is this backend's own fp32 matmul: bf16
halves the bytes, so it must be faster. Softmax and layer norm also print a `limit`: the
eager time over that of a kernel copying the same rows with streaming stores, timed in the
same rounds, the best ratio a kernel reading its input from memory once could reach in that
run (it moves with the VM's memory speed). The interpreter runs
on a reduced size and its time is scaled per element (per multiply-add for matmul); kernels
that call Triton's own @jit helpers (tl.max, tl.sum, ...) need TRITON_INTERPRET=1 at import,
so those run in a child process.
"""
import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TUTORIALS = os.path.join(HERE, os.pardir, "python", "tutorials")

# Smallest acceptable torch-eager / triton-cpu time ratios: the goals of the performance
# issue (2 threads on a 2-core AVX2 host). Not all are met yet; the script says which.
FLOORS = {"vector add": 1.1, "softmax": 2.0, "layer norm fwd": 1.3, "matmul": 0.9, "matmul 2048": 0.9,
          "matmul bf16": 1.0, "attention fwd": 0.8}
FLOORS_NO_BF16_DOT = {"matmul bf16": 1.1}  # against our fp32 matmul (see above)


def load_tutorial(name):
    """Imports python/tutorials/<name>.py (the file names are not valid module names)."""
    path = os.path.join(TUTORIALS, name + ".py")
    spec = importlib.util.spec_from_file_location(name.replace("-", "_"), path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ---------------------------------------------------------------------------------------
# The interpreter, in a child process with TRITON_INTERPRET=1. It prints one JSON object:
# {problem: (milliseconds per call, units of work)} for the reduced problems.

_INTERP_CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
sys.argv = sys.argv[:1]
import torch
import triton
from bench_tutorials import load_tutorial

def timed(fn, n=2):
    fn()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n * 1e3

out = {}
sm = load_tutorial("02-fused-softmax")
x = torch.randn(64, 1024); y = torch.empty_like(x)
out["softmax"] = (timed(lambda: sm.softmax_kernel[(64, )](y, x, 1024, 1024, 64, 1024, 1024, 1)), x.numel())

ln = load_tutorial("05-layer-norm")
w, b = torch.rand(1024), torch.randn(1024)
mean, rstd = torch.empty(64), torch.empty(64)
out["layer norm fwd"] = (timed(lambda: ln.layer_norm_fwd_kernel[(64, )](x, y, w, b, mean, rstd, 1024, 1024, 1e-5,
                                                                       BLOCK_N=1024)), x.numel())

mm = load_tutorial("03-matrix-multiplication")
n = 128
a, bb, c = torch.randn(n, n), torch.randn(n, n), torch.empty(n, n)
kernel = mm.matmul_kernel.fn  # the autotuner's kernel, with one explicit config
grid = ((n // 64) * (n // 64), )
out["matmul"] = (timed(lambda: kernel[grid](a, bb, c, n, n, n, n, 1, n, 1, n, 1, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32,
                                            GROUP_M=8, ACTIVATION="")), n**3)
print("RESULT" + json.dumps(out))
"""


def interpreter_times():
    env = dict(os.environ, TRITON_INTERPRET="1", TRITON_CPU_TUTORIAL_QUICK="1")
    proc = subprocess.run([sys.executable, "-c", _INTERP_CHILD, HERE], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError("interpreter child failed:\n" + proc.stderr[-3000:])
    line = next(l for l in proc.stdout.splitlines() if l.startswith("RESULT"))
    return json.loads(line[len("RESULT"):])


def print_table(rows, threads, host, floors, limits):
    """Prints the times, the ratios and the floors; returns the problems below their floor.
    `limits`: {row name: eager time / the copy's time} for the rows bound by memory."""
    print(f"threads = {threads}, host = {host}, times are medians of triton.testing.do_bench")
    print(f"{'kernel':<15} {'size':>10} {'triton-cpu':>11} {'eager':>9} {'compile':>9} {'interp*':>10}"
          f" {'vs eager':>9} {'vs compile':>10} {'vs interp':>10} {'floor':>6} {'limit':>6}  result")
    print(f"{'':<15} {'':>10} {'ms':>11} {'ms':>9} {'ms':>9} {'ms':>10}")
    failed = []

    def fmt(value, spec, suffix=""):
        width = int(spec.split(".")[0])
        return format(value, spec) + suffix if value is not None else format("-", f">{width + len(suffix)}")

    for name, size, c, e, k, i in rows:
        ratio = e / c
        ok = ratio >= floors[name]
        if not ok:
            failed.append(name)
        print(f"{name:<15} {size:>10} {c:11.3f} {e:9.3f} {fmt(k, '9.3f')} {fmt(i, '10.0f')}"
              f" {ratio:8.2f}x {fmt(k and k / c, '9.2f', 'x')} {fmt(i and i / c, '9.0f', 'x')}"
              f" {floors[name]:5.1f}x {fmt(limits.get(name), '5.2f', 'x')}  {'pass' if ok else 'FAIL'}")
    print("* interpreter timed on a reduced size (add 2^18, softmax/layer norm 64x1024, matmul 128^3) "
          "and scaled to the full size")
    if limits:
        print("limit: eager time / the time of a copy of the same bytes (each row read once, written once) "
              "by a streaming-store kernel, timed next to them: no kernel that reads its input from memory and "
              "writes its output there beats that copy")
    print("floors: " + ", ".join(f"{k} >= {v}x" for k, v in floors.items()) +
          (f"; FAILED: {', '.join(failed)}" if failed else "; all pass"))
    return failed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--no-interp", action="store_true", help="skip Triton's interpreter")
    args = ap.parse_args()

    os.environ["TRITON_CPU_NUM_THREADS"] = str(args.threads)
    os.environ["TRITON_CPU_TUTORIAL_QUICK"] = "1"  # the tutorials' module-level setup only
    import torch
    import triton
    from triton.runtime.interpreter import InterpretedFunction
    from triton.testing import do_bench
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    # Inductor compiles in a pool of worker processes that keep running after
    # torch.compile returns and would share the cores with the rows timed next.
    import torch._inductor.config
    torch._inductor.config.compile_threads = 1

    def bench(*fns, rounds=3):
        """Median times of `fns` over `rounds` interleaved do_bench runs: this kind of VM
        drifts by 20-50% within minutes, and interleaving exposes the variants of a row to
        the same drift (measured one after the other, a ratio moved with it)."""
        times = [[] for _ in fns]
        for _ in range(rounds):
            for t, fn in zip(times, fns):
                t.append(do_bench(fn, warmup=20, rep=150, return_mode="median"))
        return [statistics.median(t) for t in times]

    from kernels import copy  # the memory floor of the row-wise kernels (`limit`)

    limits = {}  # row name -> eager time / copy time
    va = load_tutorial("01-vector-add")
    sm = load_tutorial("02-fused-softmax")
    mm = load_tutorial("03-matrix-multiplication")
    ln = load_tutorial("05-layer-norm")
    mm.QUICK = False  # loaded in quick mode (above); the benchmark tunes over the tutorial's full list
    mm.matmul_kernel.configs = mm.cpu_configs()

    rows = []  # (name, triton ms, eager ms, compile ms or None, interp ms scaled or None)

    # vector add, 2^24 fp32
    n = 1 << 24
    x, y, o = torch.rand(n), torch.rand(n), torch.empty(n)
    va.add_kernel[(triton.cdiv(n, 4096), )](x, y, o, n, BLOCK_SIZE=4096)
    assert torch.equal(o, x + y)
    t_cpu, t_eager = bench(lambda: va.add_kernel[(triton.cdiv(n, 4096), )](x, y, o, n, BLOCK_SIZE=4096),
                           lambda: torch.add(x, y, out=o))
    t_interp = None
    if not args.no_interp:
        small = 1 << 18
        interp = InterpretedFunction(va.add_kernel.fn)
        xs, ys, os_ = x[:small].clone(), y[:small].clone(), torch.empty(small)
        interp[(small // 4096, )](xs, ys, os_, small, BLOCK_SIZE=4096)
        t0 = time.perf_counter()
        for _ in range(2):
            interp[(small // 4096, )](xs, ys, os_, small, BLOCK_SIZE=4096)
        t_interp = (time.perf_counter() - t0) / 2 * 1e3 * n / small
    rows.append(("vector add", "2^24", t_cpu, t_eager, None, t_interp))
    del x, y, o

    # softmax, 4096 x 1024
    x = torch.randn(4096, 1024)
    torch.testing.assert_close(sm.softmax(x), torch.softmax(x, -1))
    xc = torch.empty_like(x)
    copy(x, xc)
    assert torch.equal(xc, x)
    fns = [lambda: sm.softmax(x), lambda: torch.softmax(x, -1), lambda: copy(x, xc)]
    if not args.no_compile:
        f = torch.compile(lambda t: torch.softmax(t, -1))
        f(x)
        fns.append(lambda: f(x))
    t_cpu, t_eager, t_copy, *t_comp = bench(*fns)
    t_comp = t_comp[0] if t_comp else None
    rows.append(["softmax", "4096x1024", t_cpu, t_eager, t_comp, None])
    limits["softmax"] = t_eager / t_copy

    # layer norm forward, 4096 x 1024
    w, b = torch.rand(1024), torch.randn(1024)
    with torch.no_grad():
        torch.testing.assert_close(ln.layer_norm(x, (1024, ), w, b, 1e-5),
                                   torch.nn.functional.layer_norm(x, (1024, ), w, b, 1e-5), rtol=1e-4, atol=1e-4)
        fns = [lambda: ln.layer_norm(x, (1024, ), w, b, 1e-5),
               lambda: torch.nn.functional.layer_norm(x, (1024, ), w, b, 1e-5), lambda: copy(x, xc)]
        if not args.no_compile:
            f = torch.compile(torch.nn.functional.layer_norm)
            f(x, (1024, ), w, b, 1e-5)
            fns.append(lambda: f(x, (1024, ), w, b, 1e-5))
        t_cpu, t_eager, t_copy, *t_comp = bench(*fns)
        t_comp = t_comp[0] if t_comp else None
    rows.append(["layer norm fwd", "4096x1024", t_cpu, t_eager, t_comp, None])
    limits["layer norm fwd"] = t_eager / t_copy

    # matmul, 1024^3
    a, bm = torch.randn(1024, 1024), torch.randn(1024, 1024)
    torch.testing.assert_close(mm.matmul(a, bm), a @ bm, rtol=1e-4, atol=1e-3)  # also autotunes
    t_cpu, t_eager = bench(lambda: mm.matmul(a, bm), lambda: torch.matmul(a, bm))
    rows.append(["matmul", "1024^3", t_cpu, t_eager, None, None])
    tuned = {"matmul": mm.matmul_kernel.best_config}

    # matmul, 2048^3
    a2, b2 = torch.randn(2048, 2048), torch.randn(2048, 2048)
    torch.testing.assert_close(mm.matmul(a2, b2), a2 @ b2, rtol=1e-4, atol=2e-3)
    rows.append(["matmul 2048", "2048^3", *bench(lambda: mm.matmul(a2, b2), lambda: torch.matmul(a2, b2)),
                 None, None])
    tuned["matmul 2048"] = mm.matmul_kernel.best_config

    # matmul with bf16 inputs, 1024^3: the tutorial's kernel accumulates in fp32 and stores bf16
    from triton_cpu import llvm
    h = llvm.host()
    bf16_dot = h.has("avx512bf16") or h.has("amx-bf16")
    floors = dict(FLOORS) if bf16_dot else {**FLOORS, **FLOORS_NO_BF16_DOT}
    ah, bh = a.bfloat16(), bm.bfloat16()
    torch.testing.assert_close(mm.matmul(ah, bh).float(), ah.float() @ bh.float(), rtol=2e-2, atol=0.5)
    if bf16_dot:
        t_cpu, t_ref = bench(lambda: mm.matmul(ah, bh), lambda: torch.matmul(ah, bh))
    else:  # against this backend's fp32 matmul, timed again next to it
        t_cpu, t_ref = bench(lambda: mm.matmul(ah, bh), lambda: mm.matmul(a, bm))
    rows.append(["matmul bf16", "1024^3", t_cpu, t_ref, None, None])
    tuned["matmul bf16"] = mm.matmul_kernel.best_config

    # fused attention forward, 1 x 8 x 1024 x 64 fp32
    at = load_tutorial("06-fused-attention")
    q, k, v = (torch.randn(1, 8, 1024, 64) for _ in range(3))
    sdpa = torch.nn.functional.scaled_dot_product_attention
    torch.testing.assert_close(at.attention(q, k, v, False), sdpa(q, k, v), rtol=1e-4, atol=1e-4)
    rows.append(["attention fwd", "8x1024x64", *bench(lambda: at.attention(q, k, v, False), lambda: sdpa(q, k, v)),
                 None, None])

    if not args.no_interp:
        full = {"softmax": 4096 * 1024, "layer norm fwd": 4096 * 1024, "matmul": 1024**3}
        for name, (ms, units) in interpreter_times().items():
            row = next(r for r in rows if r[0] == name)
            row[5] = ms * full[name] / units

    host = triton.runtime.driver.active.get_current_target().arch
    failed = print_table(rows, args.threads, host, floors, limits)
    if not bf16_dot:
        print("matmul bf16: this host has no bf16 dot instructions; its reference is this backend's fp32 matmul")
    for name, cfg in tuned.items():
        print(f"{name}: autotuned to {', '.join(f'{k}={v}' for k, v in cfg.kwargs.items())}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
