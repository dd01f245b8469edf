"""split-bound-check-loops: a loop over the chunks of a row whose bound checks are used as
values runs its in-bounds chunks in a copy where every check is the constant true.

Runs on TritonCPU IR, after convert-triton-to-tcpu. The conversion walks a tensor in
chunks of one vector (`scf.for` over `index`, constant bounds), and Triton's bound check
`cols < N` becomes, per chunk, `cmpi slt, splat(i) + iota, splat(N)`. As the mask of a
load or store it costs one scalar compare (codegen/lane_masks.py). Used as a value, as in
`tl.where(cols < N, x - mean, 0.0)` (layer norms and other row kernels that zero their
padding lanes before a sum), the whole lane mask is built and applied in every chunk of
every pass.
Here such a loop becomes two:

    %r = scf.for %i = %lb to %ub step %s iter_args(%a = %init) { body }
  =>
    %split = lb + s * clamp(ceil((X - lb) / s), 0, trips)
    %m = scf.for %i = %lb to %split step %s iter_args(%a = %init) { body, checks = true }
    %r = scf.for %i = %split to %ub step %s iter_args(%a = %m) { body }

X is the first chunk start at which some check could have a lane off: for a check whose
lanes are `cast(i + D) + c + k` (k < L) compared `< B`, X = B - c - D - L + 1 (one more
for `<=`), computed in i64 from the checks' run-time operands; the minimum over the
loop's checks. Every iteration runs once, in the same order, so results are unchanged.
LLVM then folds the selects and masked moves of the first loop; the second keeps the
original code for the partial and empty chunks (none when N fills the block).

Which checks: `arith.cmpi` (slt, sle, ult, ule, or sgt, sge, ugt, uge with the operands
swapped) on i32 or narrower lanes, between a ramp (lane_masks.ramp_terms: `tcpu.iota` plus
or minus uniform vectors) and a uniform bound defined outside the loop. Exactly one term
of the ramp depends on the loop: a broadcast of `index_cast(i + D)`, added, where D is a
sum of constants (the chunks a step unrolls: i, i + 16, ...) and induction variables of
enclosing constant-bound loops, so that i + D is known at compile time to lie in
[0, 2^(w-1)): the cast is exact
and the lanes cannot wrap while the check holds. The other terms are loop-invariant
(their wrapping sum is c). Anything else is left alone.

Which loops: `scf.for` over `index` with constant bounds, at most _MAX_BODY_OPS ops,
holding at least one such check of its own induction variable that is used other than
as the mask of a load or store (through `arith.andi`); a check that only masks memory
costs one compare per chunk, not worth a copy of the loop (splitting those too made
softmax ~5% faster and every elementwise kernel's compile 20-25 ms slower). Nested loops
are split innermost first.

Measured on Zen 3, one thread, rows in cache: tutorial 05's layer norm forward 0.35-0.37
-> 0.23 us per 1024-float row.
"""
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr, IndexType, IntegerType, ModuleOp, VectorType, i1, i64,
)
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass

from triton_cpu.analysis.axis_info import attr
from triton_cpu.analysis.loops import constant_bounds, constant_int, last_iteration, trip_count
from triton_cpu.codegen.lane_masks import is_uniform, ramp_terms, splat_constant
from triton_cpu.dialects.compat import arith
from triton_cpu.transforms.loop_rewrites import InsertBefore

_MAX_BODY_OPS = 600
# arith.cmpi predicates: ramp < bound, as (signed, inclusive), and the same with the
# operands swapped (bound > ramp).
_RAMP_LEFT = {2: (True, False), 3: (True, True), 6: (False, False), 7: (False, True)}
_RAMP_RIGHT = {4: (True, False), 5: (True, True), 8: (False, False), 9: (False, True)}
_MASK_USERS = ("tcpu.load", "tcpu.vload", "tcpu.gather", "tcpu.store", "tcpu.vstore", "tcpu.scatter")


@dataclass
class _Check:
    cmp: Operation
    lanes: int
    signed: bool
    inclusive: bool
    width: int
    shift: list  # D: [(sign, int | SSAValue index)], invariant in the loop
    terms: list  # c: [(sign, int | SSAValue iW)], invariant in the loop
    bound: int | SSAValue  # B (iW)


def _constant_loop(loop: Operation):
    """(lb, ub, step) of an scf.for over `index` with constant bounds and step > 0."""
    if not isinstance(loop, scf.ForOp) or not isinstance(loop.body.block.args[0].type, IndexType):
        return None
    return constant_bounds(loop)


def _inside(v: SSAValue, loop: Operation) -> bool:
    """Is `v` defined in the loop's body (its induction variable included)?"""
    if isinstance(v, BlockArgument):
        return loop.is_ancestor(v.block)
    return v.owner is not loop and loop.is_ancestor(v.owner)


def _index_shift(v: SSAValue, loop: Operation):
    """v (index) as `iv + D`: D's terms [(sign, int | SSAValue)] and its range (lo, hi),
    D made of constants and induction variables of enclosing constant-bound loops; None
    when `v` has another form."""
    iv = loop.body.block.args[0]
    terms, lo, hi, seen = [], 0, 0, 0
    todo = [(1, v)]
    while todo:
        sign, x = todo.pop()
        if x is iv:
            if sign != 1:
                return None
            seen += 1
            continue
        c = constant_int(x)
        if c is not None:
            terms.append((sign, c))
            lo, hi = lo + sign * c, hi + sign * c
            continue
        if isinstance(x, BlockArgument) and not _inside(x, loop):
            outer = x.block.parent_op()
            bounds = _constant_loop(outer) if outer is not None else None
            if bounds is None or x is not outer.body.block.args[0]:
                return None
            last = last_iteration(*bounds)
            if last is None:
                return None
            terms.append((sign, x))
            lo, hi = (lo + bounds[0], hi + last) if sign == 1 else (lo - last, hi - bounds[0])
            continue
        op = x.owner
        if isinstance(op, Operation) and op.name in ("arith.addi", "arith.subi"):
            todo.append((sign, op.operands[0]))
            todo.append((sign if op.name == "arith.addi" else -sign, op.operands[1]))
            continue
        return None
    return (terms, lo, hi) if seen == 1 else None


def _scalar_terms(v: SSAValue, loop: Operation):
    """v (an iW scalar) as a wrapping sum: ([(sign, int | invariant SSAValue)], the one
    `index_cast` of an index value depending on the loop, or None); None when some part
    depends on the loop in another way."""
    terms, cast = [], None
    todo = [(1, v)]
    while todo:
        sign, x = todo.pop()
        c = constant_int(x)
        if c is not None:
            terms.append((sign, c))
            continue
        if not _inside(x, loop):
            terms.append((sign, x))
            continue
        op = x.owner
        if not isinstance(op, Operation):
            return None
        if op.name in ("arith.addi", "arith.subi"):
            todo.append((sign, op.operands[0]))
            todo.append((sign if op.name == "arith.addi" else -sign, op.operands[1]))
        elif op.name == "arith.index_cast" and isinstance(op.operands[0].type, IndexType) \
                and cast is None and sign == 1:
            cast = op.operands[0]
        else:
            return None
    return terms, cast


def _uniform_scalar(v: SSAValue):
    """The scalar (or constant int) every lane of the uniform vector `v` holds."""
    op = v.owner
    if op.name == "vector.broadcast":
        return op.operands[0]
    return splat_constant(op)


def _check(cmp: Operation, loop: Operation, bounds) -> _Check | None:
    p = attr(cmp, "predicate").value.data
    lhs, rhs = cmp.operands
    if p in _RAMP_LEFT:
        ramp, bound, (signed, inclusive) = lhs, rhs, _RAMP_LEFT[p]
    elif p in _RAMP_RIGHT:
        ramp, bound, (signed, inclusive) = rhs, lhs, _RAMP_RIGHT[p]
    else:
        return None
    vt = ramp.type
    if not isinstance(vt, VectorType) or len(vt.get_shape()) != 1 or not isinstance(vt.element_type, IntegerType):
        return None
    width = vt.element_type.width.data
    if width > 32 or not is_uniform(bound):
        return None
    bound = _uniform_scalar(bound)
    if not isinstance(bound, int) and _inside(bound, loop):
        return None
    rterms = ramp_terms(ramp)
    if rterms is None:
        return None
    terms, shift = [], None
    for negated, u in rterms:
        s = _uniform_scalar(u)
        sign = -1 if negated else 1
        if isinstance(s, int) or not _inside(s, loop):
            terms.append((sign, s))
            continue
        found = _scalar_terms(s, loop)
        if found is None or found[1] is None or shift is not None or negated:
            return None
        more, index = found
        terms += more
        shift = _index_shift(index, loop)
        if shift is None:
            return None
    if shift is None:
        return None
    d_terms, d_lo, d_hi = shift
    lb = bounds[0]
    # The cast of i + D is exact, and i + D >= 0, over every iteration (the loop must have one).
    last = last_iteration(*bounds)
    if last is None or lb + d_lo < 0 or last + d_hi > (1 << (width - 1)) - 1:
        return None
    return _Check(cmp, vt.get_shape()[0], signed, inclusive, width, d_terms, terms, bound)


def _used_as_value(v: SSAValue) -> bool:
    for use in v.uses:
        user = use.operation
        if user.name == "arith.andi":
            if _used_as_value(user.results[0]):
                return True
        elif not (user.name in _MASK_USERS and getattr(user, "mask", None) is v):
            return True
    return False


def _checks(loop: Operation, bounds) -> list[_Check] | None:
    """The loop's bound checks on its own induction variable, when splitting pays;
    `bounds`: the loop's constant (lb, ub, step)."""
    found, count = [], 0
    for op in loop.body.block.walk():
        count += 1
        if count > _MAX_BODY_OPS:
            return None
        if op.name == "arith.cmpi":
            c = _check(op, loop, bounds)
            if c is not None:
                found.append(c)
    return found if any(_used_as_value(c.cmp.results[0]) for c in found) else None


def _wrap(v: int, width: int, signed: bool) -> int:
    """v modulo 2^width, as a signed or an unsigned value of that width."""
    v &= (1 << width) - 1
    return v - (1 << width) if signed and v >= 1 << (width - 1) else v


class _Builder(InsertBefore):
    """Emits scalar arithmetic before `anchor`: a check's terms as i64."""

    def wide(self, v, elem, signed: bool) -> SSAValue:
        """An int or iW scalar as i64 (sign- or zero-extended)."""
        if isinstance(v, int):
            return self.const(_wrap(v, elem.width.data, signed), i64)
        return self.emit((arith.ExtSIOp if signed else arith.ExtUIOp)(v, i64))

    def wrapped_sum(self, terms, elem) -> SSAValue | int:
        """The iW sum of [(sign, int | SSAValue)], wrapping like the lanes."""
        total, const = None, 0
        for sign, t in terms:
            if isinstance(t, int):
                const += sign * t
                continue
            if total is None and sign == 1:
                total = t
            else:
                base = total if total is not None else self.const(0, elem)
                total = self.emit((arith.AddiOp if sign == 1 else arith.SubiOp)(base, t))
        const = _wrap(const, elem.width.data, True)
        if total is None:
            return const
        return total if const == 0 else self.emit(arith.AddiOp(total, self.const(const, elem)))

    def first_off(self, c: _Check, const: int) -> SSAValue:
        """B - c - D' + const, D' the induction variables in D (its constants are in `const`)."""
        elem = IntegerType(c.width)
        x = self.wide(c.bound, elem, c.signed)
        offset = self.wrapped_sum(c.terms, elem)
        if not (isinstance(offset, int) and offset == 0):
            x = self.emit(arith.SubiOp(x, self.wide(offset, elem, c.signed)))
        for sign, t in c.shift:
            if not isinstance(t, int):
                x = self.emit((arith.SubiOp if sign == 1 else arith.AddiOp)(x, self.emit(arith.IndexCastOp(t, i64))))
        return self.emit(arith.AddiOp(x, self.const(const, i64))) if const else x


def _first_off_terms(checks: list[_Check]) -> dict:
    """X = B - c - D - L + 1 (+ 1 for <=) for each check: the smallest chunk start at which
    one of its lanes may be off. Checks that differ only in D's constants (the chunks of
    one unrolled step) share their run-time part: {run-time key: (a check, least constant)}."""
    out = {}
    for c in checks:
        const = (2 if c.inclusive else 1) - c.lanes - sum(s * t for s, t in c.shift if isinstance(t, int))
        key = (c.width, c.signed, c.bound if isinstance(c.bound, int) else id(c.bound),
               tuple(sorted((s, t if isinstance(t, int) else id(t)) for s, t in c.terms)),
               tuple(sorted((s, id(t)) for s, t in c.shift if not isinstance(t, int))))
        if key not in out or const < out[key][1]:
            out[key] = (c, const)
    return out


def split(loop: Operation, bounds, checks: list[_Check]) -> None:
    lb, ub, step = bounds
    trips = trip_count(lb, ub, step)
    b = _Builder(loop)
    first = None
    for c, const in _first_off_terms(checks).values():
        x = b.first_off(c, const)
        first = x if first is None else b.emit(arith.MinSIOp(first, x))
    n = b.emit(arith.SubiOp(first, b.const(lb, i64))) if lb else first
    n = b.emit(arith.MaxSIOp(n, b.const(0, i64)))
    count = b.emit(arith.DivSIOp(b.emit(arith.AddiOp(n, b.const(step - 1, i64))), b.const(step, i64)))
    count = b.emit(arith.MinSIOp(count, b.const(trips, i64)))
    at = b.emit(arith.MuliOp(count, b.const(step, i64))) if step != 1 else count
    at = b.emit(arith.AddiOp(at, b.const(lb, i64))) if lb else at
    at = b.emit(arith.IndexCastOp(at, IndexType()))

    mapping: dict[SSAValue, SSAValue] = {}
    main = loop.clone(value_mapper=mapping)
    main.operands = (loop.operands[0], at, *loop.operands[2:])
    b.block.insert_op_before(main, loop)
    for c in checks:
        copy = mapping[c.cmp.results[0]]
        true = arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(VectorType(i1, [c.lanes]), [1]))
        copy.owner.parent_block().insert_op_before(true, copy.owner)
        copy.replace_all_uses_with(true.result)
        copy.owner.detach()
        copy.owner.erase()
    loop.operands = (at, loop.operands[1], loop.operands[2], *main.results)


@dataclass(frozen=True)
class SplitBoundCheckLoops(ModulePass):
    name = "split-bound-check-loops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        loops = [(o, bounds) for o in op.walk() if (bounds := _constant_loop(o)) is not None]
        for loop, bounds in reversed(loops):
            checks = _checks(loop, bounds)
            if checks:
                split(loop, bounds, checks)
