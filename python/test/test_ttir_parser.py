"""TTIR from stock Triton parses into the xDSL `tt` dialect and prints back unchanged.

The kernels below are compiled to TTIR by Triton itself (frontend + the CPU backend's
`make_ttir` passes, no later stage), so the text is exactly what the `ttir` stage hands to
`parse_ttir`. For each one: parse -> print -> parse -> print is stable, no op is lost, the
module verifies, Triton's own parser reads our text back to the same IR, and op locations
point at the lines of this file.
"""
import glob
import inspect
import math
import os
import re
import tempfile

import pytest
import triton
import triton.language as tl
from triton._C.libtriton import ir
from triton.backends.compiler import GPUTarget
from triton.compiler.compiler import ASTSource, make_backend

from triton_cpu.dialects import tt
from triton_cpu.dialects.compat import arith
from triton_cpu.dialects.ttir import (
    _resolve_locations,
    location_frames,
    make_context,
    op_location,
    parse_ttir,
    print_ir,
    user_location,
)

from conftest import source_line

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
THIS_FILE = os.path.abspath(__file__)


def compile_to_ttir(fn, signature, constexprs=None, attrs=None, **options) -> str:
    """The TTIR text of `fn` as the `ttir` stage produces it."""
    target = GPUTarget("cpu", "", 1)
    backend = make_backend(target)
    src = ASTSource(fn, signature, constexprs, attrs)
    opts = backend.parse_options(options)
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    module = src.make_ir(target, opts, backend.get_codegen_implementation(opts), backend.get_module_map(), context)
    return str(backend.make_ttir(module, {}, opts))


def triton_reprint(text: str) -> str:
    """`text` parsed and printed (without locations) by Triton's own MLIR."""
    context = ir.context()
    ir.load_dialects(context)
    with tempfile.NamedTemporaryFile("w", suffix=".ttir", delete=False) as f:
        f.write(text)
    try:
        module = ir.parse_mlir_module(f.name, context)
        module.context = context
        return module.str_nodebug()
    finally:
        os.unlink(f.name)


# --------------------------------------------------------------------------------------------
# Kernels. Line numbers matter: the location tests look up the lines of `tl.load(` etc.
# --------------------------------------------------------------------------------------------


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask, other=float("-inf"))
    tl.store(out_ptr + offsets, x + y, mask=mask)


@triton.jit
def math_2d(x_ptr, o_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)[:, None]
    rn = tl.program_id(1) * BN + tl.arange(0, BN)[None, :]
    mask = (rm < M) & (rn < N)
    x = tl.load(x_ptr + rm * N + rn, mask=mask, other=-1.0, cache_modifier=".cg", eviction_policy="evict_last")
    y = tl.where(x > 0, tl.exp(x) + tl.sqrt(tl.abs(x)), tl.sin(x)) + tl.erf(x) + tl.floor(x) + tl.rsqrt(tl.abs(x) + 1)
    y = tl.fma(y, x, x) + tl.exp2(x) + tl.log2(tl.abs(x) + 1) + tl.maximum(x, y) + tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL)
    i = x.to(tl.int32)
    j = (i // 3 + i % 5) >> 1 | (x.to(tl.uint32) // 7).to(tl.int32) ^ (i < 2).to(tl.int32)
    z = y + j.to(tl.float32) + x.to(tl.float16).to(tl.float32) + x.to(tl.int8).to(tl.float32) + tl.clamp(x, -1.0, 1.0)
    tl.store(o_ptr + rm * N + rn, z, mask=mask)


@triton.jit
def _argmax_combine(v1, i1, v2, i2):
    gt = (v1 > v2) | ((v1 == v2) & (i1 < i2))
    return tl.where(gt, v1, v2), tl.where(gt, i1, i2)


@triton.jit
def reduce_scan(x_ptr, o_ptr, oi_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rm * N + rn)
    mx = tl.max(x, axis=1)
    v, i = tl.reduce((x, rn + rm * 0), 1, _argmax_combine)
    c = tl.cumsum(x, axis=1) + tl.cumprod(x, axis=0, reverse=True)
    tl.store(o_ptr + tl.arange(0, M), mx + v + tl.sum(c, 1) + tl.argmax(x, 1).to(tl.float32))
    tl.store(oi_ptr + tl.arange(0, M), i)


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)[:, None]
    rn = tl.arange(0, BN)[None, :]
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm * BN + rn, acc.to(tl.float16))


@triton.jit
def atomics(p_f, p_i, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(p_f + offs, mask=m)
    a = tl.atomic_add(p_f + offs, x, mask=m, sem="relaxed", scope="cta")
    b = tl.atomic_max(p_i + offs, x.to(tl.int32), sem="acq_rel", scope="sys")
    c = tl.atomic_cas(p_i, 0, 1)
    d = tl.atomic_xchg(p_f + offs, x) + tl.atomic_and(p_i + offs, 3).to(tl.float32)
    tl.store(p_f + offs, a + b.to(tl.float32) + c.to(tl.float32) + d)


@triton.jit
def debug_ops(x_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_print("x = ", x)
    tl.device_print("pid", pid, hex=True)
    tl.device_assert(x >= 0, "x must be non-negative")
    tl.store(x_ptr + tl.arange(0, BLOCK), x + n)


@triton.jit(noinline=True)
def _scale(x, s):
    return x * s + 1.0


@triton.jit
def calls_and_control(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    i = 0
    while i < n:
        acc += tl.load(x_ptr + i * BLOCK + offs)
        i += 1
    if n > 4:
        s = _scale(tl.load(x_ptr), 2.0)
    else:
        s = 1.0
    tl.store(o_ptr + offs, acc * s)


@triton.jit
def shapes(x_ptr, idx_ptr, o_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r[:, None] * B + r[None, :])
    t = tl.trans(x)
    lo, hi = tl.split(tl.reshape(x, (B, B // 2, 2)))
    j = tl.reshape(tl.join(hi, lo), (B, B))
    g = tl.gather(x, tl.load(idx_ptr + r[:, None] * B + r[None, :]), axis=1)
    h = tl.histogram(r, B)
    tl.store(o_ptr + r[:, None] * B + r[None, :], t + j + g + tl.permute(x, (1, 0)))
    tl.store(o_ptr + r, h.to(tl.float32))


@triton.jit
def casts_and_random(x_ptr, o8, ou, seed, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(o8 + offs, x.to(tl.float8e5, fp_downcast_rounding="rtz"))
    u = tl.umulhi(x.to(tl.uint32), 7) + tl.randint(seed, offs).to(tl.uint32)
    tl.store(ou + offs, u)
    r = tl.rand(seed, offs) + tl.randn(seed, offs) + tl.sqrt_rn(x) + tl.div_rn(x, 3.0)
    tl.store(x_ptr + offs, r + tl.full([BLOCK], float("nan"), tl.float32))


KERNELS = {
    "add_kernel": (add_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                   {"BLOCK": 256}, {(0,): [["tt.divisibility", 16]], (3,): [["tt.divisibility", 16]]}, {}),
    "math_2d": (math_2d, {"x_ptr": "*fp32", "o_ptr": "*fp32", "M": "i32", "N": "i32", "BM": "constexpr", "BN": "constexpr"},
                {"BM": 16, "BN": 32}, None, {}),
    "reduce_scan": (reduce_scan, {"x_ptr": "*fp32", "o_ptr": "*fp32", "oi_ptr": "*i32", "M": "constexpr", "N": "constexpr"},
                    {"M": 8, "N": 16}, None, {}),
    "matmul": (matmul, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "K": "i32", "BM": "constexpr", "BN": "constexpr",
                        "BK": "constexpr"}, {"BM": 32, "BN": 32, "BK": 16}, None, {}),
    "atomics": (atomics, {"p_f": "*fp32", "p_i": "*i32", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 64}, None, {}),
    "debug_ops": (debug_ops, {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 64}, None, {"debug": True}),
    "calls_and_control": (calls_and_control, {"x_ptr": "*fp32", "o_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                          {"BLOCK": 64}, None, {}),
    "shapes": (shapes, {"x_ptr": "*fp32", "idx_ptr": "*i32", "o_ptr": "*fp32", "B": "constexpr"}, {"B": 16}, None, {}),
    "casts_and_random": (casts_and_random, {"x_ptr": "*fp32", "o8": "*fp8e5", "ou": "*u32", "seed": "i32", "BLOCK": "constexpr"},
                         {"BLOCK": 64}, None, {}),
}

_TTIR_CACHE: dict[str, str] = {}


def kernel_ttir(name: str) -> str:
    if name not in _TTIR_CACHE:
        fn, signature, constexprs, attrs, options = KERNELS[name]
        _TTIR_CACHE[name] = compile_to_ttir(fn, signature, constexprs, attrs, **options)
    return _TTIR_CACHE[name]


def ops_named(module, name):
    return [op for op in module.walk() if op.name == name]


# --------------------------------------------------------------------------------------------
# Round trips.
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", KERNELS)
def test_round_trip(name):
    text = kernel_ttir(name)
    module = parse_ttir(text)
    module.verify()
    printed = print_ir(module)
    again = parse_ttir(printed)
    again.verify()
    assert print_ir(again) == printed
    assert len(list(again.walk())) == len(list(module.walk()))
    # Every op line of Triton's text is one op here.
    n_ops = sum(1 for line in text.splitlines() if re.match(r"\s*(%[^=]+= )?\"?[a-z_]+\.[a-z_][\w.]*\"?[ (]", line))
    assert len(list(module.walk())) == n_ops + 1  # + builtin.module
    # Printing locations keeps the text parseable and changes nothing else.
    assert print_ir(parse_ttir(print_ir(module, locations=True))) == printed


@pytest.mark.parametrize("name", KERNELS)
def test_triton_reads_our_text(name):
    """Our text is Triton's format: Triton's parser reads it back to the IR it started from."""
    text = kernel_ttir(name)
    module = parse_ttir(text)
    reference = triton_reprint(text)
    assert triton_reprint(print_ir(module)) == reference
    assert triton_reprint(print_ir(module, locations=True)) == reference


def test_lit_file_round_trips():
    text = open(os.path.join(ROOT, "test", "Dialect", "tt-roundtrip.mlir")).read()
    module = parse_ttir(text)
    module.verify()
    printed = print_ir(module)
    assert print_ir(parse_ttir(printed)) == printed
    assert triton_reprint(printed) == triton_reprint(text)


def test_every_tt_op_is_covered():
    """Each op of the dialect appears in a kernel above or in the lit file."""
    seen = set()
    for name in KERNELS:
        seen |= {op.name for op in parse_ttir(kernel_ttir(name)).walk()}
    seen |= {op.name for op in parse_ttir(open(os.path.join(ROOT, "test", "Dialect", "tt-roundtrip.mlir")).read()).walk()}
    missing = {op.name for op in tt.TT.operations} - seen
    assert not missing


# --------------------------------------------------------------------------------------------
# Locations.
# --------------------------------------------------------------------------------------------


def test_op_locations_name_source_lines():
    module = parse_ttir(kernel_ttir("add_kernel"))
    loads = ops_named(module, "tt.load")
    assert [op_location(op) for op in loads] == [
        (THIS_FILE, *source_line(add_kernel, "tl.load(", 0)),
        (THIS_FILE, *source_line(add_kernel, "tl.load(", 1)),
    ]
    (store,) = ops_named(module, "tt.store")
    assert op_location(store) == (THIS_FILE, *source_line(add_kernel, "tl.store("))
    (pid,) = ops_named(module, "tt.get_program_id")
    assert op_location(pid)[1] == source_line(add_kernel, "tl.program_id(")[0]
    # Every op but materialized constants has a location, and it is in this file.
    for op in module.walk():
        if op.name in ("builtin.module", "arith.constant"):
            continue
        assert op_location(op) is not None and op_location(op)[0] == THIS_FILE, op.name
    # Kernel arguments carry the line of the `def`.
    (func,) = ops_named(module, "tt.func")
    def_line = inspect.getsourcelines(add_kernel.fn)[1] + 1
    assert {location_frames(arg.location)[0][1] for arg in func.args} == {def_line}


def test_inlined_ops_have_call_site_locations():
    module = parse_ttir(kernel_ttir("reduce_scan"))
    reduces = ops_named(module, "tt.reduce")
    # tl.max is inlined from triton/language/standard.py: the op's own frame is there, and the
    # call site in this file is kept for error messages.
    mx_line = source_line(reduce_scan, "tl.max(")[0]
    (mx,) = [op for op in reduces if user_location(op)[1] == mx_line]
    assert op_location(mx)[0].endswith(os.path.join("triton", "language", "standard.py"))
    assert user_location(mx) == (THIS_FILE, *source_line(reduce_scan, "tl.max("))
    assert len(location_frames(mx.location)) > 1
    # The combiner written in this file: its compare points at its line in _argmax_combine.
    gt_line = source_line(_argmax_combine, "(v1 > v2)")[0]
    (argmax,) = [op for op in reduces if user_location(op)[1] == source_line(reduce_scan, "tl.reduce(")[0]]
    assert gt_line in {op_location(op)[1] for op in argmax.walk() if op.name == "arith.cmpf"}


LOCATION_FORMS = """
#loc = loc("/k.py":1:1)
module {
  tt.func public @f(%x: !tt.ptr<f32> loc("x"(#loc)), %n: i32 loc(unknown)) {
    %a = tt.load %x : !tt.ptr<f32> loc(#named)
    %b = arith.addf %a, %a : f32 loc(#call)
    %c = arith.mulf %b, %b : f32 loc(#fused)
    %d = arith.subf %c, %c : f32 loc(callsite(#unknown at #line4))
    %e = arith.divf %d, %d : f32 loc(unknown)
    tt.store %x, %e : !tt.ptr<f32> loc("/k.py":9:2)
    tt.return loc(#loc)
  } loc(#loc)
} loc(#loc)
#named = loc("a"(#line2))
#call = loc(callsite(#inner at #named3))
#inner = loc("/lib.py":40:7)
#named3 = loc("b"(#line3))
#line2 = loc("/k.py":2:5)
#line3 = loc("/k.py":3:9)
#line4 = loc("/k.py":4:3)
#fused = loc(fused[#unknown, #line3, #line2])
#unknown = loc(unknown)
"""


def test_location_forms():
    module = parse_ttir(LOCATION_FORMS)
    ops = {op.name: op for op in module.walk()}
    assert op_location(ops["tt.load"]) == ("/k.py", 2, 5)
    assert op_location(ops["arith.addf"]) == ("/lib.py", 40, 7)
    assert location_frames(ops["arith.addf"].location) == [("/lib.py", 40, 7), ("/k.py", 3, 9)]
    assert user_location(ops["arith.addf"], ["/lib.py"]) == ("/k.py", 3, 9)
    assert op_location(ops["arith.mulf"]) == ("/k.py", 3, 9)
    assert op_location(ops["arith.subf"]) == ("/k.py", 4, 3)
    assert op_location(ops["arith.divf"]) is None
    assert op_location(ops["tt.store"]) == ("/k.py", 9, 2)
    func = ops["tt.func"]
    assert [location_frames(a.location) for a in func.args] == [[("/k.py", 1, 1)], []]
    # Normalized locations print without aliases and read back the same.
    again = parse_ttir(print_ir(module, locations=True))
    assert [op_location(op) for op in again.walk()] == [op_location(op) for op in module.walk()]


def test_location_aliases_read_ahead_like_xdsl():
    """The aliases the parser reads ahead with regexes (every form above) give the same
    locations as xDSL's own reading, which parses them all when one alias has another form
    (here a file name with an escape)."""
    slow = LOCATION_FORMS + '#odd = loc("/k\\22.py":1:1)\n'
    assert _resolve_locations(LOCATION_FORMS)[1] and not _resolve_locations(slow)[1]
    fast_module, slow_module = parse_ttir(LOCATION_FORMS), parse_ttir(slow)
    assert print_ir(fast_module, locations=True) == print_ir(slow_module, locations=True)
    assert [op_location(op) for op in fast_module.walk()] == [op_location(op) for op in slow_module.walk()]


# --------------------------------------------------------------------------------------------
# xDSL gaps worked around in compat.py.
# --------------------------------------------------------------------------------------------


def _one_op(body: str, args: str = "%f: tensor<4xf32>, %i: tensor<4xi32>"):
    module = parse_ttir(f"tt.func @f({args}) {{\n{body}\n  tt.return\n}}")
    module.verify()
    func = module.body.block.first_op
    return module, list(func.body.block.ops)[:-1]


def test_hex_float_constants():
    module, ops = _one_op("""
  %a = arith.constant dense<0xFF800000> : tensor<4xf32>
  %b = arith.constant dense<0x7FC00000> : tensor<4xf32>
  %c = arith.constant dense<0xFC00> : tensor<4xf16>
  %d = arith.constant dense<0x7F80> : tensor<4xbf16>
  %e = arith.constant dense<[1.0, 0xFF800000]> : tensor<2xf32>
  %f2 = arith.constant 0xFF800000 : f32""")
    values = [op.value.get_values() if hasattr(op.value, "get_values") else (op.value.value.data,) for op in ops]
    assert values[0] == (-math.inf,) * 4
    assert all(math.isnan(v) for v in values[1])
    assert values[2] == (-math.inf,) * 4 and values[3] == (math.inf,) * 4
    assert values[4] == (1.0, -math.inf) and values[5] == (-math.inf,)
    printed = print_ir(module)
    # NaN splats stay splats; bits print in upper case, as MLIR does.
    assert "dense<0x7FC00000> : tensor<4xf32>" in printed and "dense<0xFF800000>" in printed
    assert print_ir(parse_ttir(printed)) == printed



def test_splat_value_reads_one_element():
    """compat.splat_value: the value of a splat, bit for bit (a NaN splat is one; -0.0 among
    0.0 is not), compared with what unpacking every element gives."""
    from triton_cpu.dialects.compat import splat_value
    _, ops = _one_op("""
  %s0 = arith.constant dense<2.5> : tensor<65536xf32>
  %s1 = arith.constant dense<0x7FC00000> : tensor<8xf32>
  %s2 = arith.constant dense<[0.0, -0.0]> : tensor<2xf32>
  %s3 = arith.constant dense<-7> : tensor<16xi32>
  %s4 = arith.constant dense<[1, 2]> : tensor<2xi64>
  %s5 = arith.constant dense<true> : tensor<4xi1>""")
    got = [splat_value(op.value) for op in ops]
    assert got[0] == ops[0].value.get_values()[0] == 2.5 and isinstance(got[0], float)
    assert math.isnan(got[1])
    assert got[2] is None and got[4] is None
    assert got[3] == -7 and isinstance(got[3], int)
    assert got[5] == ops[5].value.get_values()[0]

@pytest.mark.parametrize("text, message", [
    ("dense<1.0> : tensor<?xf32>", "static shape"),
    ("dense<1> : tensor<4x!tt.ptr<f32>>", "integer, index, float, or complex"),
])
def test_dense_literal_type_checks(text, message):
    """The dense<> type check (built once, see compat._fix_dense_type_check_cost) still
    rejects what xDSL's own check rejects."""
    from xdsl.utils.exceptions import ParseError
    with pytest.raises(ParseError, match=message):
        _one_op(f"\n  %a = arith.constant {text}")


def test_arith_on_tensors():
    module, ops = _one_op("""
  %c = arith.cmpi slt, %i, %i : tensor<4xi32>
  %d = arith.cmpf une, %f, %f : tensor<4xf32>
  %s = arith.select %c, %f, %f : tensor<4xi1>, tensor<4xf32>
  %e = arith.extsi %i : tensor<4xi32> to tensor<4xi64>
  %t = arith.trunci %i : tensor<4xi32> to tensor<4xi8>
  %u = arith.uitofp %i : tensor<4xi32> to tensor<4xf32>
  %v = arith.fptoui %f : tensor<4xf32> to tensor<4xi32>
  %r = arith.remf %f, %f : tensor<4xf32>""")
    assert str(ops[0].result.type) == "tensor<4xi1>" and str(ops[1].result.type) == "tensor<4xi1>"
    assert isinstance(ops[2], arith.SelectOp) and isinstance(ops[3], arith.ExtSIOp)
    assert "arith.select %c, %f, %f : tensor<4xi1>, tensor<4xf32>" in print_ir(module)
    # Built ops print and verify like parsed ones.
    cmp = arith.CmpiOp(ops[0].lhs, ops[0].rhs, "sge")
    assert cmp.result.type == ops[0].result.type
    cmp.verify()


def test_make_context_takes_extra_dialects():
    from xdsl.ir import Dialect
    ctx = make_context([Dialect("extra", [], [])])
    assert "extra" in ctx.registered_dialect_names and "tt" in ctx.registered_dialect_names


def test_repeated_types_parse_like_xdsl():
    # parse_ttir parses the text of each tensor/vector/memref type once per module and
    # reuses it: every lit input (TTIR and TTCIR, nested pointer and memref types) must
    # come out as xDSL's own parser reads it.
    from xdsl.parser import Parser
    compared = 0
    for path in sorted(glob.glob(os.path.join(ROOT, "test", "*", "*.mlir"))):
        text = open(path).read()
        if re.search(r"loc\(#", text):
            continue  # location aliases used before their definition: xDSL alone cannot read them
        reference = print_ir(Parser(make_context(), text).parse_module())
        assert print_ir(parse_ttir(text)) == reference, path
        compared += 1
    assert compared >= 20


# A module whose lines share shapes across types: a result type inferred from one line's
# types would be wrong on the next (cmpi's i1 result equals its operand type once; loads of
# f32 and i32 pointers, scalar and tensor), operands repeated in one line, and operands in
# both orders.
_SHAPES_TTIR = """#loc = loc("k.py":1:1)
#loc1 = loc("k.py":2:5)
module {
  tt.func public @k(%n: i32 loc(#loc), %n2: i32 loc(#loc), %p: !tt.ptr<f32> loc(#loc), %q: !tt.ptr<i32> loc(#loc)) attributes {noinline = false} {
    %r = tt.make_range {end = 4 : i32, start = 0 : i32} : tensor<4xi32> loc(#loc1)
    %r2 = tt.splat %n : i32 -> tensor<4xi32> loc(#loc1)
    %b1 = arith.cmpi slt, %r, %r2 : tensor<4xi32> loc(#loc1)
    %b2 = arith.cmpi sgt, %r, %r2 : tensor<4xi32> loc(#loc1)
    %c = arith.cmpi ne, %b1, %b2 : tensor<4xi1> loc(#loc1)
    %d = arith.cmpi ne, %r, %r2 : tensor<4xi32> loc(#loc1)
    %s1 = arith.select %d, %r, %r2 : tensor<4xi1>, tensor<4xi32> loc(#loc1)
    %f = arith.sitofp %s1 : tensor<4xi32> to tensor<4xf32> loc(#loc1)
    %f2 = arith.sitofp %r2 : tensor<4xi32> to tensor<4xf32> loc(#loc1)
    %h = arith.truncf %f2 : tensor<4xf32> to tensor<4xf16> loc(#loc1)
    %h2 = arith.extf %h : tensor<4xf16> to tensor<4xf32> loc(#loc1)
    %s2 = arith.select %c, %f, %h2 : tensor<4xi1>, tensor<4xf32> loc(#loc1)
    %m1 = arith.mulf %s2, %s2 : tensor<4xf32> loc(#loc1)
    %m2 = arith.mulf %m1, %f2 : tensor<4xf32> loc(#loc1)
    %m3 = arith.mulf %f2, %m1 : tensor<4xf32> loc(#loc1)
    %x = arith.subf %m3, %m2 : tensor<4xf32> loc(#loc1)
    %y = arith.subf %m2, %x : tensor<4xf32> loc(#loc1)
    %e = arith.cmpi slt, %n, %n2 : i32 loc(#loc1)
    %g = arith.select %e, %n, %n2 : i32 loc(#loc1)
    %gf = arith.sitofp %g : i32 to f32 loc(#loc1)
    %z = arith.subf %gf, %gf : f32 loc(#loc1)
    %zs = tt.splat %z : f32 -> tensor<4xf32> loc(#loc1)
    %w = arith.subf %y, %zs : tensor<4xf32> loc(#loc1)
    %ps = tt.splat %p : !tt.ptr<f32> -> tensor<4x!tt.ptr<f32>> loc(#loc1)
    %pa = tt.addptr %ps, %r : tensor<4x!tt.ptr<f32>>, tensor<4xi32> loc(#loc1)
    %v = tt.load %p : !tt.ptr<f32> loc(#loc1)
    %vi = tt.load %q : !tt.ptr<i32> loc(#loc1)
    %va = tt.load %pa : tensor<4x!tt.ptr<f32>> loc(#loc1)
    %ce = arith.cmpf olt, %v, %gf : f32 loc(#loc1)
    %ct = arith.cmpf olt, %va, %w : tensor<4xf32> loc(#loc1)
    %sv = arith.select %ce, %v, %gf : f32 loc(#loc1)
    %st = arith.select %ct, %va, %w : tensor<4xi1>, tensor<4xf32> loc(#loc1)
    %vs = tt.splat %sv : f32 -> tensor<4xf32> loc(#loc1)
    %o = arith.addf %st, %vs : tensor<4xf32> loc(#loc1)
    tt.store %pa, %o : tensor<4x!tt.ptr<f32>> loc(#loc1)
    tt.store %q, %vi : !tt.ptr<i32> loc(#loc1)
    tt.return loc(#loc)
  } loc(#loc)
} loc(#loc)
"""


@pytest.mark.parametrize("name", [*KERNELS, "shapes_across_types"])
def test_op_shape_memo_builds_what_xdsl_parses(name, monkeypatch):
    """parse_ttir builds an op from the memo of an earlier line of the same shape (op name and
    text without operand names, or without types too for the ops of _RESULT_TYPE); the module
    must be exactly the one xDSL's parser builds from the same text, locations included."""
    from triton_cpu.dialects import ttir
    text = _SHAPES_TTIR if name == "shapes_across_types" else kernel_ttir(name)
    monkeypatch.setattr(ttir, "_MEMOIZED", ())  # no memo: every op through xDSL's parser
    reference = print_ir(parse_ttir(text), locations=True)
    monkeypatch.undo()
    ttir._MEMO.clear()
    first = parse_ttir(text)  # records every shape (and replays the ones seen earlier)
    assert ttir._MEMO
    second = parse_ttir(text)  # replays them
    for module in (first, second):
        module.verify()
        assert print_ir(module, locations=True) == reference


def test_op_shape_memo_stays_bounded(monkeypatch):
    """A process compiling thousands of kernels: the memo is emptied when it is full, and
    what is parsed across the emptying is still what xDSL builds."""
    from triton_cpu.dialects import ttir
    monkeypatch.setattr(ttir, "_MEMOIZED", ())
    reference = print_ir(parse_ttir(_SHAPES_TTIR), locations=True)
    monkeypatch.undo()
    monkeypatch.setattr(ttir, "_MEMO_LIMIT", 4)
    ttir._MEMO.clear()
    for _ in range(3):
        assert print_ir(parse_ttir(_SHAPES_TTIR), locations=True) == reference
        assert len(ttir._MEMO) <= 4 + 2  # emptied past 4, then at most an exact and an abstract entry
