"""torchao's Triton kernels: fp8 quantization (DeepSeek-V3's blockwise scheme with its GEMM, the
tensor-wise casts of float8nocompile, the jagged per-group scales of MoE training, the
blockwise fp8 training quantizers and GEMMs), the int8 and int4 (HQQ) GEMMs, the MXFP8 casts
(whose RCEIL scales round through the PTX instruction cvt.rp.satfinite.ue8m0x2.f32), the fp8
attention input quantization with its Hadamard transform, the block-sparse addmm, and the FP4
packing of the NVFP4 training quantizer (four e2m1x2 conversions in one PTX block). Each
against torch: the quantized bytes and scales exactly (the references round the same fp32
products once, to the same fp8 grid), the GEMMs in fp64; torchao's own torch references where
it has them (blockwise training quantizers, MX casts, the scale swizzle).

Not run, because the installed files do not compile with Triton 3.9's front end on any backend:
kernel/intmm_triton.py (tl.make_block_ptr, removed), prototype/moe_training/kernels/
float8_rowwise.py (an autotune key that is not an argument) and blockwise_fp8_training's
weight_quant_transposed_rhs (`pid_n[:, None]` on a scalar). Kernels that index wrongly on a
GPU too (torchao 0.18): float8nocompile's `*_row_major_t` kernels mask the transposed tile
with the untransposed mask, right only for square inputs, which is what these cases use;
the jagged per-group rowwise scales pass a row stride of 1 to a row-major output, not run;
HQQ's kernel indexes its scales as k * BLOCK_K * stride // group_size, the group only for a
(groups, N) view of an (N, groups) tensor, which is how these cases pass them.
"""
import contextlib
import importlib
import importlib.util
import math
import sys
import unittest.mock

import torch

from kernel_libraries import case, libs_dir, randn, tile_probe

_FP8_MAX = 448.0


def _quotient(numerator: float, t: torch.Tensor) -> torch.Tensor:
    """numerator / t, correctly rounded: torch evaluates `448.0 / t` as 448 * (1 / t)."""
    return torch.full_like(t, numerator) / t


def _forward_scale(amax, fp8, pow2=False):
    """torchao's forward scale: the format's max / max(amax, 1e-12), in fp64, to fp32;
    optionally rounded down to a power of two."""
    a = amax.double().clamp(min=1e-12)
    s = _quotient(torch.finfo(fp8).max, a).float()
    if pow2:
        s = torch.ldexp(torch.ones_like(s), torch.frexp(s)[1] - 1)
    return s


def _cast(x, s, fp8):
    """x * s in fp32, clamped to the format's range, rounded to fp8, as fp32 values."""
    fi = torch.finfo(fp8)
    return (x.float() * s).clamp(fi.min, fi.max).to(fp8).float()


@case("torchao.blockwise_fp8")
def _(T, chk):
    """DeepSeek-V3's scheme (torchao.kernel.blockwise_quantization): activations quantized per
    1 x 128 block and weights per 128 x 128 block to e4m3 and e5m2 (scale = amax / 448),
    weights dequantized, and the blockwise fp8 GEMM (autotuned over 48 configurations) against
    the dequantized operands' product in fp64."""
    from torchao.kernel import blockwise_quantization as bq
    for fp8 in (torch.float8_e4m3fn, torch.float8_e5m2):
        x = torch.randn(4, 256)
        y, s = bq.fp8_blockwise_act_quant(x, 128, fp8)
        blocks = x.view(4, 2, 128)
        s_ref = blocks.abs().amax(-1) / _FP8_MAX
        chk.equal(f"act scales {fp8}", s, s_ref)
        chk.equal(f"act values {fp8}", y.float(), (blocks / s_ref[..., None]).to(fp8).float().view(4, 256))
        w = torch.randn(256, 384)
        wq, ws = bq.fp8_blockwise_weight_quant(w, 128, fp8)
        tiles = w.view(2, 128, 3, 128)
        ws_ref = tiles.abs().amax((1, 3)) / _FP8_MAX
        chk.equal(f"weight scales {fp8}", ws, ws_ref)
        chk.equal(f"weight values {fp8}", wq.float(), (tiles / ws_ref[:, None, :, None]).to(fp8).float().view(256, 384))
        chk.equal(f"dequant {fp8}", bq.fp8_blockwise_weight_dequant(wq, ws, 128),
                  (wq.float().view(2, 128, 3, 128) * ws[:, None, :, None]).view(256, 384))
    M, N, K = 40, 256, 384
    aq, a_s = bq.fp8_blockwise_act_quant(torch.randn(M, K), 128)
    wq, ws = bq.fp8_blockwise_weight_quant(torch.randn(N, K), 128)
    c = bq.blockwise_fp8_gemm(aq, a_s, wq, ws, 128)
    a_ref = (aq.double().view(M, 3, 128) * a_s.double()[..., None]).view(M, K)
    w_ref = (wq.double().view(2, 128, 3, 128) * ws.double()[:, None, :, None]).view(N, K)
    chk.close_to_scale("gemm (bf16 out)", c.double(), a_ref @ w_ref.T, 1e-2)


@case("torchao.float8_tensorwise")
def _(T, chk):
    """float8nocompile's casts to fp8 with one scale per tensor (its amax by atomic max over
    blocks, or by a reduction of per-block maxima), row-major, column-major, transposed and
    two layouts at once; bf16 and fp32 inputs, e4m3 and e5m2."""
    from torchao.float8.float8_training_tensor import LinearMMConfig
    from torchao.prototype.float8nocompile.kernels import fp8_dynamic_tensorwise as f8
    names = ("hp_to_fp8_row_major", "hp_to_fp8_row_major_t", "hp_to_fp8_col_major", "hp_to_fp8_col_major_t",
             "hp_to_fp8_row_and_col_major", "hp_to_fp8_row_major_t_and_non_t", "hp_to_fp8_col_major_t_and_non_t")
    for dtype in (torch.bfloat16, torch.float32):
        x = (torch.randn(256, 256) * 5).to(dtype)  # square: see the module docstring
        for fp8 in (torch.float8_e4m3fn, torch.float8_e5m2):
            scale = _forward_scale(x.float().abs().max(), fp8)
            ref = _cast(x, scale, fp8)
            for algo in (f8.KernelAlgorithm.ATOMIC_MAX, f8.KernelAlgorithm.REDUCTION):
                for name in names:
                    out = getattr(f8, name)(x, fp8, LinearMMConfig(), algo=algo)
                    for i, t in enumerate(out if isinstance(out, tuple) else (out,)):
                        tag = f"{name}[{i}] {dtype} {fp8} {algo.value}"
                        chk.equal(f"{tag} scale", t._scale.reshape(()), scale)
                        # `*_t_and_non_t` return (x, x transposed); `*_t` return x transposed
                        transposed = i == 1 if name.endswith("_and_non_t") else name.endswith("_t")
                        want = ref.t() if transposed else ref
                        chk.equal(f"{tag} values", t._data.float(), want)


def _moe_training_module(relpath):
    """A file of prototype/moe_training, loaded by itself: the package's __init__ imports
    float8_rowwise, which Triton 3.9 refuses (see the module docstring)."""
    path = libs_dir() / "torchao" / "prototype" / "moe_training" / relpath
    spec = importlib.util.spec_from_file_location("torchao_moe_training_" + path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@case("torchao.jagged_fp8_colwise_scales")
def _(T, chk):
    """MoE training's cast of a [tokens, dim] tensor to e4m3 with one scale per column and per
    group of rows (groups given by their end offsets, one empty), scales optionally rounded
    down to powers of two; bf16 and fp32."""
    jagged = _moe_training_module("kernels/jagged_float8_scales.py")
    fp8 = torch.float8_e4m3fn
    offsets = torch.tensor([48, 48, 200, 320], dtype=torch.int32)
    starts = [0] + offsets.tolist()[:-1]
    for dtype in (torch.bfloat16, torch.float32):
        for pow2 in (False, True):
            x = (torch.randn(320, 64) * 4).to(dtype)
            q, s = jagged.triton_fp8_per_group_colwise_scales(x, offsets, fp8, pow2)
            for g, (a, b) in enumerate(zip(starts, offsets.tolist())):
                if a == b:
                    continue
                s_ref = _forward_scale(x[a:b].float().abs().amax(0), fp8, pow2)
                chk.equal(f"group {g} scales {dtype} pow2={pow2}", s[g * 64:(g + 1) * 64], s_ref)
                chk.equal(f"group {g} values {dtype} pow2={pow2}", q[a:b].float(), _cast(x[a:b], s_ref[None], fp8))


@case("torchao.blockwise_fp8_training")
def _(T, chk):
    """The blockwise fp8 training recipe's quantizers against torchao's own torch versions
    (activations per 1 x 128 for the left operand, per 128 x 1 for the right one and
    transposed, weights per 128 x 128), and its two GEMMs (1x128 by 128x128 and by 128x1
    scales, column-major right operands) against the dequantized product in fp64."""
    from torchao.prototype.blockwise_fp8_training import kernels as K
    fp8 = torch.float8_e4m3fn
    x = (torch.randn(256, 512) * 3).to(torch.bfloat16)
    w = (torch.randn(256, 384) * 2).to(torch.bfloat16)
    for name, ours, ref in (
            ("act lhs", lambda: K.triton_fp8_blockwise_act_quant_lhs(x, 128, fp8),
             lambda: K.torch_blockwise_scale_act_quant_lhs(x, 128, fp8)),
            ("act rhs", lambda: K.triton_fp8_blockwise_act_quant_rhs(x, 128, fp8),
             lambda: K.torch_blockwise_scale_act_quant_rhs(x, 128, fp8)),
            ("act transposed lhs", lambda: K.triton_fp8_blockwise_act_quant_transposed_lhs(x, 128, fp8),
             lambda: K.torch_blockwise_scale_act_quant_lhs(x.t().contiguous(), 128, fp8)),
            ("weight rhs", lambda: K.triton_fp8_blockwise_weight_quant_rhs(w, 128, fp8),
             lambda: K.torch_blockwise_scale_weight_quant(w, 128, fp8))):
        (y, s), (y_ref, s_ref) = ours(), ref()
        chk.equal(f"{name} values", y.float(), y_ref.float())
        chk.equal(f"{name} scales", s, s_ref)
    M, Kd, N = 192, 384, 256
    a, b = torch.randn(M, Kd), torch.randn(N, Kd)
    aq, a_s = K.torch_blockwise_scale_act_quant_lhs(a, 128, fp8)
    a_ref = aq.double() * a_s.double().repeat_interleave(128, 1)
    wq, ws = K.torch_blockwise_scale_weight_quant(b, 128, fp8)
    bq, b_s = wq.t(), ws.t()  # (Kd, N) column-major
    b_ref = bq.double() * b_s.double().repeat_interleave(128, 0).repeat_interleave(128, 1)
    c = K.triton_fp8_gemm_1x128_128x128(aq, bq, a_s, b_s.t().contiguous().t(), 128, torch.float32)
    chk.close_to_scale("gemm 1x128 x 128x128", c.double(), a_ref @ b_ref, 1e-5)
    bq1, b_s1 = K.torch_blockwise_scale_act_quant_rhs(b.t().contiguous(), 128, fp8)
    c1 = K.triton_fp8_gemm_1x128_128x1(aq, bq1, a_s, b_s1.contiguous(), 128, torch.float32)
    chk.close_to_scale("gemm 1x128 x 128x1", c1.double(), a_ref @ (bq1.double() * b_s1.double().repeat_interleave(128, 0)),
                       1e-5)


@case("torchao.scaled_int8_mm")
def _(T, chk):
    """Quantized training's int8 GEMM with row and column (or one) scales, autotuned over 27
    configurations, through the CUDA implementation function (it launches Triton on the
    tensors' device): exact int32 products, then scaled; fp32 and bf16 scales, odd sizes."""
    from torchao.prototype.quantized_training import int8_mm
    for M, N, K in ((64, 96, 128), (37, 50, 72)):
        A = torch.randint(-128, 128, (M, K), dtype=torch.int8)
        B = torch.randint(-128, 128, (K, N), dtype=torch.int8)
        exact = (A.long() @ B.long()).double()
        for dtype, tol in ((torch.float32, 1e-6), (torch.bfloat16, 8e-3)):
            rows = (torch.rand(M) + 0.5).to(dtype)
            for cols in ((torch.rand(N) + 0.5).to(dtype), torch.tensor(0.75, dtype=dtype)):
                C = int8_mm.scaled_int8_mm_cuda(A, B, rows, cols)
                chk.close_to_scale(f"{M}x{N}x{K} {dtype} col scales {tuple(cols.shape)}", C.double(),
                                   exact * rows.double()[:, None] * cols.double(), tol)


@case("torchao.hqq_mixed_mm")
def _(T, chk):
    """HQQ's fused int4 dequantize-and-multiply (two 4-bit weights per byte, unpacked with
    shifts; per-group zeros and scales; autotuned), fp16 and bf16, against the dequantized
    weights' product in fp64."""
    from torchao.prototype.hqq.mixed_mm import pack_2xint4, triton_mixed_mm
    M, K, N, G = 32, 256, 128, 128
    for dtype, tol in ((torch.float16, 2e-3), (torch.bfloat16, 8e-3)):  # about one rounding of the output
        a = torch.randn(M, K).to(dtype)
        W = torch.randint(0, 16, (K, N), dtype=torch.uint8)
        scales = (torch.rand(N, K // G) * 0.1 + 0.01).to(dtype).t()  # a (groups, N) view: see the docstring
        zeros = (torch.rand(N, K // G) * 8).to(dtype).t()
        c = triton_mixed_mm(a, pack_2xint4(W), scales, zeros, group_size=G)
        dq = (W.double() - zeros.double().repeat_interleave(G, 0)) * scales.double().repeat_interleave(G, 0)
        chk.close_to_scale(f"{dtype}", c.double(), a.double() @ dq, tol)


@contextlib.contextmanager
def _blackwell_gate():
    """mx_formats/kernels.py defines its MXFP8 kernels only when CUDA is there with an SM100
    GPU (a test at import); this answers yes while it is imported, nothing else. (Another
    library's import may have imported it already, without them: then it is reloaded.)"""
    import torchao.utils
    from torch.utils._triton import has_triton
    has_triton()  # cached before the patch: it would query the (absent) CUDA device
    with unittest.mock.patch.object(torch.cuda, "is_available", lambda: True), \
            unittest.mock.patch.object(torchao.utils, "is_sm_at_least_100", lambda: True), \
            unittest.mock.patch.object(torchao.utils, "is_cuda_version_at_least", lambda *a: True):
        yield


@case("torchao.mxfp8")
def _(T, chk):
    """MXFP8 casts along rows and along columns (bf16 to e4m3 with an e8m0 scale per 32
    elements), FLOOR and RCEIL scales (RCEIL through the inline PTX ue8m0 conversion), against
    torchao's torch `to_mx`; the dequantization; the scale swizzle into the blocked layout
    against torchao's `to_blocked`."""
    name = "torchao.prototype.mx_formats.kernels"
    kernels = sys.modules.get(name)
    if kernels is None or not hasattr(kernels, "to_mxfp8_dim0_kernel"):
        with _blackwell_gate():  # imported (again, if something imported it without the gate)
            kernels = importlib.import_module(name) if kernels is None else importlib.reload(kernels)
    from torchao.prototype.mx_formats.config import ScaleCalculationMode
    from torchao.prototype.mx_formats.mx_tensor import to_mx
    from torchao.prototype.mx_formats.utils import to_blocked
    x = torch.randn(256, 256, dtype=torch.bfloat16) * 3
    x[0, :5] = 0
    x[1, :32] = 0  # a block of zeros: the smallest scale
    for mode, smode in (("rceil", ScaleCalculationMode.RCEIL), ("floor", ScaleCalculationMode.FLOOR)):
        q, s = kernels.triton_to_mxfp8_dim0(x, 32, mode)
        s_ref, q_ref = to_mx(x, torch.float8_e4m3fn, 32, scaling_mode=smode)
        chk.equal(f"dim0 {mode} scales", s.view(torch.uint8), s_ref.view(torch.uint8).view(s.shape))
        chk.equal(f"dim0 {mode} values", q.view(torch.uint8), q_ref.view(torch.uint8))
        q1, s1 = kernels.triton_to_mxfp8_dim1(x, 32, mode)
        q1_ref, s1_ref = kernels.triton_to_mxfp8_dim1_reference(x, 32, smode)
        chk.equal(f"dim1 {mode} scales", s1.view(torch.uint8), s1_ref.view(torch.uint8).view(s1.shape))
        chk.equal(f"dim1 {mode} values", q1.view(torch.uint8), q1_ref.view(torch.uint8))
    codes = s.view(torch.uint8)  # the dequantization takes the e8m0 codes as bytes
    d = kernels.triton_mxfp8_dequant_dim0(q, codes, torch.float32, 32)
    chk.equal("dequant", d, q.float() * torch.exp2(codes.float() - 127).repeat_interleave(32, -1))
    for r, c in ((128, 4), (256, 8), (100, 12)):
        scales = torch.randint(0, 255, (r, c), dtype=torch.uint8)
        chk.equal(f"block rearrange {r}x{c}", kernels.triton_mx_block_rearrange(scales).flatten(),
                  to_blocked(scales).flatten())


def _hadamard(d):
    """The normalized Sylvester Hadamard matrix of order d, in fp64."""
    i = torch.arange(d)
    both = i[:, None] & i[None, :]
    parity = torch.zeros(d, d, dtype=torch.long)
    for bit in range(max(d.bit_length(), 1)):
        parity ^= (both >> bit) & 1
    return (1 - 2 * parity).double() / math.sqrt(d)


@case("torchao.fp8_attention_quant")
def _(T, chk):
    """The fp8 attention inputs' quantization: Q, K, V cast to e4m3 with one scale per batch and
    KV head (grouped-query: Q's heads of a group share it), in chunks along the sequence, and
    with a Hadamard transform of the head dimension first (a butterfly through a scratch
    buffer: store, barrier, load the partner); the inverse transform. bf16 and fp16."""
    from torchao.prototype.attention.quantization.triton_hadamard_qkv_quantization import (
        triton_fp8_hadamard_sdpa_quantize)
    from torchao.prototype.attention.quantization.triton_hadamard_utils import inverse_hadamard_transform
    from torchao.prototype.attention.quantization.triton_qkv_quantization import triton_fp8_sdpa_quantize
    fp8 = torch.float8_e4m3fn
    B, Hq, Hkv, S, Skv, D = 2, 8, 2, 96, 80, 64
    H = _hadamard(D)
    for dtype in (torch.bfloat16, torch.float16):
        q = (torch.randn(B, Hq, S, D) * 2).to(dtype)
        k = (torch.randn(B, Hkv, Skv, D) * 3).to(dtype)
        v = torch.randn(B, Hkv, Skv, D).to(dtype)

        def ref(x, transform):
            xf = x.float() if transform is None else (x.double() @ transform).float()
            amax = xf.abs().reshape(B, Hkv, -1).amax(-1)
            scale = torch.where(amax > 1e-12, _quotient(_FP8_MAX, amax), torch.ones_like(amax))
            descale = torch.where(amax > 1e-12, amax / _FP8_MAX, torch.ones_like(amax))
            if transform is not None:  # the transformed values are stored in x's dtype, then cast
                xf = xf.to(x.dtype).float()
            per_head = scale.repeat_interleave(x.shape[1] // Hkv, 1)[:, :, None, None]
            return (xf * per_head).to(fp8).float(), descale
        for name, fn, transform in (("plain", triton_fp8_sdpa_quantize, None),
                                    ("hadamard", triton_fp8_hadamard_sdpa_quantize, H)):
            out = fn(q, k, v, num_chunks=3)  # given: the default asks the CUDA device its SM count
            for what, x, got, descale in zip("qkv", (q, k, v), out[:3], out[3:]):
                want, want_descale = ref(x, transform)
                chk.equal(f"{name} {what} {dtype} descale", descale, want_descale)
                chk.equal(f"{name} {what} {dtype} values", got.float(), want)
        x = torch.randn(B, Hq, S, D).to(dtype)
        chk.close_to_scale(f"inverse hadamard {dtype}", inverse_hadamard_transform(x, num_chunks=3).double(),
                           x.double() @ H, 1e-2)


@case("torchao.bsr_dense_addmm")
def _(T, chk):
    """beta * input + alpha * (block-sparse matrix @ dense), the block-sparse operand a torch
    BSR tensor with 32 x 32 blocks, about half of them present, the output split in two
    column halves; fp32 and bf16."""
    from torchao.kernel.bsr_triton_ops import bsr_dense_addmm
    M, K, N, bs = 128, 192, 128, 32
    for dtype, tol in ((torch.float32, 1e-5), (torch.bfloat16, 1e-2)):
        keep = torch.rand(M // bs, K // bs) < 0.5
        keep[0, 0] = True
        w = (torch.randn(M, K).view(M // bs, bs, K // bs, bs) * keep[:, None, :, None]).reshape(M, K).to(dtype)
        x, inp = torch.randn(K, N).to(dtype), torch.randn(M, N).to(dtype)
        meta = dict(GROUP_SIZE_ROW=4, SPLIT_N=2, num_stages=1, num_warps=4)  # else it asks the CUDA device name
        out = bsr_dense_addmm(inp, w.to_sparse_bsr((bs, bs)), x, beta=0.5, alpha=2.0, meta=meta)
        chk.close_to_scale(f"{dtype}", out.double(), 0.5 * inp.double() + 2.0 * (w.double() @ x.double()), tol)


@case("torchao.nvfp4_pack")
def _(T, chk):
    """The FP4 packing of torchao's NVFP4 training quantizer
    (prototype/moe_training/nvfp4_training/hadamard_utils.py, `convert_8xfp32_to_4xfp4_packed`):
    four `cvt.rn.satfinite.e2m1x2.f32` and a `mov.b32` of four bytes over pack = 4 (four
    elements of each of two f32 tiles per instance, one byte each). Exactly against a Python
    rounding to the e2m1 grid (0, 0.5, 1, 1.5, 2, 3, 4, 6, ties to the even code, saturating),
    the second tile's code in the high nibble; the ties and the saturation included."""
    convert_8xfp32_to_4xfp4_packed = _moe_training_module(
        "nvfp4_training/hadamard_utils.py").convert_8xfp32_to_4xfp4_packed
    ties = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0, 7.0, 1e6, 0.0, 0.1]
    special = torch.tensor(ties + [-t for t in ties] + [-0.0, float("inf"), float("-inf"), 0.3])
    x = torch.cat([special, randn(2048 - special.numel()) * 3]).reshape(64, 32)
    y = x.flatten().roll(7).reshape(64, 32)
    got = tile_probe(convert_8xfp32_to_4xfp4_packed, x, torch.uint8, y)
    grid = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=torch.float64)

    def code(v):
        mag = v.double().abs().clamp(max=6.0)
        dist = (mag[..., None] - grid).abs()
        best = torch.where(dist == dist.min(-1, keepdim=True).values, 0, 1) * 2 + (torch.arange(8) % 2)
        c = best.argmin(-1)  # nearest, and of two equally near the even code
        return c + 8 * torch.signbit(v).long()
    chk.equal("codes", got.long(), code(y) << 4 | code(x))
