"""tcpu_print and tcpu_assert_fail of libTritonCPURuntime, called through ctypes.

tcpu_print writes with C stdio, which pytest's capsys does not see, so the calls run in a
child process whose stdout is a pipe (as when Triton's own tests capture a subprocess).

The expected lines follow Triton's GPU lowering (PrintOpToLLVM.cpp and the NVIDIA printf
argument promotion) and the line formats that upstream test_subprocess.py checks:
    pid (<x>, <y>, <z>) idx (<i0>, ...)<prefix>[(operand <n>) ]<value>
The interpreter prints whole numpy arrays instead ("(x, y, z) prefix [v0 v1 ...]"), so it
only serves as a cross-check of the element values (test_values_agree_with_interpreter).
"""
import ctypes
import json
import math
import os
import re
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import triton_cpu

LIB = os.path.join(os.path.dirname(triton_cpu.__file__), "_C", "libTritonCPURuntime.so")

UINT, SINT, FLOAT, BF16, PTR = 0, 1, 2, 3, 4

CHILD = textwrap.dedent(r"""
    import ctypes, json, os, sys, threading
    lib = ctypes.CDLL(sys.argv[1])
    f = lib.tcpu_print
    i32 = ctypes.c_int32
    f.argtypes = [ctypes.c_char_p, i32, i32, i32, i32, ctypes.POINTER(i32), ctypes.POINTER(i32),
                  i32, i32, i32, i32, i32, ctypes.c_uint64]
    f.restype = None

    def call(c):
        rank = len(c["idx"])
        arr = i32 * max(rank, 1)
        idx = arr(*c["idx"]) if rank else None
        shape = arr(*c["shape"]) if c.get("shape") is not None else None
        f(c["prefix"].encode() if c["prefix"] is not None else None, *c["pid"], rank, idx, shape,
          c["operand"], c["num_operands"], c["type"], c["bits"], c["hex"], c["value"])

    spec = json.load(sys.stdin)
    if spec.get("threads"):
        ts = [threading.Thread(target=lambda cs=cs: [call(c) for c in cs]) for cs in spec["calls"]]
        for t in ts: t.start()
        for t in ts: t.join()
    else:
        for c in spec["calls"]:
            call(c)
    if spec.get("hard_exit"):
        os._exit(0)  # skips stdio's exit-time flush: lines must already be on fd 1
""")


def P(value, type=SINT, bits=32, idx=(), shape=None, prefix=" x: ", pid=(0, 0, 0), operand=0,
      num_operands=1, hex=False):
    """One tcpu_print call (shape defaults to no padding only when idx is empty)."""
    return dict(prefix=prefix, pid=list(pid), idx=list(idx), shape=None if shape is None else list(shape),
                operand=operand, num_operands=num_operands, type=type, bits=bits, hex=int(hex),
                value=value & (2**64 - 1))


def run(calls, threads=False, hard_exit=False):
    spec = dict(calls=calls, threads=threads, hard_exit=hard_exit)
    r = subprocess.run([sys.executable, "-c", CHILD, LIB], input=json.dumps(spec), capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    assert r.stdout.endswith("\n") or r.stdout == ""
    return r.stdout.split("\n")[:-1]


def check(pairs):
    """pairs: (call, expected line); all calls run in one child process."""
    lines = run([c for c, _ in pairs])
    assert lines == [e for _, e in pairs]


def f32(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f64(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def f16(x):
    return int(np.array(x, np.float16).view(np.uint16))


def bf16(x):
    return f32(x) >> 16  # the values used here are exact in bf16


# --- layout of the line --------------------------------------------------------------------


def test_scalar_and_message_only():
    check([
        # print("x:", scalar): upstream expects "pid (0, 0, 0) idx () x: 42"
        (P(42), "pid (0, 0, 0) idx () x: 42"),
        # print("", tl.program_id(0)): the frontend makes the prefix ": "
        (P(0, prefix=": "), "pid (0, 0, 0) idx (): 0"),
        # print("no arg"): no operands, the prefix (" no arg") follows the pid directly
        (P(0, prefix=" no arg", num_operands=0), "pid (0, 0, 0) no arg"),
        (P(7, prefix=" x: ", pid=(3, 1, 2)), "pid (3, 1, 2) idx () x: 7"),
        (P(7, prefix=None), "pid (0, 0, 0) idx ()7"),
        (P(7, prefix=""), "pid (0, 0, 0) idx ()7"),
        # pids are large numbers printed unpadded
        (P(1, pid=(65535, 123456, 0)), "pid (65535, 123456, 0) idx () x: 1"),
    ])


def test_prefix_verbatim():
    # The prefix is whatever the TTIR op carries (the frontend's munging happens before):
    # with and without the trailing ": ", with '%' (never a format directive), and long ones.
    long_prefix = " " + "p" * 5000 + ": "
    check([
        (P(5, idx=[1], shape=[4], prefix=" x: "), "pid (0, 0, 0) idx (1) x: 5"),
        (P(5, idx=[1], shape=[4], prefix=" x "), "pid (0, 0, 0) idx (1) x 5"),
        (P(5, idx=[1], shape=[4], prefix="x"), "pid (0, 0, 0) idx (1)x5"),
        (P(5, idx=[1], shape=[4], prefix=" 100%d %s: "), "pid (0, 0, 0) idx (1) 100%d %s: 5"),
        (P(5, idx=[1], shape=[4], prefix=long_prefix), "pid (0, 0, 0) idx (1)" + long_prefix + "5"),
    ])


@pytest.mark.parametrize("n", [1, 2, 9, 10, 11, 16, 99, 100, 101, 128, 1000, 1024])
def test_1d_index_padding(n):
    # width = ceil(log10(n)): 128 elements print as "{i:3}", as in upstream test_subprocess.
    w = math.ceil(math.log10(n))
    ids = sorted({0, 1, n // 2, n - 1})
    check([(P(i, idx=[i], shape=[n]), f"pid (0, 0, 0) idx ({i:{w}}) x: {i}" if w else f"pid (0, 0, 0) idx ({i}) x: {i}")
           for i in ids])


def test_2d_and_3d_index_padding():
    pairs = []
    # upstream device_print_large: a (64, 128) tensor, grid (1, 2): idx ({j:2}, {k:3})
    for i, j, k in [(0, 0, 0), (1, 5, 7), (1, 63, 127), (0, 10, 99)]:
        pairs.append((P(1, idx=[j, k], shape=[64, 128], pid=(0, i, 0)), f"pid (0, {i}, 0) idx ({j:2}, {k:3}) x: 1"))
    # upstream device_print_2d_tensor with 32-wide warps: (4, 32) -> idx ({x}, {y:2}) and prefix ": "
    for x, y in [(0, 0), (3, 31), (2, 5)]:
        pairs.append((P(x * 32 + y, idx=[x, y], shape=[4, 32], prefix=": "), f"pid (0, 0, 0) idx ({x}, {y:2}): {x * 32 + y}"))
    # 3-D, including an extent of 1 (width 0) and an exact power of ten (width 1)
    for a, b, c in [(0, 0, 0), (1, 9, 511), (1, 3, 42)]:
        pairs.append((P(-1, idx=[a, b, c], shape=[2, 10, 512]), f"pid (0, 0, 0) idx ({a}, {b}, {c:3}) x: -1"))
    pairs.append((P(3, idx=[0, 7, 0], shape=[1, 1000, 1]), "pid (0, 0, 0) idx (0,   7, 0) x: 3"))
    # no shape: no padding
    pairs.append((P(3, idx=[5, 17]), "pid (0, 0, 0) idx (5, 17) x: 3"))
    check(pairs)


def test_rank_truncation():
    # PrintOpToLLVM keeps within 32 printf operands: index 27 on becomes "... (truncated)".
    rank = 30
    idx = list(range(rank))
    shape = [100] * rank
    head = ", ".join(f"{i:2}" for i in range(27))
    check([(P(9, idx=idx, shape=shape), f"pid (0, 0, 0) idx ({head}, ... (truncated)) x: 9")])


def test_multiple_operands():
    # upstream print_multiple_args: print("", x, y) -> prefix ": ", "(operand n) " before the value
    pairs = []
    for i in [0, 5, 127]:
        pairs.append((P(i, idx=[i], shape=[128], prefix=": ", operand=0, num_operands=2),
                      f"pid (0, 0, 0) idx ({i:3}): (operand 0) {i}"))
        pairs.append((P(1, idx=[i], shape=[128], prefix=": ", operand=1, num_operands=2),
                      f"pid (0, 0, 0) idx ({i:3}): (operand 1) 1"))
    pairs.append((P(f32(2.5), type=FLOAT, bits=32, prefix=" a: ", operand=2, num_operands=3),
                  "pid (0, 0, 0) idx () a: (operand 2) 2.500000"))
    check(pairs)


# --- values --------------------------------------------------------------------------------

INT_CASES = [
    # (type, bits, value, decimal, hex): ints below 32 bits are promoted to i32 by sext (signed)
    # or zext (unsigned) before printf, as the NVIDIA backend does; hex pads to bits/4 digits
    # but prints the promoted value, so negative narrow ints show 8 hex digits there too.
    (SINT, 8, 5, "5", "0x05"),
    (SINT, 8, -1, "-1", "0xffffffff"),
    (SINT, 8, -128, "-128", "0xffffff80"),
    (SINT, 8, 127, "127", "0x7f"),
    (UINT, 8, 255, "255", "0xff"),
    (UINT, 8, 128, "128", "0x80"),
    (SINT, 16, -32768, "-32768", "0xffff8000"),
    (SINT, 16, 42, "42", "0x002a"),
    (UINT, 16, 65535, "65535", "0xffff"),
    (SINT, 32, -(2**31), "-2147483648", "0x80000000"),
    (SINT, 32, 2**31 - 1, "2147483647", "0x7fffffff"),
    (SINT, 32, -5, "-5", "0xfffffffb"),
    (UINT, 32, 2**31 + 3, "2147483651", "0x80000003"),
    (UINT, 32, 2**32 - 1, "4294967295", "0xffffffff"),
    (SINT, 64, -(2**63), "-9223372036854775808", "0x8000000000000000"),
    (SINT, 64, -1, "-1", "0xffffffffffffffff"),
    (SINT, 64, 2**40 + 7, "1099511627783", "0x0000010000000007"),
    (UINT, 64, 2**64 - 1, "18446744073709551615", "0xffffffffffffffff"),
    (UINT, 64, 12, "12", "0x000000000000000c"),
    # bool: i1, isSigned false in the frontend -> zext; hex width 1/4 = 0 -> "0x%00x"
    (UINT, 1, 1, "1", "0x1"),
    (UINT, 1, 0, "0", "0x0"),
    (SINT, 1, 1, "-1", "0xffffffff"),  # a signed i1 would be sign-extended
]


@pytest.mark.parametrize("hex", [False, True])
def test_integers(hex):
    check([(P(v, type=t, bits=b, hex=hex), f"pid (0, 0, 0) idx () x: {h if hex else d}") for t, b, v, d, h in INT_CASES])


def test_integer_value_high_bits_ignored():
    # The compiler may pass a narrow int sign- or zero- or any-extended: only the low bits count.
    check([
        (P(0xABCD_0000_0000_00FF, type=SINT, bits=8), "pid (0, 0, 0) idx () x: -1"),
        (P(0xABCD_0000_0000_00FF, type=UINT, bits=8), "pid (0, 0, 0) idx () x: 255"),
        (P(-1, type=UINT, bits=16), "pid (0, 0, 0) idx () x: 65535"),
        (P(0xFFFF_FFFF_0000_0007, type=SINT, bits=32), "pid (0, 0, 0) idx () x: 7"),
        (P(2, type=UINT, bits=1), "pid (0, 0, 0) idx () x: 0"),
    ])


def test_upstream_int_lines():
    # The lines upstream test_subprocess.py expects for 128-element int tensors.
    pairs = []
    for i in range(128):
        pairs.append((P(i, idx=[i], shape=[128]), f"pid (0, 0, 0) idx ({i:3}) x: {i}"))
        pairs.append((P(-i, idx=[i], shape=[128]), f"pid (0, 0, 0) idx ({i:3}) x: {-i}"))
        pairs.append((P(2**31 + i, type=UINT, idx=[i], shape=[128]), f"pid (0, 0, 0) idx ({i:3}) x: {2**31 + i}"))
        pairs.append((P(128 + i, type=UINT, bits=8, idx=[i], shape=[128]), f"pid (0, 0, 0) idx ({i:3}) x: {128 + i}"))
        pairs.append((P(i, bits=16, idx=[i], shape=[128], hex=True), f"pid (0, 0, 0) idx ({i:3}) x: 0x{i:04x}"))
        pairs.append((P(i, bits=32, idx=[i], shape=[128], hex=True), f"pid (0, 0, 0) idx ({i:3}) x: 0x{i:08x}"))
        pairs.append((P(i, bits=64, idx=[i], shape=[128], hex=True), f"pid (0, 0, 0) idx ({i:3}) x: 0x{i:016x}"))
        pairs.append((P(int(i > 0), type=UINT, bits=1, idx=[i], shape=[128]), f"pid (0, 0, 0) idx ({i:3}) x: {int(i > 0)}"))
        for t in (np.float16, np.float32, np.float64):
            pairs.append((float_call(t, float(i), idx=[i], shape=[128]), f"pid (0, 0, 0) idx ({i:3}) x: {i}.000000"))
    check(pairs)


def float_call(t, x, **kw):
    if t == np.float16:
        return P(f16(x), type=FLOAT, bits=16, **kw)
    if t == "bf16":
        return P(bf16(x), type=BF16, bits=16, **kw)
    if t == np.float32:
        return P(f32(x), type=FLOAT, bits=32, **kw)
    return P(f64(x), type=FLOAT, bits=64, **kw)


FLOAT_TYPES = [np.float16, "bf16", np.float32, np.float64]


def test_floats():
    # Floats are widened to double and printed "%f" (6 decimals, C rounding, inf/nan spelled
    # by the C library: glibc writes "-nan" for a NaN with the sign bit).
    pairs = []
    common = [(0.0, "0.000000"), (-0.0, "-0.000000"), (1.5, "1.500000"), (-2.25, "-2.250000"),
              (42.0, "42.000000"), (0.125, "0.125000"), (float("inf"), "inf"), (float("-inf"), "-inf"),
              (float("nan"), "nan"), (-float("nan"), "-nan")]
    for t in FLOAT_TYPES:
        for x, s in common:
            pairs.append((float_call(t, x), f"pid (0, 0, 0) idx () x: {s}"))
    pairs += [
        (P(f16(65504.0), type=FLOAT, bits=16), "pid (0, 0, 0) idx () x: 65504.000000"),
        (P(0x0001, type=FLOAT, bits=16), "pid (0, 0, 0) idx () x: 0.000000"),  # smallest subnormal
        (P(f16(0.1), type=FLOAT, bits=16), "pid (0, 0, 0) idx () x: 0.099976"),  # fp16 0.1 is 0.0999755859375
        (P(0x7F7F, type=BF16, bits=16), "pid (0, 0, 0) idx () x: " + f"{float.fromhex('0x1.fep+127'):f}"),
        (P(0x3DCD, type=BF16, bits=16), "pid (0, 0, 0) idx () x: 0.100098"),  # bf16 0.1 is 0.10009765625
        (P(f32(0.1), type=FLOAT, bits=32), "pid (0, 0, 0) idx () x: 0.100000"),
        (P(f32(1e-7), type=FLOAT, bits=32), "pid (0, 0, 0) idx () x: 0.000000"),
        (P(f32(3.4028234663852886e38), type=FLOAT, bits=32), f"pid (0, 0, 0) idx () x: {3.4028234663852886e38:f}"),
        (P(f32(-1234567.0), type=FLOAT, bits=32), "pid (0, 0, 0) idx () x: -1234567.000000"),
        (P(f64(2.0000005), type=FLOAT, bits=64), "pid (0, 0, 0) idx () x: 2.000001"),  # %f rounds
        (P(f64(1e300), type=FLOAT, bits=64), f"pid (0, 0, 0) idx () x: {1e300:f}"),
        (P(f64(-1.7976931348623157e308), type=FLOAT, bits=64), f"pid (0, 0, 0) idx () x: {-1.7976931348623157e308:f}"),
    ]
    check(pairs)


HEX_FLOAT_RE = re.compile(r"x: (-?0x[0-9a-f]+(?:\.[0-9a-f]*)?p[+-]\d+|-?inf|-?nan)$")


def test_floats_hex():
    # hex=True prints floats "%a" of the double (upstream compares float.hex after parsing).
    pairs = []
    for t in FLOAT_TYPES:
        for x, s in [(1.0, "0x1p+0"), (1.5, "0x1.8p+0"), (-1.5, "-0x1.8p+0"), (-0.0, "-0x0p+0"),
                     (6.0, "0x1.8p+2"), (float("inf"), "inf"), (float("-inf"), "-inf")]:
            pairs.append((float_call(t, x, hex=True), f"pid (0, 0, 0) idx () x: {s}"))
    pairs += [
        (P(f32(0.1), type=FLOAT, bits=32, hex=True), "pid (0, 0, 0) idx () x: 0x1.99999ap-4"),
        (P(f64(0.1), type=FLOAT, bits=64, hex=True), "pid (0, 0, 0) idx () x: 0x1.999999999999ap-4"),
        (P(0x0001, type=FLOAT, bits=16, hex=True), "pid (0, 0, 0) idx () x: 0x1p-24"),
        (P(0x3DCD, type=BF16, bits=16, hex=True), "pid (0, 0, 0) idx () x: 0x1.9ap-4"),
    ]
    check(pairs)
    # upstream device_print_hex for float16/32/64: the values float(dtype(i)).hex(), i < 128
    for t in (np.float16, np.float32, np.float64):
        lines = run([float_call(t, float(i), idx=[i], shape=[128], hex=True) for i in range(128)])
        got = [float.fromhex(HEX_FLOAT_RE.search(line).group(1)).hex() for line in lines]
        assert got == [float(t(i)).hex() for i in range(128)]


def test_pointers():
    # "%p": upstream only checks the "0x" start; glibc writes NULL as "(nil)".
    check([
        (P(0x7F12_3456_7890, type=PTR, bits=64, prefix=" ptr: ", idx=[3], shape=[128]),
         "pid (0, 0, 0) idx (  3) ptr: 0x7f1234567890"),
        (P(0xDEADBEEF, type=PTR, bits=64, prefix=" ptr: ", hex=True), "pid (0, 0, 0) idx () ptr: 0xdeadbeef"),
        (P(0, type=PTR, bits=64, prefix=" ptr: "), "pid (0, 0, 0) idx () ptr: (nil)"),
    ])


def test_unsupported_type_is_reported():
    lines = run([P(1, type=SINT, bits=0), P(1, type=FLOAT, bits=8), P(1, type=17)])
    assert all("unsupported type" in line for line in lines) and len(lines) == 3


# --- output behaviour ----------------------------------------------------------------------


def test_output_flushed_per_line():
    # os._exit skips stdio's exit flush: every line must already be written.
    calls = [P(i, idx=[i], shape=[64]) for i in range(64)]
    assert run(calls, hard_exit=True) == [f"pid (0, 0, 0) idx ({i:2}) x: {i}" for i in range(64)]


def test_threads_do_not_interleave_lines():
    # ctypes drops the GIL around the call, so these threads print concurrently; long
    # prefixes (heap-buffered lines) make a torn line likely if writes were split.
    nthreads, per = 4, 300
    calls = [[P(i, idx=[i], shape=[per], pid=(t, 0, 0), prefix=" " + chr(ord("a") + t) * (100 + 1000 * (i % 4)) + ": ")
              for i in range(per)] for t in range(nthreads)]
    lines = run(calls, threads=True)
    assert len(lines) == nthreads * per
    seen = {}
    for line in lines:
        m = re.fullmatch(r"pid \((\d), 0, 0\) idx \( *(\d+)\) ([a-d]+): (\d+)", line)
        assert m, line[:200]
        t, i = int(m.group(1)), int(m.group(2))
        assert set(m.group(3)) == {chr(ord("a") + t)} and len(m.group(3)) == 100 + 1000 * (i % 4)
        assert int(m.group(4)) == i
        assert seen.get(t, -1) == i - 1  # each thread's lines in its order
        seen[t] = i


# --- cross-check of the values with Triton's interpreter -----------------------------------


def test_values_agree_with_interpreter(tmp_path):
    """The interpreter prints each operand as one numpy array ("(0, 0, 0)  x:  [v0 v1 ...]"),
    so only its element values can be compared: decimal ints, hex of unsigned ints (its hex of
    negative ints is Python's "0x-1" style), floats parsed back into their dtype, hex floats.
    bfloat16 is left out: the interpreter prints its raw 16-bit patterns.
    Run in a child so the interpreter's prints land on a pipe as ours do."""
    script = tmp_path / "interp.py"
    script.write_text(textwrap.dedent("""
        import os
        os.environ["TRITON_INTERPRET"] = "1"
        import torch, triton, triton.language as tl

        @triton.jit
        def k(X, HEX: tl.constexpr, N: tl.constexpr):
            x = tl.load(X + tl.arange(0, N))
            tl.device_print("x: ", x, hex=HEX)

        bits = {"float16": torch.int16, "float32": torch.int32, "float64": torch.int64}
        for dt in ["int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64"]:
            x = torch.tensor([0, 1, 5, 100, 127, 3, 64, 17], dtype=getattr(torch, dt))
            if dt.startswith("int"):
                x[1] = -1
                x[5] = -100
            elif dt.startswith("float"):
                x = (x.to(torch.float64) * 0.37 - 3).to(getattr(torch, dt))
            print("DTYPE", dt, flush=True)
            k[(1,)](x, False, 8)
            if not dt.startswith("int"):
                print("DTYPE", dt + "-hex", flush=True)
                k[(1,)](x, True, 8)
            print("DATA", " ".join(str(v) for v in x.view(bits.get(dt, x.dtype)).tolist()), flush=True)
    """))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    if r.returncode != 0 and "No module named 'torch'" in r.stderr:
        pytest.skip("torch is not installed")
    assert r.returncode == 0, r.stderr
    blocks, cur = {}, None
    for line in r.stdout.splitlines():
        if line.startswith("DTYPE "):
            cur = line.split()[1]
            blocks[cur] = ""
        elif line.startswith("DATA "):
            blocks[cur.removesuffix("-hex") + ":data"] = [int(v) for v in line.split()[1:]]
        else:
            blocks[cur] += line + " "

    def values(block):
        return re.search(r"\[(.*)\]", block, re.S).group(1).split()

    codes = {"int8": (SINT, 8), "int16": (SINT, 16), "int32": (SINT, 32), "int64": (SINT, 64), "uint8": (UINT, 8),
             "float16": (FLOAT, 16), "float32": (FLOAT, 32), "float64": (FLOAT, 64)}
    for dt, (t, b) in codes.items():
        raw = blocks[dt + ":data"]
        ours = [line.split("x: ")[1] for line in run([P(v, type=t, bits=b, idx=[i], shape=[8]) for i, v in enumerate(raw)])]
        interp = values(blocks[dt])
        if t == FLOAT:
            # numpy prints shortest decimals, %f six places: equal once parsed into the dtype
            # (six places resolve fp16/fp32 here; fp64 values are compared to 1e-6).
            np_t = getattr(np, dt)
            if b < 64:
                assert np.array(ours).astype(np_t).tolist() == np.array(interp).astype(np_t).tolist(), dt
            else:
                assert np.allclose(np.array(ours, float), np.array(interp, float), rtol=0, atol=5e-7), dt
            ours_hex = [line.split("x: ")[1] for line in
                        run([P(v, type=t, bits=b, idx=[i], shape=[8], hex=True) for i, v in enumerate(raw)])]
            assert [float.fromhex(v) for v in ours_hex] == [float.fromhex(v) for v in values(blocks[dt + "-hex"])], dt
        else:
            assert ours == interp, dt
            if t == UINT:
                ours_hex = [line.split("x: ")[1] for line in
                            run([P(v, type=t, bits=b, idx=[i], shape=[8], hex=True) for i, v in enumerate(raw)])]
                assert ours_hex == values(blocks[dt + "-hex"]), dt


# --- asserts -------------------------------------------------------------------------------


def test_assert_message():
    lib = ctypes.CDLL(LIB)
    lib.tcpu_assert_fail.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int32, ctypes.c_char_p] + [ctypes.c_int32] * 3
    lib.tcpu_error_message.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    lib.tcpu_error_message.restype = ctypes.c_size_t

    def message():
        buf = ctypes.create_string_buffer(2048)
        lib.tcpu_error_message(buf, len(buf))
        return buf.value.decode()

    lib.tcpu_error_clear()
    assert lib.tcpu_error_pending() == 0
    lib.tcpu_assert_fail(b"x must be positive", b"/tmp/k.py", 17, b"my_kernel", 4, 2, 1)
    lib.tcpu_assert_fail(b"second", b"/tmp/k.py", 99, b"my_kernel", 5, 0, 0)  # first failure wins
    assert lib.tcpu_error_pending() == 1
    msg = message()
    assert msg == ("device-side assert triggered: /tmp/k.py:17: my_kernel: block: [4, 2, 1] "
                   "Assertion `x must be positive` failed.")
    lib.tcpu_error_clear()
    assert lib.tcpu_error_pending() == 0
    lib.tcpu_assert_fail(None, None, 0, None, 0, 0, 0)
    assert message() == "device-side assert triggered: <unknown>:0: <unknown>: block: [0, 0, 0] Assertion `` failed."
    lib.tcpu_error_clear()
