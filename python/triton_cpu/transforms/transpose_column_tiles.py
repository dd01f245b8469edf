"""transpose-column-tiles: a kernel whose 2-D tiles are contiguous in memory along their
first axis is rewritten on its transposed tiles, so that vector lanes run along memory.

Runs on TTIR, before convert-triton-to-tcpu, which always puts the vector lanes on a
tile's last axis. Inductor's column reductions (`x.amax(dim=0)`, bias gradients, layer
norm's weight gradient) load `x0 + stride * r0` on an [XBLOCK, RBLOCK] tile: consecutive
addresses run down the first axis, so every vector of the last axis is a gather of
elements `stride` apart, and the reduction along the last axis is a horizontal one. On
the transposed [RBLOCK, XBLOCK] tiles the same loads are contiguous vectors and the
reduction runs along the first axis: lane-wise combines of whole vectors.

The rewrite retypes every rank-2 tensor AxB as BxA in place (results, block arguments,
splat constants) and mirrors the axis of the ops that have one: expand_dims of a 1-D
tensor, reduce and scan of a 2-D one. Every other op that touches a 2-D tensor must be
elementwise (or a transpose, which stays one), so that its meaning does not depend on
the element order; a kernel with anything else (dot, reshape, join/split/cat, gather,
atomics, print, calls, block pointers, tensors of rank 3 or more, non-splat 2-D
constants, tensor arguments) is left alone.

When: at least one load or store of a 2-D pointer tensor has runs of 4 or more
consecutive addresses down the first axis and only 1 along the last (the optimistic axis
analysis, Triton's own claim; a wrong guess costs speed, never correctness), and no such
access is contiguous along the last axis.
"""
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerAttr, ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from triton_cpu.analysis.axis_info import AxisInfoAnalysis, attr
from triton_cpu.transforms.retype import ELEMENTWISE_TT, refit_splat_constant, set_shape

# Ops that may touch 2-D tensors: elementwise ones, and those whose axis is mirrored.
_ELEMENTWISE_TT = ELEMENTWISE_TT | {"tt.trans", "tt.reduce.return", "tt.scan.return"}
_STRUCTURE = {"scf.for", "scf.yield", "scf.if", "scf.while", "scf.condition", "ub.poison"}
_AXIS_OPS = {"tt.expand_dims", "tt.reduce", "tt.scan"}
_MIN_RUN = 4  # consecutive addresses down the first axis that make a column access


def _rank(v: SSAValue) -> int:
    """The rank of a tensor value, 0 for scalars. (Triton 3.9 has no block pointers, and
    make_ttir rewrites tensor descriptors into tensors of pointers before this pass.)"""
    t = v.type
    return len(t.get_shape()) if isinstance(t, TensorType) else 0


def _values(op: Operation):
    yield from op.operands
    yield from op.results
    for region in op.regions:
        for block in region.blocks:
            yield from block.args


def _transposable(func: Operation) -> bool:
    """Every op touching a 2-D tensor is one the rewrite knows; no tensor has rank > 2;
    the signature holds no tensor (a caller passes and expects them untransposed)."""
    if any(_rank(a) for a in func.regions[0].blocks[0].args):
        return False
    for op in func.walk():
        if op is func:
            continue
        ranks = [_rank(v) for v in _values(op)]
        if any(r > 2 for r in ranks):
            return False
        if 2 not in ranks:
            continue
        name = op.name
        if name == "arith.constant":
            value = attr(op, "value")
            if not (isinstance(value, DenseIntOrFPElementsAttr) and value.is_splat()):
                return False
        elif name == "tt.trans":
            if list(attr(op, "order").get_values()) != [1, 0]:
                return False
        elif not (name.startswith("arith.") or name.startswith("math.") or name in _ELEMENTWISE_TT
                  or name in _STRUCTURE or name in _AXIS_OPS):
            return False
    return True


def _prefers_columns(func: Operation) -> bool:
    axis = AxisInfoAnalysis(optimistic=True)
    columns = rows = 0
    for op in func.walk():
        if op.name not in ("tt.load", "tt.store") or _rank(op.operands[0]) != 2:
            continue
        c0, c1 = axis.get(op.operands[0]).contiguity
        if c1 > 1:
            rows += 1
        elif c0 >= _MIN_RUN:
            columns += 1
    return columns > 0 and rows == 0


def _retype(v: SSAValue):
    t = v.type
    if isinstance(t, TensorType) and len(t.get_shape()) == 2:
        a, b = t.get_shape()
        set_shape(v, (b, a))


def _mirror_axis(op: Operation, rank: int):
    """axis -> 1 - axis, for an op whose axis refers to a 2-D tensor."""
    if rank != 2:
        return
    key = "axis" if "axis" in op.properties else None
    old = op.properties[key] if key else op.attributes["axis"]
    new = IntegerAttr(1 - old.value.data, old.type)
    if key:
        op.properties[key] = new
    else:
        op.attributes["axis"] = new


def transpose(func: Operation):
    for op in list(func.walk()):
        if op is func:
            continue
        if op.name == "tt.expand_dims":
            _mirror_axis(op, _rank(op.results[0]))
        elif op.name in ("tt.reduce", "tt.scan"):
            _mirror_axis(op, _rank(op.operands[0]))
        for region in op.regions:
            for block in region.blocks:
                for arg in block.args:
                    _retype(arg)
        for r in op.results:
            _retype(r)
        if op.name == "arith.constant" and _rank(op.results[0]) == 2:
            refit_splat_constant(op)


@dataclass(frozen=True)
class TransposeColumnTiles(ModulePass):
    name = "transpose-column-tiles"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func in op.body.block.ops:
            if func.name in ("tt.func", "func.func") and _transposable(func) and _prefers_columns(func):
                transpose(func)
