"""LMDeploy's Triton kernels (lmdeploy.pytorch.kernels.cuda.*, the kernels of its PyTorch
engine), through the library's own Python wrappers, on CPU tensors.

Not run: `flash_attn_varlen_func` (its prefill attention), whose kernel builds
`tl.make_block_ptr`, which Triton 3.9's front end no longer has (on any backend); and the
modules that import TileLang (causal conv1d, the gated delta rule, the sparse MLA kernels)."""
import torch
import torch.nn.functional as F

from kernel_libraries import _attention_ref, _ref_rms_norm, case, randn

_TOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


@case("lmdeploy.rms_norm")
def _(L, chk):
    """RMSNorm (`rms_norm`, a persistent grid over the rows) in fp32, fp16 and bf16, on 2-D
    and 3-D inputs, alone and fused with the residual add (both outputs)."""
    from lmdeploy.pytorch.kernels.cuda.rms_norm import rms_norm
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        for shape in ((37, 1000), (2, 19, 512)):
            x, r = randn(*shape, dtype=dtype), randn(*shape, dtype=dtype)
            w = randn(shape[-1], dtype=dtype)
            # The kernel normalizes and applies the weight in fp32, rounding once at the store.
            ref = (_ref_rms_norm(x.float(), torch.ones(shape[-1]), 1e-6) * w.float()).to(dtype)
            chk.close_to_scale(f"{dtype} {shape}", rms_norm(x, w, 1e-6), ref, _TOL[dtype])
            y, res = rms_norm(x, w, 1e-6, residual=r)
            s = (x.float() + r.float()).to(dtype)
            chk.close_to_scale(f"{dtype} {shape} residual", res, s, _TOL[dtype])
            ref = (_ref_rms_norm(s.float(), torch.ones(shape[-1]), 1e-6) * w.float()).to(dtype)
            chk.close_to_scale(f"{dtype} {shape} +residual", y, ref, _TOL[dtype])


@case("lmdeploy.silu_and_mul")
def _(L, chk):
    """SwiGLU's activation (`silu_and_mul`: silu of the first half times the second), halves
    of 688 (not a power of two), fp32 and bf16."""
    from lmdeploy.pytorch.kernels.cuda.activation import silu_and_mul
    for dtype in (torch.float32, torch.bfloat16):
        gate_up = randn(50, 2 * 688, dtype=dtype)
        g, u = gate_up.double().chunk(2, -1)
        chk.close_to_scale(str(dtype), silu_and_mul(gate_up), F.silu(g) * u, _TOL[dtype])


@case("lmdeploy.rotary")
def _(L, chk):
    """Rotary embedding of queries and keys (`apply_rotary_pos_emb`) in place, as LMDeploy's
    engine calls it (the outputs are the inputs; with a partial rotary the kernel writes
    only the rotated dimensions): rotate-half over the whole head, over its first 64 of 128
    dimensions, and the complex (interleaved pairs) form; grouped-query heads; fp32 and
    fp16."""
    from lmdeploy.pytorch.kernels.cuda.apply_rotary_pos_emb import apply_rotary_pos_emb
    seq, heads, kv_heads = 23, 8, 2
    for dtype in (torch.float32, torch.float16):
        for dim, rope, complex_mode in ((64, 64, False), (128, 64, False), (64, 32, True)):
            q, k = randn(seq, heads, dim, dtype=dtype), randn(seq, kv_heads, dim, dtype=dtype)
            angle = torch.arange(seq)[:, None] * 10000.0 ** (-torch.arange(rope // 2 if not complex_mode else rope) /
                                                             (rope // 2 if not complex_mode else rope))
            if complex_mode:
                cos, sin = angle.cos(), angle.sin()            # [seq, dim / 2]
            else:
                cos, sin = torch.cat([angle.cos()] * 2, -1), torch.cat([angle.sin()] * 2, -1)  # [seq, rope]
            qe, ke = q.clone(), k.clone()
            apply_rotary_pos_emb(qe, ke, cos.to(dtype), sin.to(dtype), qe, ke, complex_mode=complex_mode)

            def ref(x):
                x, c, s = x.double(), cos.to(dtype).double()[:, None], sin.to(dtype).double()[:, None]
                out = x.clone()
                if complex_mode:
                    a, b = x[..., 0::2], x[..., 1::2]
                    out[..., 0::2], out[..., 1::2] = a * c - b * s, b * c + a * s
                else:
                    a, b = x[..., :rope // 2], x[..., rope // 2:rope]
                    out[..., :rope] = x[..., :rope] * c + torch.cat([-b, a], -1) * s
                return out
            tag = f"{dtype} dim {dim} rope {rope}{' complex' if complex_mode else ''}"
            chk.close_to_scale(tag + " q", qe, ref(q).to(dtype), _TOL[dtype])
            chk.close_to_scale(tag + " k", ke, ref(k).to(dtype), _TOL[dtype])


def _paged(lens, block, kv_heads, dim, dtype, layout="bshd"):
    """A paged KV cache filled by lmdeploy's `fill_kv_cache` from each sequence's keys and
    values (a prefill of every token), its blocks in a random order: (keys, values per
    sequence, cache k, cache v, page table)."""
    from lmdeploy.pytorch.kernels.cuda.fill_kv_cache import fill_kv_cache
    lens = torch.tensor(lens)
    blocks = (lens + block - 1) // block
    order = torch.randperm(int(blocks.sum()))
    page = torch.zeros(len(lens), int(blocks.max()), dtype=torch.int32)
    start = 0
    for i, n in enumerate(blocks.tolist()):
        page[i, :n] = order[start:start + n]
        start += n
    shape = (int(blocks.sum()), block, kv_heads, dim) if layout == "bshd" else (int(blocks.sum()), kv_heads, block, dim)
    kc, vc = torch.zeros(shape, dtype=dtype), torch.zeros(shape, dtype=dtype)
    ks = [randn(n, kv_heads, dim, dtype=dtype) for n in lens.tolist()]
    vs = [randn(n, kv_heads, dim, dtype=dtype) for n in lens.tolist()]
    starts = (lens.cumsum(0) - lens).to(torch.int32)
    fill_kv_cache(torch.cat(ks), torch.cat(vs), kc, vc, starts, lens.to(torch.int32), lens.to(torch.int32),
                  int(lens.max()), page, kv_layout=layout)
    return ks, vs, kc, vc, page


@case("lmdeploy.paged_decode")
def _(L, chk):
    """A decode step over a paged KV cache: the cache written by `fill_kv_cache` (checked
    slot by slot against the tokens), then the split-K paged attention
    (`flash_attn_with_kvcache`, with its reduction kernel) for one new token per sequence;
    grouped-query heads (8 over 2, 16 over 1), `bshd` and `bhsd` cache layouts, a sliding
    window, soft-capping, attention sinks; fp32, fp16, bf16; against fp64 attention."""
    from lmdeploy.pytorch.kernels.cuda.pagedattention import flash_attn_with_kvcache
    lens, block = [51, 40, 130, 1], 16
    variants = [dict(), dict(layout="bhsd"), dict(heads=16, kv_heads=1, dim=128), dict(window=24),
                dict(softcap=30.0), dict(sinks=True), dict(dtype=torch.float16), dict(dtype=torch.bfloat16)]
    for variant in variants:
        o = dict(heads=8, kv_heads=2, dim=64, layout="bshd", window=None, softcap=None, sinks=False,
                 dtype=torch.float32)
        o.update(variant)
        ks, vs, kc, vc, page = _paged(lens, block, o["kv_heads"], o["dim"], o["dtype"], o["layout"])
        for i, n in enumerate(lens):
            slots = [(page[i, t // block], t % block) for t in range(n)]
            got = torch.stack([kc[b, s] if o["layout"] == "bshd" else kc[b, :, s] for b, s in slots])
            chk.equal(f"{variant} cache of sequence {i}", got, ks[i])
        q = randn(len(lens), o["heads"], o["dim"], dtype=o["dtype"])
        sinks = randn(o["heads"]) if o["sinks"] else None
        out = flash_attn_with_kvcache(q, kc, vc, cache_seqlens=torch.tensor(lens, dtype=torch.int32),
                                      page_table=page, window_size=o["window"], softcap=o["softcap"],
                                      sinks=sinks, kv_layout=o["layout"])
        window = -1 if o["window"] is None else o["window"]
        ref = torch.cat([_attention_ref(q[i:i + 1], ks[i], vs[i], o["dim"] ** -0.5, n - 1, window,
                                        o["softcap"] or 0.0, sinks) for i, n in enumerate(lens)])
        chk.close_to_scale(str(variant), out.double(), ref, 1e-5 if o["dtype"] == torch.float32 else 1e-2)


@case("lmdeploy.fused_moe")
def _(L, chk):
    """The fused MoE (`fused_moe`: tokens sorted by expert, the gate/up GEMM, SiLU-and-mul,
    the down GEMM, the top-k sum; its autotuner over the configs it keeps for GPUs before
    sm_80): 7 and 300 tokens, 8 experts, top-2 renormalized, with and without biases, fp32
    and bf16; against the per-token sum in fp64."""
    from lmdeploy.pytorch.kernels.cuda.moe.fused_moe import fused_moe
    experts, hidden, inter, top = 8, 128, 96, 2
    for tokens, dtype, bias in ((7, torch.float32, False), (300, torch.float32, True), (300, torch.bfloat16, False)):
        x = randn(tokens, hidden, dtype=dtype)
        w1 = (randn(experts, 2 * inter, hidden) / hidden ** 0.5).to(dtype)
        w2 = (randn(experts, hidden, inter) / inter ** 0.5).to(dtype)
        b1 = randn(experts, 2 * inter, dtype=dtype) if bias else None
        b2 = randn(experts, hidden, dtype=dtype) if bias else None
        weights, ids = randn(tokens, experts).softmax(-1).topk(top, -1)
        out = fused_moe(x, w1, w2, weights.to(dtype), ids, top, w1_bias=b1, w2_bias=b2, renormalize=True)
        weights = weights.to(dtype).double()
        weights = weights / weights.sum(-1, keepdim=True)
        ref = torch.zeros(tokens, hidden, dtype=torch.float64)
        for j in range(top):
            e = ids[:, j]
            h = torch.einsum("th,tnh->tn", x.double(), w1.double()[e]) + (b1.double()[e] if bias else 0)
            g, u = h.chunk(2, -1)
            y = torch.einsum("tn,thn->th", F.silu(g) * u, w2.double()[e]) + (b2.double()[e] if bias else 0)
            ref += weights[:, j:j + 1] * y
        chk.close_to_scale(f"{tokens} tokens {dtype}{' bias' if bias else ''}", out.double(), ref,
                           1e-5 if dtype == torch.float32 else 2e-2)


@case("lmdeploy.w8a8")
def _(L, chk):
    """SmoothQuant's W8A8 path: per-token int8 quantization (`per_token_quant_int8`), RMSNorm
    fused with it (`rms_norm_dynamic_quant`, also with the residual add), and the int8 GEMM
    that applies both scales (`matmul_kernel_dynamic_quant`, int32 accumulation, with and
    without the residual); quantized values within one step of torch's (libdevice `round`,
    half away from zero, on quotients that may differ in the last bit), scales and GEMMs
    against torch."""
    from lmdeploy.pytorch.kernels.cuda.w8a8_triton_kernels import (
        matmul_kernel_dynamic_quant, per_token_quant_int8, rms_norm_dynamic_quant)

    def quant_ref(y):
        scale = y.abs().amax(-1, keepdim=True).clamp_min(1e-7) / 127
        q = y / scale
        return (q.sign() * (q.abs() + 0.5).floor()).clamp(-128, 127).to(torch.int8), scale

    def close_codes(name, q, ref):
        diff = (q.int() - ref.int()).abs()
        chk.true(name, diff.max().item() <= 1 and (diff > 0).float().mean().item() < 1e-3,
                 f"max code difference {diff.max().item()}, {int((diff > 0).sum())} of {diff.numel()} differ")

    x = randn(67, 512) * 3
    q, s = per_token_quant_int8(x, 1e-7)
    q_ref, s_ref = quant_ref(x)
    chk.close("per-token scale", s, s_ref, rtol=1e-6)
    close_codes("per-token codes", q, q_ref)

    w, r = randn(512), randn(67, 512)
    normed = _ref_rms_norm(x, torch.ones(512), 1e-6) * w
    q, s = rms_norm_dynamic_quant(x, w, 1e-6)
    q_ref, s_ref = quant_ref(normed)
    chk.close("rms scale", s, s_ref, rtol=1e-5)
    close_codes("rms codes", q, q_ref)
    q, s, res = rms_norm_dynamic_quant(x, w, 1e-6, residual=r)
    chk.close("rms residual", res, x + r)
    q_ref, s_ref = quant_ref(_ref_rms_norm(x + r, torch.ones(512), 1e-6) * w)
    chk.close("rms+residual scale", s, s_ref, rtol=1e-5)
    close_codes("rms+residual codes", q, q_ref)

    a, a_scale = quant_ref(randn(67, 512))
    b = torch.randint(-127, 128, (384, 512), dtype=torch.int8)
    b_scale = torch.rand(384, 1) / 100
    ref = (a.double() @ b.double().T) * a_scale.double() * b_scale.double().T
    for out_dtype in (torch.float32, torch.float16):
        c = matmul_kernel_dynamic_quant(a, b, a_scale, b_scale, output_dtype=out_dtype)
        chk.close_to_scale(f"gemm {out_dtype}", c.double(), ref, 1e-6 if out_dtype == torch.float32 else 1e-3)
    residual = randn(67, 384)
    c = matmul_kernel_dynamic_quant(a, b, a_scale, b_scale, residual=residual, output_dtype=torch.float32)
    chk.close_to_scale("gemm + residual", c.double(), ref + residual.double(), 1e-6)


@case("lmdeploy.blocked_fp8")
def _(L, chk):
    """DeepSeek-style blocked fp8: activations quantized per 128-element group of a row to
    e4m3 with an fp32 scale (`quant_fp8`; scales and bytes exactly against torch's
    conversion of x / scale), then the GEMM with 128 x 128 weight blocks' scales
    (`blocked_gemm_fp8`), bf16 and fp32 outputs, against the dequantized product in fp64."""
    from lmdeploy.pytorch.kernels.cuda.blocked_gemm_fp8 import blocked_gemm_fp8, quant_fp8
    fp8, fp8_max = torch.float8_e4m3fn, torch.finfo(torch.float8_e4m3fn).max
    x = randn(45, 512) * 4
    q, scale = quant_fp8(x, 128)
    groups = x.view(45, 4, 128)
    scale_ref = groups.abs().amax(-1).clamp_min(1e-6) / fp8_max
    chk.close("scales", scale, scale_ref, rtol=1e-6)
    q_ref = (groups / scale.view(45, 4, 1)).clamp(-fp8_max, fp8_max).to(fp8).view(45, 512)
    chk.equal("codes", q.view(torch.uint8), q_ref.view(torch.uint8))

    w = randn(256, 512)
    wq = torch.empty(256, 512, dtype=fp8)
    w_scale = torch.empty(2, 4)
    for i in range(2):
        for j in range(4):
            blk = w[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128]
            w_scale[i, j] = blk.abs().max() / fp8_max
            wq[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128] = (blk / w_scale[i, j]).to(fp8)
    a_deq = q.double().view(45, 4, 128) * scale.double().view(45, 4, 1)
    w_deq = wq.double().view(2, 128, 4, 128) * w_scale.double().view(2, 1, 4, 1)
    ref = a_deq.view(45, 512) @ w_deq.view(256, 512).T
    for out_dtype in (torch.bfloat16, torch.float32):
        c = blocked_gemm_fp8(q, scale, wq.T, w_scale.T, out_dtype=out_dtype)
        chk.close_to_scale(f"gemm {out_dtype}", c.double(), ref, 1e-5 if out_dtype == torch.float32 else 1e-2)


@case("lmdeploy.bitonic_topk")
def _(L, chk):
    """Top-k by bitonic sorting networks (`bitonic_topk`: a first kernel sorts chunks of
    each row, a second merges them), per query token over rows whose valid length comes
    from the KV lengths, the rest filled with -1; k = 64 of up to 1000 keys; the indices
    compared as sets against torch.topk over each row's valid part, their scores sorted."""
    from lmdeploy.pytorch.kernels.cuda.bitonic_topk import bitonic_topk
    kv_lens = torch.tensor([1000, 300, 40], dtype=torch.int32)
    q_lens = torch.tensor([1, 2, 1], dtype=torch.int32)
    tokens = int(q_lens.sum())
    scores = randn(tokens, 1024)
    ids = bitonic_topk(scores, q_lens, kv_lens, 64)
    row_lens = torch.repeat_interleave(kv_lens, q_lens)
    for t in range(tokens):
        n = int(row_lens[t])
        want = scores[t, :n].topk(min(64, n)).indices
        got = ids[t]
        valid = got[got >= 0]
        chk.true(f"token {t}", sorted(valid.tolist()) == sorted(want.tolist()),
                 f"{len(set(valid.tolist()) ^ set(want.tolist()))} indices differ")
        chk.true(f"token {t} fill", bool((got[len(valid):] == -1).all()), "fill is not -1 after the valid ids")
        chk.true(f"token {t} order", bool((scores[t, valid][:-1] >= scores[t, valid][1:]).all()),
                 "scores not in descending order")


def _dequant_cache(codes, scales_zeros, bits):
    """Cache codes [..., packed dim] (uint8) with per-token (scale, zero) [..., 2] back to
    values: (code - zero) * scale; at 4 bits the low nibble holds the first half of the
    head's dimensions and the high nibble the second."""
    c = codes.double()
    if bits == 4:
        c = torch.cat([c.remainder(16), c.div(16).floor()], -1)
    return (c - scales_zeros[..., 1:].double()) * scales_zeros[..., :1].double()


@case("lmdeploy.kv_cache_quant")
def _(L, chk):
    """The int8 and int4 KV cache: `fill_kv_cache` quantizes each token's head asymmetrically
    (scale and zero from its min and max; int4 packs the two halves of the head in the two
    nibbles of a byte), checked against the same formula in torch (scales and zeros to 1e-6,
    codes within one step); the paged decode attention reading that cache
    (`flash_attn_with_kvcache` with the quant policy) against fp64 attention over the cache
    as dequantized in torch; and `flatten_kv_cache` (paged to contiguous, dequantized),
    against the same dequantization."""
    from lmdeploy.messages import QuantPolicy
    from lmdeploy.pytorch.kernels.cuda.fill_kv_cache import fill_kv_cache
    from lmdeploy.pytorch.kernels.cuda.flatten_kv_cache import flatten_kv_cache
    from lmdeploy.pytorch.kernels.cuda.pagedattention import flash_attn_with_kvcache
    lens, block, heads, kv_heads, dim = [45, 1, 70], 16, 8, 2, 64
    lens_t = torch.tensor(lens, dtype=torch.int32)
    blocks = [(n + block - 1) // block for n in lens]
    order = torch.randperm(sum(blocks))
    page = torch.zeros(len(lens), max(blocks), dtype=torch.int32)
    for i, n in enumerate(blocks):
        page[i, :n] = order[sum(blocks[:i]):sum(blocks[:i]) + n]
    for policy, bits in ((QuantPolicy.INT8, 8), (QuantPolicy.INT4, 4)):
        ks = [randn(n, kv_heads, dim) for n in lens]
        vs = [randn(n, kv_heads, dim) for n in lens]
        kc = torch.zeros(sum(blocks), block, kv_heads, dim * bits // 8, dtype=torch.uint8)
        vc = torch.zeros_like(kc)
        ksz = torch.zeros(sum(blocks), block, kv_heads, 2)
        vsz = torch.zeros_like(ksz)
        fill_kv_cache(torch.cat(ks), torch.cat(vs), kc, vc, (lens_t.cumsum(0) - lens_t).to(torch.int32), lens_t,
                      lens_t, max(lens), page, k_scales_zeros=ksz, v_scales_zeros=vsz, quant_policy=policy)
        deq_k, deq_v = [], []
        for i, n in enumerate(lens):
            b, s = page[i, torch.arange(n) // block].long(), torch.arange(n) % block
            for name, x, cache, sz, out in (("k", ks[i], kc, ksz, deq_k), ("v", vs[i], vc, vsz, deq_v)):
                lo, hi = x.amin(-1), x.amax(-1)
                scale = (hi - lo) / (2 ** bits - 1)
                zero = -lo / scale
                chk.close(f"int{bits} {name} scale {i}", sz[b, s, :, 0], scale, rtol=1e-6)
                chk.close(f"int{bits} {name} zero {i}", sz[b, s, :, 1], zero, rtol=1e-5, atol=1e-5)
                codes = (x / scale[..., None] + zero[..., None] + 0.5).floor().clamp(0, 2 ** bits - 1)
                got = cache[b, s].int()
                if bits == 4:
                    got = torch.cat([got % 16, got // 16], -1)
                chk.true(f"int{bits} {name} codes {i}", (got - codes.int()).abs().max().item() <= 1,
                         f"codes differ by up to {(got - codes.int()).abs().max().item()}")
                out.append(_dequant_cache(cache[b, s], sz[b, s], bits))
        q = randn(len(lens), heads, dim)
        o = flash_attn_with_kvcache(q, kc, vc, cache_seqlens=lens_t, page_table=page, k_scales_zeros=ksz,
                                    v_scales_zeros=vsz, quant_policy=policy)
        ref = torch.cat([_attention_ref(q[i:i + 1], deq_k[i], deq_v[i], dim ** -0.5) for i in range(len(lens))])
        chk.close_to_scale(f"int{bits} decode", o.double(), ref, 1e-5)
        fk, fv = flatten_kv_cache(kc, vc, lens_t, page, out_dtype=torch.float32, k_scales_zeros=ksz,
                                  v_scales_zeros=vsz, quant_policy=policy, flatten_kv_layout="shd")
        chk.close_to_scale(f"int{bits} flatten k", fk[:sum(lens)].double(), torch.cat(deq_k), 1e-6)
        chk.close_to_scale(f"int{bits} flatten v", fv[:sum(lens)].double(), torch.cat(deq_v), 1e-6)


@case("lmdeploy.awq_linear")
def _(L, chk):
    """AWQ's W4A16 GEMM (`awq_linear`): int4 weights packed eight to an int32 in AWQ's
    order, decoded by inline PTX (`lop3.b32` masks and an fp16 bias trick, `sub.f16x2` and
    `fma.rn.f16x2`, pack = 1), zeros packed likewise, fp16 scales per group of 128 rows of
    K; one program and a split-K grid (K = 8192) whose partial sums are atomic adds; against
    x @ dequantized W in fp64."""
    from lmdeploy.pytorch.kernels.cuda.awq_kernels import awq_linear
    shifts = torch.tensor([0, 16, 4, 20, 8, 24, 12, 28])  # AWQ: nibble j of a word holds column order[j]

    def pack(values):                                     # [rows, cols] in 0..15 -> [rows, cols / 8] int32
        v = values.view(values.shape[0], -1, 8).long() << shifts
        return v.sum(-1).to(torch.int64).remainder(2 ** 32).to(torch.uint32).view(torch.int32)

    for m, k, n in ((5, 1024, 256), (33, 8192, 128)):
        group = 128
        w = torch.randint(0, 16, (k, n))
        z = torch.randint(0, 16, (k // group, n))
        scales = (torch.rand(k // group, n) / 50 + 0.001).half()
        x = (randn(m, k) / 4).half()
        out = awq_linear(x, pack(w), scales, pack(z))
        weight = (w.double() - z.double().repeat_interleave(group, 0)) * scales.double().repeat_interleave(group, 0)
        chk.close_to_scale(f"{m}x{k}x{n}", out.double(), x.double() @ weight, 2e-3)


@case("lmdeploy.noaux_tc_routing")
def _(L, chk):
    """DeepSeek-V3's MoE router (`fused_noaux_tc_routing`): sigmoid scores plus a
    per-expert bias choose the 4 best of 8 expert groups (each group scored by its two
    best), then the top 8 experts inside them (argmax loops over a masked row); weights are
    the chosen sigmoid scores, renormalized and scaled by 2.5; also one group (no group
    selection) and no renormalization. Against the same selection in torch."""
    from lmdeploy.pytorch.kernels.cuda.moe.route_noaux_tc import fused_noaux_tc_routing
    tokens, experts = 37, 256
    for groups, top_groups, renorm in ((8, 4, True), (1, 1, False)):
        logits, bias = randn(tokens, experts), randn(experts) / 10
        w, ids = fused_noaux_tc_routing(logits, bias, experts, groups, top_groups, 8, renorm, 2.5)
        scores = logits.sigmoid()
        choice = scores + bias
        if groups > 1:
            g = choice.view(tokens, groups, -1).topk(2, -1).values.sum(-1)
            keep = torch.zeros(tokens, groups, dtype=torch.bool).scatter(1, g.topk(top_groups, -1).indices, True)
            choice = torch.where(keep.repeat_interleave(experts // groups, 1), choice, 0.0)
        ref_ids = choice.topk(8, -1).indices
        ref_w = scores.gather(1, ref_ids)
        if renorm:
            ref_w = ref_w / (ref_w.sum(-1, keepdim=True) + 1e-20)
        ref_w = ref_w * 2.5
        chk.equal(f"groups {groups} ids", ids, ref_ids)
        chk.close(f"groups {groups} weights", w, ref_w, rtol=1e-6)


@case("lmdeploy.fused_lora")
def _(L, chk):
    """Multi-LoRA (`fused_lora`): each sequence of a batch goes through its own adapter's
    low-rank pair (x @ A^T, scaled, @ B) taken from stacked A and B by rank offsets; ranks
    8, 16 and 0 (no adapter: zeros, or the output untouched when accumulating); written, and
    added into an existing output (`cum`); its autotuner restores that output between
    configs. fp32 and fp16, against fp64."""
    from lmdeploy.pytorch.kernels.cuda.fused_lora import fused_lora
    k, n = 256, 384
    ranks = torch.tensor([8, 16, 0])
    rank_start = ranks.cumsum(0) - ranks
    scaling = torch.tensor([0.5, 2.0, 1.0])
    seq_lens = torch.tensor([37, 5, 20, 64])
    seq_start = seq_lens.cumsum(0) - seq_lens
    adapters = torch.tensor([1, 0, 2, 1])
    for dtype in (torch.float32, torch.float16):
        x = randn(int(seq_lens.sum()), k, dtype=dtype)
        a = (randn(int(ranks.sum()), k) / k ** 0.5).to(dtype)
        b = randn(int(ranks.sum()), n, dtype=dtype)
        ref = torch.zeros(x.shape[0], n, dtype=torch.float64)
        for start, length, ad in zip(seq_start.tolist(), seq_lens.tolist(), adapters.tolist()):
            rs, r = int(rank_start[ad]), int(ranks[ad])
            rows = slice(start, start + length)
            ar = (x[rows].double() @ a[rs:rs + r].double().T).to(dtype).double() * scaling[ad].item()
            ref[rows] = ar @ b[rs:rs + r].double()
        tol = 1e-5 if dtype == torch.float32 else 2e-3
        out = fused_lora(x, a, b, scaling, rank_start, ranks, seq_start, seq_lens, adapters, 16, 64)
        chk.close_to_scale(f"{dtype}", out.double(), ref, tol)
        base = randn(x.shape[0], n, dtype=dtype)
        out = fused_lora(x, a, b, scaling, rank_start, ranks, seq_start, seq_lens, adapters, 16, 64,
                         output=base.clone(), cum=True)
        chk.close_to_scale(f"{dtype} cum", out.double(), ref + base.double(), tol)
