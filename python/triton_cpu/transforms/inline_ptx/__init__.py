"""inline-ptx: a `tt.elementwise_inline_asm` whose PTX is straight-line code becomes the ops
that compute it.

Runs on TTIR, first. GPU kernels reach the hardware through inline PTX: fast
approximations (`tanh.approx.f32`, `ex2.approx.ftz.f32`), exactly rounded operations
(`div.rn.f32`, `mul.rn.f32`), and bit-level packing in quantization kernels (fp8, fp4 and MX
scale conversions, `prmt` byte permutes, `lop3`). A CPU cannot run PTX, but each of these
instructions is a function with a documented result, and a block of them is a small
program: it is translated instruction by instruction into arith/math/tt ops on the asm's
operands (`machine` holds the registers; `integer`, `floats`, `convert` and `memory` give
each instruction its meaning).

The operands are laid out as Triton's NVIDIA lowering lays them out: `$0...` are the output
registers, then the inputs; with `pack = P`, one instance of the asm sees P elements, and
elements narrower than 32 bits are packed into registers of up to 32 bits (the first element
in the low bits). A P-element instance takes P consecutive elements along the last
dimension (as `tl.map_elementwise` does; on the GPU the grouping follows the layout's
elements per thread), so for P > 1 the block becomes the scalar body of a
`tt.map_elementwise`; for P = 1 it is built directly on the tensors. An `n` operand (an
immediate: a Python int in the asm's arguments) is a register holding that constant, and
instructions that need an immediate (lop3's truth table) read its value.

What is translated: the instructions of the four modules, predicated execution
(`@p` / `@!p`, as a select), `.reg` declarations, scopes, comments, and
`griddepcontrol.*` (programmatic dependent launch on the GPU: nothing to do when
programs run one launch at a time). What is refused, with the kernel, the line and the
instruction named: control flow (labels, branches), synchronization and other threads' data
(atom, bar, shfl, redux, ordered ld/st), special registers (%tid, ...), and any instruction or
modifier not listed in those modules.
"""
from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, IntegerType, ModuleOp, TensorType
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass

from triton_cpu.analysis.axis_info import element_type
from triton_cpu.dialects import tt
from triton_cpu.dialects.compat import arith
from triton_cpu.errors import UnsupportedError

from . import convert, floats, integer, memory
from .machine import Machine, bits_of, integer_constant
from .parse import PTXError, parse

_CONSTRAINT_BITS = {"r": 32, "h": 16, "l": 64, "f": 32, "d": 64, "c": 8}
_NOOPS = ("griddepcontrol",)


def _execute(m: Machine, ins):
    base = ins.parts[0]
    if base in _NOOPS:
        return
    try:
        if base == "cvt":
            convert.cvt(m, ins)
        elif base in ("ld", "st"):
            getattr(memory, base)(m, ins)
        elif base in ("mov", "setp", "selp"):
            integer.HANDLERS[base](m, ins)
        elif floats.is_float(ins):
            floats.instruction(m, ins)
        elif base in integer.HANDLERS:
            integer.HANDLERS[base](m, ins)
        else:
            raise PTXError(f"'{ins.opcode}'")
    except PTXError as e:
        if str(e).startswith("'"):
            raise PTXError(f"the instruction {e}") from None
        raise


def _run(m: Machine, prog):
    for ins in prog.instrs:
        if ins.guard is None:
            _execute(m, ins)
            continue
        name, negated = ins.guard
        pred = m.read(name, ".pred")
        before = dict(m.regs)
        # A guarded ld/st must not touch memory when its guard is false: they take it as a mask.
        m.guard = m.emit(arith.XOrIOp(pred, m.iconst(1, 1))) if negated else pred
        _execute(m, ins)
        m.guard = None
        for reg, new in list(m.regs.items()):
            old = before.get(reg)
            if new is old:
                continue
            if old is None:
                old = m.iconst(0, m.widths[reg])
            if bits_of(element_type(old.type)) != bits_of(element_type(new.type)):
                old = m.resize(old, bits_of(element_type(new.type)))
            m.regs[reg] = m.select(pred, old, new) if negated else m.select(pred, new, old)


def _per_register(elem, pack: int) -> int:
    """Elements of type `elem` in one register, as Triton's NVIDIA lowering packs them."""
    bits = bits_of(elem) or 64
    return min(max(32 // bits, 1), pack)


def _constraints(op, pack: int) -> tuple[list[int], list[int]]:
    """The widths of the output and input registers, checked against the operands. An `n`
    operand (an immediate: the GPU's compiler requires a constant there, Triton passes a
    Python int as a splat constant tensor) is read like a register of its operand's width."""
    outs, ins = [], []
    for c in op.constraints.data.replace(" ", "").split(","):
        c = c.replace("&", "")
        target = outs if c.startswith("=") else ins
        letter = c.lstrip("=")
        if letter == "n" and target is ins:
            target.append(None)
            continue
        if letter not in _CONSTRAINT_BITS:
            raise PTXError(f"the operand constraint '{c}'")
        target.append(_CONSTRAINT_BITS[letter])
    want_out = sum(pack // _per_register(element_type(r.type), pack) for r in op.results)
    registers = [(bits_of(element_type(a.type)) or 64) * _per_register(element_type(a.type), pack)
                 for a in op.args for _ in range(pack // _per_register(element_type(a.type), pack))]
    if len(outs) != want_out or len(ins) != len(registers):
        raise PTXError(f"constraints '{op.constraints.data}' for {want_out} output and {len(registers)} input "
                       f"registers")
    ins = [bits if bits is not None else width for bits, width in zip(ins, registers)]
    return outs, ins


def _translate(m: Machine, prog, op, pack: int, out_bits, in_bits, args) -> list:
    """Runs the block on `args` (per operand, its `pack` elements) and returns per result its
    `pack` element values."""
    k = 0
    for n_out in out_bits:
        m.declare(f"${k}", n_out)
        k += 1
    reg = 0
    for a, elems in zip(op.args, args):
        per = _per_register(element_type(a.type), pack)
        for j in range(0, pack, per):
            v = elems[j] if per == 1 else _pack_elements(m, elems[j:j + per])
            m.declare(f"${k}", in_bits[reg], v)
            k += 1
            reg += 1
    _run(m, prog)
    results, k = [], 0
    for r in op.results:
        elem = element_type(r.type)
        per = _per_register(elem, pack)
        values = []
        for _ in range(0, pack, per):
            v = m.register(f"${k}")
            k += 1
            values += _unpack_elements(m, v, elem, per)
        results.append(values)
    return results


def _pack_elements(m: Machine, elems: list):
    bits = bits_of(element_type(elems[0].type))
    total = bits * len(elems)
    acc = None
    for j, e in enumerate(elems):
        v = m.resize(m.as_int(e), total)
        if j:
            v = m.emit(arith.ShLIOp(v, m.iconst(bits * j, total)))
        acc = v if acc is None else m.emit(arith.OrIOp(acc, v))
    return acc


def _unpack_elements(m: Machine, v, elem, per: int) -> list:
    bits = bits_of(elem) or 64
    total = bits * per
    v = m.resize(v, total)
    out = []
    for j in range(per):
        part = m.emit(arith.ShRUIOp(v, m.iconst(bits * j, total))) if j else v
        out.append(m.as_type(m.resize(part, bits), elem))
    return out


def _kernel_name(op) -> str:
    p = op.parent_op()
    while p is not None and not isinstance(p, tt.FuncOp):
        p = p.parent_op()
    return p.properties["sym_name"].data if p is not None else "<unknown>"


def _rewrite(op):
    pack = op.packed_element.value.data
    prog = parse(op.asm_string.data)
    out_bits, in_bits = _constraints(op, pack)
    tensor = isinstance(op.results[0].type, TensorType) if op.results else False
    if pack == 1 or not tensor:
        if pack != 1:
            raise PTXError(f"pack={pack} on scalars")
        shape = tuple(op.results[0].type.get_shape()) if tensor else None
        m = Machine(shape, prog.registers)
        results = _translate(m, prog, op, 1, out_bits, in_bits, [[a] for a in op.args])
        for new in m.ops:
            new.location = op.location
        op.parent_block().insert_ops_before(m.ops, op)
        for r, values in zip(op.results, results):
            r.replace_all_uses_with(values[0])
        op.detach()
        op.erase()
        return
    shape = op.results[0].type.get_shape()
    if shape[-1] % pack:
        raise PTXError(f"pack={pack} over a last dimension of {shape[-1]}")
    block = Block(arg_types=[element_type(a.type) for a in op.args for _ in range(pack)])
    m = Machine(None, prog.registers)
    args = [list(block.args[i * pack:(i + 1) * pack]) for i in range(len(op.args))]
    for i, a in enumerate(op.args):
        # A constant operand (an `n` immediate) stays a constant inside the body, where
        # instructions that need one (lop3's truth table) can read it.
        value = integer_constant(a)
        elem = element_type(a.type)
        if value is not None and isinstance(elem, IntegerType):
            args[i] = [m.iconst(value, elem.width.data)] * pack
    results = _translate(m, prog, op, pack, out_bits, in_bits, args)
    for new in m.ops:
        new.location = op.location
    block.add_ops(m.ops)
    block.add_op(tt.MapElementwiseReturnOp(*[v for values in results for v in values]))
    mapped = tt.MapElementwiseOp.build(operands=[list(op.args)], result_types=[[r.type for r in op.results]],
                                       properties={"pack": IntegerAttr(pack, IntegerType(32))},
                                       regions=[Region(block)])
    mapped.location = op.location
    op.parent_block().insert_op_before(mapped, op)
    for old, new in zip(op.results, mapped.results):
        old.replace_all_uses_with(new)
    op.detach()
    op.erase()


class InlinePTX(ModulePass):
    name = "inline-ptx"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for asm in [o for o in op.walk() if isinstance(o, tt.ElementwiseInlineAsmOp)]:
            try:
                _rewrite(asm)
            except PTXError as e:
                raise UnsupportedError.at(asm, _kernel_name(asm), f"inline assembly with {e}") from None
