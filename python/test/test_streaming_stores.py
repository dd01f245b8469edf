"""Streaming (non-temporal) stores: a launch whose tensor stores write more than the
threshold (a quarter of the last-level cache by default) stores its aligned full vectors
past the caches. Results must be the same either way, aligned or not, masked tails
included, and in loops whose trip counts the kernel counts at run time."""
import ctypes
import glob
import os
import platform
import subprocess
import sys

import pytest
import torch
import triton
import triton.language as tl

from triton_cpu.backend import driver as D
from triton_cpu.llvm import RUNTIME_DIR

X86 = platform.machine().lower() in ("x86_64", "amd64")
NEVER = 2**63 - 1


def runtime_threshold() -> int:
    """tcpu_streaming_bytes as the kernels see it: the runtime library's global."""
    lib = ctypes.CDLL(os.path.join(RUNTIME_DIR, "libTritonCPURuntime.so"))
    return ctypes.c_int64.in_dll(lib, "tcpu_streaming_bytes").value


def sysfs_l3(field: str) -> str:
    """A field of cpu0's L3 entry in sysfs, read here independently of the driver ("": none)."""
    for entry in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*"):
        try:
            with open(os.path.join(entry, "level")) as f:
                if f.read().strip() != "3":
                    continue
            with open(os.path.join(entry, field)) as f:
                return f.read().strip()
        except OSError:
            continue
    return ""


def sysfs_l3_bytes() -> int:
    """cpu0's L3 size (0: none known)."""
    text = sysfs_l3("size")
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1:] in units else int(text or 0)


def sysfs_l3_cpus() -> int:
    """How many CPUs share cpu0's L3 (0: not known)."""
    ranges = [r.split("-") for r in sysfs_l3("shared_cpu_list").split(",") if r]
    return sum(int(r[-1]) - int(r[0]) + 1 for r in ranges)


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0 + 1.0, mask=m)


@triton.jit
def scale_and_count_kernel(x_ptr, y_ptr, count_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0 + 1.0, mask=m)
    tl.atomic_add(count_ptr, 1)


@pytest.fixture
def threshold():
    """Sets the launcher's streaming threshold for one test, restoring the default."""
    mod = D.launcher_module()
    yield mod.set_streaming_bytes
    mod.set_streaming_bytes(D.streaming_bytes())


@pytest.mark.parametrize("limit", [1, 0])  # 1 byte: every launch streams; 0: none does
@pytest.mark.parametrize("offset", [0, 1, 16])  # output 64-byte aligned, or not
@pytest.mark.parametrize("vector_bits", [256, 512])
def test_results_with_and_without_streaming(threshold, limit, offset, vector_bits):
    threshold(limit)
    assert runtime_threshold() == (limit if limit > 0 else NEVER)
    n = 100_000 + 37
    x = torch.randn(n)
    out = torch.zeros(n + offset)
    y = out[offset:]
    k = scale_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024, vector_bits=vector_bits)
    torch.testing.assert_close(y, x * 2.0 + 1.0, rtol=0, atol=0)
    assert (out[:offset] == 0).all()
    if X86:
        assert "vmovnt" in k.asm["asm"]


@triton.jit
def rows_kernel(x_ptr, y_ptr, n_rows, n_cols, stride, BLOCK: tl.constexpr):
    """A persistent loop over rows (tutorial 02's shape): each program stores a row per
    iteration, so the launch's bytes are counted with the loop's run-time trip count."""
    cols = tl.arange(0, BLOCK)
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        m = cols < n_cols
        x = tl.load(x_ptr + row * stride + cols, mask=m)
        tl.store(y_ptr + row * stride + cols, x * 2.0 - 1.0, mask=m)


@pytest.mark.parametrize("limit", [1, 0])
@pytest.mark.parametrize("n_cols", [256, 250])  # rows whose last chunk is masked, and unaligned rows
@pytest.mark.parametrize("vector_bits", [256, 512])
def test_results_in_a_persistent_loop(threshold, limit, n_cols, vector_bits):
    threshold(limit)
    n_rows, programs = 301, 7
    x = torch.randn(n_rows, n_cols)
    y = torch.zeros(n_rows, n_cols)
    k = rows_kernel[(programs,)](x, y, n_rows, n_cols, n_cols, BLOCK=256, vector_bits=vector_bits)
    torch.testing.assert_close(y, x * 2.0 - 1.0, rtol=0, atol=0)
    if X86:
        assert "vmovnt" in k.asm["asm"]


@pytest.mark.skipif(not X86, reason="streaming stores are emitted for x86 only")
def test_no_streaming_in_a_kernel_with_atomics(threshold):
    """x86 orders non-temporal stores with nothing but a fence: a kernel whose programs
    synchronize through atomics keeps cached stores."""
    threshold(1)
    n = 4096
    x = torch.randn(n)
    y = torch.empty(n)
    count = torch.zeros(1, dtype=torch.int32)
    k = scale_and_count_kernel[(n // 512,)](x, y, count, n, BLOCK=512)
    torch.testing.assert_close(y, x * 2.0 + 1.0, rtol=0, atol=0)
    assert count.item() == n // 512
    assert "vmovnt" not in k.asm["asm"]


@triton.jit
def scale_in_place_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0 + 1.0, mask=m)


@pytest.mark.skipif(not X86, reason="streaming stores are emitted for x86 only")
@pytest.mark.parametrize("vector_bits", [256, 512])
def test_no_streaming_of_an_update_in_place(threshold, vector_bits):
    """A store through the pointers the kernel loads through writes lines the load just
    brought into the cache: streaming them would only evict them. The same kernel writing
    elsewhere streams."""
    threshold(1)
    n = 4096
    x = torch.randn(n)
    want = x * 2.0 + 1.0
    k = scale_in_place_kernel[(n // 512,)](x, n, BLOCK=512, vector_bits=vector_bits)
    torch.testing.assert_close(x, want, rtol=0, atol=0)
    assert "vmovnt" not in k.asm["asm"]
    y = torch.empty(n)
    k = scale_kernel[(n // 512,)](x, y, n, BLOCK=512, vector_bits=vector_bits)
    assert "vmovnt" in k.asm["asm"]


@triton.jit
def exp_then_normalize_kernel(x_ptr, out_ptr, n_cols: tl.constexpr, BLOCK: tl.constexpr):
    """Inductor's looped softmax shape for rows longer than its block: the exps are stored
    to the output in one loop and read back from it, divided by their sum, in the next.
    (A constant row length: with a run-time one, version-single-iteration-loops also makes
    a copy for rows of one block, where the exps do not go through memory and the
    output streams.)"""
    row = tl.program_id(0)
    total = tl.zeros([BLOCK], tl.float32)
    for c in range(0, n_cols, BLOCK):
        cols = c + tl.arange(0, BLOCK)
        m = cols < n_cols
        e = tl.exp(tl.load(x_ptr + row * n_cols + cols, mask=m, other=float("-inf")))
        total += e
        tl.store(out_ptr + row * n_cols + cols, e, mask=m)
    s = tl.sum(total, 0)
    for c in range(0, n_cols, BLOCK):
        cols = c + tl.arange(0, BLOCK)
        m = cols < n_cols
        tl.store(out_ptr + row * n_cols + cols, tl.load(out_ptr + row * n_cols + cols, mask=m) / s, mask=m)


@pytest.mark.skipif(not X86, reason="streaming stores are emitted for x86 only")
@pytest.mark.parametrize("vector_bits", [256, 512])
def test_no_streaming_into_an_argument_the_kernel_reads_back(threshold, vector_bits):
    """Stores into an argument the kernel also loads from, through other pointer values
    (another loop), stay cached: streamed, the loop that reads them back would read them
    from memory."""
    threshold(1)
    x = torch.randn(8, 1000)
    out = torch.empty_like(x)
    k = exp_then_normalize_kernel[(8,)](x, out, 1000, BLOCK=256, vector_bits=vector_bits)
    torch.testing.assert_close(out, torch.softmax(x, -1), rtol=1e-5, atol=1e-7)
    assert "vmovnt" not in k.asm["asm"]


def _threshold_in_a_fresh_process(env_extra):
    code = ("import torch, triton, triton.language as tl\n"
            "from test_streaming_stores import scale_kernel, runtime_threshold\n"
            "x = torch.randn(64); y = torch.empty(64)\n"
            "scale_kernel[(1,)](x, y, 64, BLOCK=64)\n"
            "print(runtime_threshold())\n")
    env = dict(os.environ, **env_extra)
    env["PYTHONPATH"] = os.path.dirname(__file__) + os.pathsep + env.get("PYTHONPATH", "")
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    return int(res.stdout.split()[-1])


def test_default_threshold_is_a_quarter_of_the_l3():
    """After the first launch of a process: a quarter of the L3 size from sysfs, counting
    at most 16 MiB per CPU sharing it (never, without one); TRITON_CPU_STREAMING_STORES=0
    turns streaming off."""
    l3, cpus = sysfs_l3_bytes(), sysfs_l3_cpus()
    if cpus:
        l3 = min(l3, cpus * (16 << 20))
    assert _threshold_in_a_fresh_process({}) == (l3 // 4 or NEVER)
    assert _threshold_in_a_fresh_process({"TRITON_CPU_STREAMING_STORES": "0"}) == NEVER
