"""Facts about scf.for loops that passes and the code generator share: integer constants
and constant bounds.
"""
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Operation, SSAValue

from triton_cpu.analysis.axis_info import attr


def constant_int(v: SSAValue) -> int | None:
    """The value of an integer (or index) `arith.constant`; None for anything else."""
    op = v.owner
    if isinstance(op, Operation) and op.name == "arith.constant":
        a = attr(op, "value")
        if isinstance(a, IntegerAttr):
            return a.value.data
    return None


def constant_bounds(loop: Operation) -> tuple[int, int, int] | None:
    """(lb, ub, step) of an scf.for whose bounds and step are constants, the step positive;
    else None."""
    if loop.name != "scf.for":
        return None
    bounds = tuple(constant_int(v) for v in loop.operands[:3])
    if None in bounds or bounds[2] <= 0:
        return None
    return bounds


def trip_count(lb: int, ub: int, step: int) -> int:
    """Iterations of `for i = lb; i < ub; i += step` (step > 0)."""
    return max(0, -(-(ub - lb) // step))


def last_iteration(lb: int, ub: int, step: int) -> int | None:
    """The induction variable's last value; None when the loop runs no iteration."""
    n = trip_count(lb, ub, step)
    return lb + (n - 1) * step if n else None
