"""Axis analysis over TTIR: contiguity, divisibility and constancy per dimension.

Like Triton's AxisInfo, for every integer or pointer value (scalars count as
rank 1) and each dimension d:
  contiguity[d]   the values form runs of this many consecutive integers
                  (pointers: consecutive elements) along d;
  divisibility[d] the first value of each run is a multiple of this (pointers:
                  in bytes), a power of two;
  constancy[d]    the values form runs of this many equal values along d.
All three are powers of two dividing the dimension. `nonneg` says every value is >= 0
(program ids, aranges and what + and * make of them), assuming, as Triton's own analysis
and the contiguity above do, that index arithmetic does not overflow. The lowering uses the last
dimension to pick a vector load, a scalar broadcast or a gather.
"""
from dataclasses import dataclass, replace
from math import gcd

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerAttr, TensorType
from xdsl.ir import BlockArgument, OpResult, SSAValue

from triton_cpu.dialects.compat import splat_value

MAX_DIV = 1 << 30


def _pow2_divisor(v: int) -> int:
    if v == 0:
        return MAX_DIV
    return min(v & -v, MAX_DIV)


def shape_of(value: SSAValue) -> tuple[int, ...]:
    t = value.type
    return tuple(t.get_shape()) if isinstance(t, TensorType) else (1,)


def element_type(t):
    return t.get_element_type() if isinstance(t, TensorType) else t


def is_ptr(t) -> bool:
    return getattr(t, "name", "") == "tt.ptr"


def pointee_bytes(ptr_type) -> int:
    pointee = ptr_type.parameters[0]
    width = getattr(pointee, "bitwidth", None)
    if width is None:
        width = getattr(pointee, "width", None)
        width = width.data if hasattr(width, "data") else width
    if width is None:  # pointer to pointer
        return 8
    return max(1, width // 8)


@dataclass(frozen=True)
class AxisInfo:
    contiguity: tuple[int, ...]
    divisibility: tuple[int, ...]
    constancy: tuple[int, ...]
    value: int | None = None  # the value of every element, when known at compile time
    nonneg: bool = False  # every element is >= 0

    @staticmethod
    def unknown(shape) -> "AxisInfo":
        n = len(shape)
        return AxisInfo((1,) * n, (1,) * n, (1,) * n)

    @staticmethod
    def constant(shape, value: int | None) -> "AxisInfo":
        d = _pow2_divisor(value) if value is not None else 1
        return AxisInfo((1,) * len(shape), (d,) * len(shape), tuple(shape), value, value is not None and value >= 0)


def attr(op, name):
    """An op's property, or its attribute of that name (TTIR has both kinds)."""
    a = op.properties.get(name)
    return a if a is not None else op.attributes.get(name)


def attr_int(op, name: str, default: int | None = None) -> int | None:
    """An op's integer property or attribute (`attr`), `default` when it has none."""
    a = attr(op, name)
    return default if a is None else a.value.data


def _int_value(attr):
    if isinstance(attr, IntegerAttr):
        return attr.value.data
    return None


def _join(a: AxisInfo, b: AxisInfo) -> AxisInfo:
    """What holds for both (a value that may be either)."""
    return AxisInfo(tuple(gcd(x, y) for x, y in zip(a.contiguity, b.contiguity)),
                    tuple(gcd(x, y) for x, y in zip(a.divisibility, b.divisibility)),
                    tuple(gcd(x, y) for x, y in zip(a.constancy, b.constancy)),
                    a.value if a.value == b.value else None, a.nonneg and b.nonneg)


class AxisInfoAnalysis:
    """Computes AxisInfo lazily, on demand, for values of a TTIR function.

    `optimistic`: signed x % m and x // m keep the runs of x as if x were >= 0 even where
    that is not proven (Triton's GPU analysis always does). What it claims is an
    assumption: the lowering checks it at run time before it relies on it.

    `unit_strides` (with `optimistic`, for the lowering's speculative accesses): x * s, with
    x in runs and s one value unknown at compile time (a stride argument Triton does not
    specialize, FlagGems' `do_not_specialize` strides, Inductor's dynamic `ks0`), keeps the
    runs of x as if s were 1. Only a consumer that checks the addresses at run time may use
    that claim (the lowering's `tcpu.is_contiguous`); a heuristic that picks a layout from
    the runs (transpose_column_tiles) must not, since a real stride there is rarely 1."""

    def __init__(self, optimistic: bool = False, unit_strides: bool = False):
        self.optimistic = optimistic
        self.unit_strides = optimistic and unit_strides
        self.cache: dict[SSAValue, AxisInfo] = {}

    def get(self, value: SSAValue) -> AxisInfo:
        info = self.cache.get(value)
        if info is None:
            info = self._compute(value)
            self.cache[value] = info
        return info

    # --- rules -------------------------------------------------------------
    def _compute(self, value: SSAValue) -> AxisInfo:
        shape = shape_of(value)
        if isinstance(value, BlockArgument):
            owner = value.block.parent_op()
            if owner is not None and owner.name in ("tt.func", "func.func") and value.block is owner.regions[0].blocks[0]:
                div = self._arg_divisibility(owner, value.index)
                return AxisInfo((1,) * len(shape), (div,) * len(shape), (1,) * len(shape))
            if owner is not None and owner.name == "scf.for" and value.index > 0:
                return self._loop_carried(owner, value)
            return AxisInfo.unknown(shape)
        assert isinstance(value, OpResult)
        op = value.op
        rule = getattr(self, "_" + op.name.replace(".", "_"), None)
        if rule is None:
            return AxisInfo.unknown(shape)
        return rule(op, shape)

    def _loop_carried(self, loop, arg) -> AxisInfo:
        """Fixpoint over the loop: start from the init's info, join with what the yield
        computes from it, until stable (like `a_ptrs += BLOCK_K * stride` keeping the
        contiguity of `a_ptrs`)."""
        i = arg.index - 1
        init = loop.operands[3 + i]
        yielded = loop.regions[0].blocks[0].last_op.operands[i]
        info = self.get(init)
        for _ in range(4):
            mark = len(self.cache)
            self.cache[arg] = info
            out = self.get(yielded)
            joined = _join(info, out)
            # Forget what was derived from the assumption; keep it only when it held.
            for key in list(self.cache)[mark:]:
                del self.cache[key]
            if joined == info:
                return info
            info = joined
        return AxisInfo.unknown(shape_of(arg))

    @staticmethod
    def _arg_divisibility(func, index: int) -> int:
        arg_attrs = attr(func, "arg_attrs")
        if arg_attrs is None:
            return 1
        d = arg_attrs.data[index].data.get("tt.divisibility")
        return _int_value(d) or 1

    def _arith_constant(self, op, shape):
        v = attr(op, "value")
        if isinstance(v, IntegerAttr):
            return AxisInfo.constant(shape, v.value.data)
        if isinstance(v, DenseIntOrFPElementsAttr) and (first := splat_value(v)) is not None:
            return AxisInfo.constant(shape, first if isinstance(first, int) else None)
        return AxisInfo.unknown(shape)

    def _tt_make_range(self, op, shape):
        start = _int_value(attr(op, "start")) or 0
        return AxisInfo((shape[0],), (_pow2_divisor(start),), (1,), nonneg=start >= 0)

    def _tt_get_program_id(self, op, shape):
        return AxisInfo((1,), (1,), (1,), nonneg=True)

    _tt_get_num_programs = _tt_get_program_id

    def _tt_splat(self, op, shape):
        src = self.get(op.operands[0])
        return AxisInfo((1,) * len(shape), (src.divisibility[0],) * len(shape), tuple(shape), src.value, src.nonneg)

    def _tt_expand_dims(self, op, shape):
        src = self.get(op.operands[0])
        if src.value is not None:
            return AxisInfo.constant(shape, src.value)
        axis = _int_value(attr(op, "axis"))
        c, d, k = list(src.contiguity), list(src.divisibility), list(src.constancy)
        # Along the new size-1 dimension every element is its own run: its divisibility is
        # that of each element, 1 if the values run through consecutive integers anywhere
        # (e.g. arange(M)[:, None] * N holds odd multiples of N).
        elem_div = 1 if any(x > 1 for x in c) else max(d, default=1)
        c.insert(axis, 1)
        d.insert(axis, elem_div)
        k.insert(axis, 1)
        return AxisInfo(tuple(c), tuple(d), tuple(k), nonneg=src.nonneg)

    def _tt_broadcast(self, op, shape):
        src = self.get(op.operands[0])
        if src.value is not None:
            return AxisInfo.constant(shape, src.value)
        src_shape = shape_of(op.operands[0])
        c, d, k = [], [], []
        for i, (s, n) in enumerate(zip(src_shape, shape)):
            if s == 1 and n != 1:
                c.append(1)
                d.append(src.divisibility[i])
                k.append(n)
            else:
                c.append(src.contiguity[i])
                d.append(src.divisibility[i])
                k.append(src.constancy[i])
        return AxisInfo(tuple(c), tuple(d), tuple(k), nonneg=src.nonneg)

    def _binary(self, op):
        return self.get(op.operands[0]), self.get(op.operands[1])

    def _add(self, lhs, rhs, rhs_scale=1, lhs_scale=1):
        n = len(lhs.contiguity)
        c = tuple(max(gcd(lhs.contiguity[i], rhs.constancy[i]), gcd(lhs.constancy[i], rhs.contiguity[i]))
                  for i in range(n))
        d = tuple(min(gcd(lhs.divisibility[i] * lhs_scale, rhs.divisibility[i] * rhs_scale), MAX_DIV)
                  for i in range(n))
        k = tuple(gcd(lhs.constancy[i], rhs.constancy[i]) for i in range(n))
        return AxisInfo(c, d, k)

    def _arith_addi(self, op, shape):
        lhs, rhs = self._binary(op)
        if lhs.value is not None and rhs.value is not None:
            return AxisInfo.constant(shape, lhs.value + rhs.value)
        return replace(self._add(lhs, rhs), nonneg=lhs.nonneg and rhs.nonneg)

    def _arith_subi(self, op, shape):
        lhs, rhs = self._binary(op)
        n = len(shape)
        c = tuple(gcd(lhs.contiguity[i], rhs.constancy[i]) for i in range(n))
        d = tuple(gcd(lhs.divisibility[i], rhs.divisibility[i]) for i in range(n))
        k = tuple(gcd(lhs.constancy[i], rhs.constancy[i]) for i in range(n))
        return AxisInfo(c, d, k)

    def _tt_addptr(self, op, shape):
        lhs, rhs = self._binary(op)
        size = pointee_bytes(element_type(op.operands[0].type))
        # Offsets count elements: their divisibility scales by the element size in bytes.
        return self._add(lhs, rhs, rhs_scale=size)

    def _arith_muli(self, op, shape):
        lhs, rhs = self._binary(op)
        n = len(shape)
        if lhs.value == 0 or rhs.value == 0:
            return AxisInfo.constant(shape, 0)
        if lhs.value is not None and rhs.value is not None:
            return AxisInfo.constant(shape, lhs.value * rhs.value)
        for a, b in ((lhs, rhs), (rhs, lhs)):
            if b.value == 1:
                return a
            if self.unit_strides and b.value is None and b.constancy == tuple(shape) and max(a.contiguity) > 1:
                return replace(a, nonneg=a.nonneg and b.nonneg)  # as if b were 1 (see __init__)
        k = tuple(gcd(lhs.constancy[i], rhs.constancy[i]) for i in range(n))
        d = tuple(min(lhs.divisibility[i] * rhs.divisibility[i], MAX_DIV) for i in range(n))
        return AxisInfo((1,) * n, d, k, nonneg=lhs.nonneg and rhs.nonneg)

    def _elementwise(self, op, shape):
        k = None
        for operand in op.operands:
            if isinstance(operand.type, TensorType) or len(shape) == 1:
                ok = self.get(operand).constancy if isinstance(operand.type, TensorType) else tuple(shape)
                k = ok if k is None else tuple(gcd(a, b) for a, b in zip(k, ok))
        k = k or (1,) * len(shape)
        return AxisInfo((1,) * len(shape), (1,) * len(shape), k)

    _arith_cmpf = _arith_andi = _arith_ori = _arith_xori = _elementwise

    def _arith_select(self, op, shape):
        """One of two values: a scalar condition picks one whole (what holds for both); a
        tensor one picks per element, so runs and divisibility hold only where both have
        them element by element (a run of one)."""
        a, b = self.get(op.operands[1]), self.get(op.operands[2])
        if not isinstance(op.operands[0].type, TensorType):
            return _join(a, b)
        info = self._elementwise(op, shape)
        d = tuple(gcd(a.divisibility[i] if a.contiguity[i] == 1 else 1,
                      b.divisibility[i] if b.contiguity[i] == 1 else 1) for i in range(len(shape)))
        return replace(info, divisibility=d, nonneg=a.nonneg and b.nonneg)

    # arith.cmpi predicates that flip where x reaches n for `x pred n` (slt, sge, ult, uge)
    # and for `n pred x` (sle, sgt, ule, ugt).
    _FLIP_AT_LHS = {2, 5, 6, 9}
    _FLIP_AT_RHS = {3, 4, 7, 8}

    def _arith_cmpi(self, op, shape):
        """Constant over the runs of both operands and, for x < n and x >= n (or n <= x,
        n > x), over runs of consecutive x that start at a multiple of their length with n
        constant over them and a multiple of it: the comparison flips only where such a run
        starts (Inductor's `xindex < xnumel` is constant over 16 lanes when xnumel is
        divisible by 16). x <= n flips at n + 1, which no run boundary need hold."""
        info = self._elementwise(op, shape)
        if not isinstance(op.operands[0].type, TensorType):
            return info
        pred = attr(op, "predicate").value.data
        lhs, rhs = self._binary(op)
        k = list(info.constancy)
        for i in range(len(shape)):
            if pred in self._FLIP_AT_LHS:
                k[i] = max(k[i], self._aligned_run(lhs, rhs, i))
            elif pred in self._FLIP_AT_RHS:
                k[i] = max(k[i], self._aligned_run(rhs, lhs, i))
        return replace(info, constancy=tuple(k))

    @staticmethod
    def _aligned_run(lhs, rhs, i) -> int:
        """Runs of consecutive x (x % m, x // m) that start at a multiple of their length
        and over which m is one multiple of that length: no multiple of m lies inside one,
        so x % m stays consecutive and x // m constant over it (for x >= 0)."""
        return gcd(lhs.contiguity[i], lhs.divisibility[i], rhs.divisibility[i], rhs.constancy[i])

    def _rem(self, op, shape, signed):
        # Signed: -16 % 16 == 0 but -15 % 16 == -15, so runs of negative x break inside.
        lhs, rhs = self._binary(op)
        c, d, k = [], [], []
        for i in range(len(shape)):
            run = self._aligned_run(lhs, rhs, i) if lhs.nonneg or not signed or self.optimistic else 1
            # x - q*m: divisible by what divides both, at the start of an operand's run.
            div = gcd(lhs.divisibility[i], rhs.divisibility[i])
            c.append(run)
            d.append(gcd(div, run) if max(lhs.contiguity[i], rhs.contiguity[i]) > run else div)
            k.append(gcd(lhs.constancy[i], rhs.constancy[i]))
        return AxisInfo(tuple(c), tuple(d), tuple(k), nonneg=lhs.nonneg)

    def _arith_remsi(self, op, shape):
        return self._rem(op, shape, signed=True)

    def _arith_remui(self, op, shape):
        return self._rem(op, shape, signed=False)

    def _div(self, op, shape, signed):
        lhs, rhs = self._binary(op)
        k = []
        for i in range(len(shape)):
            # (The sign of m does not matter: x // -m == -(x // m) for x >= 0.)
            run = self._aligned_run(lhs, rhs, i) if lhs.nonneg or not signed or self.optimistic else 1
            k.append(max(run, gcd(lhs.constancy[i], rhs.constancy[i])))
        n = len(shape)
        return AxisInfo((1,) * n, (1,) * n, tuple(k), nonneg=lhs.nonneg and rhs.nonneg)

    def _arith_divsi(self, op, shape):
        return self._div(op, shape, signed=True)

    def _arith_divui(self, op, shape):
        return self._div(op, shape, signed=False)
    _tt_load = _elementwise

    def _passthrough(self, op, shape):
        return self.get(op.operands[0])

    _arith_extsi = _arith_index_cast = _passthrough

    def _arith_extui(self, op, shape):
        src = self.get(op.operands[0])
        value = src.value if src.value is None or src.value >= 0 else None  # -1 (i8) becomes 255
        return replace(src, value=value, nonneg=True)

    def _arith_trunci(self, op, shape):
        return replace(self.get(op.operands[0]), value=None, nonneg=False)  # may wrap to negative values

    def _tt_int_to_ptr(self, op, shape):
        return self.get(op.operands[0])

    _tt_ptr_to_int = _tt_bitcast = _tt_int_to_ptr
