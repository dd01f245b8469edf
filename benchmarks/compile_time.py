"""Cold compile + first run of a kernel, each in a fresh process and a fresh cache.

    python benchmarks/compile_time.py

Prints, for vector add and a 10-op elementwise kernel at BLOCK 1024 and 65536, the time
of the first call (everything: Triton's frontend, our stages, loading the C launcher
built with the package, the run) and of a second kernel compiled in the same process (what a new
kernel costs once the compiler is loaded). Compile time must not grow with BLOCK.
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r"""
import os, sys, time
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
t = time.perf_counter()
kernel[(triton.cdiv(n, block // 2),)](x, y, o, n, BLOCK=block // 2)
second = time.perf_counter() - t
print(f"{first * 1000:.0f} {second * 1000:.0f}")
"""


def main():
    print(f"{'kernel':<10} {'BLOCK':>6} {'first call, cold ms':>20} {'next kernel ms':>15}")
    for kernel in ("add", "10-op"):
        for block in (1024, 65536):
            with tempfile.TemporaryDirectory() as tmp:
                child = os.path.join(tmp, "child.py")
                with open(child, "w") as f:
                    f.write(CHILD)
                env = dict(os.environ, TRITON_CACHE_DIR=os.path.join(tmp, "cache"))
                out = subprocess.run([sys.executable, child, kernel, str(block), HERE], env=env,
                                     capture_output=True, text=True, check=True).stdout.split()
            print(f"{kernel:<10} {block:>6} {out[0]:>20} {out[1]:>15}")


if __name__ == "__main__":
    main()
