"""Cold compile + first run of a kernel, each in a fresh process and a fresh cache.

    python benchmarks/compile_time.py

Prints, for vector add and a 10-op elementwise kernel at BLOCK 1024 and 65536, the time
of the first call (everything: Triton's frontend, our stages, loading the C launcher
built with the package, the run) and of a second kernel compiled in the same process (what a new
kernel costs once the compiler is loaded: the median and the slowest of 8 more
specializations, BLOCK/2 ... BLOCK/256). Compile time must not grow with BLOCK.

Triton's own part of every cache key hashes its 500 MB libtriton.so on the first kernel of
each process; this backend remembers that hash per machine (`triton_cpu/triton_key_memo.py`,
in $TRITON_HOME/.triton/cpu). The first column is the usual case: the hash remembered by an
earlier process, as the launcher is built at install, and the compile server
(`triton_cpu/compile_server.py`) started by an earlier process, so the compiler's imports
are done. The second is the first process of a machine (or of an edited compiler): no
server (TRITON_CPU_COMPILE_SERVER=0; starting one costs the same). The third is the first
kernel after Triton was installed or upgraded (a fresh TRITON_HOME, the server running).
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r"""
import os, statistics, sys, time
sys.path.insert(0, sys.argv[3])
import torch, triton
from kernels import add_kernel, fused_kernel

kernel = add_kernel if sys.argv[1] == "add" else fused_kernel
block = int(sys.argv[2])
n = 1 << 20
x, y, o = torch.randn(n), torch.randn(n), torch.empty(n)
t = time.perf_counter()
kernel[(triton.cdiv(n, block),)](x, y, o, n, BLOCK=block)
first = time.perf_counter() - t
nexts = []
for b in [block >> s for s in range(1, 9)]:  # 8 more specializations of the same kernel
    t = time.perf_counter()
    kernel[(triton.cdiv(n, b),)](x, y, o, n, BLOCK=b)
    nexts.append(time.perf_counter() - t)
print(f"{first * 1000:.0f} {statistics.median(nexts) * 1000:.0f} {max(nexts) * 1000:.0f}")
"""

def main():
    print(f"{'kernel':<10} {'BLOCK':>6} {'first call, cold ms':>20} {'no server ms':>13} {'new Triton ms':>14} "
          f"{'next kernels: median ms':>24} {'max ms':>7}")
    with tempfile.TemporaryDirectory() as tmp:  # warm the libtriton hash memo once, start the server
        run(tmp, "add", 1024, dict(os.environ))
    for kernel in ("add", "10-op"):
        for block in (1024, 65536):
            with tempfile.TemporaryDirectory() as tmp:
                first, median, slowest = run(tmp, kernel, block, dict(os.environ))
            with tempfile.TemporaryDirectory() as tmp:
                alone = run(tmp, kernel, block, dict(os.environ, TRITON_CPU_COMPILE_SERVER="0"))[0]
            with tempfile.TemporaryDirectory() as tmp:
                fresh = run(tmp, kernel, block, dict(os.environ, TRITON_HOME=tmp))[0]
            print(f"{kernel:<10} {block:>6} {first:>20} {alone:>13} {fresh:>14} {median:>24} {slowest:>7}")


def run(tmp, kernel, block, env):
    """(first call, median and max of the next kernels), in ms, in a fresh process with a
    fresh kernel cache."""
    child = os.path.join(tmp, "child.py")
    with open(child, "w") as f:
        f.write(CHILD)
    env["TRITON_CACHE_DIR"] = os.path.join(tmp, "cache")
    return subprocess.run([sys.executable, child, kernel, str(block), HERE], env=env,
                          capture_output=True, text=True, check=True).stdout.split()


if __name__ == "__main__":
    main()
