"""What the bounds-checked mode costs: the benchmark kernels timed with it off and on.

    python benchmarks/bounds_check_overhead.py [--threads 2]

Each mode runs in its own process (TRITON_CPU_BOUNDS_CHECK is read when a kernel is
compiled, and each process gets a fresh cache directory), on the CPU tutorials' kernels
at the sizes of bench_tutorials.py: vector add 2^24, softmax and layer norm forward
4096x1024, matmul 1024^3 (64x64x32 tiles), fp32. Prints the median times and the
slowdown (checked / unchecked).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

_CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import torch, triton
from triton.testing import do_bench
from bench_tutorials import load_tutorial
torch.manual_seed(0)
bench = lambda fn: do_bench(fn, warmup=50, rep=400, return_mode="median")
va, sm = load_tutorial("01-vector-add"), load_tutorial("02-fused-softmax")
ln, mm = load_tutorial("05-layer-norm"), load_tutorial("03-matrix-multiplication")
mm.matmul_kernel.configs = [triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8})]
out = {}
n = 1 << 24
x, y, o = torch.rand(n), torch.rand(n), torch.empty(n)
out["vector add 2^24"] = bench(lambda: va.add_kernel[(triton.cdiv(n, 4096), )](x, y, o, n, BLOCK_SIZE=4096))
assert torch.equal(o, x + y)
x = torch.randn(4096, 1024)
torch.testing.assert_close(sm.softmax(x), torch.softmax(x, -1))
out["softmax 4096x1024"] = bench(lambda: sm.softmax(x))
w, b = torch.rand(1024), torch.randn(1024)
with torch.no_grad():
    out["layer norm fwd 4096x1024"] = bench(lambda: ln.layer_norm(x, (1024, ), w, b, 1e-5))
a, bm = torch.randn(1024, 1024), torch.randn(1024, 1024)
torch.testing.assert_close(mm.matmul(a, bm), a @ bm, rtol=1e-4, atol=1e-3)
out["matmul 1024^3"] = bench(lambda: mm.matmul(a, bm))
print("RESULT" + json.dumps(out))
"""


def run(checked: bool, threads: int) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TRITON_CPU_BOUNDS_CHECK="1" if checked else "0", TRITON_CACHE_DIR=cache,
                   TRITON_CPU_NUM_THREADS=str(threads), TRITON_CPU_TUTORIAL_QUICK="1")
        proc = subprocess.run([sys.executable, "-c", _CHILD, HERE], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-3000:])
    line = next(l for l in proc.stdout.splitlines() if l.startswith("RESULT"))
    return json.loads(line[len("RESULT"):])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    off, on = run(False, args.threads), run(True, args.threads)
    print(f"threads = {args.threads}; median ms of triton.testing.do_bench")
    print(f"{'kernel':<26} {'unchecked':>10} {'checked':>10} {'slowdown':>9}")
    for name in off:
        print(f"{name:<26} {off[name]:10.3f} {on[name]:10.3f} {on[name] / off[name]:8.2f}x")


if __name__ == "__main__":
    main()
