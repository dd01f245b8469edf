"""Changing the shape of TTIR tensor values in place, for the passes that reshape a
kernel's tiles (transpose-column-tiles, split-row-tiles): a value's type, and a splat
constant's value to match its result's new type."""
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType
from xdsl.ir import Operation, SSAValue

from triton_cpu.analysis.axis_info import attr


def set_shape(v: SSAValue, shape) -> None:
    v._type = TensorType(v.type.element_type, list(shape))  # noqa: SLF001 - xDSL has no public setter


def refit_splat_constant(op: Operation) -> None:
    """An `arith.constant` holding a splat: its value takes the (new) type of its result."""
    value = attr(op, "value")
    new = DenseIntOrFPElementsAttr.from_list(op.results[0].type, [value.get_values()[0]])
    if "value" in op.properties:
        op.properties["value"] = new
    else:
        op.attributes["value"] = new
