"""ld and st through a pointer operand: tt.load and tt.store.

    ld[.global][.nc][.volatile][cache hints][.v2|.v4].type  d, [a + imm]
    st[.global][.volatile][cache hints][.v2|.v4].type       [a + imm], b

The address is a pointer argument of the asm (`"l"` constraint, a `!tt.ptr` operand) plus an
optional byte offset; the access is a tt.load or tt.store of the type's width at that address
(vector forms: consecutive elements), so the bounds-checked mode checks it like any other; a
predicated one (`@p ld ...`) is masked by its predicate, so it touches no memory when false.
Cache operators and eviction hints (`.ca`, `.cg`, `.cs`, `.lu`, `.cv`, `.wb`, `.wt`, `.nc`,
`.L1::...`, `.L2::...`) only steer a GPU's caches and are ignored. A generic address (no
state space) of a pointer argument is a global one.

Refused: other state spaces (shared, local, const, param), memory-ordering qualifiers
(`.relaxed`, `.acquire`, `.release`: they order accesses between threads, which straight-line
code cannot wait for anyway), an `.L2::cache_hint` operand, and addresses computed in
integer registers.
"""
import re

from xdsl.dialects.builtin import IntegerType

from triton_cpu.analysis.axis_info import element_type
from triton_cpu.dialects import tt

from .machine import TYPES, int_type
from .parse import PTXError
from .ptx_literals import int_literal

_IGNORED = {"global", "nc", "volatile", "weak", "ca", "cg", "cs", "lu", "cv", "wb", "wt"}


def _qualifiers(ins) -> tuple[int, str, int]:
    """(lanes, type, bits) of an ld/st, refusing the qualifiers it cannot honour."""
    parts = ins.parts
    t = "." + parts[-1]
    if t not in TYPES or TYPES[t][1] in ("pred", "fx2"):
        raise PTXError(f"'{ins.opcode}'")
    lanes = 1
    for p in parts[1:-1]:
        if p in ("v2", "v4"):
            lanes = int(p[1])
        elif p in _IGNORED or (p.startswith(("L1::", "L2::")) and p != "L2::cache_hint"):
            continue
        else:
            raise PTXError(f"'{ins.opcode}' (.{p})")
    return lanes, t, TYPES[t][0]


def _address(m, operand) -> tuple:
    """(pointer value, byte offset) of `[reg]` or `[reg + imm]`."""
    if not (isinstance(operand, str) and operand.startswith("[") and operand.endswith("]")):
        raise PTXError(f"the address '{operand}'")
    match = re.fullmatch(r"([%$\w]+)(?:\+(-?\w+))?", operand[1:-1].replace(" ", ""))
    if match is None:
        raise PTXError(f"the address '{operand}'")
    offset = int_literal(match.group(2)) if match.group(2) else 0
    if offset is None:
        raise PTXError(f"the address '{operand}'")
    base = m.register(match.group(1))
    if not isinstance(element_type(base.type), tt.PointerType):
        raise PTXError(f"the address '{operand}' (not a pointer operand of the asm)")
    return base, offset


def _pointer(m, base, offset: int, bits: int):
    """base + offset bytes, as a pointer to a `bits`-wide integer."""
    p = base
    if offset:
        p = m.emit(tt.BitcastOp(p, m.ty(tt.PointerType(IntegerType(8)))))
        p = m.emit(tt.AddPtrOp(p, m.iconst(offset, 32)))
    target = tt.PointerType(int_type(bits))
    return p if element_type(p.type) == target else m.emit(tt.BitcastOp(p, m.ty(target)))


def _lanes(m, ins, addr, regs):
    """(type, bits, [(pointer, register)] per lane) of an ld (regs: its destinations) or st
    (its sources)."""
    lanes, t, bits = _qualifiers(ins)
    base, offset = _address(m, addr)
    regs = regs if isinstance(regs, list) else [regs]
    if len(regs) != lanes:
        raise PTXError(f"'{ins.text}' ({len(regs)} registers for {lanes} lanes)")
    return t, bits, [(_pointer(m, base, offset + k * bits // 8, bits), r) for k, r in enumerate(regs)]


def ld(m, ins):
    if len(ins.operands) != 2:
        raise PTXError(f"'{ins.text}'")
    t, bits, lanes = _lanes(m, ins, ins.operands[1], ins.operands[0])
    for ptr, name in lanes:
        other = None if m.guard is None else m.iconst(0, bits)
        m.write(name, m.emit(tt.LoadOp(ptr, m.guard, other)), signed=TYPES[t][1] == "s")


def st(m, ins):
    if len(ins.operands) != 2:
        raise PTXError(f"'{ins.text}'")
    t, bits, lanes = _lanes(m, ins, ins.operands[0], ins.operands[1])
    for ptr, name in lanes:
        m.ops.append(tt.StoreOp(ptr, m.resize(m.read(name, f".b{bits}"), bits), m.guard))
