#!/usr/bin/env python
"""Differential fuzzer: random @triton.jit kernels, run by this CPU backend and by Triton's
interpreter (TRITON_INTERPRET=1) on the same inputs; any difference is a finding.

    python scripts/fuzz.py --seeds 200                 # kernels from seeds 0..199
    python scripts/fuzz.py --seeds 50 --start 1000 --out /tmp/fz   # seeds 1000..1049
    python scripts/fuzz.py --show 17                   # print kernel 17's source and exit
    python scripts/fuzz.py --seeds 20 --no-shrink -v   # no shrinking, one line per kernel
    python scripts/fuzz.py --seeds 500 --family rows   # only the Inductor-shaped kernels among them
    python scripts/fuzz.py --seeds 500 --family in_place   # only kernels that store into a buffer they load

Kernel i comes from seed i alone (same source, same inputs). Each kernel is a list of
statements built by a typed generator (loads with several addressing modes, elementwise ops
with broadcasting, casts and bitcasts, reductions and scans, shape ops, tl.dot, `for` loops
carrying tensors, a matmul's K loop of int8 dots, `if` on scalars, a value stored into a
scratch buffer and read back: Gen.op_store_load, atomics on a scratch buffer through
distinct or repeated addresses: Gen.op_atomic) and ends with stores of the values nothing
else used; a quarter of them (IN_PLACE) end with one more store, into a
buffer the kernel loaded, lane for lane or onto other lanes' addresses (Gen.store_in_place).
A fifth of the seeds (ROWS_FAMILY) build an Inductor-shaped kernel instead
(Gen.generate_rows): masked [X, R] row tiles of up to 16 x 1024, gathers through an index
load, row reductions broadcast back, a row cumsum.

Both sides run in persistent child processes (one for the backend, one for the
interpreter, started with OMP_NUM_THREADS=1 TRITON_CPU_NUM_THREADS=1); a child that crashes
or times out is restarted and the kernel is recorded as a crash. The two children never run
at the same time.

Comparison rules (per output tensor; every output buffer is pre-filled with the same
pattern on both sides, so untouched elements are compared too). Each value carries an
accuracy class computed from the statements it depends on:

- exact: integers, booleans and floats produced only by loads, stores, casts (float->float
  rounds to nearest even or toward zero; int->float; guarded float->int), bitcasts, shape
  ops, +, -, *, /, % (fmod), fma, sqrt_rn, floor, ceil, abs, neg, where, minimum/maximum,
  comparisons, max/min/argmax/argmin reductions and scans, integer sums/products (they
  wrap on both sides), and sequential loop accumulation. Compared bit for bit, except
  that any NaN equals any NaN (payloads are not specified) and, for values that went
  through minimum/maximum/clamp with propagate_nan=NONE or a float max/min reduction,
  +0.0 equals -0.0 (LLVM's minnum/maxnum and numpy's fmin/fmax may return either zero).
- ulp(n): one math function (exp, exp2, log, log2, sin, cos, erf: n=4; sqrt, rsqrt: n=2)
  applied to exact values, possibly followed by exact data movement: at most n units in
  the last place apart (infinity is one ulp beyond the largest finite value). A cast of such
  a value to a narrower float allows one ulp of the narrower type.
- tol(e): anything downstream of a float reduction/scan that adds or multiplies (sum,
  cumsum, cumprod, user add/mul combiners: reassociation differs), of tl.dot on floats, or
  of arithmetic on ulp(n) values. e is an accumulated relative error bound: a sum, scan
  or dot over n terms adds n*eps(accumulation type), a math function adds n*eps, an
  arithmetic op adds eps. Accepted when |backend - interp| <= 8*e*(|interp| + S) with
  S = max(1, max |interp| over that output), or both are NaN, or both are infinite with
  the same sign, or one is infinite and the other beyond half the largest finite value.

Undefined behaviour is avoided by construction: integer divisors are forced away from 0 and
(for signed types) -1; shift amounts are masked to the bit width; float->int casts replace NaN
by 0 and clamp into the target range first; float divisors computed from data are forced to
|b| >= 0.25 (constant ones, +-0 among them, are used as they are: IEEE defines x / 0); log and
rsqrt take |x| + c; computed pointers mask their offsets into the buffer; loads and stores of
different programs use disjoint regions. Discontinuous operations (comparisons, float->int
casts, bitcasts of floats, argmax/argmin, floor/ceil, %, conditions) only take exact values
(bitcasts of floats only of values that were loaded, not computed, so NaN payloads match).

Findings go to --out (default upstream/results/fuzz/, git-ignored): mismatch_<seed>.py and
backend_error_<seed>.py, each a standalone reproducer (python <file> runs the kernel on this
backend, then under the interpreter in a child process, and prints the differences) of the
kernel after shrinking (statements are replaced by fresh loads of the same type or by a
same-typed input, stores dropped, the grid reduced, as long as the failure persists).

Interpreter defects (verified against torch/numpy by hand) are avoided by the generator; see
INTERPRETER_BUGS below.
"""
import argparse
import math
import os
import random
import select
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

# Constructs the interpreter (triton 3.9) gets wrong: the generator never emits them.
INTERPRETER_BUGS = [
    ("bf16 arithmetic, comparisons and unary math",
     "bf16 tensors are stored as uint16 and numpy operates on the raw bits: x + y on bf16 adds bit"
     " patterns (e.g. 0.2324 + 1.1875 gives 1.7756e+24). bf16 is only loaded, stored, selected"
     " (tl.where), moved by shape ops, cast to/from fp32, bitcast, or max/min-reduced (which"
     " upcast to fp32 first); sums use dtype=tl.float32."),
    ("casts between bf16 and anything but fp32/fp16",
     "cast_impl uses ndarray.astype on the uint16 storage: int->bf16, bf16->int, fp64<->bf16 give"
     " garbage. bf16 converts only through fp32."),
    ("tl.dot on bf16 operands",
     "np.matmul on the uint16 storage (error 1e10 on a 16x16x16 product); bf16 dots are not generated."),
    ("tl.maximum/tl.minimum with propagate_nan=ALL on signed zeros",
     "np.maximum(-0.0, 0.0) is -0.0 (numpy returns the first of equal operands); arith.maximumf orders"
     " -0.0 < +0.0 and gives +0.0. Those outputs compare +0.0 == -0.0."),
    ("tl.reduce over a tuple of tensors with axis=None",
     "InterpreterError: ValueError('can only convert an array of size 1 to a Python scalar') (the CPU"
     " backend returns the right pair); two-operand reductions always name an axis."),
    ("fp64 -> fp16/fp32 casts with fp_downcast_rounding='rtz'",
     "_convert_float fails: TypeError: ufunc 'left_shift' not supported for the input types."
     " rtz is generated for fp32->fp16 and fp32->bf16 only."),
    ("fp32 -> fp16 casts with fp_downcast_rounding='rtz' of finite values beyond fp16's range",
     "_convert_float clamps the exponent to the all-ones (infinity/NaN) code and keeps the mantissa:"
     " 70000.0 gives NaN, not 65504.0 (rounding toward zero never reaches infinity; the backend gives"
     " 65504.0). Such values are clamped to +-65504.0 before rtz casts to fp16."),
    ("the loop variable of a `for` loop is a Python int",
     "i.to(tl.int32) raises AttributeError: 'int' object has no attribute 'to'; compiled Triton gives a"
     " tensor. Loop bodies use i + tl.zeros((), tl.int32)."),
    ("fp32 -> bf16 casts round toward zero",
     "x.to(tl.bfloat16) truncates: cast_impl calls _convert_float with rounding_mode=None (3.185546875,"
     " 0x404be000, gives 3.171875; torch and the backend give 3.1875); its RTNE branch also ignores ties"
     " and the carry into the exponent. Casts to bf16 are generated either with fp_downcast_rounding="
     "'rtz' or of fp32 values whose low 16 bits were cleared (exactly representable)."),
    ("conversions through _convert_float of subnormal inputs",
     "fp32 1e-40 (0x000116c2) -> bf16 gives 0.0 (nearest) or 1.01e-39 (rtz; bf16 0x000b) instead of"
     " 9.18e-41 (0x0001); fp32 1e-40 -> fp16 with rtz gives 5.42e-06 instead of 0.0; a bf16 subnormal"
     " (0x0001) -> fp32 (e.g. inside tl.max of bf16) gives 0.0. Torch and the backend are right. fp32"
     " subnormals are flushed to a signed zero before fp32->bf16 and rtz fp32->fp16 casts, bf16 input"
     " data has no subnormals, and nothing is bitcast to bf16."),
    ("scalar booleans in bitwise ops",
     "x.to(tl.int1) of a scalar fp64, or a comparison of two scalars, is not a numpy bool: block_bool ^"
     " scalar raises TypeError: ufunc 'bitwise_xor' not supported. Float -> int1 casts are generated on"
     " blocks only, and &, |, ^ on int1 only between blocks."),
    ("tl.argmin/tl.argmax (and lexicographic tl.reduce combiners) on NaN",
     "not a defect, but undefined: Triton's combiner (value1 < value2 or tie) is not associative when"
     " NaN is present, so the result depends on the reduction tree; the interpreter uses np.nanargmin"
     " (ignores NaN), the backend returned the NaN's index 31 of 32. NaN is replaced by 0 first."),
    ("tl.reduce(x, None, fn, keep_dims=True) with a user combine function (tl.xor_sum is one)",
     "the interpreter's result has rank 1 (shape [1]) instead of x's rank: a later scan over axis 1 fails"
     " with ValueError: axis 1 out of bounds. Such reductions drop keep_dims (tl.max/tl.sum keep it)."),
    ("libdevice functions (e.g. libdevice.tanh)",
     "create_extern_elementwise is not implemented: the call returns None and tl.store fails."),
]

DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "fp16", "bf16", "fp32", "fp64"]
INTS = [d for d in DTYPES if "int" in d]
FLOATS = ["fp16", "bf16", "fp32", "fp64"]
TL = {"int1": "tl.int1", "fp16": "tl.float16", "bf16": "tl.bfloat16", "fp32": "tl.float32", "fp64": "tl.float64"}
TL.update({d: "tl." + d for d in INTS})
BITS = {"int1": 1, "fp16": 16, "bf16": 16, "fp32": 32, "fp64": 64}
BITS.update({d: int(d.lstrip("uint")) for d in INTS})
EPS = {"fp16": 2.0 ** -10, "bf16": 2.0 ** -7, "fp32": 2.0 ** -23, "fp64": 2.0 ** -52}


def is_int(d):
    return d in INTS


def is_float(d):
    return d in FLOATS


def signed(d):
    return d.startswith("int")


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


# ----------------------------------------------------------------------------------------
# Source shared with the reproducers: input data and the comparison.
# ----------------------------------------------------------------------------------------
SHARED_SRC = r'''
import numpy as np
import torch

TORCH_DT = {"int1": torch.bool, "int8": torch.int8, "int16": torch.int16, "int32": torch.int32,
            "int64": torch.int64, "uint8": torch.uint8, "uint16": torch.uint16, "uint32": torch.uint32,
            "uint64": torch.uint64, "fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32,
            "fp64": torch.float64}
NP_DT = {"int1": np.bool_, "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
         "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
         "fp16": np.float16, "fp32": np.float32, "fp64": np.float64}


def make_input(dtype, n, seed, kind):
    """Deterministic input data: kind 'bits' (any bit pattern), 'small' (small integers),
    'index' (integers in [0, 64)), 'float' (uniform in [-4, 4]), 'grid' (multiples of 1/4 in
    [-4, 4]: ties and exact sums), 'special' (floats with some inf, nan, -0.0, denormals)."""
    rng = np.random.default_rng(seed)
    if dtype == "int1":
        return torch.from_numpy(rng.integers(0, 2, n).astype(np.bool_))
    if dtype in ("fp16", "bf16", "fp32", "fp64"):
        if kind == "grid":
            x = rng.integers(-16, 17, n).astype(np.float64) / 4
        elif kind == "small":
            x = rng.integers(-8, 9, n).astype(np.float64)
        else:
            x = rng.uniform(-4, 4, n)
        if kind == "special":
            pick = rng.integers(0, 12, n)
            x = np.where(pick == 0, np.inf, np.where(pick == 1, -np.inf, np.where(pick == 2, np.nan, x)))
            x = np.where(pick == 3, -0.0, np.where(pick == 4, 1e-40, np.where(pick == 5, 0.0, x)))
        if dtype == "bf16":  # no subnormals (the interpreter mishandles them, see fuzz.py)
            x = np.where(np.abs(x) < 1e-37, np.copysign(0.0, x), x)
        t = torch.from_numpy(x)
        return t.to(TORCH_DT[dtype])
    info = np.iinfo(NP_DT[dtype])
    if kind == "bits":
        raw = rng.integers(0, 256, n * info.bits // 8, dtype=np.uint8)
        return torch.from_numpy(raw.view(NP_DT[dtype]).copy())
    lo, hi = (0, 64) if kind == "index" else (-8, 9)
    if not dtype.startswith("int"):
        lo, hi = (0, 64) if kind == "index" else (0, 17)
    return torch.from_numpy(rng.integers(lo, hi, n).astype(NP_DT[dtype]))


def _as_np(t):
    if t.dtype == torch.bfloat16:
        return t.float().numpy()
    return t.numpy()


def _ordered(a, dtype):
    """Floats as integers whose difference counts ulps (sign-magnitude -> two's complement)."""
    bits = {"fp16": 16, "bf16": 16, "fp32": 32, "fp64": 64}[dtype]
    it = {16: np.int16, 32: np.int32, 64: np.int64}[bits]
    if dtype == "bf16":
        a = a.view(torch.int16).numpy().astype(np.int64)
    else:
        a = a.numpy().view(it).astype(np.int64)
    sign = a < 0
    mag = a & ((1 << (bits - 1)) - 1)
    return [-int(m) if s else int(m) for s, m in zip(sign.tolist(), mag.tolist())]


def compare(got, exp, dtype, cls):
    """Indices of the elements where `got` (backend) and `exp` (interpreter) disagree under
    accuracy class cls = ["exact", zero_loose] | ["ulp", n, zero_loose] | ["tol", e, zero_loose]."""
    g, e = got.reshape(-1), exp.reshape(-1)
    if dtype not in ("fp16", "bf16", "fp32", "fp64"):
        return np.nonzero(_as_np(g) != _as_np(e))[0]
    gf, ef = _as_np(g).astype(np.float64), _as_np(e).astype(np.float64)
    both_nan = np.isnan(gf) & np.isnan(ef)
    zero_loose = cls[-1]
    if cls[0] == "exact":
        if dtype == "bf16":
            same = g.view(torch.int16).numpy() == e.view(torch.int16).numpy()
        else:
            it = {"fp16": np.int16, "fp32": np.int32, "fp64": np.int64}[dtype]
            same = g.numpy().view(it) == e.numpy().view(it)
        if zero_loose:
            same = same | ((gf == 0) & (ef == 0))
        return np.nonzero(~(same | both_nan))[0]
    if cls[0] == "ulp":
        with np.errstate(invalid="ignore"):
            d = np.array([abs(x - y) for x, y in zip(_ordered(g, dtype), _ordered(e, dtype))], dtype=object)
            # each side may be n ulp away from the exact value, in opposite directions
            ok = (d <= 2 * cls[1]).astype(bool) | both_nan | ((gf == 0) & (ef == 0))
        return np.nonzero(~ok)[0]
    tol = cls[1]
    with np.errstate(invalid="ignore", over="ignore"):
        fin = np.isfinite(ef)
        scale = max(1.0, float(np.max(np.abs(ef[fin]))) if fin.any() else 1.0)
        ok = np.abs(gf - ef) <= 8 * tol * (np.abs(ef) + scale)
        big = float(np.finfo(np.float16 if dtype == "fp16" else np.float32 if dtype != "fp64" else np.float64).max) / 2
        if dtype == "bf16":
            big = 1.0e38
        inf_ok = (np.isinf(gf) | np.isinf(ef)) & (np.sign(gf) == np.sign(ef)) & (np.abs(gf) >= big) & (np.abs(ef) >= big)
        ok = ok | both_nan | (gf == ef) | inf_ok
    return np.nonzero(~ok)[0]
'''
_shared = {}
exec(compile(SHARED_SRC, "<fuzz-shared>", "exec"), _shared)


# ----------------------------------------------------------------------------------------
# Kernel representation: a list of statements (nodes); compound nodes hold blocks.
# ----------------------------------------------------------------------------------------
class Buf:
    def __init__(self, name, dtype, n, seed, kind, out=False):
        self.name, self.dtype, self.n, self.seed, self.kind, self.out = name, dtype, n, seed, kind, out


class Node:
    """kind: 'expr' (outs = template.format(*deps)), 'load', 'store' (template uses {P} for the
    pointer), 'loop', 'if'. rule: how the accuracy class of the outputs follows from the inputs'."""

    def __init__(self, kind, outs, tys, deps, code, rule="prop", tags=(), buf=None, blocks=(), extra=None):
        self.kind, self.outs, self.tys, self.deps, self.code = kind, list(outs), list(tys), list(deps), code
        self.rule, self.tags, self.buf, self.blocks, self.extra = rule, tuple(tags), buf, list(blocks), extra or {}


class Block:
    def __init__(self, nodes=None, results=None):
        self.nodes = nodes if nodes is not None else []
        self.results = results or []


class Kernel:
    def __init__(self, seed):
        self.seed = seed
        self.body = Block()
        self.grid = (1,)
        self.helpers = set()
        self.out_cls = {}  # output buffer name -> accuracy class (recomputed by analyze)

    def walk(self, block=None):
        block = block or self.body
        for n in block.nodes:
            yield n
            for b in n.blocks:
                yield from self.walk(b)


def defs_and_uses(block):
    """(names defined in block, free names used by block)."""
    defined, free = set(), set()
    for n in block.nodes:
        for d in n.deps:
            if d not in defined:
                free.add(d)
        if n.kind == "loop":
            inner_def, inner_free = defs_and_uses(n.blocks[0])
            own = {n.outs[0], n.extra["iv"]}
            for d in inner_free - own - defined:
                free.add(d)
            for d in n.blocks[0].results:
                if d not in inner_def and d not in own and d not in defined:
                    free.add(d)
        elif n.kind == "if":
            for b in n.blocks:
                inner_def, inner_free = defs_and_uses(b)
                for d in (inner_free | set(b.results)) - inner_def - defined:
                    free.add(d)
        defined.update(n.outs)
    return defined, free


def node_uses(n):
    if n.kind in ("loop", "if"):
        return defs_and_uses(Block([n]))[1]
    return set(n.deps)


def dce(block, live):
    """Drops statements whose outputs nothing live uses (stores are roots)."""
    live = set(live) | set(block.results)
    keep = []
    for n in reversed(block.nodes):
        if n.kind == "store" or any(o in live for o in n.outs):
            if n.kind == "loop":
                dce(n.blocks[0], {n.outs[0]})
            elif n.kind == "if":
                for b in n.blocks:
                    dce(b, set())
            keep.append(n)
            live |= node_uses(n)
    block.nodes = list(reversed(keep))


# accuracy classes: ("exact", zl) | ("ulp", n, zl) | ("tol", e, zl); zl = zero-sign loose
EXACT = ("exact", False)


def acc_err(a, dt):
    if a[0] == "exact":
        return 0.0
    if a[0] == "ulp":
        return a[1] * EPS.get(dt, 0.0)
    return a[1]


def apply_rule(rule, ins, dt):
    """ins: list of (acc, dtype) of the inputs; dt: output dtype."""
    zl = any(a[-1] for a, _ in ins)
    if rule == "load":
        return ("exact", False)
    inexact = [(a, d) for a, d in ins if a[0] != "exact"]
    if rule in ("prop", "castdown"):
        if not inexact:
            return ("exact", zl)
        if rule == "prop" and len(inexact) == 1 and inexact[0][0][0] == "ulp" and inexact[0][1] == dt:
            return ("ulp", inexact[0][0][1], zl)
        if rule == "castdown" and len(inexact) == 1 and inexact[0][0][0] == "ulp":
            return ("ulp", 1, zl)
        return ("tol", sum(acc_err(a, d) for a, d in inexact) + EPS.get(dt, 0.0), zl)
    if rule == "minmax":
        base = apply_rule("prop", ins, dt)
        return base[:-1] + (True,) if is_float(dt) else base
    if rule == "arith":
        if not inexact:
            return ("exact", zl)
        return ("tol", sum(acc_err(a, d) for a, d in inexact) + EPS.get(dt, 0.0), zl)
    if rule[0] == "math":
        if not inexact:
            return ("ulp", rule[1], zl)
        return ("tol", 4 * sum(acc_err(a, d) for a, d in inexact) + rule[1] * EPS.get(dt, 0.0), zl)
    if rule[0] == "red":  # float sum/scan/dot over n terms; integers stay exact
        if not is_float(dt):
            return ("exact", zl)
        acc_dt = rule[2] if len(rule) > 2 else dt
        return ("tol", sum(acc_err(a, d) for a, d in inexact) * 2 + rule[1] * EPS.get(acc_dt, EPS["fp32"]), zl)
    raise ValueError(rule)


def analyze(k):
    """Recomputes every value's accuracy class and the class of every output buffer."""
    env = {"pid": (EXACT, "int32")}
    k.out_cls = {}

    def worst(a, b, dt):
        if a[0] == "exact" and b[0] == "exact":
            return ("exact", a[-1] or b[-1])
        return ("tol", acc_err(a, dt) + acc_err(b, dt) + EPS.get(dt, 0), a[-1] or b[-1])

    def written(buf, c):  # a buffer written more than once: the worst of its values
        prev = k.out_cls.get(buf.name)
        k.out_cls[buf.name] = list(c if prev is None or tuple(prev) == c else worst(tuple(prev), c, buf.dtype))

    def run(block):
        for n in block.nodes:
            if n.kind == "store":
                written(n.buf, env[n.deps[0]][0] if n.rule == "prop" else apply_rule(
                    n.rule, [env[d] for d in n.deps], n.buf.dtype))  # (an atomic's rule)
                continue
            if n.kind == "loop":
                c, dt = n.outs[0], n.tys[0][0]
                init = env[n.deps[0]][0]
                env[c] = ((("tol", 64 * EPS[dt], True) if is_float(dt) else init), dt)
                env[n.extra["iv"]] = (EXACT, "int32")
                run(n.blocks[0])
                res = env[n.blocks[0].results[0]][0]
                out = worst(init, res, dt)
                if out[0] != "exact":
                    out = ("tol", out[1] * 4 + 64 * EPS.get(dt, 0), True)
                env[c] = (out, dt)
                continue
            if n.kind == "if":
                for b in n.blocks:
                    run(b)
                for i, o in enumerate(n.outs):
                    a, b = (env[blk.results[i]][0] for blk in n.blocks)
                    env[o] = (a if a == b else worst(a, b, n.tys[i][0]), n.tys[i][0])
                continue
            ins = [env[d] for d in n.deps]
            for o, ty in zip(n.outs, n.tys):
                env[o] = (apply_rule(n.rule, ins, ty[0]), ty[0])
            if n.tags and n.tags[0].startswith("atomic."):  # what it leaves in its buffer
                written(n.buf, env[n.outs[0]][0])
    run(k.body)
    for n in k.walk():  # an output buffer only read (the shrinker dropped its stores)
        if n.buf is not None and n.buf.out:
            k.out_cls.setdefault(n.buf.name, list(EXACT))
    return env


def render(k):
    """Python module source of the kernel."""
    bufs = []
    for n in k.walk():
        if n.buf is not None and n.buf not in bufs:
            bufs.append(n.buf)
    ins = [b for b in bufs if not b.out]
    outs = [b for b in bufs if b.out]
    k.params = ins + outs
    lines = ["import triton", "import triton.language as tl", ""]
    for h in sorted(k.helpers):
        lines += HELPERS[h].strip("\n").split("\n") + ["", ""]
    lines.append("@triton.jit")
    lines.append("def kernel(%s):" % ", ".join(b.name for b in k.params))
    if len(k.grid) == 2:
        lines.append("    pid = tl.program_id(0) + tl.program_id(1) * %d" % k.grid[0])
    else:
        lines.append("    pid = tl.program_id(0)")

    def emit(block, ind):
        pad = "    " * ind
        for n in block.nodes:
            if n.kind in ("expr", "load"):
                code = n.code.format(*n.deps, P=n.buf.name if n.buf else "")
                lines.append(pad + "%s = %s" % (", ".join(n.outs), code))
            elif n.kind == "store":
                lines.append(pad + n.code.format(*n.deps, P=n.buf.name))
            elif n.kind == "loop":
                lines.append(pad + "%s = %s" % (n.outs[0], n.deps[0]))
                lines.append(pad + "for %s in %s:" % (n.extra["iv"], n.code.format(*n.deps)))
                emit(n.blocks[0], ind + 1)
                lines.append(pad + "    %s = %s" % (n.outs[0], n.blocks[0].results[0]))
            elif n.kind == "if":
                lines.append(pad + "if %s:" % n.code.format(*n.deps))
                emit(n.blocks[0], ind + 1)
                lines.append(pad + "    %s = %s" % (", ".join(n.outs), ", ".join(n.blocks[0].results)))
                lines.append(pad + "else:")
                emit(n.blocks[1], ind + 1)
                lines.append(pad + "    %s = %s" % (", ".join(n.outs), ", ".join(n.blocks[1].results)))
    emit(k.body, 1)
    return "\n".join(lines) + "\n"


HELPERS = {
    "c_add": "@triton.jit\ndef c_add(a, b):\n    return a + b",
    "c_mul": "@triton.jit\ndef c_mul(a, b):\n    return a * b",
    "c_max": "@triton.jit\ndef c_max(a, b):\n    return tl.maximum(a, b)",
    "c_min": "@triton.jit\ndef c_min(a, b):\n    return tl.minimum(a, b)",
    "c_xor": "@triton.jit\ndef c_xor(a, b):\n    return a ^ b",
    "c_or": "@triton.jit\ndef c_or(a, b):\n    return a | b",
    "c_lexmin": ("@triton.jit\ndef c_lexmin(a0, a1, b0, b1):\n"
                 "    lt = (a0 < b0) | ((a0 == b0) & (a1 < b1))\n"
                 "    return tl.where(lt, a0, b0), tl.where(lt, a1, b1)"),
    "c_summax": "@triton.jit\ndef c_summax(a0, a1, b0, b1):\n    return a0 + b0, tl.maximum(a1, b1)",
}


def make_inputs(k):
    args = []
    for b in k.params:
        args.append(_shared["make_input"](b.dtype, b.n, b.seed, b.kind))
    return args


# ----------------------------------------------------------------------------------------
# Generator
# ----------------------------------------------------------------------------------------
class V:
    def __init__(self, name, dt, sh, acc=EXACT, raw=False):
        self.name, self.dt, self.sh, self.acc, self.raw = name, dt, tuple(sh), acc, raw

    @property
    def exact(self):
        return self.acc[0] == "exact"


def bshape(a, b):
    if a == ():
        return b
    if b == ():
        return a
    if len(a) != len(b):
        return None
    out = []
    for x, y in zip(a, b):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            return None
    return tuple(out)


def offsets(shape, strides):
    r = len(shape)
    if r == 0:
        return "0"
    terms = []
    for d, (n, s) in enumerate(zip(shape, strides)):
        idx = "tl.arange(0, %d)" % n
        if r > 1:
            idx += "[%s]" % ", ".join(":" if e == d else "None" for e in range(r))
        if s == 0:
            idx = "0 * " + idx
        elif s != 1:
            idx += " * %d" % s
        terms.append(idx)
    return " + ".join(terms)


def row_major(shape):
    st, acc = [], 1
    for n in reversed(shape):
        st.append(acc)
        acc *= n
    return list(reversed(st))


def permuted_strides(shape, r):
    """Strides of a dense buffer holding `shape` with its dimensions in a random order (the
    same elements, a non-contiguous layout)."""
    perm = list(range(len(shape)))
    r.shuffle(perm)
    st = row_major([shape[p] for p in perm])
    strides = [0] * len(shape)
    for i, p in enumerate(perm):
        strides[p] = st[i]
    return strides


def lit(value, dt):
    """A literal that keeps dtype dt in a binary op with a dt tensor."""
    if dt.startswith("uint") or dt == "int1":
        return "tl.cast(%d, %s)" % (value, TL[dt])
    if is_float(dt):
        return repr(float(value))
    return str(int(value))


def f2i_bounds(src, dst):
    """[lo, hi] representable in float type src (as fp32 literal) inside dst's range."""
    info = np.iinfo(_shared["NP_DT"][dst])
    srcmax = float(np.finfo(_shared["NP_DT"][src]).max)
    hi = min(float(info.max), srcmax)
    f = np.float32(hi)
    while int(float(f)) > min(info.max, int(srcmax)):
        f = np.nextafter(f, np.float32(0))
    if src == "fp16":
        h = np.float16(float(f))
        if float(h) > float(f):
            h = np.nextafter(h, np.float16(0))
        f = np.float32(h)
    lo = 0.0 if info.min == 0 else -float(f) if float(f) < -float(info.min) else float(info.min)
    return lo, float(f)


MATH = {  # name -> (template, ulp bound, may take inexact inputs)
    # sin/cos/exp/exp2 turn an absolute input error into a result error scaled by |x|: exact inputs only
    "exp": ("tl.exp({0})", 4, False), "exp2": ("tl.exp2({0})", 4, False),
    "log": ("tl.log(tl.abs({0}) + 0.5)", 4, True), "log2": ("tl.log2(tl.abs({0}) + 0.5)", 4, True),
    "sqrt": ("tl.sqrt(tl.abs({0}))", 2, False), "rsqrt": ("tl.rsqrt(tl.abs({0}) + 0.25)", 2, True),
    "sin": ("tl.sin({0})", 4, False), "cos": ("tl.cos({0})", 4, False), "erf": ("tl.erf({0})", 4, True),
    "sigmoid": ("tl.sigmoid({0})", 8, True),
}


class Gen:
    def __init__(self, seed, size=None):
        self.r = random.Random(seed)
        self.k = Kernel(seed)
        self.count = 0
        self.scopes = []
        self.block = None
        self.size = size or self.r.randint(5, 16)
        self.in_loop = 0

    # ---- helpers ----
    def name(self, p="v"):
        self.count += 1
        return "%s%d" % (p, self.count)

    def visible(self):
        return [v for s in self.scopes for v in s]

    def add(self, node, vals):
        self.block.nodes.append(node)
        self.scopes[-1].extend(vals)
        return vals[0] if len(vals) == 1 else vals

    def rand_shape(self, max_numel=256, rank=None):
        r = self.r
        rank = rank if rank is not None else r.choice([1, 1, 2, 2, 2, 3, 3])
        while True:
            sh = tuple(r.choice([1, 2, 4, 8, 16, 32, 64]) for _ in range(rank))
            if numel(sh) <= max_numel and (numel(sh) >= 2 or r.random() < 0.2):
                return sh

    def pick_class(self, allow_int1=False, exact=False):
        """A first operand: a float (fp16/fp32/fp64) half of the time, else an integer."""
        if self.r.random() < 0.5:
            pred = lambda v: v.dt in ("fp16", "fp32", "fp64") and (v.exact or not exact)
            dt = self.r.choice(["fp16", "fp32", "fp32", "fp64"])
        else:
            pred = lambda v: (is_int(v.dt) or (allow_int1 and v.dt == "int1")) and (v.exact or not exact)
            dt = self.r.choice(INTS)
        return self.pick(pred) or self.load(dt)

    def rand_dtype(self, allow_bf16=True):
        d = self.r.choice(DTYPES)
        if d == "bf16" and not allow_bf16:
            return "fp32"
        return d

    def data_kind(self, dt):
        r = self.r
        if is_float(dt):
            return r.choice(["float", "float", "grid", "small", "special"])
        return r.choice(["bits", "bits", "small"])

    def new_buf(self, dt, n, kind=None, out=False):
        b = Buf(self.name("out" if out else "in"), dt, max(n, 1), self.r.randrange(1 << 30),
                kind or self.data_kind(dt), out=out)
        return b

    # ---- loads ----
    def load(self, dt=None, sh=None, mode=None):
        r = self.r
        dt = dt or self.rand_dtype()
        sh = tuple(sh) if sh is not None else self.rand_shape()
        out = self.name()
        G = 4  # regions for up to 4 programs
        if sh == ():
            buf = self.new_buf(dt, 8 * G)
            off = r.choice(["pid", "pid * 2 + 1", "3"])
            node = Node("load", [out], [(dt, sh)], [], "tl.load({P} + %s)" % off, rule="load", tags=["load.scalar"], buf=buf)
            return self.add(node, [V(out, dt, sh, raw=True)])
        modes = ["contig", "contig", "perm", "scaled", "bcast", "masked", "masked", "wrapped", "runtime_stride"]
        if self.in_loop:
            modes += ["iter", "iter", "iter_wrapped", "iter_wrapped"]
        mode = mode or r.choice(modes)
        strides = row_major(sh)
        tags = ["load." + mode]
        if mode == "perm" and len(sh) > 1:
            strides = permuted_strides(sh, r)
        elif mode == "scaled":
            f = r.choice([2, 3])
            strides = [s * f for s in strides]
        elif mode == "bcast":
            strides = [0 if (n > 1 and r.random() < 0.5) else s for n, s in zip(sh, strides)]
        region = sum((n - 1) * s for n, s in zip(sh, strides)) + 1
        offs = offsets(sh, strides)
        deps = []
        extra = None
        if mode == "iter":
            buf = self.new_buf(dt, region * G * 4)
            ptr = "{P} + (pid * 4 + %s) * %d + %s" % (self.loop_iv, region, offs)
        elif mode == "iter_wrapped":
            # Wrapped offsets that do not depend on the loop (checked once before it when
            # hoisted there) plus a per-iteration region.
            m = r.choice([16, 32, 64])
            shift = r.choice([0, 16, 32, 48])
            lin = offsets(sh, row_major(sh))
            region = 2 * m
            buf = self.new_buf(dt, region * G * 4)
            ptr = "{P} + (pid * 4 + %s) * %d + ((%s - %d) %% %d + %d)" % (self.loop_iv, region, lin, shift, m, m)
        elif mode == "wrapped":
            # Offsets through % or // of values that go negative (the lowering assumes x >= 0
            # for vector accesses and checks that at run time).
            lin = offsets(sh, row_major(sh))
            shift = r.choice([0, 5, 16, 32, 48])
            if r.random() < 0.5:
                m = r.choice([16, 32, 64])
                region = 2 * m
                offs = "((%s - %d) %% %d + %d)" % (lin, shift, m, m)
            else:
                d = r.choice([2, 16, 32])
                region = (numel(sh) + shift) // d + 2
                offs = "((%s - %d) // %d + %d)" % (lin, shift, d, shift // d + 1)
            buf = self.new_buf(dt, region * G)
            ptr = "{P} + pid * %d + %s" % (region, offs)
        elif mode == "runtime_stride":
            # Offsets times a stride known only at run time (FlagGems' `do_not_specialize`
            # strides): 1 in even programs (the vector access, behind a check that it is 1),
            # 2 in odd ones (the gather).
            buf = self.new_buf(dt, region * 2 * G)
            ptr = "{P} + pid * %d + (%s) * (pid %% 2 + 1)" % (region * 2, offs)
        else:
            buf = self.new_buf(dt, region * G)
            ptr = "{P} + pid * %d + %s" % (region, offs)
            extra = {"region": region, "ptr": ptr}  # where an in-place store may write
        if mode == "masked":
            lin = offsets(sh, row_major(sh))
            limit = r.randint(0, numel(sh))
            if r.random() < 0.5 and len(sh) > 1:
                d = r.randrange(len(sh))
                lin = offsets(sh, [1 if e == d else 0 for e in range(len(sh))])
                limit = r.randint(0, sh[d])
            other = r.choice([None, 0, 1, 3, -2]) if dt != "bf16" else r.choice([None, 0, 1])
            if other is not None and dt.startswith("uint"):
                other = abs(other)
            o = "" if other is None else ", other=%s" % (repr(float(other)) if is_float(dt) else str(other))
            code = "tl.load(%s, mask=(%s) < %d%s)" % (ptr, lin, limit, o)
        else:
            code = "tl.load(%s)" % ptr
        node = Node("load", [out], [(dt, sh)], deps, code, rule="load", tags=tags, buf=buf,
                    extra=extra)
        return self.add(node, [V(out, dt, sh, raw=True)])

    def op_gather_load(self):
        """Load through a computed pointer: offsets from an integer value."""
        idx = self.pick(lambda v: is_int(v.dt) and v.sh != () and v.exact) or self.load(self.r.choice(INTS))
        dt = self.rand_dtype()
        n = self.r.choice([16, 64, 256])
        buf = self.new_buf(dt, n * 4)
        out = self.name()
        code = "tl.load({P} + pid * %d + (({0}).to(tl.int32) & %d))" % (n, n - 1)
        node = Node("load", [out], [(dt, idx.sh)], [idx.name], code, rule="load", tags=["load.gather"], buf=buf)
        return self.add(node, [V(out, dt, idx.sh, raw=True)])

    def op_store_load(self):
        """A store into a scratch buffer, then a load that reads it back in the same program:
        through the same pointers and mask (the value comes back: forward-stored-tiles may
        take it without the memory round trip), another mask, the region flattened, or
        shifted so that it reads partly what was stored and partly what the buffer held;
        at times a second store to the same pointers comes first, under a mask of its own
        (the first one partly or wholly overwritten). In a loop, the load comes first at
        times: it reads what the previous iteration stored (the buffer's own contents in the
        first). The loaded value's accuracy is the
        worst of the stored values'; the buffer is compared at the end like any output."""
        r = self.r
        v = self.pick(lambda x: x.sh != () and x.dt != "int1" and numel(x.sh) >= 2, p=1.0)
        if v is None:
            v = self.load(self.rand_dtype())
        sh, dt, size = v.sh, v.dt, numel(v.sh)
        region = 2 * size
        buf = self.new_buf(dt, region * 4, kind="bits", out=True)
        lin = offsets(sh, row_major(sh))
        mode = r.choice(["contig", "contig", "perm"]) if len(sh) > 1 else "contig"
        strides = permuted_strides(sh, r) if mode == "perm" else row_major(sh)
        ptr = "{P} + pid * %d + %s" % (region, offsets(sh, strides))

        def mask():
            return "" if r.random() < 0.5 else ", mask=(%s) < %d" % (lin, r.randint(0, size))
        store_mask = mask()
        stores = [Node("store", [], [], [v.name], "tl.store(%s, {0}%s)" % (ptr, store_mask),
                       tags=["store.scratch." + mode], buf=buf)]
        stored = [v]
        if r.random() < 0.3:
            w = self.pick(lambda x: x.sh == sh and x.dt == dt and x is not v, p=1.0)
            if w is not None:
                stores.append(Node("store", [], [], [w.name], "tl.store(%s, {0}%s)" % (ptr, mask()),
                                   tags=["store.scratch.again"], buf=buf))
                stored.append(w)
        back = r.choice(["same", "same", "mask", "flat", "shift"])
        other = ""
        if back == "same":
            lsh, code = sh, "tl.load(%s%s)" % (ptr, store_mask)
        elif back == "mask":
            lsh, code = sh, "tl.load(%s%s)" % (ptr, mask())
        else:
            at = 0 if back == "flat" else r.randint(1, size)
            lsh, code = (size,), "tl.load({P} + pid * %d + %d + tl.arange(0, %d))" % (region, at, size)
        if "mask=" in code and r.random() < 0.5 and dt != "bf16":
            other = ", other=%s" % ("1.0" if is_float(dt) else "1")
            code = code[:-1] + other + ")"
        out = self.name()
        node = Node("load", [out], [(dt, lsh)], [x.name for x in stored], code, rule="prop",
                    tags=["load.readback." + back], buf=buf)
        acc = apply_rule("prop", [(x.acc, x.dt) for x in stored], dt)
        first = self.in_loop and r.random() < 0.4  # read what the previous iteration stored
        if not first:
            self.block.nodes.extend(stores)
        value = self.add(node, [V(out, dt, lsh, acc, raw=all(x.raw for x in stored))])
        if first:
            self.block.nodes.extend(stores)
        return value

    # atomic op -> dtypes both sides take (the interpreter has no float xchg)
    ATOMICS = {"add": ["int32", "int64", "uint32", "uint64", "fp16", "fp32", "fp64"],
               "max": ["int32", "int64", "uint32", "uint64", "fp32", "fp64"],
               "min": ["int32", "int64", "uint32", "uint64", "fp32", "fp64"],
               "and": ["int32", "int64", "uint32", "uint64"], "or": ["int32", "int64", "uint32", "uint64"],
               "xor": ["int32", "int64", "uint32", "uint64"], "xchg": ["int32", "int64", "uint32", "uint64"],
               "cas": ["int32", "int64", "uint32", "uint64"]}

    def op_atomic(self):
        """An atomic read-modify-write of a tile of a scratch buffer (a region per program),
        masked or not, with a random memory order. Through distinct addresses the old
        values it returns are a new value (what the buffer held); through repeated ones
        (`lin // 2`, `lin % 4`: several lanes update one element, as a histogram does) only
        the buffer's final contents are compared (a float sum's then depends on the order
        of its additions: a tolerance). Float max/min take values without NaN."""
        r = self.r
        op = r.choice(list(self.ATOMICS))
        dt = r.choice(self.ATOMICS[op])
        v = self.pick(lambda x: x.dt == dt and x.sh != () and numel(x.sh) >= 2, p=0.7) or self.load(dt)
        if op in ("max", "min"):
            v = self.nonan(v)
        sh, size = v.sh, numel(v.sh)
        lin = offsets(sh, row_major(sh))
        repeat = r.choice([1, 1, 2, 4]) if op not in ("xchg", "cas") else 1
        region = size if repeat == 1 else (size + 1) // 2 if repeat == 2 else 4
        kind = "float" if is_float(dt) else "bits"
        buf = self.new_buf(dt, region * 4, kind=kind, out=True)
        if repeat == 1:
            perm = permuted_strides(sh, r) if len(sh) > 1 and r.random() < 0.3 else row_major(sh)
            where = offsets(sh, perm)
        else:
            where = "(%s) // 2" % lin if repeat == 2 else "(%s) %% 4" % lin
        ptr = "{P} + pid * %d + %s" % (region, where)
        sem = r.choice(["", "", ", sem='relaxed'", ", sem='acq_rel'", ", sem='acquire'", ", sem='release'"])
        args = [v]
        if op == "cas":
            other = self.pick(lambda x: x.dt == dt and x.sh == sh, p=0.7) or self.load(dt, sh)
            args.append(other)
            # half of the lanes compare against what the buffer holds: they swap
            code = "tl.atomic_cas(%s, tl.where((%s) %% 2 == 0, tl.load(%s), {1}), {0}%s)" % (ptr, lin, ptr, sem)
        else:
            limit = None if r.random() < 0.5 else r.randint(0, size)
            mask = "" if limit is None else ", mask=(%s) < %d" % (lin, limit)
            code = "tl.atomic_%s(%s, {0}%s%s)" % (op, ptr, mask, sem)
            if limit is not None and repeat == 1:  # what masked-off lanes return is undefined
                code = "tl.where((%s) < %d, %s, 0)" % (lin, limit, code)
        if is_float(dt) and op == "add":
            # terms per element: the old value and 2 (`// 2`) or size / 4 (`% 4`) lanes
            rule = ("red", (2 if repeat == 2 else size // 4) + 1) if repeat > 1 else "arith"
        else:
            rule = "minmax" if op in ("max", "min") else "prop"
        tags = ["atomic.%s.%s" % (op, "distinct" if repeat == 1 else "repeated")]
        deps = [x.name for x in args]
        if repeat > 1:
            self.block.nodes.append(Node("store", [], [], deps, code, rule=rule, tags=tags, buf=buf))
            return v
        out = self.name()
        acc = apply_rule(rule, [(x.acc, dt) for x in args], dt)
        node = Node("load", [out], [(dt, sh)], deps, code, rule=rule, tags=tags, buf=buf)
        return self.add(node, [V(out, dt, sh, acc)])

    # ---- picking operands ----
    def pick(self, pred, p=0.85):
        c = [v for v in self.visible() if pred(v)]
        if c and self.r.random() < p:
            return self.r.choice(c)
        return None

    def pick_or_load(self, pred, dt, sh):
        v = self.pick(pred)
        return v if v is not None else self.load(dt, sh)

    def operand_like(self, a, dt=None, need_exact=False, bshape_ok=True):
        """An operand for a binary op with a: same dtype, shape broadcast-compatible."""
        dt = dt or a.dt
        r = self.r

        def ok(v):
            return (v is not a or r.random() < 0.2) and v.dt == dt and (v.exact or not need_exact) and \
                (bshape(a.sh, v.sh) is not None if bshape_ok else v.sh == a.sh)
        v = self.pick(ok, p=0.7)
        if v is not None:
            return v
        # a castable value of a compatible shape
        src = self.pick(lambda v: (bshape(a.sh, v.sh) is not None if bshape_ok else v.sh == a.sh)
                        and self.can_cast(v, dt) and (v.exact or not need_exact), p=0.5)
        if src is not None:
            return self.cast(src, dt)
        sh = a.sh
        if bshape_ok and sh and r.random() < 0.4:
            sh = tuple(1 if r.random() < 0.5 else n for n in sh)
        if bshape_ok and r.random() < 0.1:
            sh = ()
        return self.load(dt, sh)

    # ---- casts ----
    def can_cast(self, v, dt):
        if v.dt == dt:
            return True
        if v.dt == "bf16":
            return dt in ("fp32", "fp16")
        if dt == "bf16":
            return v.dt in ("fp32", "fp16")
        if is_float(v.dt) and dt == "int1" and v.sh == ():
            return False  # INTERPRETER_BUGS: scalar float -> int1
        if is_float(v.dt) and (is_int(dt) or dt == "int1"):
            return v.exact
        if v.dt == "int1":
            return dt != "bf16"
        return True

    def cast(self, v, dt, bitcast=False):
        if v.dt == dt and not bitcast:
            return v
        out = self.name()
        rule = "prop"
        tags = ["cast.%s->%s" % (v.dt, dt)]
        if bitcast and is_float(dt):
            # Random bits include signaling NaNs, on which the two sides legitimately differ:
            # LLVM's maxnum/minnum (and the GPU's max.f32) ignore any NaN, numpy's fmax/fmin
            # return NaN for a signaling one (IEEE 754-2008 maxNum), so tl.clamp of one gave
            # -0.5 here and 0.5 in the interpreter (seed 325490). Every NaN is made quiet.
            f = "{0}.to(%s, bitcast=True)" % TL[dt]
            code = "tl.where(%s == %s, %s, float('nan'))" % (f, f, f)
            tags = ["bitcast"]
        elif bitcast:
            code = "{0}.to(%s, bitcast=True)" % TL[dt]
            tags = ["bitcast"]
        elif v.dt == "bf16" and dt == "fp16":
            code = "{0}.to(tl.float32).to(tl.float16)"
            rule = "castdown"
        elif is_float(v.dt) and is_int(dt):
            lo, hi = f2i_bounds(v.dt, dt)
            code = "tl.where({0} != {0}, 0.0, tl.minimum(tl.maximum({0}, %r), %r)).to(%s)" % (lo, hi, TL[dt])
            tags.append("cast.f2i")
        elif dt == "bf16":  # from fp32 or fp16; see INTERPRETER_BUGS for why not a plain .to()
            rule = "castdown"
            x = "{0}" if v.dt == "fp32" else "{0}.to(tl.float32)"
            x = "tl.where(tl.abs(%s) < 1.1754943508222875e-38, %s * 0.0, %s)" % (x, x, x)
            if self.r.random() < 0.5:
                code = "%s.to(tl.bfloat16, fp_downcast_rounding='rtz')" % x
                tags.append("cast.rtz")
            else:
                code = "(%s.to(tl.int32, bitcast=True) & -65536).to(tl.float32, bitcast=True).to(tl.bfloat16)" % x
        elif is_float(v.dt) and is_float(dt) and BITS[dt] < BITS[v.dt]:
            rule = "castdown"
            if (v.dt, dt) == ("fp32", "fp16") and self.r.random() < 0.3:
                # Finite values beyond fp16's range are clamped to +-65504 (what rtz gives) first:
                # see INTERPRETER_BUGS.
                code = "tl.where(tl.abs({0}) < 1.1754943508222875e-38, {0} * 0.0, tl.where((tl.abs({0}) > 65504.0) & " \
                       "(tl.abs({0}) <= 3.4028234663852886e38), tl.where({0} > 0, 65504.0, -65504.0), {0}))" \
                       ".to(%s, fp_downcast_rounding='rtz')" % TL[dt]
                tags.append("cast.rtz")
            else:
                code = "{0}.to(%s)" % TL[dt]
        else:
            code = "{0}.to(%s)" % TL[dt]
            if is_int(v.dt) and is_float(dt) and dt != "bf16":
                pass
            elif is_int(v.dt) and dt == "bf16":
                code = "{0}.to(tl.float32).to(tl.bfloat16)"
                rule = "castdown"
        acc = apply_rule(rule, [(v.acc, v.dt)], dt)
        node = Node("expr", [out], [(dt, v.sh)], [v.name], code, rule=rule, tags=tags, extra={"in_dt": v.dt})
        return self.add(node, [V(out, dt, v.sh, acc, raw=v.raw and bitcast)])

    # ---- op generators ----
    def op_cast(self):
        v = self.pick(lambda v: True) if self.r.random() < 0.5 else self.pick_class(allow_int1=True)
        v = v or self.load()
        r = self.r
        if r.random() < 0.3 and v.dt != "int1":
            same = {8: ["int8", "uint8"], 16: ["int16", "uint16", "fp16", "bf16"], 32: ["int32", "uint32", "fp32"],
                    64: ["int64", "uint64", "fp64"]}[BITS[v.dt]]
            targets = [d for d in same if d != v.dt and d != "bf16"]  # bf16 subnormals: INTERPRETER_BUGS
            if is_float(v.dt) and not v.raw:
                v = self.load(v.dt, v.sh)
            return self.cast(v, r.choice(targets), bitcast=True)
        targets = [d for d in DTYPES + ["int1"] + FLOATS if d != v.dt and self.can_cast(v, d)]
        if not targets:
            return None
        return self.cast(v, r.choice(targets))

    def op_binary(self):
        r = self.r
        a = self.pick_class(allow_int1=True)
        if a.dt == "int1":
            b = self.operand_like(a, need_exact=True)
            if a.sh == () or b.sh == ():  # INTERPRETER_BUGS: scalar int1 in bitwise ops
                return None
            op = r.choice(["&", "|", "^"])
            return self.expr("({0} %s {1})" % op, [a, b], "int1", bshape(a.sh, b.sh), "prop", ["logic"])
        if is_int(a.dt):
            op = r.choice(["+", "-", "*", "//", "%", "&", "|", "^", "<<", ">>", "min", "max", "umulhi", "cdiv",
                           "mixed", "+", "*"])
            if op == "mixed":
                b = self.pick(lambda v: is_int(v.dt) and v.dt != a.dt and v.sh != () and bshape(a.sh, v.sh) is not None
                              and a.sh != ()) if a.sh != () else None
                if b is None:
                    op = "+"
                else:
                    dt = integer_promote(a.dt, b.dt)
                    o = r.choice(["+", "-", "*", "&", "|", "^"])
                    return self.expr("({0} %s {1})" % o, [a, b], dt, bshape(a.sh, b.sh), "prop", ["int.mixed"])
            b = self.operand_like(a)
            sh = bshape(a.sh, b.sh)
            W = BITS[a.dt]
            if op in ("//", "%", "cdiv"):
                if signed(a.dt):
                    den = "tl.where(({1} == 0) | ({1} == -1), 3, {1})"
                else:
                    den = "tl.where({1} == %s, %s, {1})" % (lit(0, a.dt), lit(3, a.dt))
                if op == "cdiv":
                    code = "tl.cdiv({0}, %s)" % den
                else:
                    code = "({0} %s %s)" % (op, den)
                return self.expr(code, [a, b], a.dt, sh, "prop", ["int." + op])
            if op in ("<<", ">>"):
                return self.expr("({0} %s ({1} & %s))" % (op, lit(W - 1, a.dt)), [a, b], a.dt, sh, "prop", ["shift"])
            if op in ("min", "max"):
                return self.expr("tl.%simum({0}, {1})" % op, [a, b], a.dt, sh, "prop", ["int.minmax"])
            if op == "umulhi":
                if W < 32:
                    op = "*"
                else:
                    if a.sh == () and b.sh == ():
                        op = "*"
                    else:
                        return self.expr("tl.umulhi({0}, {1})", [a, b], a.dt, sh, "prop", ["umulhi"])
            return self.expr("({0} %s {1})" % op, [a, b], a.dt, sh, "prop", ["int.arith"])
        # floats (fp16/fp32/fp64)
        op = r.choice(["+", "-", "*", "/", "%", "min", "max", "maxall", "fma", "div_rn", "+", "*", "clamp", "/c"])
        if op == "/c":
            if a.dt in ("fp32", "fp64") and a.sh:
                return self.divide_by_constant(a)
            op = "/"
        need_exact = op == "%"
        if need_exact and not a.exact:
            op = "+"
            need_exact = False
        b = self.operand_like(a, need_exact=need_exact)
        sh = bshape(a.sh, b.sh)
        if op in ("/", "%", "div_rn"):
            if not b.exact:
                b = self.load(a.dt, b.sh)
            den = "tl.where(tl.abs({1}) < 0.25, 1.0, {1})"
            odt = "fp32" if a.dt == "fp16" else a.dt
            if op == "div_rn":
                if a.dt != "fp32":
                    return self.expr("({0} / %s)" % den, [a, b], odt, sh, "arith", ["float./"])
                return self.expr("tl.div_rn({0}, %s)" % den, [a, b], odt, sh, "arith", ["float.div_rn"])
            return self.expr("({0} %s %s)" % (op, den), [a, b], odt, sh, "arith", ["float." + op])
        if op in ("min", "max"):
            return self.expr("tl.%simum({0}, {1})" % op, [a, b], a.dt, sh, "minmax", ["float.minmax"])
        if op == "maxall":
            f = r.choice(["min", "max"])
            return self.expr("tl.%simum({0}, {1}, propagate_nan=tl.PropagateNan.ALL)" % f, [a, b], a.dt, sh,
                             "minmax", ["float.minmax_nan"])
        if op == "clamp":
            lo = r.choice([-2.0, -0.5, 0.0])
            return self.expr("tl.clamp({0}, %r, %r)" % (lo, lo + r.choice([0.5, 1.0, 3.0])), [a], a.dt, a.sh,
                             "minmax", ["clamp"])
        if op == "fma":
            c = self.operand_like(a)
            sh2 = bshape(sh, c.sh)
            if sh2 is None:
                return self.expr("({0} * {1})", [a, b], a.dt, sh, "arith", ["float.arith"])
            return self.expr("tl.fma({0}, {1}, {2})", [a, b, c], a.dt, sh2, "arith", ["fma"])
        return self.expr("({0} %s {1})" % op, [a, b], a.dt, sh, "arith", ["float.arith"])

    def nonan(self, v):
        """NaN -> 0: argmin/argmax and lexicographic combiners are not associative on NaN, so the
        result would depend on the reduction order (the interpreter ignores NaN: np.nanargmin)."""
        if not is_float(v.dt) or v.dt == "bf16":
            return v
        return self.expr("tl.where({0} != {0}, 0.0, {0})", [v], v.dt, v.sh, "prop", ["nonan"])

    def expr(self, code, args, dt, sh, rule, tags, extra=None):
        out = self.name()
        acc = apply_rule(rule, [(v.acc, v.dt) for v in args], dt)
        raw = rule == "prop" and all(v.raw for v in args) and "where" in tags
        node = Node("expr", [out], [(dt, sh)], [v.name for v in args], code, rule=rule, tags=tags, extra=extra)
        return self.add(node, [V(out, dt, sh, acc, raw=raw)])

    # Constant divisors, zeros of either sign among them: LLVM folds a division whose
    # divisor lanes are known (DAG combines assumed a known +0 lane of x / 0 to be +0 once).
    _DIVISORS = ["0.0", "-0.0", "2.0", "0.5", "-4.0", "3.0", "0.1", "1e-30"]

    def divide_by_constant(self, a):
        """a / c for a constant c: a scalar literal, or a tensor whose lanes along the last
        axis take one constant below a column and another from it on."""
        r = self.r
        if r.random() < 0.3:  # a masked load's `other` lanes: zeros the compiler knows
            a = self.load(a.dt, a.sh, mode="masked")
        n = a.sh[-1]
        lanes = "tl.arange(0, %d)" % n + ("[%s:]" % ("None, " * (len(a.sh) - 1)) if len(a.sh) > 1 else "")
        if r.random() < 0.5:
            den = r.choice(self._DIVISORS)
        else:
            den = "tl.where(%s < %d, %s, %s)" % (lanes, r.randrange(0, n + 1), r.choice(self._DIVISORS),
                                                 r.choice(self._DIVISORS))
        # Lanes of the dividend known to be zero (0 / 0 is NaN, 0 / c a signed zero): zeros
        # written in, or the zero lanes of an exact value selected by comparing it with 0.
        form = r.random()
        if form < 0.25 and a.exact:
            code = "tl.where({0} == 0.0, {0} / %s, {0})" % den
        elif form < 0.5:
            code = "(tl.where(%s < %d, %s, {0}) / %s)" % (lanes, r.randrange(0, n + 1), r.choice(["0.0", "-0.0"]), den)
        else:
            code = "({0} / %s)" % den
        return self.expr(code, [a], a.dt, a.sh, "arith", ["float./const"])

    def op_compare_where(self):
        r = self.r
        a = self.pick_class(exact=True)
        b = self.operand_like(a, need_exact=True)
        op = r.choice(["<", "<=", ">", ">=", "==", "!="])
        c = self.expr("({0} %s {1})" % op, [a, b], "int1", bshape(a.sh, b.sh), "prop", ["compare"])
        if r.random() < 0.25:
            return c
        # where(c, x, y): x, y any dtype (bf16 too), shapes broadcast with c
        x = self.pick(lambda v: bshape(c.sh, v.sh) is not None and v.dt != "int1") or self.load(None, c.sh)
        y = self.operand_like(x)
        sh = bshape(bshape(c.sh, x.sh), y.sh)
        if sh is None:
            y = self.load(x.dt, x.sh)
            sh = bshape(c.sh, x.sh)
        return self.expr("tl.where({0}, {1}, {2})", [c, x, y], x.dt, sh, "prop", ["where"])

    def op_unary(self):
        r = self.r
        a = self.pick_class()
        if is_int(a.dt) and r.random() < 0.3:
            a = self.cast(a, r.choice(["fp32", "fp64"]))
        if is_int(a.dt):
            op = r.choice(["neg", "abs", "invert"])
            code = {"neg": "(-{0})", "abs": "tl.abs({0})", "invert": "(~{0})"}[op]
            return self.expr(code, [a], a.dt, a.sh, "prop", ["int." + op])
        op = r.choice(["neg", "abs", "math", "math", "math", "math", "math", "floor", "sqrt_rn"])
        if op in ("neg", "abs"):
            return self.expr("(-{0})" if op == "neg" else "tl.abs({0})", [a], a.dt, a.sh, "prop", ["float." + op])
        if a.dt == "fp16":
            a = self.cast(a, "fp32")
        if op == "sqrt_rn" and a.dt == "fp64":
            op = "math"
        if op in ("floor", "sqrt_rn"):
            if not a.exact:
                a = self.load(a.dt, a.sh)
            if op == "floor":
                return self.expr("tl.%s({0})" % r.choice(["floor", "ceil"]), [a], a.dt, a.sh, "prop", ["floorceil"])
            return self.expr("tl.sqrt_rn(tl.abs({0}))", [a], a.dt, a.sh, "prop", ["sqrt_rn"])
        name = r.choice(sorted(MATH))
        tmpl, ulp, inexact_ok = MATH[name]
        if not a.exact and not inexact_ok:
            a = self.load(a.dt, a.sh)
        return self.expr(tmpl, [a], a.dt, a.sh, ("math", ulp), ["math." + name])

    def op_reduce(self):
        r = self.r
        a = self.pick(lambda v: v.sh != () and v.dt != "int1") or self.load()
        rank = len(a.sh)
        axis = r.choice(list(range(rank)) + [None])
        keep = r.random() < 0.3
        if axis is None:
            sh = (1,) * rank if keep else ()
        else:
            sh = tuple(1 if i == axis else n for i, n in enumerate(a.sh)) if keep else \
                tuple(n for i, n in enumerate(a.sh) if i != axis)
        nterms = numel(a.sh) if axis is None else a.sh[axis]
        kd = ", keep_dims=True" if keep else ""
        ax = "axis=%s" % axis
        kinds = ["sum", "max", "min", "argmax", "argmin", "reduce", "reduce2"]
        if is_int(a.dt):
            kinds += ["xor_sum"]
        kind = r.choice(kinds)
        if a.dt == "bf16" and kind not in ("max", "min"):
            kind = r.choice(["max", "min", "sum"])
        if kind in ("argmax", "argmin") and (axis is None or not a.exact):
            kind = "max"
        tags = ["reduce." + kind]
        if kind == "sum":
            if is_int(a.dt):
                dt = ("int32" if signed(a.dt) else "uint32") if BITS[a.dt] < 32 else a.dt
                if r.random() < 0.3:
                    dt = "int64" if signed(a.dt) else "uint64"
            else:
                dt = "fp32" if a.dt in ("bf16", "fp16") and (a.dt == "bf16" or r.random() < 0.5) else a.dt
            dtp = ", dtype=%s" % TL[dt] if (dt != a.dt or r.random() < 0.3) else ""
            if dt == "fp16":
                a = self.summable(a)
            return self.expr("tl.sum({0}, %s%s%s)" % (ax, kd, dtp), [a], dt, sh, ("red", nterms, dt), tags)
        if kind in ("max", "min"):
            if a.dt == "bf16":  # the result is fp32 (Triton upcasts); no cast back (INTERPRETER_BUGS)
                return self.expr("tl.%s({0}, %s%s)" % (kind, ax, kd), [a], "fp32", sh, "minmax", tags)
            return self.expr("tl.%s({0}, %s%s).to(%s)" % (kind, ax, kd, TL[a.dt]), [a], a.dt, sh, "minmax", tags)
        if kind in ("argmax", "argmin"):
            a = self.nonan(a)
            return self.expr("tl.%s({0}, %s%s)" % (kind, ax, kd), [a], "int32", sh, "prop", tags)
        if kind == "xor_sum":
            if axis is None and keep:  # INTERPRETER_BUGS: xor_sum is a tl.reduce with a combiner
                kd, sh = "", ()
            return self.expr("tl.xor_sum({0}, %s%s)" % (ax, kd), [a], a.dt, sh, "prop", tags)
        if kind == "reduce":
            if axis is None and keep:  # INTERPRETER_BUGS: the result has rank 1
                kd, sh = "", ()
            # (float products are not generated: overflow to inf and then inf * 0 depend on the order)
            fns = ["c_add", "c_max", "c_min"] + (["c_xor", "c_or", "c_mul"] if is_int(a.dt) else [])
            fn = r.choice(fns)
            self.k.helpers.add(fn)
            rule = ("red", nterms) if fn in ("c_add", "c_mul") else ("minmax" if fn in ("c_max", "c_min") else "prop")
            if fn == "c_mul" and is_float(a.dt):
                a = self.cast(self.pick_or_load(lambda v: v.sh == a.sh and v.dt == a.dt and v.exact, a.dt, a.sh), a.dt)
            if fn == "c_add":
                a = self.summable(a)
            return self.expr("tl.reduce({0}, %s, %s%s).to(%s)" % (axis, fn, kd, TL[a.dt]), [a], a.dt, sh, rule, tags)
        # two operands (never axis=None: see INTERPRETER_BUGS)
        if axis is None:
            axis = r.randrange(rank)
            sh = tuple(1 if i == axis else n for i, n in enumerate(a.sh)) if keep else \
                tuple(n for i, n in enumerate(a.sh) if i != axis)
            nterms = a.sh[axis]
        b = self.pick(lambda v: v.sh == a.sh and v.dt != "bf16" and v.dt != "int1") or self.load(self.rand_dtype(False), a.sh)
        fn = r.choice(["c_lexmin", "c_summax"])
        if fn == "c_lexmin" and (not a.exact or not b.exact):
            fn = "c_summax"
        if fn == "c_lexmin":
            a, b = self.nonan(a), self.nonan(b)
        else:
            a = self.summable(a)
        self.k.helpers.add(fn)
        tags = ["reduce2." + fn]
        out1, out2 = self.name(), self.name()
        node = Node("expr", [out1, out2], [(a.dt, sh), (b.dt, sh)], [a.name, b.name],
                    "tl.reduce(({0}, {1}), %s, %s%s)" % (axis, fn, kd),
                    rule=("red", nterms) if fn == "c_summax" else "minmax", tags=tags)  # minmax: see op_scan
        acc1 = apply_rule(node.rule, [(a.acc, a.dt), (b.acc, b.dt)], a.dt)
        acc2 = apply_rule(node.rule, [(a.acc, a.dt), (b.acc, b.dt)], b.dt)
        if fn == "c_summax":
            acc2 = apply_rule("red" if False else ("red", nterms), [(a.acc, a.dt), (b.acc, b.dt)], b.dt)
        vals = self.add(node, [V(out1, a.dt, sh, acc1), V(out2, b.dt, sh, acc2)])
        return vals[0]

    def summable(self, a):
        """`a` as the terms of a float sum or scan in its own type, or, for fp16, a fresh load of
        its shape. The backend evaluates fp16 combine regions in fp32 and rounds once
        (reductions.py); the interpreter rounds each step to fp16. A partial sum beyond fp16's
        range is then infinite on one side only, and NaN against -inf where it meets an infinity
        of the other sign (seed 540227). Fresh loads are at most 8 in magnitude, or infinite or
        NaN from the start, so no partial sum of fewer than 8000 terms overflows."""
        return self.load("fp16", a.sh) if a.dt == "fp16" else a

    def op_scan(self):
        r = self.r
        a = self.pick(lambda v: v.sh != () and v.dt not in ("bf16", "int1")) or self.load(self.rand_dtype(False))
        if a.sh == ():
            return None
        axis = r.randrange(len(a.sh))
        rev = r.random() < 0.4
        rv = ", reverse=True" if rev else ""
        n = a.sh[axis]
        kind = r.choice(["cumsum", "cumprod", "scan", "scan2"])
        if kind in ("cumsum", "cumprod"):
            dt = ("int32" if signed(a.dt) else "uint32") if is_int(a.dt) and BITS[a.dt] < 32 else a.dt
            if kind == "cumprod" and a.dt == "fp16":
                # Evaluated in fp32 here (reductions.py), step by step in fp16 by the interpreter:
                # a finite prefix product that overflows fp16 and is then multiplied by 0 is NaN
                # there, 0 here. Products stay in range: fresh loads (|x| <= 8), 4 terms at most.
                if n > 4:
                    kind = "cumsum"
                else:
                    a = self.load(a.dt, a.sh)
            elif kind == "cumprod" and is_float(a.dt) and n > 16:
                kind = "cumsum"
            if kind == "cumsum":
                a = self.summable(a)
            return self.expr("tl.%s({0}, axis=%d%s)" % (kind, axis, rv), [a], dt, a.sh, ("red", n), ["scan." + kind])
        if kind == "scan":
            fn = r.choice(["c_add", "c_max", "c_min"] + (["c_xor", "c_mul"] if is_int(a.dt) else []))
            self.k.helpers.add(fn)
            rule = ("red", n) if fn == "c_add" else ("minmax" if fn in ("c_max", "c_min") else "prop")
            if fn == "c_add":
                a = self.summable(a)
            return self.expr("tl.associative_scan({0}, %d, %s%s).to(%s)" % (axis, fn, rv, TL[a.dt]), [a], a.dt, a.sh,
                             rule, ["scan." + fn])
        b = self.pick(lambda v: v.sh == a.sh and v.dt not in ("bf16", "int1")) or self.load(self.rand_dtype(False), a.sh)
        fn = "c_lexmin" if a.exact and b.exact and r.random() < 0.5 else "c_summax"
        if fn == "c_lexmin":
            a, b = self.nonan(a), self.nonan(b)
        else:
            a = self.summable(a)
        self.k.helpers.add(fn)
        out1, out2 = self.name(), self.name()
        # lexmin: keys -0.0 and +0.0 tie, so which zero comes out depends on the combine order.
        rule = ("red", n) if fn == "c_summax" else "minmax"
        node = Node("expr", [out1, out2], [(a.dt, a.sh), (b.dt, a.sh)], [a.name, b.name],
                    "tl.associative_scan(({0}, {1}), %d, %s%s)" % (axis, fn, rv), rule=rule, tags=["scan2." + fn])
        vals = self.add(node, [V(out1, a.dt, a.sh, apply_rule(rule, [(a.acc, a.dt), (b.acc, b.dt)], a.dt)),
                               V(out2, b.dt, a.sh, apply_rule(rule, [(a.acc, a.dt), (b.acc, b.dt)], b.dt))])
        return vals[0]

    def op_shape(self):
        r = self.r
        a = self.pick(lambda v: v.sh != ()) or self.load()
        sh = a.sh
        kind = r.choice(["reshape", "trans", "permute", "join", "split", "interleave", "cat", "flip", "gather",
                         "expand", "broadcast"])
        rank = len(sh)
        if kind == "reshape":
            n = numel(sh)
            for _ in range(20):
                new = self.rand_shape(max_numel=n)
                if numel(new) == n:
                    break
            else:
                new = (n,)
            return self.expr("tl.reshape({0}, %r)" % (new,), [a], a.dt, new, "prop", ["reshape"])
        if kind in ("trans", "permute"):
            if rank == 1:
                return self.expr("tl.reshape({0}, (%d, 1))" % sh[0], [a], a.dt, (sh[0], 1), "prop", ["reshape"])
            if rank == 2:
                return self.expr(r.choice(["tl.trans({0})", "{0}.T", "tl.permute({0}, (1, 0))"]), [a], a.dt,
                                 (sh[1], sh[0]), "prop", ["trans"])
            p = [0, 1, 2]
            r.shuffle(p)
            code = r.choice(["tl.permute({0}, (%d, %d, %d))", "tl.trans({0}, %d, %d, %d)"]) % tuple(p)
            return self.expr(code, [a], a.dt, tuple(sh[i] for i in p), "prop", ["permute"])
        if kind in ("join", "interleave"):
            if rank > 2:
                return None
            b = self.pick(lambda v: v.sh == sh and v.dt == a.dt and v is not a) or self.load(a.dt, sh)
            if kind == "join":
                return self.expr("tl.join({0}, {1})", [a, b], a.dt, sh + (2,), "prop", ["join"])
            return self.expr("tl.interleave({0}, {1})", [a, b], a.dt, sh[:-1] + (2 * sh[-1],), "prop", ["interleave"])
        if kind == "split":
            if sh[-1] != 2:
                if rank > 2:
                    return None
                b = self.pick(lambda v: v.sh == sh and v.dt == a.dt and v is not a) or self.load(a.dt, sh)
                a = self.expr("tl.join({0}, {1})", [a, b], a.dt, sh + (2,), "prop", ["join"])
                sh = a.sh
            o1, o2 = self.name(), self.name()
            node = Node("expr", [o1, o2], [(a.dt, sh[:-1])] * 2, [a.name], "tl.split({0})", rule="prop", tags=["split"])
            return self.add(node, [V(o1, a.dt, sh[:-1], a.acc), V(o2, a.dt, sh[:-1], a.acc)])[r.randrange(2)]
        if kind == "cat":
            if rank != 1:
                a = self.expr("tl.reshape({0}, (%d,))" % numel(sh), [a], a.dt, (numel(sh),), "prop", ["reshape"])
            b = self.pick(lambda v: v.sh == a.sh and v.dt == a.dt and v is not a) or self.load(a.dt, a.sh)
            return self.expr("tl.cat({0}, {1}, can_reorder=True)", [a, b], a.dt, (2 * a.sh[0],), "prop", ["cat"])
        if kind == "flip":  # Triton's frontend rejects flipping a size-1 dimension
            dims = [i for i in range(rank) if sh[i] > 1]
            if not dims:
                return None
            d = r.choice(dims)
            return self.expr("tl.flip({0}, %d)" % d if r.random() < 0.8 or rank > 1 or sh[0] == 1 else "tl.flip({0})",
                             [a], a.dt, sh, "prop", ["flip"])
        if kind == "gather":
            axis = r.randrange(rank)
            ish = tuple(r.choice([1, 2, 4, 8, 16]) if i == axis else n for i, n in enumerate(sh))
            idx = self.pick(lambda v: v.sh == ish and is_int(v.dt) and v.exact) or self.load(r.choice(INTS), ish)
            code = "tl.gather({0}, ({1}).to(tl.int32) & %d, %d)" % (sh[axis] - 1, axis)
            return self.expr(code, [a, idx], a.dt, ish, "prop", ["gather"])
        if kind == "expand":
            if rank > 2:
                return None
            ax = r.randrange(rank + 1)
            new = sh[:ax] + (1,) + sh[ax:]
            if r.random() < 0.5:
                code = "tl.expand_dims({0}, %d)" % ax
            else:
                code = "{0}[%s]" % ", ".join(["None" if i == ax else ":" for i in range(rank + 1)])
            return self.expr(code, [a], a.dt, new, "prop", ["expand_dims"])
        if 1 not in sh:
            return None
        new = tuple(r.choice([2, 4, 8]) if n == 1 else n for n in sh)
        if numel(new) > 1024:
            return None
        return self.expr("tl.broadcast_to({0}, %r)" % (new,), [a], a.dt, new, "prop", ["broadcast_to"])

    def op_dot(self):
        r = self.r
        M, N, K = (r.choice([16, 32, 64]) for _ in range(3))
        dt = r.choice(["fp32", "fp32", "fp16", "int8"])
        batch = (2,) if r.random() < 0.15 else ()
        ash, bsh = batch + (M, K), batch + (K, N)

        def operand(sh):
            v = self.pick(lambda v: v.sh == sh and self.can_cast(v, dt) and (v.exact or is_float(dt)), p=0.6)
            if v is not None:
                return self.cast(v, dt)
            return self.load(dt, sh, mode=r.choice(["contig", "perm", "masked"]))
        a, b = operand(ash), operand(bsh)
        odt = "int32" if dt == "int8" else "fp32"
        args = [a, b]
        extra = ""
        if dt != "int8" and r.random() < 0.5:
            extra = r.choice([", input_precision='ieee'", ", input_precision='tf32'", ""])
        if r.random() < 0.4:
            c = self.pick_or_load(lambda v: v.sh == batch + (M, N) and v.dt == odt, odt, batch + (M, N))
            args.append(c)
            code = "tl.dot({0}, {1}, acc={2}%s)" % extra
        else:
            code = "tl.dot({0}, {1}%s)" % extra
        return self.expr(code, args, odt, batch + (M, N), ("red", K + 1, "fp32"), ["dot." + dt + (".3d" if batch else "")])

    def op_arange(self):
        n = self.r.choice([2, 4, 8, 16, 32])
        if self.r.random() < 0.5:
            return self.expr("tl.arange(0, %d)" % n, [], "int32", (n,), "prop", ["arange"])
        return self.expr("(tl.arange(0, %d) + pid)" % n, [], "int32", (n,), "prop", ["arange"])

    def finalize(self, ty):
        """A value of exactly type ty built from values in scope (for loop bodies / if branches)."""
        dt, sh = ty
        r = self.r
        base = self.pick(lambda v: v.dt == dt and v.sh == sh, p=0.9) or self.load(dt, sh)
        if dt == "bf16" or r.random() < 0.15:
            return base
        other = self.pick(lambda v: bshape(sh, v.sh) == sh and self.can_cast(v, dt) and v is not base, p=0.8)
        other = self.cast(other, dt) if other is not None else self.load(dt, sh)
        if dt == "int1":
            op = r.choice(["({0} ^ {1})", "({0} | {1})"])
        else:
            op = r.choice(["({0} + {1})", "tl.maximum({0}, {1})", "({0} * {1})", "({0} - {1})"])
        rule = "arith" if is_float(dt) and "maximum" not in op else ("minmax" if "maximum" in op else "prop")
        return self.expr(op, [base, other], dt, sh, rule, ["ctl.combine"])

    def sub_block(self, nops, scope_vals, pre=None):
        blk = Block()
        saved = self.block
        self.block = blk
        self.scopes.append(list(scope_vals))
        if pre:
            pre()
        for _ in range(nops):
            self.one_op(nested=True)
        return blk, saved

    def end_block(self, blk, saved, result):
        blk.results = [result.name]
        self.scopes.pop()
        self.block = saved

    def trip_bound(self, deps):
        """A loop's trip count as source: 1-4, or 0-3 from a scalar in scope (whose name is
        appended to `deps`, the source's {1}); and whether it is the latter."""
        r = self.r
        bound = str(r.randint(1, 4))
        dyn = self.pick(lambda v: v.sh == () and is_int(v.dt) and v.exact, p=0.5)
        if dyn is not None and r.random() < 0.5:
            deps.append(dyn.name)
            return "(({1}).to(tl.int32) & 3)", True
        return bound, False

    def enter_loop(self, iv):
        """Generation moves into a loop body with induction variable `iv` (loads may then
        address by iteration); returns what exit_loop restores."""
        self.in_loop += 1
        old_iv = getattr(self, "loop_iv", None)
        self.loop_iv = iv
        return old_iv

    def exit_loop(self, old_iv):
        self.in_loop -= 1
        self.loop_iv = old_iv

    def op_loop(self):
        r = self.r
        init = self.pick(lambda v: v.dt != "int1" and v.sh != ()) or self.load()
        if r.random() < 0.3:
            # an accumulator that starts from a constant (peel-accumulator-loops moves the
            # first iteration out of such a loop)
            v = r.choice([0, 0, 1, 3])
            init = self.expr("tl.full(%r, %s, %s)" % (tuple(init.sh), repr(float(v)) if is_float(init.dt) else str(v),
                                                       TL[init.dt]), [], init.dt, init.sh, "prop", ["loop.const_init"])
        ty = (init.dt, init.sh)
        c, iv = self.name("c"), self.name("i")
        deps = [init.name]
        bound, dynamic = self.trip_bound(deps)
        rng = r.choice(["range(0, %s)", "tl.range(0, %s)", "range(%s)"]) % bound
        cacc = ("tol", 64 * EPS[init.dt], True) if is_float(init.dt) else init.acc
        old_iv = self.enter_loop(iv)
        # the interpreter's loop variable is a Python int: make it a tensor first (see INTERPRETER_BUGS)
        pre = lambda: self.expr("{0} + tl.zeros((), tl.int32)", [V(iv, "int32", ())], "int32", (), "prop", ["loop.iv"])
        blk, saved = self.sub_block(r.randint(1, 3), [V(c, init.dt, init.sh, cacc)], pre)
        if r.random() < 0.7:
            self.load(init.dt if r.random() < 0.7 else None, init.sh, mode="iter")
        res = self.finalize(ty)
        self.end_block(blk, saved, res)
        self.exit_loop(old_iv)
        node = Node("loop", [c], [ty], deps, rng, rule="prop", tags=["loop" + (".dyn" if dynamic else "")],
                    blocks=[blk], extra={"iv": iv})
        acc = init.acc if init.acc == res.acc and not is_float(init.dt) else (
            ("tol", 4 * (acc_err(init.acc, init.dt) + acc_err(res.acc, init.dt)) + 64 * EPS[init.dt], True)
            if is_float(init.dt) and (not init.exact or not res.exact) else init.acc)
        return self.add(node, [V(c, init.dt, init.sh, acc)])

    def op_dot_loop(self):
        """A matmul's K loop: an int32 accumulator carried through one int8 tl.dot per
        iteration, over that iteration's tiles (exact). On a host with AMX-INT8 the dot runs
        on tiles and the loop is unrolled into chains of 4 or 2 iterations (K = 64, 128)
        that run as one tile kernel (unroll-tile-dot-loops); elsewhere on vector code."""
        r = self.r
        M, N, K = r.choice([16, 32, 64]), r.choice([16, 32, 64]), r.choice([64, 128])
        ty = ("int32", (M, N))
        init = self.pick(lambda v: (v.dt, v.sh) == ty and v.acc[0] == "exact", p=0.5)
        if init is None:
            init = self.expr("tl.zeros((%d, %d), tl.int32)" % (M, N), [], "int32", (M, N), "prop", ["dotloop.zero"])
        c, iv = self.name("c"), self.name("i")
        deps = [init.name]
        bound, _ = self.trip_bound(deps)
        old_iv = self.enter_loop(iv)
        carried = V(c, "int32", (M, N), init.acc)
        blk, saved = self.sub_block(0, [carried])
        a = self.load("int8", (M, K), mode=r.choice(["iter", "iter", "iter_wrapped"]))
        b = self.load("int8", (K, N), mode=r.choice(["iter", "iter", "contig"]))
        res = self.expr("tl.dot({0}, {1}, acc={2})", [a, b, carried], "int32", (M, N), ("red", K + 1, "fp32"),
                        ["dotloop.int8"])
        self.end_block(blk, saved, res)
        self.exit_loop(old_iv)
        node = Node("loop", [c], [ty], deps, "range(0, %s)" % bound, rule="prop", tags=["dotloop"],
                    blocks=[blk], extra={"iv": iv})
        return self.add(node, [V(c, "int32", (M, N), init.acc)])

    def op_if(self):
        r = self.r
        kind = r.choice(["scalar", "scalar", "reduction", "pid"])
        deps = []
        if kind == "pid":
            cond = r.choice(["pid == 0", "pid % 2 == 1", "pid < 2"])
        else:
            if kind == "reduction":
                a = self.pick(lambda v: v.sh != () and v.exact and v.dt not in ("bf16", "int1")) or \
                    self.load(self.rand_dtype(False))
                if is_int(a.dt):
                    s = self.expr("tl.sum({0})", [a], ("int32" if signed(a.dt) else "uint32") if BITS[a.dt] < 32
                                  else a.dt, (), "prop", ["reduce.sum", "if.reduction"])
                else:
                    s = self.expr("tl.max({0}).to(%s)" % TL[a.dt], [a], a.dt, (), "minmax", ["reduce.max", "if.reduction"])
            else:
                s = self.pick(lambda v: v.sh == () and v.exact and v.dt not in ("bf16", "int1")) or \
                    self.load(self.rand_dtype(False), ())
            deps = [s.name]
            cond = "{0} > %s" % lit(r.choice([0, 1, 2]), s.dt)
        target = self.pick(lambda v: v.dt != "int1") or self.load()
        ty = (target.dt, target.sh)
        out = self.name("r")
        blocks = []
        res_acc = []
        for _ in range(2):
            blk, saved = self.sub_block(r.randint(0, 2), [])
            res = self.finalize(ty)
            self.end_block(blk, saved, res)
            blocks.append(blk)
            res_acc.append(res.acc)
        acc = res_acc[0] if res_acc[0] == res_acc[1] else (
            ("tol", sum(acc_err(a, ty[0]) for a in res_acc) + EPS.get(ty[0], 0), True) if is_float(ty[0]) else EXACT)
        node = Node("if", [out], [ty], deps, cond, rule="prop", tags=["if." + kind], blocks=blocks)
        return self.add(node, [V(out, ty[0], ty[1], acc)])

    OPS = [("load", 6), ("binary", 20), ("compare_where", 8), ("unary", 11), ("cast", 9), ("reduce", 9),
           ("scan", 5), ("shape", 11), ("dot", 3), ("gather_load", 3), ("loop", 4), ("if", 4), ("arange", 1),
           ("dot_loop", 1), ("store_load", 3), ("atomic", 2)]

    def one_op(self, nested=False):
        ops = [(n, w) for n, w in self.OPS if not (nested and n in ("loop", "if", "dot", "dot_loop"))]
        total = sum(w for _, w in ops)
        x = self.r.uniform(0, total)
        for n, w in ops:
            x -= w
            if x <= 0:
                break
        return getattr(self, "op_" + n)() if n != "load" else self.load()

    def generate(self):
        r = self.r
        k = self.k
        k.grid = r.choice([(1,), (2,), (3,), (4,), (2, 2), (1, 2)])
        self.block = k.body
        self.scopes = [[V("pid", "int32", ())]]
        for _ in range(self.size):
            self.one_op()
        # stores: every value nothing used, plus a few more
        used = set()
        for n in k.walk():
            used |= node_uses(n)
        top = [v for v in self.scopes[0] if v.name != "pid"]
        sinks = [v for v in top if v.name not in used]
        extra = [v for v in top if v.name in used and r.random() < 0.15]
        for v in (sinks + extra)[:8]:
            self.store(v)
        if not any(n.kind == "store" for n in k.body.nodes):
            self.store(top[-1] if top else self.load())
        self.store_in_place(top)
        return k

    def store_in_place(self, top):
        """For a share of the seeds (IN_PLACE, decided by a stream of its own so that the
        other seeds keep their kernels), one more store, last: into a buffer the kernel
        loaded, inside the program's own region of it, of a value computed from that load
        when one is at hand. Its lanes go through the load's own pointers, or one-to-one
        onto other addresses of the region (reversed, rotated, scrambled by an odd factor),
        so that a lane writes what another lane read: the tile's load must still give
        what memory held before the store (what the interpreter does). Some of the time
        it replaces the kernel's other stores (no store group checks it against them), or
        the value's (nothing but this store reads it)."""
        if not may_store_in_place(self.k.seed):
            return
        r = random.Random(self.k.seed * 104729 + 3)
        r.random()  # (the draw may_store_in_place made)
        loads = [n for n in self.k.body.nodes if n.kind == "load" and "region" in n.extra
                 and not n.buf.out and n.tys[0][1] != ()]
        if not loads:
            return
        n = r.choice(loads)
        dt, sh, region = n.tys[0][0], n.tys[0][1], n.extra["region"]
        fed = [v for v in top if v.dt == dt and v.sh == sh and numel(sh) <= region and (v.name == n.outs[0] or any(
            m.outs == [v.name] and n.outs[0] in m.deps for m in self.k.body.nodes))]
        others = [v for v in top if v.dt == dt and v.sh and numel(v.sh) <= region]
        v = r.choice(fed) if fed and r.random() < 0.8 else r.choice(others) if others else None
        if v is None:
            return
        lin = offsets(v.sh, row_major(v.sh))
        # (through the load's own pointers only where they hold no address twice)
        modes = ["reverse", "rotate", "scramble"] + (["same", "same"] if v.sh == sh and numel(sh) <= region else [])
        mode = r.choice(modes)
        if mode == "same":
            ptr = n.extra["ptr"]
        elif mode == "reverse":
            ptr = "{P} + pid * %d + (%d - (%s))" % (region, region - 1, lin)
        else:
            a = 1 if mode == "rotate" else r.choice([f for f in (3, 5, 7, 9) if math.gcd(f, region) == 1] or [1])
            ptr = "{P} + pid * %d + ((%s) * %d + %d) %% %d" % (region, lin, a, r.randrange(1, region + 1), region)
        code = "tl.store(%s, {0})" % ptr
        if r.random() < 0.3:
            code = "tl.store(%s, {0}, mask=(%s) < %d)" % (ptr, lin, r.randint(0, numel(v.sh)))
        alone = r.random()
        if alone < 0.3:  # the kernel's only final store (adjacent stores run behind an overlap check)
            self.block.nodes[:] = [m for m in self.block.nodes if m.kind != "store" or "store.scratch" in m.tags[0]]
        elif alone < 0.6:  # the value's only store: no other consumer reads the load whole first
            self.block.nodes[:] = [m for m in self.block.nodes if not (
                m.kind == "store" and m.deps == [v.name] and "store.scratch" not in m.tags[0])]
        n.buf.out = True
        self.block.nodes.append(Node("store", [], [], [v.name], code, tags=["store.in_place." + mode], buf=n.buf))

    # ---- the Inductor-shaped family ----
    def generate_rows(self):
        """A kernel shaped like Inductor's persistent reductions and gathers: each program
        owns X rows of an [rows, R] matrix (`xindex = pid * X + arange(X)[:, None]`,
        `rindex = arange(R)[None, :]`, both masked against numels that may cut the last
        program's rows and every row's tail), loads whole tiles, a weight row and per-row
        values, possibly gathers its rows through an index tensor, computes elementwise
        chains with row reductions (sum, max, min, keep_dims, broadcast back), a row-wise
        cumsum, and stores tiles and per-row results under the masks. Tiles of up to 16 x
        1024 reach the passes the small tiles of `generate` never do (split-row-tiles,
        prefetch-next-program's gathers)."""
        r = self.r
        k = self.k
        k.grid = (r.choice([1, 2, 3, 4]),)
        X = r.choice([1, 2, 4, 8, 8, 16])
        R = r.choice([64, 128, 256, 512, 1024])
        while X * R > 8192:
            R //= 2
        rows = k.grid[0] * X
        xn = rows - (r.randrange(X) if r.random() < 0.4 else 0)
        rn = R - (r.choice([1, 3, R // 4, R // 2]) if r.random() < 0.4 else 0)
        self.block = k.body
        self.scopes = [[V("pid", "int32", ())]]
        tile, col, row = (X, R), (1, R), (X, 1)
        xi = self.expr("pid * %d + tl.arange(0, %d)[:, None]" % (X, X), [], "int32", row, "prop", ["rows.x"])
        ri = self.expr("tl.arange(0, %d)[None, :]" % R, [], "int32", col, "prop", ["rows.r"])
        xm = self.expr("{0} < %d" % xn, [xi], "int1", row, "prop", ["rows.xmask"])
        rm = self.expr("{0} < %d" % rn, [ri], "int1", col, "prop", ["rows.rmask"])
        m = self.expr("{0} & {1}", [rm, xm], "int1", tile, "prop", ["rows.mask"])
        floats = []

        def load(dt, sh, deps, code, tag, buf):
            out = self.name()
            node = Node("load", [out], [(dt, sh)], [v.name for v in deps], code, rule="load", tags=[tag], buf=buf)
            return self.add(node, [V(out, dt, sh, raw=True)])

        in_out = []  # Inductor's in_out_ptr: a tile loaded, then overwritten by a store

        def load_tile():
            dt = r.choice(["fp32", "fp32", "fp32", "fp16", "bf16"])
            buf = self.new_buf(dt, rows * R, kind=r.choice(["float", "float", "grid", "special"]))
            if dt == "fp32" and not in_out and r.random() < 0.3:
                buf.out = True
                in_out.append(buf)
            other = r.choice(["0.0", "float('-inf')", "1.0"]) if dt == "fp32" else "0.0"
            v = load(dt, tile, [ri, xi, m], "tl.load({P} + ({0} + %d * {1}), {2}, other=%s)" % (R, other),
                     "rows.load", buf)
            return v if dt == "fp32" else self.expr("{0}.to(tl.float32)", [v], "fp32", tile, "prop", ["rows.upcast"])

        def gather_tile():
            n_tab = r.choice([5, 16, 64])
            t = load("int32", row, [xi, xm], "tl.load({P} + {0}, {1}, other=0)", "rows.index",
                     self.new_buf("int32", rows, kind="small"))
            t = self.expr("(({0} %% %d) + %d) %% %d" % (n_tab, n_tab, n_tab), [t], "int32", row, "prop", ["rows.wrap"])
            stride = r.choice([1, 1, 2])
            buf = self.new_buf("fp32", n_tab * R * stride, kind=r.choice(["float", "grid"]))
            return load("fp32", tile, [ri, t, m], "tl.load({P} + (%d * {0} + %d * {1}), {2}, other=0.0)"
                        % (stride, R * stride), "rows.gather", buf)

        def weight():
            return load("fp32", col, [ri, rm], "tl.load({P} + {0}, {1}, other=0.0)", "rows.weight",
                        self.new_buf("fp32", R, kind="float"))

        floats.append(gather_tile() if r.random() < 0.3 else load_tile())
        outs_tile, outs_row = [], []
        for _ in range(r.randint(3, 10)):
            a = r.choice(floats)
            op = r.choice(["bin", "bin", "weight", "math", "rowred", "rowred", "center", "cumsum", "load", "where"])
            if op == "load":
                floats.append(gather_tile() if r.random() < 0.3 else load_tile())
            elif op == "bin":
                b = r.choice(floats)
                sym = r.choice(["+", "-", "*"])
                floats.append(self.expr("{0} %s {1}" % sym, [a, b], "fp32", tile, "arith", ["rows." + sym]))
            elif op == "weight":
                floats.append(self.expr("{0} * {1}", [a, weight()], "fp32", tile, "arith", ["rows.weight"]))
            elif op == "math":
                name = r.choice(["exp", "sigmoid", "erf", "abs"])
                if name == "abs":
                    floats.append(self.expr("tl.abs({0})", [a], "fp32", tile, "prop", ["rows.abs"]))
                elif name == "exp":
                    # exp of a value <= 0 (Inductor's softmax): max subtracted first
                    mx = self.expr("tl.max(tl.where({1}, {0}, float('-inf')), 1, keep_dims=True)", [a, m], "fp32",
                                   row, "minmax", ["rows.max"])
                    d = self.expr("tl.where({2}, {0} - {1}, 0.0)", [a, mx, m], "fp32", tile, "arith", ["rows.sub"])
                    floats.append(self.expr("tl.exp({0})", [d], "fp32", tile, ("math", 4), ["rows.exp"]))
                else:
                    tmpl, ulp, _ = MATH[name]
                    floats.append(self.expr(tmpl, [a], "fp32", tile, ("math", ulp), ["rows." + name]))
            elif op in ("rowred", "center"):
                kind = r.choice(["sum", "max", "min"])
                neutral = {"sum": "0.0", "max": "float('-inf')", "min": "float('inf')"}[kind]
                red = self.expr("tl.%s(tl.where({1}, {0}, %s), 1, keep_dims=True)" % (kind, neutral), [a, m], "fp32",
                                row, ("red", R) if kind == "sum" else "minmax", ["rows." + kind])
                if op == "center":
                    floats.append(self.expr("{0} - {1}", [a, red], "fp32", tile, "arith", ["rows.center"]))
                else:
                    outs_row.append(red)
            elif op == "cumsum":
                floats.append(self.expr("tl.cumsum(tl.where({1}, {0}, 0.0), 1)", [a, m], "fp32", tile, ("red", R),
                                        ["rows.cumsum"]))
            elif a.exact:  # a comparison only of exact values (see the module docstring)
                c = self.expr("{0} > 0", [a], "int1", tile, "prop", ["rows.compare"])
                floats.append(self.expr("tl.where({0}, {1}, {2})", [c, a, r.choice(floats)], "fp32", tile, "prop",
                                        ["where"]))
        outs_tile.append(floats[-1])
        outs_tile += [f for f in floats[:-1] if r.random() < 0.2]
        for i, v in enumerate(outs_tile[:3]):
            dt = r.choice(["fp32", "fp32", "fp16"])
            if i == 0 and in_out:
                buf = in_out[0]  # fp32, written over the tile it was loaded from
            else:
                buf = self.new_buf(dt, rows * R, kind="bits", out=True)
                if dt == "fp16":
                    v = self.expr("{0}.to(tl.float16)", [v], dt, tile, "castdown", ["rows.downcast"])
            self.block.nodes.append(Node("store", [], [], [v.name, ri.name, xi.name, m.name],
                                         "tl.store({P} + ({1} + %d * {2}), {0}, {3})" % R, tags=["rows.store"], buf=buf))
        for v in outs_row[:2]:
            buf = self.new_buf("fp32", rows, kind="bits", out=True)
            self.block.nodes.append(Node("store", [], [], [v.name, xi.name, xm.name], "tl.store({P} + {1}, {0}, {2})",
                                         tags=["rows.store_row"], buf=buf))
        return k

    def store(self, v):
        r = self.r
        sh = v.sh
        mode = r.choice(["contig", "contig", "perm", "masked"]) if sh else "scalar"
        strides = row_major(sh)
        tags = ["store." + mode]
        if mode == "perm" and len(sh) > 1:
            strides = permuted_strides(sh, r)
        region = numel(sh)
        buf = self.new_buf(v.dt, region * 4, kind="bits" if v.dt != "int1" else "small", out=True)
        ptr = "{P} + pid * %d + %s" % (region, offsets(sh, strides))
        if mode == "masked":
            lin = offsets(sh, row_major(sh))
            code = "tl.store(%s, {0}, mask=(%s) < %d)" % (ptr, lin, r.randint(0, region))
        else:
            code = "tl.store(%s, {0})" % ptr
        self.block.nodes.append(Node("store", [], [], [v.name], code, tags=tags, buf=buf))


def integer_promote(a, b):
    wa, wb = BITS[a], BITS[b]
    if signed(a) == signed(b):
        return a if wa > wb else b
    if not signed(a):
        return a if wa >= wb else b
    return b if wb >= wa else a


# Share of the seeds whose kernel comes from the Inductor-shaped family (Gen.generate_rows),
# decided apart from the generator's own stream so that the other seeds keep their kernels.
ROWS_FAMILY = 0.2
# Share of the other seeds whose kernel ends with a store into a buffer it loaded
# (Gen.store_in_place), also decided apart from the generator's stream.
IN_PLACE = 0.25


def is_rows(seed):
    return random.Random(seed * 7919 + 17).random() < ROWS_FAMILY


def may_store_in_place(seed):
    """Does seed's kernel try a store in place (Gen.store_in_place)? (It does not when no
    load of the kernel can take one.)"""
    return not is_rows(seed) and random.Random(seed * 104729 + 3).random() < IN_PLACE


def generate(seed):
    g = Gen(seed)
    k = g.generate_rows() if is_rows(seed) else g.generate()
    dce(k.body, set())
    analyze(k)
    return k


# ----------------------------------------------------------------------------------------
# Child processes
# ----------------------------------------------------------------------------------------
CHILD_SRC = r'''
import importlib.util, os, sys, traceback
root = os.environ.get("FUZZ_BACKEND_ROOT")
if root:
    # Run a snapshot of the backend instead of the editable install (see --backend-root).
    import importlib.machinery
    MAP = {"triton_cpu": root + "/python/triton_cpu", "triton_cpu.backend": root + "/third_party/cpu/backend"}

    class _Snap:
        @classmethod
        def find_spec(cls, name, path=None, target=None):
            if name in MAP:
                return importlib.util.spec_from_file_location(name, MAP[name] + "/__init__.py",
                                                              submodule_search_locations=[MAP[name]])
            return None
    sys.meta_path.insert(0, _Snap)
import warnings
warnings.filterwarnings("ignore")
import torch
import triton
out = os.fdopen(int(sys.argv[1]), "w")
count = 0
for line in sys.stdin:
    case, result = line.split()
    try:
        c = torch.load(case, weights_only=False)
        count += 1
        spec = importlib.util.spec_from_file_location("fuzzk%d" % count, c["path"])
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        args = c["args"]
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            mod.kernel[tuple(c["grid"])](*args)
        torch.save(args, result)
        # LLVM aborted on the kernel and a fallback pipeline compiled it (LLVMFallbackWarning).
        llvm = [str(w.message) for w in seen if w.category.__name__ == "LLVMFallbackWarning"]
        out.write(("ok llvm-fallback " + llvm[0].replace("\n", " ")[:1500] if llvm else "ok") + "\n")
    except BaseException as e:
        msg = "".join(traceback.format_exception_only(type(e), e)).strip().replace("\n", " | ")
        out.write("err " + msg[-1500:] + "\n")
    out.flush()
'''


class Child:
    def __init__(self, interp, workdir, cache_dir, backend_root=None, timeout=120):
        self.interp, self.workdir, self.cache_dir = interp, workdir, cache_dir
        self.backend_root, self.timeout = backend_root, timeout
        self.proc = None

    def start(self):
        # No fp contraction: the interpreter rounds every multiply and add, and the accuracy
        # classes hold "exact" for them (the backend honours enable_fp_fusion, default on).
        env = dict(os.environ, OMP_NUM_THREADS="1", TRITON_CPU_NUM_THREADS="1", TRITON_CACHE_DIR=self.cache_dir,
                   PYTHONWARNINGS="ignore", TRITON_DEFAULT_FP_FUSION="0")
        env.pop("TRITON_INTERPRET", None)
        if self.interp:
            env["TRITON_INTERPRET"] = "1"
        if self.backend_root:
            env["FUZZ_BACKEND_ROOT"] = self.backend_root
        r, w = os.pipe()
        self.log = open(os.path.join(self.workdir, "child_%s.log" % ("interp" if self.interp else "backend")), "ab")
        self.proc = subprocess.Popen([sys.executable, "-c", CHILD_SRC, str(w)], stdin=subprocess.PIPE, stdout=self.log,
                                     stderr=self.log, env=env, pass_fds=(w,), text=True)
        os.close(w)
        self.rfd = r
        self.buf = b""

    def stop(self):
        if self.proc is not None:
            try:
                self.proc.kill()
                self.proc.wait()
            except Exception:
                pass
            os.close(self.rfd)
            self.log.close()
            self.proc = None

    def run(self, case_path, result_path):
        """('ok', None) | ('err', message) | ('crash', message)"""
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        try:
            self.proc.stdin.write("%s %s\n" % (case_path, result_path))
            self.proc.stdin.flush()
        except BrokenPipeError:
            self.stop()
            return "crash", "child died"
        deadline = time.time() + self.timeout
        while b"\n" not in self.buf:
            left = deadline - time.time()
            if left <= 0:
                self.stop()
                return "crash", "timeout after %ds" % self.timeout
            ready, _, _ = select.select([self.rfd], [], [], left)
            if ready:
                chunk = os.read(self.rfd, 65536)
                if not chunk:
                    rc = self.proc.wait()
                    self.stop()
                    return "crash", "child exited with %s" % rc
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        line = line.decode()
        if line.startswith("ok"):
            return "ok", line[len("ok llvm-fallback "):] or None
        return "err", line[4:]


class Runner:
    def __init__(self, workdir, backend_root=None, timeout=120):
        self.workdir = workdir
        cache = os.environ.get("FUZZ_CACHE_DIR") or os.path.join(workdir, "cache")
        self.backend = Child(False, workdir, cache, backend_root, timeout)
        self.interp = Child(True, workdir, cache, None, timeout)
        self.n = 0
        self.llvm_fallback = None  # the LLVMFallbackWarning of the last kernel, if any

    def close(self):
        self.backend.stop()
        self.interp.stop()

    def run(self, k):
        """Returns (status, detail, outputs): status in pass/mismatch/backend_error/backend_crash/interp_error."""
        import torch
        self.n += 1
        src = render(k)
        d = os.path.join(self.workdir, "k%d" % self.n)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "kernel_%d.py" % k.seed)
        with open(path, "w") as f:
            f.write(src)
        args = make_inputs(k)
        case = os.path.join(d, "case.pt")
        torch.save({"path": path, "grid": k.grid, "args": args}, case)
        st, msg = self.interp.run(case, os.path.join(d, "interp.pt"))
        if st != "ok":
            shutil.rmtree(d, ignore_errors=True)
            return "interp_error", msg, None
        st, msg = self.backend.run(case, os.path.join(d, "backend.pt"))
        self.llvm_fallback = msg if st == "ok" else None
        if st != "ok":
            shutil.rmtree(d, ignore_errors=True)
            return ("backend_crash" if st == "crash" else "backend_error"), msg, None
        exp = torch.load(os.path.join(d, "interp.pt"), weights_only=False)
        got = torch.load(os.path.join(d, "backend.pt"), weights_only=False)
        shutil.rmtree(d, ignore_errors=True)
        diffs = []
        for b, g, e in zip(k.params, got, exp):
            if not b.out:
                continue
            idx = _shared["compare"](g, e, b.dtype, k.out_cls[b.name])
            if len(idx):
                diffs.append((b.name, b.dtype, k.out_cls[b.name], idx[:5].tolist(), len(idx),
                              [_fmt(g.reshape(-1)[i]) for i in idx[:5]], [_fmt(e.reshape(-1)[i]) for i in idx[:5]]))
        if diffs:
            return "mismatch", diffs, None
        return "pass", None, None


def _fmt(x):
    v = x.item()
    return repr(v)


# ----------------------------------------------------------------------------------------
# Shrinker
# ----------------------------------------------------------------------------------------
def clone(k):
    import copy
    return copy.deepcopy(k)


def all_sites(block, path=()):
    """(block, index) of every statement, outermost first."""
    out = []
    for i, n in enumerate(block.nodes):
        out.append((block, i))
        for b in n.blocks:
            out.extend(all_sites(b))
    return out


def replacements(k, block, i):
    """Candidate replacements for statement block.nodes[i]: same-typed inputs, or fresh loads."""
    n = block.nodes[i]
    cands = []
    if n.kind == "store":
        if sum(1 for m in k.body.nodes if m.kind == "store") > 1 or block is not k.body:
            cands.append([])
        return cands
    if not n.outs:
        return cands
    types = {}
    env_types = {}
    for m in k.walk():
        for o, t in zip(m.outs, m.tys):
            env_types[o] = t
    for d in node_uses(n):
        if d in env_types:
            types.setdefault(env_types[d], d)
    if len(n.outs) == 1 and n.tys[0] in types:
        src = types[n.tys[0]]
        cands.append([Node("expr", n.outs, n.tys, [src], "{0}", rule="prop", tags=["alias"])])
    if n.kind != "load" or n.deps or "load.contig" not in n.tags:
        loads = []
        for o, (dt, sh) in zip(n.outs, n.tys):
            region = numel(sh)
            buf = Buf("in_%s" % o, dt, region * 4, 12345 + len(o), "float" if is_float(dt) else "small")
            code = "tl.load({P} + pid * %d + %s)" % (region, offsets(sh, row_major(sh))) if sh else "tl.load({P} + pid)"
            loads.append(Node("load", [o], [(dt, sh)], [], code, rule="load", tags=["load.contig"], buf=buf))
        cands.append(loads)
    if n.kind == "if":
        for b in n.blocks:  # inline one branch
            cands.append(list(b.nodes) + [Node("expr", n.outs, n.tys, b.results, "{0}", rule="prop", tags=["alias"])])
    if n.kind == "loop" and not n.code.startswith("range(0, 1)"):  # a single iteration
        cands.append([Node("loop", n.outs, n.tys, n.deps[:1], "range(0, 1)", tags=n.tags, blocks=n.blocks,
                           extra=n.extra)])
    return cands


def cost(block):
    """Size of a kernel for the shrinker: every accepted step must lower it."""
    c = 0
    for n in block.nodes:
        simple = "alias" in n.tags or (n.kind == "load" and not n.deps and "load.contig" in n.tags)
        c += 1 if simple else 3
        if n.kind == "loop" and not n.code.startswith("range(0, 1)"):
            c += 1
        c += sum(cost(b) for b in n.blocks)
    return c


def shrink(k, status, runner, budget_s=300, log=None):
    """Greedy: apply any replacement that keeps the failure of the same status."""
    t0 = time.time()
    tries = 0
    best = clone(k)
    progress = True
    while progress and time.time() - t0 < budget_s:
        progress = False
        if best.grid != (1,):
            for g in ((1,), (2,)):
                if g == best.grid:
                    continue
                cand = clone(best)
                cand.grid = g
                tries += 1
                if runner.run(cand)[0] == status:
                    best = cand
                    progress = True
                    break
        sites = all_sites(best.body)
        for si in range(len(sites)):
            if time.time() - t0 > budget_s:
                break
            # positions move as statements change: recompute on the current best
            sites = all_sites(best.body)
            if si >= len(sites):
                break
            block, i = sites[si]
            for rep in replacements(best, block, i):
                cand = clone(best)
                cblock, ci = all_sites(cand.body)[si]
                cblock.nodes[ci:ci + 1] = [clone_node(x) for x in rep]
                dce(cand.body, set())
                if not any(m.kind == "store" for m in cand.walk()):
                    continue
                if cost(cand.body) >= cost(best.body):
                    continue
                try:
                    analyze(cand)
                except KeyError:
                    continue
                tries += 1
                res = runner.run(cand)
                if res[0] == status:
                    best = cand
                    progress = True
                    break
            if progress:
                break
    if log:
        log("    shrunk in %d tries, %.0fs: %d statements" % (tries, time.time() - t0, sum(1 for _ in best.walk())))
    return best


def clone_node(n):
    import copy
    return copy.deepcopy(n)


# ----------------------------------------------------------------------------------------
# Reproducers
# ----------------------------------------------------------------------------------------
REPRO_MAIN = r'''

SEED = %(seed)d
GRID = %(grid)r
PARAMS = %(params)r  # (name, dtype, numel, data seed, data kind, is_output)
OUT_CLASS = %(cls)r


def run():
    args = [make_input(dt, n, s, kind) for _, dt, n, s, kind, _ in PARAMS]
    kernel[GRID](*args, enable_fp_fusion=False)  # the interpreter never contracts a * b + c
    return args


if __name__ == "__main__":
    import os, subprocess, sys, tempfile
    if len(sys.argv) > 1:  # the interpreter side
        torch.save(run(), sys.argv[1])
        sys.exit(0)
    with tempfile.TemporaryDirectory() as tmp:
        res = os.path.join(tmp, "interp.pt")
        env = dict(os.environ, TRITON_INTERPRET="1")
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), res], env=env)
        exp = torch.load(res, weights_only=False) if proc.returncode == 0 else None
    print("interpreter:", "ok" if exp is not None else "FAILED")
    if exp is None:
        sys.exit(2)
    try:
        got = run()
    except Exception as e:
        print("backend: FAILED:", type(e).__name__, str(e)[:2000])
        sys.exit(1)
    bad = 0
    for (name, dt, n, s, kind, is_out), g, e in zip(PARAMS, got, exp or []):
        if not is_out:
            continue
        idx = compare(g, e, dt, OUT_CLASS[name])
        if len(idx):
            bad += 1
            print("%%s (%%s, class %%s): %%d of %%d elements differ" %% (name, dt, OUT_CLASS[name], len(idx), g.numel()))
            for i in idx[:8]:
                print("   [%%d] backend %%r  interpreter %%r" %% (i, g.reshape(-1)[i].item(), e.reshape(-1)[i].item()))
    print("MISMATCH" if bad else "outputs agree")
'''


def write_repro(k, status, detail, outdir):
    os.makedirs(outdir, exist_ok=True)
    src = render(k)
    params = [(b.name, b.dtype, b.n, b.seed, b.kind, b.out) for b in k.params]
    head = '"""Fuzzer finding (scripts/fuzz.py, seed %d): %s.\n\n%s\n\nRun: python %s\n"""\n' % (
        k.seed, status, _describe(status, detail).replace('"""', "'''"), "<this file>")
    body = src + "\n" + SHARED_SRC + REPRO_MAIN % dict(seed=k.seed, grid=tuple(k.grid), params=params,
                                                       cls={n: list(c) for n, c in k.out_cls.items()})
    path = os.path.join(outdir, "%s_%d.py" % (status, k.seed))
    with open(path, "w") as f:
        f.write(head + body)
    return path


def _describe(status, detail):
    if status == "mismatch":
        lines = []
        for name, dt, cls, idx, n, g, e in detail:
            lines.append("%s (%s, %s): %d elements differ, e.g. at %s backend %s vs interpreter %s" % (
                name, dt, cls, n, idx[:3], g[:3], e[:3]))
        return "\n".join(lines)
    return str(detail)


# ----------------------------------------------------------------------------------------
# Campaign
# ----------------------------------------------------------------------------------------
def error_key(status, detail):
    if status == "mismatch":
        return None
    msg = str(detail)
    import re
    msg = re.sub(r"\d+", "N", msg)
    msg = re.sub(r"v\d+|in\d+|out\d+", "X", msg)
    return status + ":" + msg[:160]


def campaign(seeds, outdir, shrink_budget=300, max_shrink=8, backend_root=None, verbose=False, timeout=120,
             workdir=None, time_limit=None):
    own = workdir is None
    workdir = workdir or tempfile.mkdtemp(prefix="fuzz_")
    runner = Runner(workdir, backend_root, timeout)
    t0 = time.time()
    stats = dict(kernels=0, passed=0, mismatch=0, backend_error=0, backend_crash=0, interp_error=0, llvm_fallback=0)
    findings = []
    seen = set()
    shrunk = 0
    log = (lambda s: print(s, flush=True))
    try:
        for seed in seeds:
            if time_limit and time.time() - t0 > time_limit:
                log("time limit reached before seed %d" % seed)
                break
            k = generate(seed)
            stats["kernels"] += 1
            t1 = time.time()
            status, detail, _ = runner.run(k)
            stats["passed" if status == "pass" else status] += 1
            if runner.llvm_fallback:
                # An LLVM assertion the worker contained: counted and logged, not a finding.
                stats["llvm_fallback"] += 1
                log("seed %d: LLVM aborted, compiled with a fallback pipeline: %s" % (seed, runner.llvm_fallback[:300]))
            if verbose or status not in ("pass",):
                short = "" if status == "pass" else " " + _describe(status, detail)[:300]
                log("seed %d: %s (%.1fs)%s" % (seed, status, time.time() - t1, short))
            if status in ("mismatch", "backend_error", "backend_crash"):
                key = error_key(status, detail)
                rec = dict(seed=seed, status=status, detail=_describe(status, detail))
                if shrunk < max_shrink and (key is None or key not in seen) and shrink_budget > 0:
                    seen.add(key)
                    shrunk += 1
                    small = shrink(k, status, runner, shrink_budget, log)
                    st2, det2, _ = runner.run(small)
                    if st2 == status:
                        k, detail = small, det2
                        rec["detail"] = _describe(status, detail)
                rec["repro"] = write_repro(k, status, detail, outdir)
                log("    reproducer: %s" % rec["repro"])
                findings.append(rec)
    finally:
        runner.close()
        if own:
            shutil.rmtree(workdir, ignore_errors=True)
    stats["time"] = time.time() - t0
    print("fuzz: %(kernels)d kernels, %(passed)d passed, %(mismatch)d mismatches, %(backend_error)d backend errors, "
          "%(backend_crash)d backend crashes, %(interp_error)d interpreter errors, %(llvm_fallback)d LLVM aborts "
          "contained, %(time).0fs" % stats, flush=True)
    return stats, findings


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, default=50, help="number of kernels")
    p.add_argument("--start", type=int, default=0, help="first seed")
    p.add_argument("--out", default=os.path.join(REPO, "upstream", "results", "fuzz"), help="reproducer folder")
    p.add_argument("--no-shrink", action="store_true")
    p.add_argument("--shrink-budget", type=float, default=300, help="seconds per finding")
    p.add_argument("--max-shrink", type=int, default=8, help="findings shrunk per campaign (distinct ones first)")
    p.add_argument("--timeout", type=float, default=120, help="seconds per kernel per side")
    p.add_argument("--minutes", type=float, default=None, help="stop starting new kernels after this long")
    p.add_argument("--backend-root", default=None,
                   help="run a copy of this repository (e.g. a `git archive` snapshot with its built _C) instead "
                        "of the editable install")
    p.add_argument("--show", type=int, default=None, help="print the kernel of this seed and exit")
    p.add_argument("--coverage", action="store_true", help="print construct counts over the seeds and exit")
    p.add_argument("--family", choices=("all", "rows", "generic", "in_place"), default="all",
                   help="only the seeds of one generator family (rows: Gen.generate_rows; in_place: "
                        "generic kernels that try a store into a buffer they load, Gen.store_in_place)")
    p.add_argument("-v", "--verbose", action="store_true")
    a = p.parse_args(argv)
    if a.show is not None:
        k = generate(a.show)
        print(render(k))
        print("# grid", k.grid, "classes", k.out_cls)
        return 0
    seeds = [s for s in range(a.start, a.start + a.seeds)
             if a.family == "all" or (may_store_in_place(s) if a.family == "in_place" else (a.family == "rows") == is_rows(s))]
    if a.coverage:
        from collections import Counter
        c = Counter()
        for s in seeds:
            k = generate(s)
            render(k)
            for n in k.walk():
                c.update(t.split(".")[0] + "." + t.split(".")[1] if t.count(".") else t for t in n.tags)
            c.update("dtype." + b.dtype for b in k.params if not b.out)
        for t, n in sorted(c.items()):
            print("%6d %s" % (n, t))
        return 0
    stats, findings = campaign(seeds, a.out, 0 if a.no_shrink else a.shrink_budget, a.max_shrink, a.backend_root,
                               a.verbose, a.timeout, time_limit=a.minutes * 60 if a.minutes else None)
    return 0 if not findings and not stats["interp_error"] else 1


if __name__ == "__main__":
    sys.exit(main())
