"""Changing the shape of TTIR tensor values in place, for the passes that reshape a
kernel's tiles (transpose-column-tiles, split-row-tiles): a value's type, a splat
constant's value to match its result's new type, and the tt ops such a rewrite may retype
without changing their meaning (besides arith and math)."""
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType
from xdsl.ir import Operation, SSAValue

from triton_cpu.analysis.axis_info import attr
from triton_cpu.dialects.compat import splat_value


# tt ops that work element by element: retyped to any shape, they mean the same.
ELEMENTWISE_TT = frozenset({
    "tt.addptr", "tt.load", "tt.store", "tt.splat", "tt.broadcast", "tt.bitcast", "tt.int_to_ptr",
    "tt.ptr_to_int", "tt.fp_to_fp", "tt.precise_sqrt", "tt.precise_divf", "tt.mulhiui", "tt.clampf",
    "tt.extern_elementwise",
})


def set_shape(v: SSAValue, shape) -> None:
    v._type = TensorType(v.type.element_type, list(shape))  # noqa: SLF001 - xDSL has no public setter


def refit_splat_constant(op: Operation) -> None:
    """An `arith.constant` holding a splat: its value takes the (new) type of its result."""
    value = attr(op, "value")
    new = DenseIntOrFPElementsAttr.from_list(op.results[0].type, [splat_value(value)])
    if "value" in op.properties:
        op.properties["value"] = new
    else:
        op.attributes["value"] = new
