"""DeepSpeed's Triton kernels: the training ops (fused RMSNorm, SwiGLU plain and packed, split-half
RoPE, grouped GEMM, the chunked cross-entropy's Triton path), the MoE expert-parallel index and
row kernels (permutation indices, padded row gather, AutoEP's weighted restore and row
weighting), the inference kernels (softmax with and without an additive mask, layer norm with
its residual variants, erf GELU, the residual-add-bias epilogue, the packed-QKV fp16 flash
attention, the fp16 matmul with its bias and activation epilogues and its 4-D batched form)
and the fp8-weight GEMMs with bf16 and fp16 activations.

The public entry points of the training ops refuse tensors that are not on a CUDA device before
any kernel runs; the cases call the functions right behind those checks (`_run_kernels`, the
autograd Functions), which launch exactly what the entry points launch.

References: the eager torch expressions each op replaces (DeepSpeed's own where it ships one:
`_reference_apply_rotary_pos_emb`, `fill_indices_cpu`), or torch models of what a kernel
computes where it rounds differently from eager (fp16 operands rounded before a dot, the fp8
weights decoded bit for bit). RoPE, the row permutations and the index kernels are compared
exactly (DeepSpeed documents RoPE as equal to eager under `torch.equal`); the rest within a
few units in the last place of the output dtype, relative to the output's largest element
(the flash attention, whose scores are summed in fp16, within 1%).
"""
from importlib import import_module
import math

import torch
import torch.nn.functional as F

from kernel_libraries import case, _grad, _ref_rms_norm

_HALF = (torch.bfloat16, torch.float16)
# Tolerances below are in units in the last place at 1.0 of the output dtype: torch.finfo(dtype).eps.


@case("deepspeed.fused_rms_norm")
def _(ds, chk):
    """`fused_rms_norm`'s kernels (forward, dx and the two-step weight gradient) on bf16 and fp16
    rows of 200 (3-D input) and 2048 columns (the widest it takes), against Hugging Face's eager
    RMSNorm (the normalized value rounded to the input dtype before the weight)."""
    m = import_module("deepspeed.ops.triton_ops.fused_rms_norm")
    for dtype in _HALF:
        for shape in ((2, 9, 200), (37, 2048)):
            x = torch.randn(*shape, dtype=dtype)
            w = (1 + 0.1 * torch.randn(shape[-1])).to(dtype)
            dy = torch.randn(*shape, dtype=dtype)
            xa, wa, xb, wb = _grad(x), _grad(w), _grad(x), _grad(w)
            y = m._run_kernels(xa, wa, 1e-6)
            ref = wb * _ref_rms_norm(xb.float(), 1.0, 1e-6).to(dtype)
            tag = f" {dtype} {shape}"
            chk.close_to_scale("y" + tag, y, ref, 2 * torch.finfo(dtype).eps)
            y.backward(dy)
            ref.backward(dy)
            chk.close_to_scale("dx" + tag, xa.grad, xb.grad, 4 * torch.finfo(dtype).eps)
            chk.close_to_scale("dw" + tag, wa.grad, wb.grad, 4 * torch.finfo(dtype).eps)


@case("deepspeed.swiglu")
def _(ds, chk):
    """`swiglu(gate, up)` and `swiglu_packed(gate_up)`, forward and backward, fp32, fp16 and bf16,
    on 3000 elements a side (the last 2048-element block partial), against `silu(gate) * up`
    in fp32."""
    m = import_module("deepspeed.ops.triton_ops.swiglu_triton")
    for dtype in (torch.float32,) + _HALF:
        tol = 4 * max(torch.finfo(dtype).eps, 2.0**-20)
        gate, up = torch.randn(3, 1000, dtype=dtype) * 3, torch.randn(3, 1000, dtype=dtype)
        dy = torch.randn(3, 1000, dtype=dtype)
        ga, ua, gb, ub = _grad(gate), _grad(up), _grad(gate), _grad(up)
        y = m.swiglu(ga, ua)
        ref = (F.silu(gb.float()) * ub.float())
        chk.close_to_scale(f"y {dtype}", y, ref.to(dtype), tol)
        y.backward(dy)
        ref.backward(dy.float())
        chk.close_to_scale(f"dgate {dtype}", ga.grad, gb.grad.to(dtype), tol)
        chk.close_to_scale(f"dup {dtype}", ua.grad, ub.grad.to(dtype), tol)

        packed = torch.cat([gate, up], -1)
        pa, pb = _grad(packed), _grad(packed.float())
        y = m.swiglu_packed(pa)
        g, u = pb.chunk(2, -1)
        ref = F.silu(g) * u
        chk.close_to_scale(f"packed y {dtype}", y, ref.to(dtype), tol)
        y.backward(dy)
        ref.backward(dy.float())
        chk.close_to_scale(f"packed dgate_up {dtype}", pa.grad, pb.grad.to(dtype), tol)


@case("deepspeed.fused_rotary_pos_emb")
def _(ds, chk):
    """Split-half RoPE (`_run_kernels`, launched with `enable_fp_fusion=False`) on q and k laid
    out [batch, heads, seq, dim] and [batch, seq, heads, dim], bf16 and fp16, head dims 64 and
    80, forward and backward, against DeepSpeed's eager reference: exactly (every product and
    sum rounded where eager rounds it)."""
    m = import_module("deepspeed.ops.triton_ops.fused_rotary_pos_emb")
    for dtype in _HALF:
        for dim, unsqueeze_dim in ((64, 1), (80, 2)):
            b, h, s = 2, 3, 37
            shape = (b, h, s, dim) if unsqueeze_dim == 1 else (b, s, h, dim)
            q, k = torch.randn(*shape, dtype=dtype), torch.randn(*shape, dtype=dtype)
            angle = torch.arange(s)[:, None] * torch.rand(dim // 2)[None, :]
            angle = torch.cat([angle, angle], -1).expand(b, s, dim)
            cos, sin = angle.cos().to(dtype), angle.sin().to(dtype)
            qa, ka, qb, kb = _grad(q), _grad(k), _grad(q), _grad(k)
            oq, ok = m._run_kernels(qa, ka, cos, sin, unsqueeze_dim)
            rq, rk = m._reference_apply_rotary_pos_emb(qb, kb, cos, sin, unsqueeze_dim)
            tag = f" {dtype} dim {dim} unsqueeze {unsqueeze_dim}"
            chk.equal("q" + tag, oq, rq)
            chk.equal("k" + tag, ok, rk)
            dq, dk = torch.randn(*shape, dtype=dtype), torch.randn(*shape, dtype=dtype)
            (oq * dq + ok * dk).float().sum().backward()
            (rq * dq + rk * dk).float().sum().backward()
            chk.equal("dq" + tag, qa.grad, qb.grad)
            chk.equal("dk" + tag, ka.grad, kb.grad)


@case("deepspeed.group_gemm")
def _(ds, chk):
    """`group_gemm_triton` (autotuned over its six GPU configs), 2-D activations by 3-D expert
    weights, fp32 in the [E, K, N] layout and bf16 in the native [E, N, K] one (`trans_b`), with
    an empty group and groups that are not multiples of the tile, forward and both gradients,
    against one matmul per group in fp32."""
    gg = import_module("deepspeed.ops.triton_ops.group_gemm_triton")
    sizes = (5, 0, 70, 21)
    offs = torch.tensor(sizes).cumsum(0).to(torch.int32)
    m, k, n = sum(sizes), 48, 40
    for dtype, trans_b in ((torch.float32, False), (torch.bfloat16, True)):
        tol = 1e-5 if dtype == torch.float32 else 4 * torch.finfo(dtype).eps
        a = torch.randn(m, k, dtype=dtype)
        w = torch.randn(len(sizes), *((n, k) if trans_b else (k, n)), dtype=dtype)
        dy = torch.randn(m, n, dtype=dtype)
        aa, wa, ab, wb = _grad(a), _grad(w), _grad(a.float()), _grad(w.float())
        y = gg.group_gemm_triton(aa, wa, offs, trans_b=trans_b)
        starts = [0] + offs.tolist()[:-1]
        ref = torch.cat([ab[s:e] @ (wb[g].T if trans_b else wb[g]) for g, (s, e) in
                         enumerate(zip(starts, offs.tolist()))])
        tag = f" {dtype} trans_b={trans_b}"
        chk.close_to_scale("y" + tag, y, ref.to(dtype), tol)
        y.backward(dy)
        ref.backward(dy.float())
        chk.close_to_scale("da" + tag, aa.grad, ab.grad.to(dtype), tol)
        chk.close_to_scale("dw" + tag, wa.grad, wb.grad.to(dtype), tol)


@case("deepspeed.chunked_cross_entropy")
def _(ds, chk):
    """The chunked cross-entropy's Triton path (`_TritonCrossEntropy`: an online log-sum-exp over
    4096-wide blocks, then the gradient), bf16 and fp32 logits over a 5000-token vocabulary
    (two blocks, the second partial), with ignored rows, against `F.cross_entropy` on the
    logits in fp32."""
    cce = import_module("deepspeed.runtime.chunked_cross_entropy")
    for dtype in (torch.float32, torch.bfloat16):
        logits = (torch.randn(9, 5000) * 4).to(dtype)
        target = torch.randint(0, 5000, (9,))
        target[[2, 7]] = -100
        la, lb = _grad(logits), _grad(logits)
        loss = cce._TritonCrossEntropy.apply(la, target, -100)
        ref = F.cross_entropy(lb.float(), target, ignore_index=-100, reduction="none")
        chk.close(f"loss {dtype}", loss, ref, atol=1e-5, rtol=1e-5)
        dloss = torch.rand(9)
        loss.backward(dloss)
        ref.backward(dloss)
        chk.close_to_scale(f"dlogits {dtype}", la.grad, lb.grad, 2 * max(torch.finfo(dtype).eps, 2.0**-20))


@case("deepspeed.moe_permute")
def _(ds, chk):
    """The expert-parallel MoE index and row kernels: `generate_permute_indices` through the
    Triton fill kernel against its CPU path (2 ranks x 4 experts, one expert empty, alignment
    16), then `permute_rows` / `unpermute_rows` (the padded row gather and its inverse, with
    the gradient of the latter, the same gather) against indexing a zero-row-extended tensor,
    exactly."""
    ep = import_module("deepspeed.moe.ep_kernels")
    counts = torch.tensor([3, 0, 17, 5, 9, 0, 1, 22], dtype=torch.int32)
    rows_total, experts, ranks, align = int(counts.sum()), 4, 2, 16
    max_len = ((rows_total + experts * align + align - 1) // align) * align
    got = ep.generate_permute_indices(counts, experts, ranks, max_len, align)
    want = ep.generate_permute_indices(counts, experts, ranks, max_len, align, use_cpu=True)
    for name, g, w in zip(("permuted_indices", "m_sizes", "m_offsets"), got, want):
        chk.equal(name, g, w)
    index = want[0]
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(rows_total, 1100, dtype=dtype)  # two 1024-wide column blocks
        y = ep.permute_rows(x, index)
        chk.equal(f"permuted {dtype}", y, torch.cat([x, x.new_zeros(1, x.shape[1])])[index.long()])
        # unpermute_rows is an index_select (torch's, not checked here); its backward is the
        # Triton gather again.
        ya = _grad(y)
        back = ep.unpermute_rows(ya, index, rows_total)
        dx = torch.randn_like(x)
        back.backward(dx)
        chk.equal(f"unpermuted grad {dtype}", ya.grad, torch.cat([dx, dx.new_zeros(1, x.shape[1])])[index.long()])


def _restore_ref(rows, scores, order, top_k):
    """fused_weighted_restore's model in fp64: row i of `rows` belongs to assignment order[i]
    (token * top_k + slot); each token's rows weighted by their scores and summed."""
    unsorted = torch.empty_like(rows)
    unsorted[order] = rows
    t = scores.shape[0]
    return (unsorted.view(t, top_k, -1) * scores[..., None]).sum(1)


@case("deepspeed.autoep_token_ops")
def _(ds, chk):
    """AutoEP's fused token ops: `fused_weighted_restore` (top-2 and top-3 expert rows restored
    to token order and summed with their routing scores, hidden 1500 over two tiles; forward,
    and the backward's row and score gradients) and the fused per-row weighting (bf16, fp16),
    against the eager scatter and weighted sum."""
    ops = import_module("deepspeed.ops.triton_ops.autoep_fused_token_ops")
    for dtype in (torch.float32, torch.bfloat16):
        tol = 1e-6 if dtype == torch.float32 else 2 * torch.finfo(dtype).eps
        for top_k in (2, 3):
            b, s, h = 2, 5, 1500
            t = b * s
            rows = torch.randn(t * top_k, h, dtype=dtype)
            scores = torch.rand(t, top_k)
            order = torch.randperm(t * top_k)
            ra, sa = _grad(rows), _grad(scores)
            y = ops.fused_weighted_restore(ra, sa, order, top_k, (b, s, h))
            rb, sb = _grad(rows.double()), _grad(scores.double())
            ref = _restore_ref(rb, sb, order, top_k).view(b, s, h)
            tag = f" {dtype} top_k={top_k}"
            chk.close_to_scale("y" + tag, y, ref.to(dtype), tol)
            dy = torch.randn(b, s, h, dtype=dtype)
            y.backward(dy)
            ref.backward(dy.double())
            chk.close_to_scale("drows" + tag, ra.grad, rb.grad.to(dtype), tol)
            chk.close_to_scale("dscores" + tag, sa.grad, sb.grad.float(), 1e-5)
    for dtype in _HALF:
        rows, weights = torch.randn(7, 1300, dtype=dtype), torch.rand(7, 1)
        ra, wa, rb, wb = _grad(rows), _grad(weights), _grad(rows), _grad(weights)
        y = ops._FusedRowWeighting.apply(ra, wa)
        ref = (rb.float() * wb).to(dtype)
        chk.equal(f"weighted rows {dtype}", y, ref)
        dy = torch.randn_like(y)
        y.backward(dy)
        ref.backward(dy)
        chk.equal(f"weighted drows {dtype}", ra.grad, rb.grad)
        chk.close(f"weighted dweights {dtype}", wa.grad, wb.grad, atol=1e-4, rtol=1e-5)


@case("deepspeed.inference_norms")
def _(ds, chk):
    """The inference kernels' softmax (plain, with a per-row and a broadcast additive mask, one
    row padded to the next power of two), layer norm, layer norm of a residual sum with and
    without an input bias (its sum stored in the input dtype, then normalized), erf GELU and
    `residual_add_bias` in each of its four modes, fp32 and fp16, against torch."""
    tri = "deepspeed.ops.transformer.inference.triton."
    softmax, ln, gelu, res = (import_module(tri + n) for n in ("softmax", "layer_norm", "gelu", "residual_add"))
    for dtype in (torch.float32, torch.float16):
        tol = 2 * max(torch.finfo(dtype).eps, 2.0**-21)
        x = torch.randn(2, 3, 7, 300, dtype=dtype) * 3
        chk.close_to_scale(f"softmax {dtype}", softmax.softmax(x), torch.softmax(x.float(), -1).to(dtype), tol)
        mask = torch.where(torch.rand(x.shape) < 0.2, -1e4, 0.0).to(dtype)
        ref = torch.softmax(x.float() + mask.float(), -1).to(dtype)
        chk.close_to_scale(f"softmax masked {dtype}", softmax.softmax(x, mask), ref, tol)
        row_mask = mask[:1, :1, :1].contiguous()
        ref = torch.softmax(x.float() + row_mask.float(), -1).to(dtype)
        chk.close_to_scale(f"softmax row mask {dtype}", softmax.softmax(x, row_mask), ref, tol)

        a = torch.randn(3, 5, 1000, dtype=dtype)
        r, ib = torch.randn_like(a), torch.randn(1000, dtype=dtype)
        w, bias = torch.rand(1000, dtype=dtype) + 0.5, torch.randn(1000, dtype=dtype)

        def norm(v):
            return F.layer_norm(v.float(), (1000,), w.float(), bias.float(), 1e-5).to(dtype)
        chk.close_to_scale(f"layer_norm {dtype}", ln.layer_norm(a, w, bias, 1e-5), norm(a), 4 * tol)
        summed = (a.float() + r.float()).to(dtype)
        chk.close_to_scale(f"layer_norm_residual {dtype}", ln.layer_norm_residual(a, None, r, w, bias, 1e-5),
                           norm(summed), 4 * tol)
        summed = (a.float() + ib.float() + r.float()).to(dtype)
        chk.close_to_scale(f"layer_norm_residual bias {dtype}", ln.layer_norm_residual(a, ib, r, w, bias, 1e-5),
                           norm(summed), 4 * tol)

        chk.close_to_scale(f"gelu {dtype}", gelu.gelu(a), F.gelu(a.float()).to(dtype), tol)

        hs, attn = torch.randn_like(a), torch.randn_like(a)
        attn_bias, final_bias = torch.randn(1000, dtype=dtype), torch.randn(1000, dtype=dtype)
        f = [t.float() for t in (hs, r, attn, attn_bias, final_bias)]
        mp = 2
        for mlp_after_attn in (True, False):
            for flag in (True, False):  # pre_attn_norm with mlp_after_attn, else add_attn_bias
                if mlp_after_attn:
                    want = f[0] + (f[1] + f[4] + f[2] + f[3]) / mp if flag else f[0] + f[1] + f[4]
                else:
                    want = f[0] + f[2] + (f[1] + f[4]) / mp + (f[3] / mp if flag else 0)
                got = res.residual_add_bias(hs, r, attn, attn_bias, final_bias, mp, mlp_after_attn,
                                            add_attn_bias=flag, pre_attn_norm=flag)
                # The kernel rounds each fp16 sum: a few units of the largest term.
                chk.close_to_scale(f"residual_add_bias {dtype} mlp_after_attn={mlp_after_attn} {flag}", got,
                                   want.to(dtype), 4 * tol)


@case("deepspeed.inference_flash_attention")
def _(ds, chk):
    """The inference flash attention on packed QKV (`_triton_packed_flash`: [batch, seq, 3 x
    hidden] fp16, scores accumulated in fp16 by `tl.dot(out_dtype=tl.float16)`, exp2), plain,
    causal and with an additive padding mask, head dims 64 and 128, against softmax attention in
    fp32 on q pre-scaled and rounded to fp16 as the kernel does."""
    att = import_module("deepspeed.ops.transformer.inference.triton.attention")
    z, n = 2, 256
    for heads, d in ((2, 64), (1, 128)):
        hidden = heads * d
        qkv = torch.randn(z, n, 3 * hidden, dtype=torch.float16)
        scale = 1 / math.sqrt(d)
        q, k, v = (qkv[..., i * hidden:(i + 1) * hidden].view(z, n, heads, d).transpose(1, 2).float()
                   for i in range(3))
        q = (q * (scale * 1.44269504)).half().float() / 1.44269504
        pad = torch.zeros(z, 1, 1, n, dtype=torch.float16)
        pad[1, ..., -37:] = -10000.0
        for causal, mask in ((False, None), (True, None), (False, pad)):
            s = q @ k.transpose(-1, -2)
            if causal:
                s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), -math.inf)
            if mask is not None:  # added in the kernel's base-2 domain
                s = s + mask.float() * math.log(2)
            ref = (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(z, n, hidden)
            got = att._triton_packed_flash(qkv, d, mask, scale, causal=causal)
            chk.close_to_scale(f"heads={heads} d={d} causal={causal} mask={mask is not None}", got,
                               ref.half(), 1e-2)


@case("deepspeed.inference_matmul")
def _(ds, chk):
    """The inference fp16 matmul (`Fp16Matmul`, its first autotune config as `skip_autotune`
    selects: 128 x 256 x 32 tiles) with no epilogue, bias + relu, bias + leaky relu, erf GELU and
    sigmoid, on shapes that are not multiples of the tiles and a K that is (EVEN_K), and its 4-D
    batched matmul, against fp32 matmuls of the fp16 operands."""
    mm = import_module("deepspeed.ops.transformer.inference.triton.matmul_ext")
    fp16 = mm.Fp16Matmul(read_cache=False)
    fp16.skip_autotune()
    tol = 4 * torch.finfo(torch.float16).eps
    acts = {"": lambda c: c, "relu": F.relu, "leaky_relu": lambda c: F.leaky_relu(c, 0.01),
            "gelu": F.gelu, "sigmoid": torch.sigmoid}
    for (m, k, n) in ((100, 96, 300), (64, 64, 64)):
        a, b = torch.randn(m, k, dtype=torch.float16), torch.randn(k, n, dtype=torch.float16)
        bias = torch.randn(n, dtype=torch.float16)
        for act, fn in acts.items():
            with_bias = act in ("relu", "leaky_relu")
            got = mm.Fp16Matmul.forward(a, b, bias=bias if with_bias else None, activation=act)
            ref = a.float() @ b.float() + (bias.float() if with_bias else 0)
            chk.close_to_scale(f"{m}x{k}x{n} {act or 'none'}", got, fn(ref).half(), tol)
    a, b = torch.randn(2, 3, 70, 40, dtype=torch.float16), torch.randn(2, 3, 40, 90, dtype=torch.float16)
    chk.close_to_scale("4d", mm.Fp16Matmul._matmul_4d(a, b), (a.float() @ b.float()).half(), tol)


def _fp8_decode(weight, dtype):
    """The kernels' bit-level decode of uint8 fp8 (e4m3) weights to bf16 or fp16 bits, with
    Triton's integer typing: the bf16 kernel widens to uint16 before shifting; the fp16 kernel
    shifts the uint8 values themselves by 8 and 7 bits, which Triton computes in 8 bits (it
    warns that 8 exceeds the width), so only bit 0 of each weight survives, under the
    interpreter too. That is DeepSpeed's arithmetic as Triton defines it, modelled as such."""
    w = weight.to(torch.int32)
    if dtype == torch.bfloat16:
        bits = (((w & 0x80) << 8) | ((w & 0x7f) << 4)) + 0x3C00
    else:
        bits = ((((w & 0x80) << 8) & 0xFF) | (((w & 0x7f) << 7) & 0xFF)) + 0x2000
    return bits.to(torch.int16).view(dtype)


@case("deepspeed.fp8_gemm")
def _(ds, chk):
    """`matmul_fp8_triton`: activations (bf16 or fp16) times uint8 fp8 weights dequantized in the
    K loop with one fp32 scale per weight row and group of columns (group 128, so each 64-column
    tile reads one scale), against a torch model: the same bit-level decode, each weight times
    its scale rounded to the activation dtype, an fp32 matmul rounded to the output dtype."""
    fp8 = import_module("deepspeed.ops.fp_quantizer.fp8_gemm_triton")
    group = 128
    for dtype in _HALF:
        for m in (5, 40):
            k, n = 256, 384
            inp = torch.randn(m, k, dtype=dtype)
            weight = torch.randint(0, 256, (k, n), dtype=torch.uint8)
            scales = torch.rand(k, n // group) + 0.5
            got = fp8.matmul_fp8_triton(inp, weight, scales.reshape(-1), group)
            dequant = (_fp8_decode(weight, dtype).float() * scales.repeat_interleave(group, 1)).to(dtype)
            ref = (inp.float() @ dequant.float()).to(dtype)
            chk.close_to_scale(f"{dtype} M={m}", got, ref, 4 * torch.finfo(dtype).eps)
