"""GemLite (mobiusml's low-bit matmul kernels, `GemLiteLinearTriton`): weights of 2, 4 or 8 bits
packed 32 bits at a time along K, dequantized inside the K loop with grouped scales and zeros
(`W ~ Wq * s + z` folded into one FMA, the default, or `(Wq - z) * s`), or symmetric per-channel
scales applied to the output, times fp16 or bf16 activations, through each of its five kernel
families: GEMM, split-K GEMM (partial sums added into the output with atomics), GEMV (one
row), split-K GEMV and reverse split-K GEMV, each autotuned over its "fast" configs as the
library ships them.

Reference: the dequantized weights as each mode defines them (the kernel's own rounding points:
the folded zero `-z * s` rounded to the activation dtype when packed, the dequantized weight
rounded to it), times the activations in fp32. Compared within 2 units in the last place of the
output dtype, relative to the output's largest element (the kernels sum in fp32 in their own
order; split-K adds its partial sums in the output's dtype).
"""
import torch

from kernel_libraries import case

_TORCH = {"fp16": torch.float16, "bf16": torch.bfloat16}


def _layer(gemlite, nbits, group, k, n, dtype, mode, bias):
    """A packed GemLiteLinearTriton and the fp32 dequantized weight [n, k] it stands for.
    mode: "fma" (grouped scales and zeros, W = Wq * s + (-z * s)), "shift" (grouped, W = (Wq -
    z) * s), "channel" (symmetric, one scale per output channel)."""
    wq = torch.randint(0, 2**nbits, (n, k), dtype=torch.uint8)
    levels = 2**nbits - 1
    layer = gemlite.GemLiteLinearTriton(nbits, group if mode != "channel" else k, k, n,
                                        input_dtype=getattr(gemlite.DType, dtype.upper()),
                                        output_dtype=getattr(gemlite.DType, dtype.upper()))
    t = _TORCH[dtype]
    if mode == "channel":
        s = (torch.rand(n, 1) * 0.02 + 0.005).to(t)
        layer.pack(wq, s, None, bias=bias)
        w = wq.float() * s.float()  # the scale is applied to the output: rounded once, there
        return layer, w
    s = (torch.rand(n, k // group) * 0.4 / levels + 0.01).to(t)
    z = (torch.rand(n, k // group) * levels).to(t)
    layer.pack(wq, s, z, bias=bias, fma_mode=(mode == "fma"))
    s_full, z_full = (v.float().repeat_interleave(group, 1) for v in (s, z))
    if mode == "fma":
        w = wq.float() * s_full + (-z_full * s_full).to(t).float()
    else:
        w = (wq.float() - z_full) * s_full
    return layer, w.to(t).float()


def _check(gemlite, chk, matmul_type, rows, combos):
    for nbits, dtype, mode, with_bias in combos:
        k, n, group = 512, 384, 64
        t = _TORCH[dtype]
        bias = torch.randn(n, dtype=t) if with_bias else None
        layer, w = _layer(gemlite, nbits, group, k, n, dtype, mode, bias)
        x = torch.randn(rows, k, dtype=t)
        ref = x.float() @ w.T + (bias.float() if with_bias else 0)
        got = layer.forward_manual(x, matmul_type)
        chk.close_to_scale(f"{matmul_type} {nbits}-bit {dtype} {mode}{' bias' if with_bias else ''}", got,
                           ref.to(t), 2 * torch.finfo(t).eps)


@case("gemlite.gemm")
def _(gemlite, chk):
    """GEMM and split-K GEMM on 40 rows: 4-bit fp16 (folded zeros), 2-bit bf16 (`(Wq - z) * s`),
    8-bit fp16 per-channel with a bias."""
    for matmul_type in ("GEMM", "GEMM_SPLITK"):
        _check(gemlite, chk, matmul_type, 40,
               [(4, "fp16", "fma", False), (2, "bf16", "shift", False), (8, "fp16", "channel", True)])


@case("gemlite.gemv")
def _(gemlite, chk):
    """GEMV, split-K GEMV and reverse split-K GEMV on one row: 4-bit bf16 (folded zeros), 2-bit
    fp16 (`(Wq - z) * s`), 8-bit bf16 per-channel with a bias."""
    for matmul_type in ("GEMV", "GEMV_SPLITK", "GEMV_REVSPLITK"):
        _check(gemlite, chk, matmul_type, 1,
               [(4, "bf16", "fma", False), (2, "fp16", "shift", False), (8, "bf16", "channel", True)])
