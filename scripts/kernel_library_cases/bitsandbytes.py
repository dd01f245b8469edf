"""bitsandbytes' Triton backend (bitsandbytes/backends/triton, written for Intel GPUs): blockwise
8-bit quantization with its dynamic code, NF4 and FP4 quantization and dequantization (QLoRA's
weight format), and the 32-bit and 8-bit blockwise optimizer updates (Adam, AdEMAMix, LAMB,
momentum, LARS, RMSprop, Adagrad, Lion), called through the backend's own functions (ops.py).

References: torch models of what each kernel computes (the same fp32 operations; the nearest
code chosen as the kernel's binary search chooses it, ties to the lower code), and for the
32-bit optimizers bitsandbytes' own CPU implementation (`torch.ops.bitsandbytes`, pure torch).
The quantizers' bytes and scales are compared exactly; parameters and states updated in fp32
within a few ulp (the kernels' products and sums may be fused into FMAs, as on a GPU), and the
8-bit optimizers' new codes exactly except where that straddles a midpoint between two codes.

Not used as references: the CPU op for 4-bit dequantization, which finds the scales row by
row and gives wrong values when a block crosses a row (a 64 x 96 tensor in blocks of 64), and
the CPU 8-bit optimizer ops, which implement AdEMAMix and Lion's weight decay differently from
the Triton kernels (the 8-bit kernel decays Lion's parameters through the gradient, as it does
for momentum, because its test names Adagrad's id). AdEMAMix runs on a multiple of 256 elements:
its kernel finds the second moment's scales at n // 256, which overlaps the first moment's
last scale otherwise.
"""
import torch

from kernel_libraries import case

_DTYPES = (torch.float32, torch.float16, torch.bfloat16)

# NF4's codes and the midpoints the quantization kernel compares with, as the kernel writes
# them (bitsandbytes/backends/triton/kernels_4bit.py), in code order.
_NF4 = (-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
        -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
        0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
        0.7229568362236023, 1.0)
_NF4_BOUNDS = (-0.8480964004993439, -0.6106329262256622, -0.4599952697753906, -0.33967943489551544,
               -0.23460740596055984, -0.13791173323988914, -0.045525018125772476, 0.03979014977812767,
               0.1202552504837513, 0.2035212516784668, 0.2920137718319893, 0.3893125355243683,
               0.5016634166240692, 0.6427869200706482, 0.8614784181118011)
# FP4 (sign bit 8): the magnitudes by code, and the bounds of |x| in increasing order with the
# code of each interval.
_FP4 = (0.0, 0.005208333333, 0.66666667, 1.0, 0.33333333, 0.5, 0.16666667, 0.25)
_FP4_BOUNDS = (0.00260417, 0.0859375, 0.20833333, 0.29166667, 0.4166667, 0.583333, 0.8333333)
_FP4_CODES = (0, 1, 6, 7, 4, 5, 2, 3)


def _blocks(x, bs):
    """x flattened into rows of bs, the last padded with zeros (the kernels' masked loads)."""
    flat = x.reshape(-1)
    pad = -flat.numel() % bs
    return torch.cat([flat, flat.new_zeros(pad)]).view(-1, bs)


def _normalized(blocks):
    """(blocks / their absmax in fp32, clamped to [-1, 1], the absmax in the blocks' dtype): what
    every quantizer here computes (Triton divides fp16 and bf16 operands in fp32)."""
    absmax = blocks.abs().amax(1)
    return (blocks.float() / absmax.float()[:, None]).clamp(-1, 1), absmax


def _scaled_back(values, absmax, bs, shape, dtype):
    """Dequantization: code values times their block's scale in fp32, cut to `shape`, to dtype."""
    n = torch.Size(shape).numel()
    return (_blocks(values, bs) * absmax[:, None]).reshape(-1)[:n].view(shape).to(dtype)


def _nearest_code(a, code):
    """The index of the code value nearest to each fp32 value in `a`, the lower on a tie: the
    kernel's binary search (the bracketing pair code[i-1] < a <= code[i]) and comparison."""
    hi = torch.searchsorted(code, a.contiguous()).clamp(max=code.numel() - 1)
    lo = (hi - 1).clamp(min=0)
    pick_lo = (a - code[lo]).abs() <= (a - code[hi]).abs()
    return torch.where(pick_lo, lo, hi).to(torch.uint8)


def _quant8_ref(x, code, bs):
    """Blockwise 8-bit quantization as the kernel does it: codes and fp32 scales."""
    normalized, absmax = _normalized(_blocks(x, bs))
    q = _nearest_code(normalized, code).reshape(-1)[:x.numel()].view(x.shape)
    return q, absmax.float()


def _dynamic_code(signed=True):
    import bitsandbytes.functional as F
    return F.create_dynamic_map(signed=signed).float()


@case("bitsandbytes.quantize_8bit")
def _(T, chk):
    """`quantize_blockwise` with the dynamic 8-bit code (blocks of 64, 256 and 4096 over 3000
    elements, the last block partial) in fp32, fp16 and bf16, and `dequantize_blockwise` of the
    result to each dtype: codes and scales exactly."""
    code = _dynamic_code()
    for dtype in _DTYPES:
        x = torch.randn(3, 1000, dtype=dtype)
        for bs in (64, 256, 4096):
            q, absmax = T.quantize_blockwise(x, code, bs)
            q_ref, absmax_ref = _quant8_ref(x, code, bs)
            chk.equal(f"{dtype} {bs} scales", absmax, absmax_ref)
            chk.equal(f"{dtype} {bs} codes", q, q_ref)
            y = T.dequantize_blockwise(q_ref, absmax_ref, code, bs, dtype)
            chk.equal(f"{dtype} {bs} dequantized", y, _scaled_back(code[q_ref.long()], absmax_ref, bs, x.shape, dtype))


def _quant4_ref(x, bs, quant_type):
    """(packed bytes, fp32 scales) of the 4-bit kernels: the normalized values compared with the
    kernel's midpoints in fp32; two codes a byte, the first in the high half."""
    normalized, absmax = _normalized(_blocks(x, bs))
    if quant_type == "nf4":
        bounds = torch.tensor(_NF4_BOUNDS)
        q = (normalized[..., None] > bounds).sum(-1)
    else:
        bounds = torch.tensor(_FP4_BOUNDS)
        q = torch.tensor(_FP4_CODES)[(normalized.abs()[..., None] > bounds).sum(-1)]
        q = q | torch.where(normalized < 0, 8, 0)
    q = q.reshape(-1).to(torch.uint8)
    return ((q[0::2] << 4) | q[1::2]).unsqueeze(1), absmax.float()


def _dequant4_ref(packed, absmax, bs, table, shape, dtype):
    byte = packed.view(torch.uint8).reshape(-1)
    q = torch.stack([byte >> 4, byte & 15], 1).reshape(-1)
    return _scaled_back(torch.tensor(table)[q.long()], absmax, bs, shape, dtype)


def _table(quant_type):
    return _NF4 if quant_type == "nf4" else tuple(m * s for s in (1.0, -1.0) for m in _FP4)


@case("bitsandbytes.quantize_4bit")
def _(T, chk):
    """`quantize_4bit` and `dequantize_4bit`, NF4 and FP4, blocks of 64 and 128, fp32, fp16 and
    bf16, on a 64 x 96 weight (blocks across rows) and 999 elements (padded by the wrapper),
    stored as uint8 and as bf16 pairs; dequantization also through the code table
    (`dequantize_4bit_impl_passing_code`, the path of `gemv_4bit`): bytes, scales and values
    exactly."""
    from bitsandbytes.backends.triton import kernels_4bit
    for quant_type in ("nf4", "fp4"):
        table = _table(quant_type)
        for dtype in _DTYPES:
            for shape in ((64, 96), (999,)):
                x = torch.randn(*shape, dtype=dtype)
                for bs in (64, 128):
                    tag = f"{quant_type} {dtype} {shape} {bs}"
                    packed, absmax = T.quantize_4bit(x, bs, quant_type, torch.uint8)
                    packed_ref, absmax_ref = _quant4_ref(x, bs, quant_type)
                    chk.equal(f"{tag} scales", absmax, absmax_ref)
                    chk.equal(f"{tag} bytes", packed, packed_ref)
                    y_ref = _dequant4_ref(packed_ref, absmax_ref, bs, table, shape, dtype)
                    chk.equal(f"{tag} dequantized", T.dequantize_4bit(packed_ref, absmax_ref, bs, quant_type,
                                                                      shape, dtype), y_ref)
                    out = torch.empty(shape, dtype=dtype)
                    kernels_4bit.dequantize_4bit_impl_passing_code(packed_ref, absmax_ref, bs, torch.tensor(table),
                                                                   dtype, out)
                    chk.equal(f"{tag} dequantized by code", out, y_ref)
                    if packed_ref.numel() % 2 == 0:
                        as_bf16, _ = T.quantize_4bit(x, bs, quant_type, torch.bfloat16)
                        chk.equal(f"{tag} bf16 storage", as_bf16.view(torch.uint8).reshape(-1),
                                  packed_ref.reshape(-1))
                        chk.equal(f"{tag} dequantized from bf16 storage",
                                  T.dequantize_4bit(as_bf16, absmax_ref, bs, quant_type, shape, dtype), y_ref)


def _rtol(dtype):
    """A few ulp of a parameter updated in fp32 and stored in `dtype`."""
    return {torch.float32: 2e-6, torch.bfloat16: 8e-3}[dtype]


def _trust_ratio(name, g, s1, s2, max_unorm, param_norm, betas, step, eps):
    """(the squared norm the preprocessing kernel accumulates, the scale the update kernel
    applies) for LAMB and LARS: the norm of Adam's bias-corrected update, or of the new momentum,
    from the gradient without weight decay. LAMB's kernel keeps a bf16 gradient in bf16:
    `(1.0 - beta1) * g` and `(1.0 - beta2) * g * g` are bf16 products (each rounded, the float
    constant rounded to bf16 first, as Triton types a float literal beside a bf16 tensor)."""
    beta1, beta2 = betas

    def weak(c):
        return torch.tensor(c, dtype=g.dtype).item()
    if name == "lamb":
        m = (s1 * beta1 + (weak(1.0 - beta1) * g).float()) * (1.0 / (1.0 - torch.tensor(beta1 ** step)))
        v = (s2 * beta2 + (weak(1.0 - beta2) * g * g).float()) * (1.0 / (1.0 - torch.tensor(beta2 ** step)))
        squares = (m / (v.sqrt() + eps)).square().sum()
        bound = max_unorm * param_norm
    else:
        squares = (s1 * beta1 + g.float()).square().sum()
        bound = max_unorm * param_norm + eps
    norm = squares.sqrt().item()
    return squares, (bound / norm if norm > bound else 1.0)


@case("bitsandbytes.optimizer_32bit")
def _(T, chk):
    """`optimizer_update_32bit` for Adam, AdEMAMix, LAMB and LARS, momentum, RMSprop, Adagrad and
    Lion, on 1000 fp32 and bf16 parameters with weight decay, against bitsandbytes' CPU
    implementation. LAMB's and LARS's trust ratio (the update's norm, summed over the programs by
    an atomic add in a first kernel) is defined differently there: their references take the CPU
    update without the clip and scale it by the ratio the Triton kernels define, which clips."""
    ops = torch.ops.bitsandbytes
    betas, step, eps, wd, lr, max_unorm = (0.9, 0.999), 3, 1e-8, 0.01, 1e-3, 0.02
    for name in ("adam", "ademamix", "lamb", "momentum", "lars", "rmsprop", "adagrad", "lion"):
        for dtype in (torch.float32, torch.bfloat16):
            n = 1000
            g, p = torch.randn(n, dtype=dtype), torch.randn(n, dtype=dtype)
            s1 = torch.rand(2, n) if name == "ademamix" else torch.rand(n)
            s2 = torch.rand(n) if name in ("adam", "ademamix", "lamb") else None
            clip = name in ("lamb", "lars")
            param_norm = float(p.float().norm())

            def run(fn, clip):
                state = [p.clone(), s1.clone(), None if s2 is None else s2.clone(), torch.zeros(1)]
                fn(name, g.clone(), state[0], state[1], state[2], state[3] if clip else None,
                   max_unorm if clip else 0.0, param_norm, *betas, 0.9999, 5.0, eps, wd, step, lr, 1.0)
                return state
            ours, ref = run(T.optimizer_update_32bit, clip), run(ops.optimizer_update_32bit, False)
            tag = f"{name} {dtype}"
            if clip:
                squares, scale = _trust_ratio(name, g, s1, s2, max_unorm, param_norm, betas, step, eps)
                chk.true(f"{tag} clips", scale < 0.5, f"trust ratio {scale}")
                chk.close(f"{tag} squared update norm", ours[3], squares.reshape(1), atol=0, rtol=1e-5)
                start = p.float() * (1.0 - lr * wd) if name == "lamb" else p.float()
                ref[0] = (start + scale * (ref[0].float() - start)).to(dtype)
            chk.close(f"{tag} p", ours[0], ref[0], atol=1e-6, rtol=_rtol(dtype))
            chk.close(f"{tag} state1", ours[1], ref[1], atol=1e-7, rtol=1e-6)
            if s2 is not None:
                chk.close(f"{tag} state2", ours[2], ref[2], atol=1e-7, rtol=1e-6)


def _optim8_ref(name, g, p, states, qmaps, absmaxes, lr, betas, alpha, eps, wd, step):
    """The 8-bit blockwise kernels' update in torch (fp32, blocks of 256): dequantize each state,
    update, requantize; returns (p, [(codes, scales)] per state)."""
    n = p.numel()
    g, p = _blocks(g.float(), 256), _blocks(p.float(), 256)
    s = [_blocks(qm[st.long()], 256) * am[:, None] for st, qm, am in zip(states, qmaps, absmaxes)]
    beta1, beta2, beta3 = betas
    # The bias corrections as the kernels compute them: 1 - beta^step, beta^step passed in fp32.
    bc = [1.0 - torch.tensor(b ** step, dtype=torch.float32) for b in (beta1, beta2)]
    if name in ("adam", "ademamix"):
        if name == "adam":
            s[0] = s[0] * beta1 + (1.0 - beta1) * g
            s[1] = s[1] * beta2 + (1.0 - beta2) * g * g
            update = (s[0] / (s[1].sqrt() / bc[1].sqrt() + eps)) * (lr / bc[0])
        else:
            s[0] = s[0] * beta1 + (1.0 - beta1) * g
            s[1] = s[1] * beta3 + (1.0 - beta3) * g
            s[2] = s[2] * beta2 + (1.0 - beta2) * g * g
            update = lr * ((s[0] / bc[0] + alpha * s[1]) / (s[2].sqrt() / bc[1].sqrt() + eps))
        p = p * (1.0 - lr * wd) - update
    else:
        if name == "adagrad":  # the kernel decays Adagrad's parameters, the others' gradients
            p = p * (1.0 - lr * wd)
        else:
            g = g + p * wd
        if name == "momentum":
            s[0] = s[0] * beta1 + g
            p = p - lr * s[0]
        elif name == "rmsprop":
            s[0] = s[0] * beta1 + (1.0 - beta1) * g * g
            p = p - lr * (g / (s[0].sqrt() + eps))
        elif name == "adagrad":
            s[0] = s[0] + g * g
            p = p - lr * (g / (s[0].sqrt() + eps))
        else:  # lion
            p = p - lr * torch.sign(s[0] * beta1 + (1.0 - beta1) * g)
            s[0] = s[0] * beta2 + (1.0 - beta2) * g
    requantized = []
    for st, qm in zip(s, qmaps):
        normalized, absmax = _normalized(st)
        requantized.append((_nearest_code(normalized, qm).reshape(-1)[:n], absmax))
    return p.reshape(-1)[:n], requantized


@case("bitsandbytes.optimizer_8bit")
def _(T, chk):
    """`optimizer_update_8bit_blockwise` (states stored as 8-bit codes with a scale per 256
    elements) for Adam, AdEMAMix, momentum, RMSprop, Adagrad and Lion, fp32 and bf16 parameters
    with weight decay, 1000 elements (a partial last block; AdEMAMix 1024), step 3, against a
    torch model of the kernels: parameters within a few ulp, the new scales within an ulp, the
    new codes exactly except where fused and unfused arithmetic straddle a midpoint between two
    codes (at most 0.5% of them, each one code away)."""
    lr, betas, alpha, eps, wd, step = 1e-3, (0.9, 0.999, 0.9999), 5.0, 1e-8, 0.01, 3
    signed, unsigned = _dynamic_code(True), _dynamic_code(False)
    # Each state's code: momenta signed, squared gradients (>= 0) unsigned.
    codes_of = {"adam": [signed, unsigned], "ademamix": [signed, signed, unsigned],
                "momentum": [signed], "rmsprop": [unsigned], "adagrad": [unsigned], "lion": [signed]}
    for name in ("adam", "ademamix", "momentum", "rmsprop", "adagrad", "lion"):
        for dtype in (torch.float32, torch.bfloat16):
            n = 1024 if name == "ademamix" else 1000
            blocks = -(-n // 256)
            g, p = torch.randn(n, dtype=dtype), torch.randn(n, dtype=dtype)
            qmaps = codes_of[name]
            states = [torch.randint(0, 256, (n,), dtype=torch.uint8) for _ in qmaps]
            absmaxes = [torch.rand(blocks) for _ in qmaps]
            stored = [s.clone() for s in states]
            scales = [a.clone() for a in absmaxes]
            if name == "ademamix":  # m1 and m2 stacked, as the wrapper expects
                s1, a1 = torch.stack(stored[:2]), torch.stack(scales[:2])
                s2, a2 = stored[2], scales[2]
            else:
                s1, a1 = stored[0], scales[0]
                s2, a2 = (stored[1], scales[1]) if len(stored) > 1 else (None, None)
            p_ours = p.clone()
            T.optimizer_update_8bit_blockwise(name, g.clone(), p_ours, s1, s2, *betas, alpha, eps, step, lr,
                                              qmaps[0], qmaps[-1] if s2 is not None else None, a1, a2, wd, 1.0)
            ours = [(s1[0], a1[0]), (s1[1], a1[1]), (s2, a2)] if name == "ademamix" else \
                [(s1, a1)] + ([(s2, a2)] if s2 is not None else [])
            p_ref, ref = _optim8_ref(name, g, p, states, qmaps, absmaxes, lr, betas, alpha, eps, wd, step)
            tag = f"{name} {dtype}"
            chk.close(f"{tag} p", p_ours, p_ref.to(dtype), atol=1e-6, rtol=_rtol(dtype))
            for i, ((codes, absmax), (codes_ref, absmax_ref)) in enumerate(zip(ours, ref)):
                chk.close(f"{tag} state{i} scales", absmax, absmax_ref, atol=0, rtol=1e-6)
                off = codes.int() - codes_ref.int()
                chk.true(f"{tag} state{i} codes", off.abs().max() <= 1 and (off != 0).sum() <= n // 200,
                         f"{int((off != 0).sum())}/{n} differ, by up to {int(off.abs().max())}")
