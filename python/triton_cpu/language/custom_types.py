"""Conversions of Triton's fp8e4b15, the one float type MLIR has no type for.

fp8e4b15 is an e4m3 float with exponent bias 15 and no infinities or NaNs: its byte
`S EEEE MMM` is the fp16 `S 0EEEE MMM 0000000`, so the largest value is 1.875. Triton's
frontend asks the backend for these conversions (`codegen_fns["convert_custom_types"]`);
the IR carries the byte as i8. Widening is exact. Narrowing goes through fp16 (from fp32
rounding as `fp_downcast_rounding` says, to nearest even by default), saturates to
+-1.875 and rounds the fp16 to nearest even (NaN becomes the largest value: the format
has no NaN).
"""
from triton.language import core

from triton_cpu.language.libdevice import _V, _where


def convert_custom_types(input, dst_ty, fp_downcast_rounding=None, _semantic=None):
    s = _semantic
    x = _V(input, s)
    if input.type.scalar.is_fp8e4b15():
        b = x.bits(core.uint8).to(core.uint16)
        h = (((b & 0x7F) << 7) | ((b & 0x80) << 8)).bits(core.float16)
        return h.t if dst_ty.scalar.is_fp16() else h.to(dst_ty.scalar).t
    if not input.type.scalar.is_fp16():
        # Triton passes its IR rounding enum here; cast() takes the name.
        rtz = fp_downcast_rounding is not None and "RTZ" in str(fp_downcast_rounding).upper()
        x = _V(s.cast(input, core.float16, "rtz" if rtz else None), s)
    h = x.bits(core.uint16)
    sign = (h >> 8) & 0x80
    mag = h & 0x7FFF
    mag = _where(mag > 0x3F80, 0x3F80, mag)  # saturate (NaN and infinity included)
    mag = (mag + 0x3F + ((mag >> 7) & 1)) >> 7  # round to nearest even at bit 7
    return (sign | mag).to(core.uint8).bits(core.float8e4b15).t
