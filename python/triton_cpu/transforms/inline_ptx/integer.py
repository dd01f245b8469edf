"""Integer, bitwise, predicate and data-movement instructions.

    mov                  copy; a vector source `{a, b, ...}` packs its parts (the first in the
                         low bits), a vector destination unpacks (`_` discards a part)
    add sub              wrap around (no .sat / .cc)
    mul.lo/hi/wide       low, high half, or the double-width product
    mad.lo/hi/wide       the same plus a third operand
    min max neg abs      signed or unsigned by the type
    and or xor not cnot  bitwise (also on predicates)
    shl shr              the shift amount is unsigned; past the width the result is 0 (or
                         the sign, for shr.s), as on the GPU (LLVM would call it poison)
    selp                 d = c ? a : b
    setp                 a comparison into a predicate, optionally combined (.and/.or/.xor)
                         with a third, possibly negated, predicate
    popc clz             population count, leading zeros (a .u32 result)
    prmt.b32             byte permute (default mode): each selector nibble picks a byte of
                         {b, a}; its bit 3 replicates that byte's sign
    lop3.b32             any three-input bitwise function, given by its truth table
    shf.l/r.wrap/clamp   funnel shift of the 64-bit {b, a}
"""
from xdsl.dialects import math

from triton_cpu.dialects.compat import arith

from . import floats
from .machine import TYPES, int_type
from .parse import PTXError


def _type(ins, allowed=("b", "u", "s")) -> str:
    t = "." + ins.parts[-1]
    if t not in TYPES or TYPES[t][1] not in allowed:
        raise PTXError(f"'{ins.opcode}' (type {t})")
    return t


def _expect(ins, n: int):
    if len(ins.operands) != n:
        raise PTXError(f"'{ins.text}' ({len(ins.operands)} operands, {n} expected)")


def mov(m, ins):
    _expect(ins, 2)
    t = _type(ins, ("b", "u", "s", "f", "pred"))
    bits = TYPES[t][0]
    dst, src = ins.operands
    if isinstance(src, list):  # pack: the first part in the low bits
        part = bits // len(src)
        acc = None
        for k, name in enumerate(src):
            v = m.resize(m.read(name, f".b{part}"), bits)
            if k:
                v = m.emit(arith.ShLIOp(v, m.iconst(part * k, bits)))
            acc = v if acc is None else m.emit(arith.OrIOp(acc, v))
        m.write(dst, acc)
        return
    if isinstance(dst, list):  # unpack
        part = bits // len(dst)
        v = m.read(src, f".b{bits}")
        for k, name in enumerate(dst):
            if name != "_":
                shifted = m.emit(arith.ShRUIOp(v, m.iconst(part * k, bits))) if k else v
                m.write(name, m.resize(shifted, part))
        return
    if t == ".pred":
        m.write(dst, m.read(src, t))
        return
    v = m.read(src, t)
    m.write(dst, v, signed=TYPES[t][1] == "s")


def _binary(op):
    def h(m, ins):
        _expect(ins, 3)
        t = _type(ins)
        if len(ins.parts) > 2 and ins.parts[1] not in ("lo",) or "sat" in ins.parts or "cc" in ins.parts:
            raise PTXError(f"'{ins.opcode}'")
        a, b = m.read(ins.operands[1], t), m.read(ins.operands[2], t)
        m.write(ins.operands[0], m.emit(op(a, b)))
    return h


def _mul_parts(m, ins, a, b, t):
    """a * b for mul/mad's .lo, .hi or .wide."""
    bits, kind = TYPES[t]
    mode = ins.parts[1] if len(ins.parts) > 2 else None
    if mode == "lo":
        return m.emit(arith.MuliOp(a, b)), bits
    if mode not in ("hi", "wide"):
        raise PTXError(f"'{ins.opcode}'")
    ext = arith.ExtSIOp if kind == "s" else arith.ExtUIOp
    wide = m.ty(int_type(2 * bits))
    p = m.emit(arith.MuliOp(m.emit(ext(a, wide)), m.emit(ext(b, wide))))
    if mode == "wide":
        return p, 2 * bits
    return m.emit(arith.TruncIOp(m.emit(arith.ShRUIOp(p, m.iconst(bits, 2 * bits))), m.ty(int_type(bits)))), bits


def mul(m, ins):
    _expect(ins, 3)
    t = _type(ins, ("u", "s"))
    p, _ = _mul_parts(m, ins, m.read(ins.operands[1], t), m.read(ins.operands[2], t), t)
    m.write(ins.operands[0], p, signed=TYPES[t][1] == "s")


def mad(m, ins):
    _expect(ins, 4)
    t = _type(ins, ("u", "s"))
    if "sat" in ins.parts or "cc" in ins.parts:
        raise PTXError(f"'{ins.opcode}'")
    p, bits = _mul_parts(m, ins, m.read(ins.operands[1], t), m.read(ins.operands[2], t), t)
    c = m.read(ins.operands[3], f".{TYPES[t][1]}{bits}")
    m.write(ins.operands[0], m.emit(arith.AddiOp(p, c)), signed=TYPES[t][1] == "s")


def minmax(which):
    def h(m, ins):
        _expect(ins, 3)
        t = _type(ins, ("u", "s"))
        if len(ins.parts) > 2:
            raise PTXError(f"'{ins.opcode}'")
        signed = TYPES[t][1] == "s"
        op = {("min", False): arith.MinUIOp, ("min", True): arith.MinSIOp,
              ("max", False): arith.MaxUIOp, ("max", True): arith.MaxSIOp}[which, signed]
        m.write(ins.operands[0], m.emit(op(m.read(ins.operands[1], t), m.read(ins.operands[2], t))))
    return h


def neg(m, ins):
    _expect(ins, 2)
    t = _type(ins, ("s",))
    a = m.read(ins.operands[1], t)
    m.write(ins.operands[0], m.emit(arith.SubiOp(m.iconst(0, TYPES[t][0]), a)))


def abs_(m, ins):
    _expect(ins, 2)
    t = _type(ins, ("s",))
    a = m.read(ins.operands[1], t)
    negated = m.emit(arith.SubiOp(m.iconst(0, TYPES[t][0]), a))
    m.write(ins.operands[0], m.emit(arith.MaxSIOp(a, negated)))


def _bitwise(op):
    def h(m, ins):
        _expect(ins, 3)
        t = _type(ins, ("b", "pred"))
        m.write(ins.operands[0], m.emit(op(m.read(ins.operands[1], t), m.read(ins.operands[2], t))))
    return h


def not_(m, ins):
    _expect(ins, 2)
    t = _type(ins, ("b", "pred"))
    a = m.read(ins.operands[1], t)
    m.write(ins.operands[0], m.emit(arith.XOrIOp(a, m.iconst(-1, TYPES[t][0]))))


def cnot(m, ins):
    _expect(ins, 2)
    t = _type(ins, ("b",))
    bits = TYPES[t][0]
    zero = m.emit(arith.CmpiOp(m.read(ins.operands[1], t), m.iconst(0, bits), "eq"))
    m.write(ins.operands[0], m.emit(arith.ExtUIOp(zero, m.ty(int_type(bits)))))


def shift(which):
    def h(m, ins):
        _expect(ins, 3)
        t = _type(ins)
        bits, kind = TYPES[t]
        if which == "shl" and kind == "s":
            raise PTXError(f"'{ins.opcode}'")
        a = m.read(ins.operands[1], t)
        amount = m.constant(ins.operands[2])
        if amount is not None:  # an immediate amount: the usual case, decided here
            amount &= 0xFFFFFFFF
            if amount >= bits and not (which == "shr" and kind == "s"):
                m.write(ins.operands[0], m.iconst(0, bits))
                return
            n = m.iconst(min(amount, bits - 1), bits)
            op = arith.ShLIOp if which == "shl" else arith.ShRSIOp if kind == "s" else arith.ShRUIOp
            m.write(ins.operands[0], m.emit(op(a, n)))
            return
        n32 = m.read(ins.operands[2], ".u32")
        n = m.resize(n32, bits)
        big = m.emit(arith.CmpiOp(n32, m.iconst(bits, 32), "uge"))
        if which == "shl":
            r, fill = m.emit(arith.ShLIOp(a, n)), m.iconst(0, bits)
        elif kind == "s":
            r = m.emit(arith.ShRSIOp(a, n))
            fill = m.emit(arith.ShRSIOp(a, m.iconst(bits - 1, bits)))
        else:
            r, fill = m.emit(arith.ShRUIOp(a, n)), m.iconst(0, bits)
        m.write(ins.operands[0], m.select(big, fill, r))
    return h


def selp(m, ins):
    _expect(ins, 4)
    t = "." + ins.parts[-1]
    if t not in TYPES or TYPES[t][1] == "pred" or TYPES[t][1] == "fx2":
        raise PTXError(f"'{ins.opcode}'")
    a, b = m.read(ins.operands[1], t), m.read(ins.operands[2], t)
    c = m.read(ins.operands[3], ".pred")
    m.write(ins.operands[0], m.select(c, a, b))


_INT_CMP = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge",
            "lo": "ult", "ls": "ule", "hi": "ugt", "hs": "uge"}
_FLOAT_CMP = {"eq": "oeq", "ne": "one", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge",
              "equ": "ueq", "neu": "une", "ltu": "ult", "leu": "ule", "gtu": "ugt", "geu": "uge",
              "num": "ord", "nan": "uno"}


def setp(m, ins):
    parts = ins.parts
    t = "." + parts[-1]
    cmp, rest = parts[1], parts[2:-1]
    boolop = next((p for p in rest if p in ("and", "or", "xor")), None)
    if t not in TYPES or TYPES[t][1] in ("pred", "fx2") or any(p not in ("and", "or", "xor", "ftz") for p in rest):
        raise PTXError(f"'{ins.opcode}'")
    dst = ins.operands[0]
    if isinstance(dst, str) and "|" in dst:
        raise PTXError(f"'{ins.text}' (two destination predicates)")
    _expect(ins, 4 if boolop else 3)
    a, b = m.read(ins.operands[1], t), m.read(ins.operands[2], t)
    kind = TYPES[t][1]
    if kind == "f":
        if "ftz" in rest:
            a, b = floats.flush(m, a), floats.flush(m, b)
        if cmp not in _FLOAT_CMP:
            raise PTXError(f"'{ins.opcode}'")
        p = m.emit(arith.CmpfOp(a, b, _FLOAT_CMP[cmp]))
    else:
        pred = _INT_CMP.get(cmp)
        if pred is None or (kind == "u" and cmp in ("lt", "le", "gt", "ge")):
            pred = {"lt": "ult", "le": "ule", "gt": "ugt", "ge": "uge"}.get(cmp, pred)
        if pred is None or (kind == "b" and cmp not in ("eq", "ne")):
            raise PTXError(f"'{ins.opcode}'")
        p = m.emit(arith.CmpiOp(a, b, pred))
    if boolop:
        c = ins.operands[3]
        negate = c.startswith("!")
        cv = m.read(c.lstrip("!"), ".pred")
        if negate:
            cv = m.emit(arith.XOrIOp(cv, m.iconst(1, 1)))
        p = m.emit({"and": arith.AndIOp, "or": arith.OrIOp, "xor": arith.XOrIOp}[boolop](p, cv))
    m.write(dst, p)


def prmt(m, ins):
    if ins.opcode != "prmt.b32":
        raise PTXError(f"'{ins.opcode}' (only the default mode)")
    _expect(ins, 4)
    a, b = m.read(ins.operands[1], ".b32"), m.read(ins.operands[2], ".b32")
    i64 = m.ty(int_type(64))
    both = m.emit(arith.OrIOp(m.emit(arith.ShLIOp(m.emit(arith.ExtUIOp(b, i64)), m.iconst(32, 64))),
                              m.emit(arith.ExtUIOp(a, i64))))
    sel = m.constant(ins.operands[3])
    result = None
    for k in range(4):
        if sel is not None:  # the usual case: selectors known at compile time
            nib = (sel >> (4 * k)) & 0xF
            byte = m.emit(arith.ShRUIOp(both, m.iconst(8 * (nib & 7), 64))) if nib & 7 else both
            byte = m.emit(arith.AndIOp(m.emit(arith.TruncIOp(byte, m.ty(int_type(32)))), m.iconst(0xFF, 32)))
            if nib & 8:  # replicate the byte's sign bit
                byte = m.emit(arith.ShRSIOp(m.emit(arith.ShLIOp(byte, m.iconst(24, 32))), m.iconst(31, 32)))
                byte = m.emit(arith.AndIOp(byte, m.iconst(0xFF, 32)))
        else:
            c = m.read(ins.operands[3], ".b32")
            nib = m.emit(arith.AndIOp(m.emit(arith.ShRUIOp(c, m.iconst(4 * k, 32))), m.iconst(0xF, 32)))
            amount = m.emit(arith.ExtUIOp(m.emit(arith.MuliOp(m.emit(arith.AndIOp(nib, m.iconst(7, 32))),
                                                                m.iconst(8, 32))), i64))
            byte = m.emit(arith.AndIOp(m.emit(arith.TruncIOp(m.emit(arith.ShRUIOp(both, amount)), m.ty(int_type(32)))),
                                       m.iconst(0xFF, 32)))
            sign = m.emit(arith.AndIOp(m.emit(arith.ShRSIOp(m.emit(arith.ShLIOp(byte, m.iconst(24, 32))),
                                                              m.iconst(31, 32))), m.iconst(0xFF, 32)))
            rep = m.emit(arith.CmpiOp(m.emit(arith.AndIOp(nib, m.iconst(8, 32))), m.iconst(0, 32), "ne"))
            byte = m.select(rep, sign, byte)
        placed = m.emit(arith.ShLIOp(byte, m.iconst(8 * k, 32))) if k else byte
        result = placed if result is None else m.emit(arith.OrIOp(result, placed))
    m.write(ins.operands[0], result)


def lop3(m, ins):
    if ins.opcode != "lop3.b32":
        raise PTXError(f"'{ins.opcode}'")
    _expect(ins, 5)
    lut = m.constant(ins.operands[4])
    if lut is None or not 0 <= lut <= 255:
        raise PTXError(f"'{ins.text}' (the truth table must be an immediate)")
    x = [m.read(o, ".b32") for o in ins.operands[1:4]]
    ones = m.iconst(-1, 32)
    result = m.iconst(0, 32)
    for i in range(8):
        if lut >> i & 1:  # minterm i: a = bit 2, b = bit 1, c = bit 0 of i
            term = ones
            for j, v in enumerate(x):
                lit = v if i >> (2 - j) & 1 else m.emit(arith.XOrIOp(v, ones))
                term = m.emit(arith.AndIOp(term, lit))
            result = m.emit(arith.OrIOp(result, term))
    m.write(ins.operands[0], result)


def shf(m, ins):
    parts = ins.parts
    if len(parts) != 4 or parts[1] not in ("l", "r") or parts[2] not in ("wrap", "clamp") or parts[3] != "b32":
        raise PTXError(f"'{ins.opcode}'")
    _expect(ins, 4)
    a, b = m.read(ins.operands[1], ".b32"), m.read(ins.operands[2], ".b32")
    c = m.read(ins.operands[3], ".u32")
    n = (m.emit(arith.AndIOp(c, m.iconst(31, 32))) if parts[2] == "wrap"
         else m.emit(arith.MinUIOp(c, m.iconst(32, 32))))
    i64 = m.ty(int_type(64))
    both = m.emit(arith.OrIOp(m.emit(arith.ShLIOp(m.emit(arith.ExtUIOp(b, i64)), m.iconst(32, 64))),
                              m.emit(arith.ExtUIOp(a, i64))))
    n64 = m.emit(arith.ExtUIOp(n, i64))
    if parts[1] == "r":
        r = m.emit(arith.ShRUIOp(both, n64))
    else:
        r = m.emit(arith.ShRUIOp(m.emit(arith.ShLIOp(both, n64)), m.iconst(32, 64)))
    m.write(ins.operands[0], m.emit(arith.TruncIOp(r, m.ty(int_type(32)))))


def count(op):
    def h(m, ins):
        _expect(ins, 2)
        t = _type(ins, ("b",))
        if TYPES[t][0] not in (32, 64):
            raise PTXError(f"'{ins.opcode}'")
        m.write(ins.operands[0], m.resize(m.emit(op(m.read(ins.operands[1], t))), 32))
    return h


HANDLERS = {
    "mov": mov, "mul": mul, "mad": mad, "neg": neg, "abs": abs_,
    "add": _binary(arith.AddiOp), "sub": _binary(arith.SubiOp),
    "min": minmax("min"), "max": minmax("max"),
    "and": _bitwise(arith.AndIOp), "or": _bitwise(arith.OrIOp), "xor": _bitwise(arith.XOrIOp),
    "not": not_, "cnot": cnot, "shl": shift("shl"), "shr": shift("shr"),
    "selp": selp, "setp": setp, "prmt": prmt, "lop3": lop3, "shf": shf,
    "popc": count(math.CtPopOp), "clz": count(math.CountLeadingZerosOp),
}
