"""The driver and launcher, without the compiler: kernels here are small C shared objects
that implement the kernel ABI of include/triton_cpu/runtime.h by hand."""
import math
import os
import statistics
import struct
import subprocess
import sys
import textwrap
import threading
import time
import types

import pytest
import torch
import triton
from triton import knobs
from triton.backends.compiler import GPUTarget

from triton_cpu.backend import driver as D

KERNELS_C = r"""
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "runtime.h"

#define ABI int32_t px, int32_t py, int32_t pz, int32_t gx, int32_t gy, int32_t gz

/* dump(out: *u64, n: i32, ...): copies the 8-byte slots of the n arguments after n. */
void dump(void **args, ABI) {
  if (px || py || pz)
    return;
  uint64_t *out = *(uint64_t **)args[0];
  int32_t n = *(int32_t *)args[1];
  for (int32_t i = 0; i < n; ++i)
    memcpy(&out[i], args[2 + i], 8);
}

/* Busy-waits `us` microseconds (nothing for us <= 0). */
static void spin(int32_t us) {
  if (us <= 0)
    return;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do
    clock_gettime(CLOCK_MONOTONIC, &t1);
  while ((t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000 < us);
}

/* grid(counts: *i32, coords: *i32, order: *i64, next: *i64, tids: *i64, spin_us: i32):
 * per program (linear id x + gx * (y + gy * z)): runs counted, coordinates and grid seen,
 * its position in the global execution order, and the OS thread that ran it. */
void grid(void **args, ABI) {
  int32_t *counts = *(int32_t **)args[0];
  int32_t *coords = *(int32_t **)args[1];
  int64_t *order = *(int64_t **)args[2];
  int64_t *next = *(int64_t **)args[3];
  int64_t *tids = *(int64_t **)args[4];
  int32_t spin_us = *(int32_t *)args[5];
  int64_t lin = px + (int64_t)gx * (py + (int64_t)gy * pz);
  __atomic_fetch_add(&counts[lin], 1, __ATOMIC_RELAXED);
  int32_t c[6] = {px, py, pz, gx, gy, gz};
  memcpy(&coords[6 * lin], c, sizeof c);
  order[lin] = __atomic_fetch_add(next, 1, __ATOMIC_RELAXED);
  tids[lin] = syscall(SYS_gettid);
  spin(spin_us);
}

/* uneven(tids: *i64, slow: i32, spin_us: i32): programs below `slow` (linear id) spin for
 * spin_us, the others return at once; each records the OS thread that ran it. */
void uneven(void **args, ABI) {
  int64_t *tids = *(int64_t **)args[0];
  int32_t slow = *(int32_t *)args[1];
  int32_t spin_us = *(int32_t *)args[2];
  int64_t lin = px + (int64_t)gx * (py + (int64_t)gy * pz);
  tids[lin] = syscall(SYS_gettid);
  if (lin < slow)
    spin(spin_us);
}

/* sleepy(ms: i32): sleeps, to observe what other Python threads do meanwhile. */
void sleepy(void **args, ABI) {
  int32_t ms = *(int32_t *)args[0];
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* asserting(out: *i32, bad: i32): program `bad` fails a device assert, the others write 1. */
void asserting(void **args, ABI) {
  int32_t *out = *(int32_t **)args[0];
  int32_t bad = *(int32_t *)args[1];
  if (px == bad) {
    tcpu_assert_fail("x > 0", "kernel.py", 42, "asserting", px, py, pz);
    return;
  }
  out[px] = 1;
}

/* trivial(): nothing, for measuring launch overhead. */
void trivial(void **args, ABI) { (void)args; }
"""


# ----------------------------------------------------------------------------------------
# Fixtures


@pytest.fixture(scope="session")
def kernel_so(tmp_path_factory):
    d = tmp_path_factory.mktemp("kernels")
    src = d / "kernels.c"
    src.write_text(KERNELS_C)
    out = d / "kernels.so"
    rt = D._runtime_dir()
    subprocess.check_call([
        os.environ.get("CC", "cc"), "-O2", "-shared", "-fPIC", "-o",
        str(out),
        str(src), f"-I{D._include_dir()}", f"-L{rt}", "-lTritonCPURuntime", f"-Wl,-rpath,{rt}"
    ])
    return out.read_bytes()


@pytest.fixture(scope="session")
def utils():
    return D.CPUUtils()


@pytest.fixture(scope="session")
def load(kernel_so, utils):
    """load(name) -> address of the test kernel `<name>`."""
    cache = {}

    def get(name):
        if name not in cache:
            handle, function, n_regs, n_spills, n_max_threads = utils.load_binary(name, kernel_so, 0, 0)
            cache[name] = function
        return cache[name]

    return get


def make_launcher(name, signature, constants=None):
    src = types.SimpleNamespace(signature=signature, constants=constants or {}, name=name)
    return D.CPULauncher(src, types.SimpleNamespace(name=name))


def run(launcher, function, grid, *args, num_threads=0, name="k", launch_metadata=None, enter=None, exit=None):
    gx, gy, gz = (tuple(grid) + (1, 1))[:3]
    return launcher(gx, gy, gz, 0, function, (num_threads, name), launch_metadata, enter, exit, *args)


class Grid:
    """Runs the `grid` test kernel and collects what each program recorded."""

    signature = {"counts": "*i32", "coords": "*i32", "order": "*i64", "next": "*i64", "tids": "*i64", "spin": "i32"}

    def __init__(self, load):
        self.function = load("grid")
        self.launcher = make_launcher("grid", self.signature)

    def __call__(self, gx, gy=1, gz=1, spin_us=0, **kw):
        n = gx * gy * gz
        self.counts = torch.zeros(n, dtype=torch.int32)
        self.coords = torch.zeros(n, 6, dtype=torch.int32)
        self.order = torch.full((n, ), -1, dtype=torch.int64)
        self.tids = torch.zeros(n, dtype=torch.int64)
        nxt = torch.zeros(1, dtype=torch.int64)
        run(self.launcher, self.function, (gx, gy, gz), self.counts, self.coords, self.order, nxt, self.tids, spin_us,
            **kw)
        return self

    @property
    def threads(self):
        return set(self.tids.tolist())


@pytest.fixture
def grid(load):
    return Grid(load)


def dump(load, signature, *args):
    """Launches the dump kernel with `signature` (after 'out' and 'n'); returns the slots."""
    launcher = make_launcher("dump", {"out": "*u64", "n": "i32", **signature})
    n = launcher.num_kernel_args - 2
    out = torch.zeros(max(n, 1), dtype=torch.int64)
    run(launcher, load("dump"), (1, ), out, n, *args)
    return [v & (2**64 - 1) for v in out.tolist()[:n]]


# ----------------------------------------------------------------------------------------
# Scalars, pointers, signatures


def f16_bits(x):
    return torch.tensor([x], dtype=torch.float16).view(torch.int16).item() & 0xFFFF


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f64_bits(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


@pytest.mark.parametrize("ty, value, expected", [
    ("i1", True, 1),
    ("i1", False, 0),
    ("u1", 1, 1),
    ("i8", -128, 0x80),
    ("i8", 127, 0x7F),
    ("i8", 255, 0xFF),
    ("i16", -2, 0xFFFE),
    ("i16", 32767, 0x7FFF),
    ("i32", -1, 0xFFFFFFFF),
    ("i32", 2**31 - 1, 0x7FFFFFFF),
    ("i32", -2**31, 0x80000000),
    ("i64", -2**63, 0x8000000000000000),
    ("i64", 2**63 - 1, 0x7FFFFFFFFFFFFFFF),
    ("i64", 2**64 - 1, 0xFFFFFFFFFFFFFFFF),
    ("u8", 200, 200),
    ("u16", 65535, 0xFFFF),
    ("u32", 2**32 - 1, 0xFFFFFFFF),
    ("u32", -1, 0xFFFFFFFF),
    ("u64", 2**64 - 1, 0xFFFFFFFFFFFFFFFF),
    ("u64", 12345678901234, 12345678901234),
    ("fp16", 1.5, 0x3E00),
    ("fp16", -0.0, 0x8000),
    ("fp16", 65504.0, 0x7BFF),
    ("fp16", 1e6, 0x7C00),  # saturates to inf like a cast
    ("fp16", -1e6, 0xFC00),
    ("fp16", 2.0**-24, 0x0001),
    ("bf16", 1.0, 0x3F80),
    ("bf16", -2.5, 0xC020),
    ("bf16", 1 + 2**-8, 0x3F80),  # tie: to even
    ("bf16", 1 + 3 * 2**-8, 0x3F82),  # tie: to even (up)
    ("bf16", 1 + 2**-8 + 2**-30, 0x3F81),  # above the tie: rounding through fp32 would give 0x3F80
    ("bf16", float("inf"), 0x7F80),
    ("bf16", 3.4e38, 0x7F80),  # above bf16's largest finite value (3.39e38) + half an ulp
    ("fp32", 0.1, f32_bits(0.1)),
    ("fp32", -3.0, f32_bits(-3.0)),
    ("fp32", 7, f32_bits(7.0)),  # ints are accepted for floats
    ("fp64", 0.1, f64_bits(0.1)),
    ("fp64", -1e300, f64_bits(-1e300)),
])
def test_scalar_round_trip(load, ty, value, expected):
    assert dump(load, {"x": ty}, value) == [expected]


def test_float_specials(load):
    fp16_nan, bf16_nan, f32_nan, f64_nan = dump(load, {"a": "fp16", "b": "bf16", "c": "fp32", "d": "fp64"}, *[math.nan] * 4)
    assert fp16_nan & 0x7C00 == 0x7C00 and fp16_nan & 0x3FF
    assert bf16_nan & 0x7F80 == 0x7F80 and bf16_nan & 0x7F
    assert math.isnan(struct.unpack("<f", struct.pack("<I", f32_nan))[0])
    assert math.isnan(struct.unpack("<d", struct.pack("<Q", f64_nan))[0])


def test_fp16_bf16_match_torch(load):
    torch.manual_seed(0)
    values = (torch.randn(64) * torch.logspace(-6, 6, 64)).tolist()
    # Values exactly representable in fp32, so torch's fp32 -> bf16 rounding is the reference.
    values = [struct.unpack("<f", struct.pack("<f", v))[0] for v in values]
    sig = {f"h{i}": "fp16" for i in range(len(values))}
    assert dump(load, sig, *values) == [f16_bits(v) for v in values]
    sig = {f"b{i}": "bf16" for i in range(len(values))}
    expected = [b & 0xFFFF for b in torch.tensor(values, dtype=torch.bfloat16).view(torch.int16).tolist()]
    assert dump(load, sig, *values) == expected


def test_all_types_in_one_launch(load):
    sig = {
        "a": "i1", "b": "i8", "c": "i16", "d": "i32", "e": "i64", "f": "u1", "g": "u8", "h": "u16", "i": "u32", "j": "u64",
        "k": "fp16", "l": "bf16", "m": "fp32", "n2": "fp64"
    }
    values = [True, -5, -300, -70000, -2**40, False, 250, 60000, 4000000000, 2**63 + 5, 0.5, 2.0, 0.25, 1e-100]
    assert dump(load, sig, *values) == [
        1, 0xFB, 0xFED4, 0xFFFEEE90, 2**64 - 2**40, 0, 250, 60000, 4000000000, 2**63 + 5, 0x3800, 0x4000,
        f32_bits(0.25),
        f64_bits(1e-100)
    ]


class HasDataPtr:

    def __init__(self, address):
        self.address = address

    def data_ptr(self):
        return self.address


def test_pointers(load):
    t = torch.arange(10, dtype=torch.float32)
    view = t[3:]
    assert dump(load, {"a": "*fp32", "b": "*fp32", "c": "*i8", "d": "*kfp32", "e": "*fp32"}, None, 0xDEADBEEF0, t, view,
                HasDataPtr(4096)) == [0, 0xDEADBEEF0, t.data_ptr(), view.data_ptr(), 4096]


def test_constexpr_slots_are_dropped(load):
    sig = {"a": "i32", "BLOCK": "constexpr", "none": "constexpr", "b": "i64", "FLAG": "constexpr"}
    assert dump(load, sig, 7, 128, None, -3, True) == [7, 2**64 - 3]


def test_trailing_constexprs_may_be_omitted(load):
    """As Triton's own launchers allow (FlagGems re-launches cached kernels that way);
    a missing non-constexpr argument is still an error."""
    sig = {"a": "i32", "BLOCK": "constexpr", "b": "i64", "FLAG": "constexpr", "N": "constexpr"}
    assert dump(load, sig, 7, 128, -3) == [7, 2**64 - 3]
    assert dump(load, sig, 7, 128, -3, True) == [7, 2**64 - 3]
    with pytest.raises(ValueError, match="called with 4 arguments, its signature has 7"):
        dump(load, sig, 7, 128)


def test_tuples_are_flattened(load):
    t = torch.zeros(4)
    sig = {"a": "i32", "tup": ("i32", "constexpr", ("*fp32", "fp32"), ()), "C": "constexpr", "z": "i64"}
    assert dump(load, sig, 1, (2, 99, (t, 0.5), ()), 16, 3) == [1, 2, t.data_ptr(), f32_bits(0.5), 3]


def test_namedtuple_arguments(load):
    import collections
    Pair = collections.namedtuple("Pair", "x y")
    assert dump(load, {"p": ("i32", "i64")}, Pair(5, 6)) == [5, 6]


def test_host_tensor_descriptor(load):
    from triton.tools.tensor_descriptor import TensorDescriptor
    x = torch.zeros(32, 64)
    desc = TensorDescriptor.from_tensor(x, [16, 16])
    slots = dump(load, {"d": "tensordesc<fp32[16, 16]>", "tail": "i32"}, desc, 5)
    # base, shape (i64), strides (i64), padding == "nan", round_f32_to_tf32, shape (i32), strides (i64)
    assert slots == [x.data_ptr(), 32, 64, 64, 1, 0, 0, 32, 64, 64, 1, 5]
    # Inside a tuple, next to constexprs.
    y = torch.zeros(40, dtype=torch.float16)
    desc = TensorDescriptor(y, [40], [1], [8], padding="nan")
    slots = dump(load, {"C": "constexpr", "t": ("i32", "tensordesc<fp16[8]>", "constexpr"), "tail": "i64"}, 64,
                 (7, desc, 3), -1)
    assert slots == [7, y.data_ptr(), 40, 1, 1, 0, 40, 1, 2**64 - 1]


def test_unsupported_type_is_rejected_at_construction():
    with pytest.raises(TypeError, match="'x' has type 'fp8e5'"):
        make_launcher("k", {"x": "fp8e5"})


# ----------------------------------------------------------------------------------------
# Bad arguments


@pytest.mark.parametrize("sig, args, error, match", [
    ({"p": "*fp32"}, (object(), ), TypeError, r"argument 'p'.*tensor.*not object"),
    ({"p": "*fp32"}, (HasDataPtr("x"), ), TypeError, r"argument 'p'.*data_ptr\(\).*not an int"),
    ({"x": "i32"}, (1.5, ), TypeError, r"argument 'x': expected an int, not float"),
    ({"x": "i8"}, (256, ), OverflowError, r"argument 'x'.*256.*8 bits"),
    ({"x": "i8"}, (-129, ), OverflowError, r"argument 'x'"),
    ({"x": "i32"}, (2**32, ), OverflowError, r"argument 'x'"),
    ({"x": "u64"}, (2**64, ), OverflowError, r"argument 'x'"),
    ({"x": "fp32"}, ("1.0", ), TypeError, r"argument 'x': expected a float, not str"),
    ({"t": ("i32", "i32")}, (5, ), TypeError, r"argument 't': expected a tuple, not int"),
    ({"t": ("i32", "i32")}, ((5, ), ), ValueError, r"argument 't': a tuple of 1 elements where the signature has 2"),
    ({"t": ("i32", "i32")}, ((5, 6, 7), ), ValueError, r"argument 't': a tuple of 3 elements"),
    ({"x": "i32"}, (), ValueError, r"kernel 'dump' was called with 2 arguments, its signature has 3"),
    ({"x": "i32"}, (1, 2), ValueError, r"kernel 'dump' was called with 4 arguments, its signature has 3"),
])
def test_bad_arguments_raise(load, sig, args, error, match):
    launcher = make_launcher("dump", {"out": "*u64", "n": "i32", **sig})
    out = torch.zeros(4, dtype=torch.int64)
    with pytest.raises(error, match=match):
        run(launcher, load("dump"), (1, ), out, 0, *args)
    # The process is fine and the next launch works.
    assert dump(load, {"x": "i32"}, 11) == [11]


def test_bad_grid_and_function(load):
    launcher = make_launcher("trivial", {})
    with pytest.raises(ValueError, match="grid dimension x"):
        launcher(-1, 1, 1, 0, load("trivial"), (0, "k"), None, None, None)
    with pytest.raises(ValueError, match="grid dimension y"):
        launcher(1, 2**31, 1, 0, load("trivial"), (0, "k"), None, None, None)
    with pytest.raises(TypeError, match="grid dimension z must be an int"):
        launcher(1, 1, 1.0, 0, load("trivial"), (0, "k"), None, None, None)
    with pytest.raises(TypeError, match="function must be an int"):
        launcher(1, 1, 1, 0, "f", (0, "k"), None, None, None)
    with pytest.raises(ValueError, match="NULL"):
        launcher(1, 1, 1, 0, 0, (0, "k"), None, None, None)
    with pytest.raises(TypeError, match="launcher expects"):
        launcher(1, 1, 1)


# ----------------------------------------------------------------------------------------
# Grid and threads


@pytest.mark.parametrize("gx, gy, gz", [(1, 1, 1), (7, 1, 1), (5, 3, 1), (4, 3, 2), (1, 1, 9), (3, 1, 4)])
def test_grid_coverage(grid, gx, gy, gz):
    g = grid(gx, gy, gz)
    n = gx * gy * gz
    assert g.counts.tolist() == [1] * n
    expected = [[x, y, z, gx, gy, gz] for z in range(gz) for y in range(gy) for x in range(gx)]
    assert g.coords.tolist() == expected


def test_single_thread_runs_in_order_x_fastest(grid):
    g = grid(4, 3, 2, num_threads=1)
    assert g.order.tolist() == list(range(24))
    assert len(g.threads) == 1


def test_empty_grid_runs_nothing_but_calls_hooks(grid):
    calls = []
    g = grid(0, 5, 1, enter=lambda m: calls.append("enter"), exit=lambda m: calls.append("exit"))
    assert g.counts.numel() == 0
    assert calls == ["enter", "exit"]


def contiguous_per_thread(g):
    """Each thread ran one contiguous range of linear program ids."""
    tids = g.tids.tolist()
    changes = sum(1 for a, b in zip(tids, tids[1:]) if a != b)
    return changes == len(set(tids)) - 1


# The thread-count tests below run each thread's share alone (no work stealing): a thread
# that starts late would otherwise find its programs taken by the others, which is the
# point of stealing (test_idle_threads_take_programs_left_in_slow_shares) but hides it.


@pytest.fixture
def static_shares(monkeypatch):
    monkeypatch.setenv("TRITON_CPU_WORK_STEALING", "0")


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_num_threads_option(grid, threads, static_shares):
    g = grid(12, spin_us=200, num_threads=threads)
    assert g.counts.tolist() == [1] * 12
    assert len(g.threads) == threads
    assert contiguous_per_thread(g)


@pytest.mark.parametrize("stealing", ["1", "0"])
def test_idle_threads_take_programs_left_in_slow_shares(load, monkeypatch, stealing):
    """Two threads, 12 programs: the first thread's share (programs 0-5) is slow, 50 ms
    each, the second's instant. With work stealing the second thread, done at once, takes
    programs left in the first share (so that share is not all run by one thread); with
    TRITON_CPU_WORK_STEALING=0 each thread runs exactly its own share."""
    monkeypatch.setenv("TRITON_CPU_WORK_STEALING", stealing)
    launcher = make_launcher("uneven", {"tids": "*i64", "slow": "i32", "spin": "i32"})
    tids = torch.zeros(12, dtype=torch.int64)
    run(launcher, load("uneven"), (12, ), tids, 6, 50000, num_threads=2)
    first, second = set(tids[:6].tolist()), set(tids[6:].tolist())
    assert 0 not in first | second and len(second) == 1
    if stealing == "1":
        assert len(first) == 2 and second < first
    else:
        assert len(first) == 1 and first != second


def test_threads_never_exceed_programs(grid, static_shares):
    g = grid(2, spin_us=200, num_threads=8)
    assert len(g.threads) == 2


def test_one_program_runs_on_the_calling_thread(grid):
    g = grid(1, num_threads=4)
    assert g.threads == {threading.get_native_id()}


def test_env_num_threads(grid, monkeypatch, static_shares):
    monkeypatch.setenv("TRITON_CPU_NUM_THREADS", "1")
    assert len(grid(9, spin_us=100).threads) == 1
    monkeypatch.setenv("TRITON_CPU_NUM_THREADS", "3")
    g = grid(9, spin_us=100)
    assert len(g.threads) == 3 and contiguous_per_thread(g)
    # The per-kernel option wins over the environment.
    assert len(grid(9, spin_us=100, num_threads=2).threads) == 2
    monkeypatch.setenv("TRITON_CPU_NUM_THREADS", "lots")
    with pytest.raises(ValueError, match="TRITON_CPU_NUM_THREADS"):
        grid(9)


def test_default_threads_follow_openmp(grid, monkeypatch, static_shares):
    monkeypatch.delenv("TRITON_CPU_NUM_THREADS", raising=False)
    default = D.default_num_threads()
    # torch and the launcher share the process's libgomp, hence its thread setting.
    assert default == torch.get_num_threads()
    g = grid(16, spin_us=200)
    assert len(g.threads) == min(default, 16)
    if (os.cpu_count() or 1) > 1 and os.environ.get("OMP_NUM_THREADS") != "1":
        assert len(g.threads) > 1
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        assert len(grid(16, spin_us=100).threads) == 1
        torch.set_num_threads(3)
        assert len(grid(16, spin_us=100).threads) == 3
    finally:
        torch.set_num_threads(old)


# Without torch, which would change OpenMP's default when imported.
SUBPROCESS_GRID = textwrap.dedent("""
    import ctypes, sys
    from triton_cpu.backend import driver as D
    if len(sys.argv) > 2:  # a launcher built without OpenMP
        from triton.runtime.build import compile_module_from_file
        rt = D._runtime_dir()
        D._launcher_mod = compile_module_from_file(
            sys.argv[2], "triton_cpu_launcher", library_dirs=[rt], include_dirs=[D._include_dir()],
            libraries=["TritonCPURuntime"], ccflags=["-pthread", "-Wl,-rpath," + rt])
        assert D.launcher_module().HAS_OPENMP == 0
    so = open(sys.argv[1], "rb").read()
    _, fn, *_ = D.CPUUtils().load_binary("grid", so, 0, 0)
    src = type("Src", (), {"signature": {"c": "*i32", "co": "*i32", "o": "*i64", "n": "*i64", "t": "*i64", "s": "i32"}})
    launch = D.CPULauncher(src, type("Meta", (), {"name": "grid"}))
    n = 16
    counts, coords = (ctypes.c_int32 * n)(), (ctypes.c_int32 * (6 * n))()
    order, nxt, tids = (ctypes.c_int64 * n)(), (ctypes.c_int64 * 1)(), (ctypes.c_int64 * n)()
    launch(n, 1, 1, 0, fn, (0, "grid"), None, None, None,
           *[ctypes.addressof(b) for b in (counts, coords, order, nxt, tids)], 200)
    assert list(counts) == [1] * n and "torch" not in sys.modules
    print(len(set(tids)), D.default_num_threads(), D.CPUUtils().get_device_properties(0)["multiprocessor_count"])
""")


@pytest.mark.parametrize("omp, triton_env, expected", [("1", None, 1), ("3", None, 3), ("3", "2", 2)])
def test_omp_num_threads(kernel_so, tmp_path, omp, triton_env, expected):
    so = tmp_path / "k.so"
    so.write_bytes(kernel_so)
    env = dict(os.environ, OMP_NUM_THREADS=omp, TRITON_CPU_WORK_STEALING="0")
    env.pop("TRITON_CPU_NUM_THREADS", None)
    if triton_env:
        env["TRITON_CPU_NUM_THREADS"] = triton_env
    out = subprocess.run([sys.executable, "-c", SUBPROCESS_GRID, str(so)], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    # Threads used, and what the driver reports as the default and as multiprocessor_count.
    assert out.stdout.split() == [str(expected)] * 3


def test_launcher_without_openmp(kernel_so, tmp_path):
    so = tmp_path / "k.so"
    so.write_bytes(kernel_so)
    env = dict(os.environ, OMP_NUM_THREADS="3", TRITON_CPU_WORK_STEALING="0")
    env.pop("TRITON_CPU_NUM_THREADS", None)
    src = os.path.join(os.path.dirname(D.__file__), "launcher.c")
    out = subprocess.run([sys.executable, "-c", SUBPROCESS_GRID, str(so), src], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["3"] * 3


FORK_AFTER_PARALLEL = textwrap.dedent("""
    import os, sys, types, torch
    from triton_cpu.backend import driver as D
    so = open(sys.argv[1], "rb").read()
    _, fn, *_ = D.CPUUtils().load_binary("grid", so, 0, 0)
    src = types.SimpleNamespace(signature={"c": "*i32", "co": "*i32", "o": "*i64", "n": "*i64", "t": "*i64", "s": "i32"})
    launch = D.CPULauncher(src, types.SimpleNamespace(name="grid"))
    def go():
        n = 8
        c = torch.zeros(n, dtype=torch.int32)
        launch(n, 1, 1, 0, fn, (2, "grid"), None, None, None, c, torch.zeros(n, 6, dtype=torch.int32),
               torch.zeros(n, dtype=torch.int64), torch.zeros(1, dtype=torch.int64), torch.zeros(n, dtype=torch.int64), 0)
        return c.tolist() == [1] * n
    assert go()
    pid = os.fork()
    if pid == 0:
        os._exit(0 if go() else 1)
    _, status = os.waitpid(pid, 0)
    print("child", os.waitstatus_to_exitcode(status))
""")


def test_launch_in_forked_child(kernel_so, tmp_path):
    so = tmp_path / "k.so"
    so.write_bytes(kernel_so)
    out = subprocess.run([sys.executable, "-c", FORK_AFTER_PARALLEL, str(so)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "child 0"


# ----------------------------------------------------------------------------------------
# Hooks, GIL, device asserts


def test_hooks_get_launch_metadata(grid):
    seen = []
    metadata = {"name": "grid", "stream": 0}

    def enter(m):
        seen.append(("enter", m, grid.counts.sum().item()))

    def exit_(m):
        seen.append(("exit", m, grid.counts.sum().item()))

    grid(6, launch_metadata=metadata, enter=enter, exit=exit_)
    # Called once each with the launch metadata, before and after the programs ran.
    assert seen == [("enter", metadata, 0), ("exit", metadata, 6)]
    assert seen[0][1] is metadata


def test_hook_chains(grid):
    empty_enter, empty_exit = knobs.HookChain(), knobs.HookChain(reversed=True)
    grid(3, enter=empty_enter, exit=empty_exit)  # skipped without a call
    seen = []
    chain = knobs.HookChain()
    chain.add(lambda m: seen.append(("a", m)))
    chain.add(lambda m: seen.append(("b", m)))
    grid(3, launch_metadata="meta", enter=chain, exit=empty_exit)
    assert seen == [("a", "meta"), ("b", "meta")]


def test_enter_hook_error_skips_the_launch(grid):

    def enter(m):
        raise KeyError("boom")

    exits = []
    with pytest.raises(KeyError, match="boom"):
        grid(4, enter=enter, exit=exits.append)
    assert grid.counts.tolist() == [0] * 4 and exits == []


def test_gil_is_released_while_kernels_run(load):
    launcher = make_launcher("sleepy", {"ms": "i32"})
    fn = load("sleepy")
    progress = []
    stop = threading.Event()

    def count():
        n = 0
        while not stop.is_set():
            n += 1
            if n % 1000 == 0:
                progress.append(time.perf_counter())

    worker = threading.Thread(target=count)
    worker.start()
    try:
        time.sleep(0.05)
        for num_threads in (1, 2):
            start = time.perf_counter()
            run(launcher, fn, (1, ), 300, num_threads=num_threads)
            end = time.perf_counter()
            during = [t for t in progress if start < t < end]
            # The counting thread kept running for (nearly) the whole 300 ms sleep.
            assert end - start >= 0.29
            assert during and during[-1] - during[0] > 0.2, f"{len(during)} ticks during the launch"
    finally:
        stop.set()
        worker.join()


@pytest.mark.parametrize("threads", [1, 2])
def test_device_assert_raises_and_next_launch_works(load, threads):
    launcher = make_launcher("asserting", {"out": "*i32", "bad": "i32"})
    fn = load("asserting")
    out = torch.zeros(8, dtype=torch.int32)
    exits = []
    with pytest.raises(RuntimeError) as info:
        run(launcher, fn, (8, ), out, 3, num_threads=threads, name="asserting", exit=exits.append)
    msg = str(info.value)
    assert "device-side assert" in msg
    assert "kernel.py:42" in msg and "block: [3, 0, 0]" in msg and "x > 0" in msg
    assert "kernel 'asserting'" in msg
    assert exits == [None]  # the exit hook ran on the error path too
    # Every other program still ran.
    assert out.tolist() == [1, 1, 1, 0, 1, 1, 1, 1]
    out.zero_()
    run(launcher, fn, (8, ), out, -1, num_threads=threads)
    assert out.tolist() == [1] * 8


def test_device_assert_with_failing_exit_hook(load):
    launcher = make_launcher("asserting", {"out": "*i32", "bad": "i32"})

    def exit_(m):
        raise ValueError("hook failed")

    with pytest.raises(RuntimeError, match="device-side assert") as info:
        run(launcher, load("asserting"), (2, ), torch.zeros(2, dtype=torch.int32), 0, exit=exit_)
    assert isinstance(info.value.__context__, ValueError)
    run(launcher, load("asserting"), (2, ), torch.zeros(2, dtype=torch.int32), -1)


# ----------------------------------------------------------------------------------------
# Driver, utils, benchmarking


def test_load_binary_contract(kernel_so, utils):
    module, function, n_regs, n_spills, n_max_threads = utils.load_binary("trivial", kernel_so, 0, 0)
    assert module and function
    assert n_regs > 0 and n_spills == 0 and n_max_threads >= 128 * 32
    # Same bytes, same file: dlopen hands back the same handle (reference counted).
    module2, function2, *_ = utils.load_binary("trivial", kernel_so, 0, 0)
    assert (module2, function2) == (module, function)
    utils.unload_module(module2)
    with pytest.raises(RuntimeError, match="no_such"):
        utils.load_binary("no_such", kernel_so, 0, 0)


KERNELS_ALIVE_AT_EXIT = r"""
import importlib.util, sys, torch
runs = []
for _ in range(2):  # two copies of one module, as a benchmark comparing variants holds them
    spec = importlib.util.spec_from_file_location("copy", sys.argv[1])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    x = torch.zeros(100)
    mod.inc[(1,)](x, 100, BLOCK=128)
    assert torch.equal(x, torch.ones(100))
    runs.append(mod.inc)
print("ok")
"""

KERNEL_MODULE = """
import triton, triton.language as tl
@triton.jit
def inc(x_ptr, n, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(x_ptr + o, tl.load(x_ptr + o, mask=o < n) + 1, mask=o < n)
"""


def test_kernels_alive_at_exit_unload_quietly(tmp_path):
    """CompiledKernel.__del__ runs during interpreter shutdown for kernels still held:
    the driver must not print an ignored exception (an import failing at shutdown)."""
    src = tmp_path / "kernel_module.py"
    src.write_text(KERNEL_MODULE)
    out = subprocess.run([sys.executable, "-c", KERNELS_ALIVE_AT_EXIT, str(src)], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
    assert "Exception ignored" not in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_driver_is_active_here():
    drv = triton.runtime.driver.active
    assert type(drv).__name__ == "CPUDriver"
    assert isinstance(drv, D.CPUDriver)
    from triton_cpu import llvm
    target = drv.get_current_target()
    assert target == GPUTarget("cpu", llvm.host().cpu, 1)
    assert isinstance(target.arch, str) and target.arch
    assert drv.get_active_torch_device() == torch.device("cpu")
    assert drv.get_current_device() == torch.cpu.current_device()
    assert drv.get_current_stream() == 0 and drv.get_current_stream(0) == 0
    assert drv.launcher_cls is D.CPULauncher
    assert isinstance(drv.utils, D.CPUUtils)
    from triton_cpu.backend.benchmarker import do_bench_warm
    assert drv.get_benchmarker() is do_bench_warm


@pytest.mark.parametrize("env, expected", [("cpu", "True"), ("cuda", "False"), ("hip", "False"), ("", "True")])
def test_is_active(env, expected):
    code = "from triton_cpu.backend.driver import CPUDriver; print(CPUDriver.is_active())"
    environ = dict(os.environ, TRITON_DEFAULT_BACKEND=env)
    out = subprocess.run([sys.executable, "-c", code], env=environ, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    # With no choice made, the CPU driver is active when torch sees no GPU (this machine).
    if env == "" and torch.cuda.is_available():
        expected = "False"
    assert out.stdout.strip() == expected


def test_default_backend_selects_cpu_driver():
    code = "import triton; print(type(triton.runtime.driver.active).__name__)"
    environ = dict(os.environ, TRITON_DEFAULT_BACKEND="cpu")
    out = subprocess.run([sys.executable, "-c", code], env=environ, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "CPUDriver"


def test_map_python_to_cpp_type():
    drv = D.CPUDriver()
    assert drv.map_python_to_cpp_type("*fp32") == "void*"
    assert drv.map_python_to_cpp_type("*ki8") == "void*"
    assert drv.map_python_to_cpp_type("i32") == "int32_t"
    assert drv.map_python_to_cpp_type("u64") == "uint64_t"
    assert drv.map_python_to_cpp_type("fp32") == "float"
    assert drv.map_python_to_cpp_type("fp64") == "double"
    assert drv.map_python_to_cpp_type("bf16") == "uint16_t"
    with pytest.raises(ValueError):
        drv.map_python_to_cpp_type("nvTmaDesc")


def test_device_properties(utils, kernel_so):
    props = utils.get_device_properties(0)
    assert utils.get_device_properties(None) == props  # any device argument works
    for key in ("multiprocessor_count", "max_shared_mem", "max_num_regs", "warpSize", "arch", "mem_clock_rate",
                "mem_bus_width"):
        assert key in props
    assert props["multiprocessor_count"] == D.default_num_threads() >= 1
    assert props["warpSize"] == 1
    assert props["max_shared_mem"] >= 1 << 20
    assert props["arch"] == triton.runtime.driver.active.get_current_target().arch
    assert 10 < triton.testing.get_dram_gbps() < 10000
    # Tutorial 02's occupancy formula stays finite and positive for every num_warps.
    _, _, n_regs, _, _ = utils.load_binary("trivial", kernel_so, 0, 0)
    for num_warps in (1, 2, 4, 8, 16, 32, 128):
        occupancy = props["max_num_regs"] // (n_regs * props["warpSize"] * num_warps)
        assert occupancy >= 1
        assert props["multiprocessor_count"] * min(occupancy, props["max_shared_mem"] // 1) >= 1


def test_device_interface_events():
    di = triton.runtime.driver.active.get_device_interface()
    di.synchronize()
    assert di.current_device() == 0
    start, end = di.Event(enable_timing=True), di.Event(enable_timing=True)
    start.record()
    time.sleep(0.02)
    end.record()
    assert 15 <= start.elapsed_time(end) < 1000
    with pytest.raises(RuntimeError):
        di.Event().elapsed_time(end)


def test_benchmark_cache():
    drv = triton.runtime.driver.active
    cache = drv.get_empty_cache_for_benchmark()
    llc = max(D.cache_sizes().values())
    assert cache.device.type == "cpu"
    assert cache.numel() * cache.element_size() >= max(2 * llc, 64 << 20)
    assert drv.get_empty_cache_for_benchmark() is cache
    cache.fill_(3)
    drv.clear_cache(cache)
    assert cache.count_nonzero().item() == 0


def test_do_bench(grid):
    ms = triton.testing.do_bench(lambda: grid(4, spin_us=500, num_threads=1), warmup=5, rep=30)
    # Four programs of 0.5 ms on one thread, plus setup.
    assert 1.8 < ms < 50
    q = triton.testing.do_bench(lambda: grid(1), warmup=1, rep=5, quantiles=[0.2, 0.5, 0.8])
    assert len(q) == 3 and 0 < q[0] <= q[1] <= q[2]


def test_warm_benchmarker(grid, monkeypatch):
    """The autotuner's timer: do_bench's statistics of per-call times, without flushing the
    cache between calls (a flush of a cache-sized buffer costs ~40 ms on a 260 MB L3)."""
    drv = triton.runtime.driver.active
    bench = drv.get_benchmarker()

    def no_flush(cache):
        raise AssertionError("the warm benchmarker flushed the cache")
    monkeypatch.setattr(drv, "clear_cache", no_flush)
    # Four programs of 0.5 ms on one thread: 2 ms a call, plus setup.
    run = lambda: grid(4, spin_us=500, num_threads=1)  # noqa: E731
    times = bench(run, warmup=2, rep=20, return_mode="all")
    assert len(times) >= 10 and min(times) > 1.9 and statistics.median(times) < 50  # one call may be preempted
    lo, med, hi = bench(run, warmup=1, rep=20, quantiles=[0.0, 0.5, 1.0])
    assert 1.9 < lo <= med <= hi < 50
    assert 1.9 < bench(run, warmup=1, rep=10) < 50  # the mean
    assert bench(run, warmup=1, rep=10, quantiles=[0.5]) > 1.9  # one quantile: a number
    with pytest.raises(ValueError):
        bench(run, warmup=1, rep=1, quantiles=[1.5])
    # A call's own time, not a flush's: a 20-us call is timed as such, many times in 10 ms.
    short = bench(lambda: grid(1, spin_us=20, num_threads=1), warmup=1, rep=10, return_mode="all")
    assert len(short) > 50 and statistics.median(short) < 1.0
    # grad_to_none: the gradients are reset before every call.
    x = torch.zeros(3, requires_grad=True)
    seen = []

    def step():
        seen.append(x.grad is None)
        x.grad = torch.ones(3)
    bench(step, warmup=0, rep=1, grad_to_none=[x])
    assert len(seen) >= 14 and all(seen)  # 1 + 3 untimed calls, 10 timed


def test_launch_overhead_is_small(load):
    launcher = make_launcher("trivial", {"p": "*fp32", "n": "i32", "BLOCK": "constexpr"})
    fn = load("trivial")
    x = torch.zeros(16)
    enter, exit_ = knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook
    packed = (0, "trivial")
    for _ in range(100):
        launcher(1, 1, 1, 0, fn, packed, None, enter, exit_, x, 16, 64)
    n = 5000
    start = time.perf_counter()
    for _ in range(n):
        launcher(1, 1, 1, 0, fn, packed, None, enter, exit_, x, 16, 64)
    per_call_us = (time.perf_counter() - start) / n * 1e6
    # Typically around 1 us; the bound leaves room for a loaded CI machine.
    assert per_call_us < 50


def test_launcher_built_with_the_package():
    """The launcher comes from triton_cpu/_C (built at install time: no C compiler on the
    first kernel) while it matches the installed launcher.c and runtime.h; after an edit
    of either (an editable install), the one built on first use."""
    import hashlib
    import importlib
    mod = D.launcher_module()
    src, header = D._launcher_sources()
    assert mod.SOURCE_HASH == hashlib.sha256(src + header).hexdigest()
    assert mod.__name__ == "triton_cpu._C.triton_cpu_launcher" and mod.HAS_OPENMP == 1
    prebuilt = importlib.import_module("triton_cpu._C.triton_cpu_launcher")
    orig = D._launcher_sources
    try:
        D._launcher_sources = lambda: (src + b"\n/* edited */\n", header)
        assert D._prebuilt_launcher() is None
    finally:
        D._launcher_sources = orig
    assert D._prebuilt_launcher() is prebuilt
