"""cvt: conversions between integer and float types, and to and from the packed narrow
formats of quantization kernels.

    cvt.{u,s}M.{u,s,b}N               truncation or extension (by the source's signedness)
    cvt[.rn][.ftz][.sat].fM.fN        arith.extf (exact), or arith.truncf rounding to nearest
                                      even; .sat clamps to [0, 1]; .satfinite (f16/bf16)
                                      clamps to the largest finite value, NaN kept; .relu
                                      takes max(0, x), NaN kept
    cvt.{rni,rzi,rmi,rpi}.fN.fN       rounded to an integral value in the same type
    cvt.{rni,rzi,rmi,rpi}.{u,s}M.fN   rounded, then saturated to the integer's range (NaN: 0)
    cvt.rn.fN.{u,s}M                  arith.sitofp / uitofp
    cvt.rn[.satfinite][.relu].{f16x2,bf16x2}.f32 d, a, b      a into the high half, b the low
    cvt.rn.satfinite[.relu].{e4m3x2,e5m2x2}.f32 d, a, b      a into the high byte, b the low;
                                      beyond the largest finite value (infinities included)
                                      saturates to it, NaN stays NaN (tt.fp_to_fp to fp8)
    cvt.rn.satfinite[.relu].e2m1x2.f32 d, a, b   two 4-bit floats (0, 0.5, 1, 1.5, 2, 3, 4, 6
                                      and their negatives), a in the high nibble; NaN gives
                                      +6 (the format has no NaN: our reading of .satfinite,
                                      not confirmed on hardware)
    cvt.rn[.relu].f16x2.{e4m3x2,e5m2x2} d, a     the two bytes of a, decoded (exact)
    cvt.rn[.relu].{f16x2,bf16x2}.e2m1x2 d, a     the two nibbles of a, decoded (exact)
    cvt.rn[.relu][.satfinite].{f16x2,bf16x2}.e2m1x2.scaled::n2::ue8m0 d, a, s
                                      the same, each times 2^(its byte of s - 127)
    cvt.rp.satfinite.ue8m0x2.f32 d, a, b         see _ue8m0_rp

Refused: stochastic rounding (.rs), rounding toward zero or infinities on float results,
.sat on integer results, and the formats not listed (e2m3, e3m2, tf32, ...).
"""
from xdsl.dialects import math
from xdsl.dialects.builtin import Float8E4M3FNType, Float8E5M2Type, IntegerAttr

from triton_cpu.analysis.axis_info import element_type
from triton_cpu.dialects import tt
from triton_cpu.dialects.compat import arith

from .floats import flush, saturate
from .machine import BF16, F16, F32, FLOATS, TYPES, bits_of, int_type
from .parse import PTXError

_RTNE = IntegerAttr(tt.RoundingMode.RTNE.value, 32)
_F8 = {"e4m3x2": Float8E4M3FNType(), "e5m2x2": Float8E5M2Type()}
_HALF = {"f16x2": F16, "bf16x2": BF16}
_MAX_FINITE = {F16: 65504.0, BF16: 3.3895313892515355e38}
# e2m1 magnitudes by code, and the rounding boundaries between neighbours: (boundary,
# whether the boundary itself rounds up), ties going to the even code.
_E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
_E2M1_BOUNDS = [(0.25, False), (0.75, True), (1.25, False), (1.75, True), (2.5, False), (3.5, True), (5.0, False)]


def _packed_pair(m, hi, lo, bits: int):
    """hi << bits | lo, for `bits`-wide integer halves, as an integer of 2 * bits."""
    wide = m.ty(int_type(2 * bits))
    h = m.emit(arith.ShLIOp(m.emit(arith.ExtUIOp(hi, wide)), m.iconst(bits, 2 * bits)))
    return m.emit(arith.OrIOp(h, m.emit(arith.ExtUIOp(lo, wide))))


def _relu(m, x):
    """max(0, x), NaN kept."""
    elem = element_type(x.type)
    neg = m.emit(arith.CmpfOp(x, m.const(0.0, elem), "olt"))
    return m.select(neg, m.const(0.0, elem), x)


def _clamp_finite(m, x, limit: float):
    elem = element_type(x.type)
    x = m.select(m.emit(arith.CmpfOp(x, m.const(limit, elem), "ogt")), m.const(limit, elem), x)
    return m.select(m.emit(arith.CmpfOp(x, m.const(-limit, elem), "olt")), m.const(-limit, elem), x)


def _e2m1(m, x):
    """The 4-bit code of f32 x: sign in bit 3, round to nearest even, saturating at 6."""
    mag = m.emit(math.AbsFOp(x))
    code = m.iconst(0, 8)
    one = m.iconst(1, 8)
    for bound, inclusive in _E2M1_BOUNDS:
        past = m.emit(arith.CmpfOp(mag, m.const(bound, F32), "oge" if inclusive else "ogt"))
        code = m.emit(arith.AddiOp(code, m.select(past, one, m.iconst(0, 8))))
    nan = m.emit(arith.CmpfOp(x, x, "uno"))
    code = m.select(nan, m.iconst(7, 8), code)
    sign = m.emit(arith.CmpiOp(m.as_type(x, int_type(32)), m.iconst(0, 32), "slt"))
    sign = m.emit(arith.AndIOp(sign, m.emit(arith.XOrIOp(nan, m.iconst(1, 1)))))
    return m.emit(arith.OrIOp(code, m.select(sign, m.iconst(8, 8), m.iconst(0, 8))))


def _e2m1_value(m, nibble):
    """The f32 value of a 4-bit e2m1 code (an i8 holding it in its low bits)."""
    code = m.emit(arith.AndIOp(nibble, m.iconst(7, 8)))
    v = m.const(0.0, F32)
    for c, value in enumerate(_E2M1[1:], start=1):
        v = m.select(m.emit(arith.CmpiOp(code, m.iconst(c, 8), "eq")), m.const(value, F32), v)
    neg = m.emit(arith.CmpiOp(m.emit(arith.AndIOp(nibble, m.iconst(8, 8))), m.iconst(0, 8), "ne"))
    return m.select(neg, m.emit(arith.NegfOp(v)), v)


def _ue8m0_rp(m, x):
    """cvt.rp.satfinite.ue8m0x2.f32, one operand: its code. A code c stands for 2^(c - 127),
    c = 0..254, and 255 for NaN. The operand rounds up (toward +inf) to the nearest such
    power, saturating at 2^127 (satfinite: +inf too): for an fp32 of exponent field e and
    fraction f that is e, plus one when f is not zero, except for subnormals at most 2^-127
    (f <= 2^22), which round to 2^-127 (code 0). A NaN gives 255. A negative operand or zero
    rounds up to 2^-127, code 0: that is what rounding toward +inf to this format gives, but
    the kernels that use this instruction (MX scales: an absolute maximum over a block,
    divided by the element type's maximum) never pass a negative number, and no NVIDIA
    hardware was at hand to confirm that case."""
    bits = m.as_type(x, int_type(32))
    exp = m.emit(arith.AndIOp(m.emit(arith.ShRUIOp(bits, m.iconst(23, 32))), m.iconst(255, 32)))
    frac = m.emit(arith.AndIOp(bits, m.iconst(0x7FFFFF, 32)))
    zero = m.iconst(0, 32)
    above_half_min = m.emit(arith.CmpiOp(frac, m.iconst(0x400000, 32), "ugt"))
    normal_inexact = m.emit(arith.AndIOp(m.emit(arith.CmpiOp(frac, zero, "ne")), m.emit(arith.CmpiOp(exp, zero, "ne"))))
    up = m.emit(arith.OrIOp(above_half_min, normal_inexact))
    c = m.emit(arith.MinUIOp(m.emit(arith.AddiOp(exp, m.emit(arith.ExtUIOp(up, m.ty(int_type(32)))))),
                             m.iconst(254, 32)))
    c = m.select(m.emit(arith.CmpiOp(bits, zero, "slt")), zero, c)
    c = m.select(m.emit(arith.CmpfOp(x, x, "uno")), m.iconst(255, 32), c)
    return m.emit(arith.TruncIOp(c, m.ty(int_type(8))))


def _pair_from_f32(m, ins, dtype: str, mods: list[str]):
    """cvt to a packed pair from two f32 operands a (high part) and b (low part)."""
    if len(ins.operands) != 3:
        raise PTXError(f"'{ins.text}' (3 operands expected)")
    a, b = m.read(ins.operands[1], ".f32"), m.read(ins.operands[2], ".f32")
    relu = "relu" in mods
    if dtype == "ue8m0x2":
        if mods != ["rp", "satfinite"]:
            raise PTXError(f"'{ins.opcode}'")
        return _packed_pair(m, _ue8m0_rp(m, a), _ue8m0_rp(m, b), 8)
    if "rn" not in mods or any(p not in ("rn", "satfinite", "relu") for p in mods):
        raise PTXError(f"'{ins.opcode}'")
    if relu:
        a, b = _relu(m, a), _relu(m, b)
    if dtype in _HALF:
        half = _HALF[dtype]
        if "satfinite" in mods:
            a, b = _clamp_finite(m, a, _MAX_FINITE[half]), _clamp_finite(m, b, _MAX_FINITE[half])
        hi, lo = (m.as_type(m.emit(arith.TruncFOp(v, m.ty(half))), int_type(16)) for v in (a, b))
        return _packed_pair(m, hi, lo, 16)
    if "satfinite" not in mods:
        raise PTXError(f"'{ins.opcode}' (without .satfinite)")
    if dtype in _F8:
        f8 = _F8[dtype]
        hi, lo = (m.as_type(m.emit(tt.FpToFpOp(v, m.ty(f8), rounding=_RTNE)), int_type(8)) for v in (a, b))
        return _packed_pair(m, hi, lo, 8)
    if dtype == "e2m1x2":
        hi = m.emit(arith.ShLIOp(_e2m1(m, a), m.iconst(4, 8)))
        return m.emit(arith.OrIOp(hi, _e2m1(m, b)))
    raise PTXError(f"'{ins.opcode}'")


def _pair_decode(m, ins, dtype: str, atype: str, mods: list[str]):
    """cvt.rn.{f16x2,bf16x2}.<narrow x2> d, a: both parts of a, decoded, a's high part into d's
    high half."""
    if len(ins.operands) != 2 or "rn" not in mods or any(p not in ("rn", "relu") for p in mods):
        raise PTXError(f"'{ins.opcode}'")
    half = _HALF[dtype]
    if atype in _F8 and dtype == "f16x2":
        a = m.read(ins.operands[1], ".b16")
        parts = [m.emit(arith.TruncIOp(m.emit(arith.ShRUIOp(a, m.iconst(8 * k, 16))) if k else a,
                                       m.ty(int_type(8)))) for k in (0, 1)]
        values = [m.emit(tt.FpToFpOp(m.as_type(p, _F8[atype]), m.ty(F32))) for p in parts]
    elif atype == "e2m1x2":
        a = m.read(ins.operands[1], ".b8")
        values = [_e2m1_value(m, m.emit(arith.ShRUIOp(a, m.iconst(4, 8))) if k else a) for k in (0, 1)]
    else:
        raise PTXError(f"'{ins.opcode}'")
    if "relu" in mods:
        values = [_relu(m, v) for v in values]
    lo, hi = (m.as_type(m.emit(arith.TruncFOp(v, m.ty(half))), int_type(16)) for v in values)
    return _packed_pair(m, hi, lo, 16)


def _ue8m0_value(m, code):
    """The f32 value 2^(code - 127) of an 8-bit ue8m0 code (an i8): code << 23 as f32 bits,
    2^-127 (a subnormal) for 0, NaN for 255."""
    c = m.emit(arith.ExtUIOp(code, m.ty(int_type(32))))
    bits = m.emit(arith.ShLIOp(c, m.iconst(23, 32)))
    bits = m.select(m.emit(arith.CmpiOp(c, m.iconst(0, 32), "eq")), m.iconst(0x400000, 32), bits)
    bits = m.select(m.emit(arith.CmpiOp(c, m.iconst(255, 32), "eq")), m.iconst(0x7FC00000, 32), bits)
    return m.as_type(bits, F32)


def _scaled_pair_decode(m, ins, dtype: str, mods: list[str]):
    """cvt.rn[.relu][.satfinite].{f16x2,bf16x2}.e2m1x2.scaled::n2::ue8m0 d, a, s: each nibble of
    a times 2^(its byte of s - 127), rounded to the half type (the low nibble with the low
    byte into the low half). The f32 product is exact (or overflows to inf, which .satfinite
    clamps to the largest finite half)."""
    if len(ins.operands) != 3 or "rn" not in mods or any(p not in ("rn", "relu", "satfinite") for p in mods):
        raise PTXError(f"'{ins.opcode}'")
    half = _HALF[dtype]
    a, s = m.read(ins.operands[1], ".b8"), m.read(ins.operands[2], ".b16")
    values = []
    for k in (0, 1):
        nibble = m.emit(arith.ShRUIOp(a, m.iconst(4, 8))) if k else a
        code = m.emit(arith.TruncIOp(m.emit(arith.ShRUIOp(s, m.iconst(8, 16))) if k else s, m.ty(int_type(8))))
        v = m.emit(arith.MulfOp(_e2m1_value(m, nibble), _ue8m0_value(m, code)))
        if "relu" in mods:
            v = _relu(m, v)
        if "satfinite" in mods:
            v = _clamp_finite(m, v, _MAX_FINITE[half])
        values.append(v)
    lo, hi = (m.as_type(m.emit(arith.TruncFOp(v, m.ty(half))), int_type(16)) for v in values)
    return _packed_pair(m, hi, lo, 16)


def _round_integral(m, x, rnd: str):
    op = {"rni": math.RoundEvenOp, "rzi": math.TruncOp, "rmi": math.FloorOp, "rpi": math.CeilOp}[rnd]
    return m.emit(op(x))


def cvt(m, ins):
    parts = ins.parts
    if len(parts) < 3:
        raise PTXError(f"'{ins.opcode}'")
    if parts[-1] == "scaled::n2::ue8m0" and parts[-2] == "e2m1x2" and parts[-3] in _HALF:
        m.write(ins.operands[0], _scaled_pair_decode(m, ins, parts[-3], parts[1:-3]))
        return
    dtype, atype, mods = parts[-2], parts[-1], parts[1:-2]
    if "rs" in mods:
        raise PTXError(f"'{ins.opcode}' (stochastic rounding)")
    if dtype in ("f16x2", "bf16x2", "e4m3x2", "e5m2x2", "e2m1x2", "ue8m0x2") and atype == "f32":
        m.write(ins.operands[0], _pair_from_f32(m, ins, dtype, mods))
        return
    if dtype in _HALF and atype in ("e4m3x2", "e5m2x2", "e2m1x2"):
        m.write(ins.operands[0], _pair_decode(m, ins, dtype, atype, mods))
        return
    dt, at = "." + dtype, "." + atype
    if dt not in TYPES or at not in TYPES or len(ins.operands) != 2:
        raise PTXError(f"'{ins.opcode}'")
    (dbits, dkind), (abits, akind) = TYPES[dt], TYPES[at]
    if "fx2" in (dkind, akind) or "pred" in (dkind, akind):
        raise PTXError(f"'{ins.opcode}'")
    known = {"rn", "rni", "rzi", "rmi", "rpi", "ftz", "sat", "satfinite", "relu"}
    if any(p not in known for p in mods):
        raise PTXError(f"'{ins.opcode}'")
    rnd = next((p for p in mods if p in ("rn", "rni", "rzi", "rmi", "rpi")), None)
    src = m.read(ins.operands[1], at)
    if dkind != "f" and akind != "f":  # integer to integer
        if mods:
            raise PTXError(f"'{ins.opcode}'")
        m.write(ins.operands[0], m.resize(src, dbits, signed=akind == "s"), signed=dkind == "s")
        return
    if "ftz" in mods:
        if F32 not in (FLOATS.get(dt), FLOATS.get(at)):
            raise PTXError(f"'{ins.opcode}'")
        if at == ".f32":
            src = flush(m, src)
    if dkind == "f" and akind == "f":
        d, a = FLOATS[dt], FLOATS[at]
        if rnd in ("rni", "rzi", "rmi", "rpi"):
            if d != a:
                raise PTXError(f"'{ins.opcode}'")
            y = _round_integral(m, src, rnd)
        elif bits_of(d) > bits_of(a) or d == a:
            y = m.emit(arith.ExtFOp(src, m.ty(d))) if d != a else src
        elif rnd == "rn":
            if "satfinite" in mods and d in _MAX_FINITE:
                src = _clamp_finite(m, src, _MAX_FINITE[d])
            y = m.emit(arith.TruncFOp(src, m.ty(d)))
        else:
            raise PTXError(f"'{ins.opcode}' (a narrowing conversion needs .rn)")
        if "relu" in mods:
            y = _relu(m, y)
        if "sat" in mods:
            y = saturate(m, y)
        if "ftz" in mods and d == F32:
            y = flush(m, y)
        m.write(ins.operands[0], y)
        return
    if dkind == "f":  # integer to float
        if rnd not in ("rn", None) or any(p not in ("rn",) for p in mods):
            raise PTXError(f"'{ins.opcode}'")
        op = arith.SIToFPOp if akind == "s" else arith.UIToFPOp
        m.write(ins.operands[0], m.emit(op(m.resize(src, abits), m.ty(FLOATS[dt]))))
        return
    # float to integer: rounded, saturated, NaN -> 0
    if rnd not in ("rni", "rzi", "rmi", "rpi") or any(p not in (rnd, "ftz", "sat") for p in mods):
        raise PTXError(f"'{ins.opcode}'")
    a = FLOATS[at]
    if a in (F16, BF16):
        src, a = m.emit(arith.ExtFOp(src, m.ty(F32))), F32
    r = _round_integral(m, src, rnd)
    lo, hi = (-(1 << (dbits - 1)), (1 << (dbits - 1)) - 1) if dkind == "s" else (0, (1 << dbits) - 1)
    # Compare against the bounds as floats: hi + 1 is a power of two, exact in any float type.
    too_big = m.emit(arith.CmpfOp(r, m.const(float(hi + 1), a), "oge"))
    too_small = m.emit(arith.CmpfOp(r, m.const(float(lo), a), "olt"))
    nan = m.emit(arith.CmpfOp(r, r, "uno"))
    safe = m.select(m.emit(arith.OrIOp(m.emit(arith.OrIOp(too_big, too_small)), nan)), m.const(0.0, a), r)
    conv = (arith.FPToSIOp if dkind == "s" else arith.FPToUIOp)(safe, m.ty(int_type(dbits)))
    y = m.emit(conv)
    y = m.select(too_big, m.iconst(hi, dbits), y)
    y = m.select(too_small, m.iconst(lo, dbits), y)
    m.write(ins.operands[0], y, signed=dkind == "s")
