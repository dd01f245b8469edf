"""Whether every lane of a mask is set, tested on scalars when the mask is a bound check.

A masked load or store first asks whether its whole chunk is in bounds (then it is a plain
vector move; masked moves are slow, microcoded on AMD Zen). The generic answer reduces the
i1 vector (`llvm.vector.reduce.and`): per chunk, the lane offsets are broadcast, compared
and packed into a bit mask, about ten instructions for 16 lanes, in every pass of a loop.
Most masks are Triton's bound check, `offs < n` with `offs = splat(s) + iota`, whose lanes
are s, s+1, ..., s+L-1: all of them pass exactly when the last one does, one scalar compare.
Then the vector mask is only used by the rare partial chunk, and LLVM sinks it there.

`all_lanes_test` recognizes, through `arith.andi` and `vector.broadcast` of an i1:

- `cmpi pred, ramp, uniform` (or with the operands swapped), where `ramp` is `tcpu.iota`
  plus or minus uniforms, nested in any way (`splat(base) + (splat(j) + iota)`), and
  `uniform` is a broadcast scalar or a splat constant. The test is done in integers twice
  as wide, so it never claims "all set" for a ramp that wraps around (it may answer "not
  all" for one that does, which only takes the masked path, also correct).
- the same with a narrower ramp sign- or zero-extended inside (`splat(base64) +
  extsi(splat(j) + iota32)`: 64-bit offsets, as FlagGems' generated kernels compute them).
  The extended lanes are a ramp only if the narrow one does not wrap: that is tested too
  (its last lane against the narrow type's maximum), and "not all" answered if it does.
- a splat constant.

Anything else falls back to the vector reduction.
"""
from typing import NamedTuple

import llvmlite.ir as ir
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerType, VectorType
from xdsl.ir import SSAValue

from triton_cpu.analysis.axis_info import attr as _attr
from triton_cpu.codegen import cgutils as cg
from triton_cpu.dialects.compat import splat_value

# arith.cmpi predicates: 2..5 signed <, <=, >, >=; 6..9 the same unsigned.
_LESS, _LESS_EQ, _GREATER, _GREATER_EQ = 0, 1, 2, 3
_SWAPPED = {_LESS: _GREATER, _LESS_EQ: _GREATER_EQ, _GREATER: _LESS, _GREATER_EQ: _LESS_EQ}


def all_lanes_test(builder: ir.IRBuilder, mask: SSAValue, value_of) -> ir.Value:
    """An i1: every lane of the i1 vector `mask` is set. `value_of` maps an xDSL value to
    its emitted LLVM value (the mask's operands dominate the current block)."""
    scalar = _scalar_test(builder, mask, value_of)
    if scalar is not None:
        return scalar
    vec = value_of(mask)
    return cg.every_lane(builder, vec)


def _scalar_test(b, mask, value_of):
    op = mask.owner
    name = getattr(op, "name", None)
    if name == "arith.andi":
        return b.and_(all_lanes_test(b, op.operands[0], value_of), all_lanes_test(b, op.operands[1], value_of))
    if name == "arith.cmpi":
        return _ramp_compare(b, op, value_of)
    return uniform_scalar(mask, value_of)  # a broadcast i1, or a splat constant


def _ramp_compare(b, op, value_of):
    p = _attr(op, "predicate").value.data
    if p < 2:  # eq, ne
        return None
    signed, rel = p <= 5, (p - 2) % 4
    lhs, rhs = op.operands
    vt = lhs.type
    if not isinstance(vt, VectorType) or len(vt.get_shape()) != 1 or not isinstance(vt.element_type, IntegerType):
        return None
    terms, bound = ramp_terms(lhs, through_ext=True), rhs
    if terms is None or not is_uniform(bound):
        terms, bound, rel = ramp_terms(rhs, through_ext=True), lhs, _SWAPPED[rel]
        if terms is None or not is_uniform(bound):
            return None
    width = vt.element_type.width.data
    lanes = vt.get_shape()[0]
    guards = []
    start, bound = _ramp_start(b, terms, value_of, width, lanes, guards), uniform_scalar(bound, value_of)
    test = _last_lane_test(b, start, bound, width, signed, rel, lanes)
    for g in guards:
        test = b.and_(g, test)
    return test


def _last_lane_test(b, start, bound, width: int, signed: bool, rel: int, lanes: int):
    """Every lane of the ramp start, start + 1, ..., start + lanes - 1 (iW, wrapping) `rel`
    the iW bound, computed in i2W where nothing wraps."""
    wide = ir.IntType(2 * width)
    ext = b.sext if signed else b.zext
    start, bound = ext(start, wide), ext(bound, wide)
    last = b.add(start, ir.Constant(wide, lanes - 1))
    cmp = b.icmp_signed  # the wide values are exact: a signed compare is right for both
    if rel == _LESS:
        return cmp("<", last, bound)
    if rel == _LESS_EQ:
        return cmp("<=", last, bound)
    # ramp > bound (or >=): the first lane decides, provided the last one does not wrap.
    top = (1 << (width - 1)) - 1 if signed else (1 << width) - 1
    no_wrap = cmp("<=", last, ir.Constant(wide, top))
    return b.and_(no_wrap, cmp(">" if rel == _GREATER else ">=", start, bound))


class Extended(NamedTuple):
    """A term of ramp_terms(through_ext=True): a narrower ramp (`terms`, `width`-bit lanes)
    sign- or zero-extended. Its lanes continue the ramp only where the narrow one does
    not wrap."""
    signed: bool
    terms: list
    width: int


def ramp_terms(v, through_ext: bool = False):
    """[(negated, uniform value), ...] when the lanes of `v` are s + 0, s + 1, ... with s the
    (wrapping) sum of those terms; None when `v` is not such a ramp: `tcpu.iota` plus or
    minus uniform vectors, in any nesting. With `through_ext`, a term may also be an
    Extended narrower ramp (a ramp then only if that one does not wrap: the caller's
    test). Matches only: nothing is emitted."""
    op = v.owner
    name = getattr(op, "name", None)
    if name == "tcpu.iota":
        return []
    if name in ("arith.addi", "arith.subi"):
        a, c = op.operands
        terms = ramp_terms(a, through_ext)
        if terms is not None and is_uniform(c):
            return terms + [(name == "arith.subi", c)]
        terms = ramp_terms(c, through_ext) if name == "arith.addi" else None
        if terms is not None and is_uniform(a):
            return terms + [(False, a)]
    if through_ext and name in ("arith.extsi", "arith.extui"):
        narrow = op.operands[0].type
        inner = ramp_terms(op.operands[0], True)
        if inner is not None and isinstance(narrow, VectorType):
            return [(False, Extended(name == "arith.extsi", inner, narrow.element_type.width.data))]
    return None


def _ramp_start(b, terms, value_of, width: int, lanes: int, guards: list):
    """s, the ramp's first lane, from its terms (ramp_terms), in the vector's wrapping
    integer arithmetic, like the lanes themselves. An Extended term adds to `guards` the
    i1 test that its narrow ramp does not wrap over `lanes` lanes."""
    start = ir.Constant(ir.IntType(width), 0)  # LLVM folds the 0 +
    for negated, v in terms:
        if isinstance(v, Extended):
            inner = _ramp_start(b, v.terms, value_of, v.width, lanes, guards)
            top = ir.Constant(ir.IntType(v.width), (1 << (v.width - 1)) - 1 if v.signed else (1 << v.width) - 1)
            guards.append(_last_lane_test(b, inner, top, v.width, v.signed, _LESS_EQ, lanes))
            x = (b.sext if v.signed else b.zext)(inner, ir.IntType(width))
        else:
            x = uniform_scalar(v, value_of)
        start = b.sub(start, x) if negated else b.add(start, x)
    return start


def is_uniform(v) -> bool:
    """Every lane of `v` holds one scalar: a broadcast of it, or a splat constant (integer
    or float)."""
    op = v.owner
    name = getattr(op, "name", None)
    if name == "vector.broadcast":
        return not isinstance(op.operands[0].type, VectorType)
    return constant_splat(v) is not None


def constant_splat(v):
    """The number (int or float) every lane of `v` holds when `v` is a dense arith.constant
    (_splat_value), else None."""
    op = v.owner
    return _splat_value(op) if getattr(op, "name", None) == "arith.constant" else None


def uniform_scalar(v, value_of):
    """The LLVM scalar every lane of `v` holds (is_uniform), else None; `value_of` maps an
    xDSL value to its emitted LLVM value."""
    if not is_uniform(v):
        return None
    op = v.owner
    if op.name == "vector.broadcast":
        return value_of(op.operands[0])
    elem = value_of(v).type.element
    c = _splat_value(op)
    if isinstance(elem, ir.IntType):
        return ir.Constant(elem, c & 1 if elem.width == 1 else c)
    return ir.Constant(elem, c)


def splat_constant(op):
    """The integer every element of the dense integer constant `op` holds, else None."""
    attr = _attr(op, "value")
    if not isinstance(attr, DenseIntOrFPElementsAttr) or not isinstance(attr.get_element_type(), IntegerType):
        return None
    return _splat_value(op)


def _splat_value(op):
    """The number (int or float) every element of the dense constant `op` holds, bit for bit
    (a -0.0 lane among 0.0 ones is not the same number), else None."""
    attr = _attr(op, "value")
    return splat_value(attr) if isinstance(attr, DenseIntOrFPElementsAttr) else None
