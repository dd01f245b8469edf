"""Liger-Kernel's ops (liger_kernel.ops), through their autograd functions: forward outputs and
input/weight gradients against torch reference implementations."""
import torch
import torch.nn.functional as F

from kernel_libraries import case, _grad, _out0, randn, _ref_rms_norm


@case("liger.cross_entropy")
def _(L, chk):
    from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction
    logits, target = randn(8, 130), torch.randint(0, 130, (8,))
    target[2] = -100                                   # ignore_index
    x, xr = _grad(logits), _grad(logits)
    loss = LigerCrossEntropyFunction.apply(x, target, None, -100, 0.0, 0.0, "mean")[0]
    ref = F.cross_entropy(xr, target, ignore_index=-100)
    chk.close("loss", loss, ref)
    loss.backward(), ref.backward()
    chk.close("dx", x.grad, xr.grad)
    # the nn.Module wrapper, with label smoothing
    from liger_kernel.transformers import LigerCrossEntropyLoss
    x2, xr2 = _grad(logits), _grad(logits)
    loss2 = LigerCrossEntropyLoss(label_smoothing=0.1)(x2, target)
    ref2 = F.cross_entropy(xr2, target, label_smoothing=0.1)
    chk.close("loss(label_smoothing)", loss2, ref2)
    loss2.backward(), ref2.backward()
    chk.close("dx(label_smoothing)", x2.grad, xr2.grad)


@case("liger.fused_linear_cross_entropy")
def _(L, chk):
    from liger_kernel.ops.fused_linear_cross_entropy import LigerFusedLinearCrossEntropyFunction
    h, w, b = randn(12, 32), randn(70, 32) * 0.2, randn(70) * 0.1
    target = torch.randint(0, 70, (12,))
    target[5] = -100
    (x, wg, bg), (xr, wr, br) = map(_grad, (h, w, b)), map(_grad, (h, w, b))
    loss = _out0(LigerFusedLinearCrossEntropyFunction.apply(x, wg, target, bg))
    ref = F.cross_entropy(xr @ wr.t() + br, target, ignore_index=-100)
    chk.close("loss", loss, ref)
    loss.backward(), ref.backward()
    chk.close("dx", x.grad, xr.grad, atol=1e-5, rtol=1e-4)
    chk.close("dw", wg.grad, wr.grad, atol=1e-5, rtol=1e-4)
    chk.close("db", bg.grad, br.grad, atol=1e-5, rtol=1e-4)


@case("liger.rms_norm")
def _(L, chk):
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    h, w, dy = randn(2, 5, 48), randn(48), randn(2, 5, 48)
    (x, wg), (xr, wr) = map(_grad, (h, w)), map(_grad, (h, w))
    y = LigerRMSNormFunction.apply(x, wg, 1e-6, 0.0, "llama", False)
    ref = _ref_rms_norm(xr, wr, 1e-6)
    chk.with_grads(y, ref, dy, [("dx", x, xr), ("dw", wg, wr, 1e-4)])
    # Gemma: offset 1 and fp32 casting
    (x, wg), (xr, wr) = map(_grad, (h, w)), map(_grad, (h, w))
    y = LigerRMSNormFunction.apply(x, wg, 1e-6, 1.0, "gemma", False)
    ref = _ref_rms_norm(xr, wr, 1e-6, offset=1.0)
    chk.with_grads(y, ref, dy, [("dx", x, xr), ("dw", wg, wr, 1e-4)], tag="(gemma)")


@case("liger.layer_norm")
def _(L, chk):
    from liger_kernel.ops.layer_norm import LigerLayerNormFunction
    h, w, b, dy = randn(10, 40), randn(40), randn(40), randn(10, 40)
    (x, wg, bg), (xr, wr, br) = map(_grad, (h, w, b)), map(_grad, (h, w, b))
    y = LigerLayerNormFunction.apply(x, wg, bg, 1e-5)
    ref = F.layer_norm(xr, (40,), wr, br, 1e-5)
    chk.with_grads(y, ref, dy, [("dx", x, xr), ("dw", wg, wr, 1e-4), ("db", bg, br, 1e-4)])


def _rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


@case("liger.rope")
def _(L, chk):
    from liger_kernel.ops.rope import LigerRopeFunction
    bsz, n_q, n_kv, seq, hd = 2, 4, 2, 6, 16
    q, k = randn(bsz, n_q, seq, hd), randn(bsz, n_kv, seq, hd)
    inv_freq = 1.0 / (10000 ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
    freqs = torch.outer(torch.arange(seq, dtype=torch.float32), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)[None]           # (1, seq, hd)
    cos, sin = emb.cos(), emb.sin()
    dq, dk = randn(bsz, n_q, seq, hd), randn(bsz, n_kv, seq, hd)
    (qg, kg), (qr, kr) = map(_grad, (q, k)), map(_grad, (q, k))
    qo, ko = LigerRopeFunction.apply(qg, kg, cos, sin)
    c, s = cos.unsqueeze(1), sin.unsqueeze(1)
    _check_q_k(chk, (qo, ko), (qr * c + _rotate_half(qr) * s, kr * c + _rotate_half(kr) * s), (qg, kg), (qr, kr), (dq, dk))


def _check_q_k(chk, outs, refs, leaves, ref_leaves, grads):
    """A rotary embedding's rotated q and k against the reference, then both backward from
    `grads` and the gradients of q and k."""
    for name, out, ref in zip("qk", outs, refs):
        chk.close(name, out, ref)
    torch.autograd.backward(outs, grads)
    torch.autograd.backward(refs, grads)
    for name, leaf, ref_leaf in zip("qk", leaves, ref_leaves):
        chk.close("d" + name, leaf.grad, ref_leaf.grad)


def _glu_case(chk, fn, act):
    a, b, dc = randn(3, 7, 40), randn(3, 7, 40), randn(3, 7, 40)
    (ag, bg), (ar, br) = map(_grad, (a, b)), map(_grad, (a, b))
    c = fn(ag, bg)
    ref = act(ar) * br
    chk.close("c", c, ref)
    c.backward(dc), ref.backward(dc)
    chk.close("da", ag.grad, ar.grad)
    chk.close("db", bg.grad, br.grad)


@case("liger.swiglu")
def _(L, chk):
    from liger_kernel.ops.swiglu import LigerSiLUMulFunction
    _glu_case(chk, LigerSiLUMulFunction.apply, F.silu)


@case("liger.geglu")
def _(L, chk):
    from liger_kernel.ops.geglu import LigerGELUMulFunction
    _glu_case(chk, LigerGELUMulFunction.apply, lambda x: F.gelu(x, approximate="tanh"))


@case("liger.softmax")
def _(L, chk):
    from liger_kernel.ops.softmax import LigerSoftmaxFunction
    h, dy = randn(6, 77), randn(6, 77)
    x, xr = _grad(h), _grad(h)
    y = LigerSoftmaxFunction.apply(x)
    ref = torch.softmax(xr, dim=-1)
    chk.with_grads(y, ref, dy, [("dx", x, xr)])


@case("liger.kl_div")
def _(L, chk):
    from liger_kernel.ops.kl_div import LigerKLDivLossFunction
    pred = torch.log_softmax(randn(8, 50), -1)
    true = torch.softmax(randn(8, 50), -1)
    for reduction in ("batchmean", "sum", "none"):
        x, xr = _grad(pred), _grad(pred)
        loss = LigerKLDivLossFunction.apply(x, true, reduction, False)
        ref = F.kl_div(xr, true, reduction=reduction, log_target=False)
        chk.close(f"loss({reduction})", loss, ref)
        g = torch.randn(ref.shape)
        loss.backward(g), ref.backward(g)
        chk.close(f"dx({reduction})", x.grad, xr.grad)


@case("liger.jsd")
def _(L, chk):
    from liger_kernel.ops.jsd import LigerJSDFunction
    logq = torch.log_softmax(randn(8, 60), -1)              # input: log Q
    logp = torch.log_softmax(randn(8, 60), -1)              # target: log P
    for beta in (0.5, 0.0, 1.0):
        x, xr = _grad(logq), _grad(logq)
        loss = LigerJSDFunction.apply(x, logp, None, beta)
        q, p = xr.exp(), logp.exp()
        if beta == 0.0:
            terms = p * (logp - xr)                         # forward KL(P || Q)
        elif beta == 1.0:
            terms = q * (xr - logp)                         # reverse KL(Q || P)
        else:
            log_m = torch.log(beta * p + (1 - beta) * q)
            terms = beta * p * (logp - log_m) + (1 - beta) * q * (xr - log_m)
        ref = terms.sum() / logq.shape[0]
        chk.close(f"loss(beta={beta})", loss, ref)
        loss.backward(), ref.backward()
        chk.close(f"dx(beta={beta})", x.grad, xr.grad)


@case("liger.dyt")
def _(L, chk):
    from liger_kernel.ops.dyt import LigerDyTFunction
    h, dy = randn(6, 96), randn(6, 96)
    alpha, gamma, beta = torch.tensor([0.7]), randn(96), randn(96)
    (x, ag, gg, bg), (xr, ar, gr, br) = map(_grad, (h, alpha, gamma, beta)), map(_grad, (h, alpha, gamma, beta))
    y = LigerDyTFunction.apply(x, ag, gg, bg)
    ref = gr * torch.tanh(ar * xr) + br
    chk.with_grads(y, ref, dy, [("dx", x, xr), ("dalpha", ag, ar, 1e-4), ("dgamma", gg, gr, 1e-4),
                                ("dbeta", bg, br, 1e-4)])


@case("liger.group_norm")
def _(L, chk):
    from liger_kernel.ops.group_norm import LigerGroupNormFunction
    h, w, b = randn(2, 6, 20), randn(6), randn(6)
    dy = randn(2, 6, 20)
    (x, wg, bg), (xr, wr, br) = map(_grad, (h, w, b)), map(_grad, (h, w, b))
    y = LigerGroupNormFunction.apply(x, wg, bg, 6, 3, 1e-6)
    ref = F.group_norm(xr, 3, wr, br, 1e-6)
    chk.with_grads(y, ref, dy, [("dx", x, xr, 1e-4), ("dw", wg, wr, 1e-4), ("db", bg, br, 1e-4)])


@case("liger.fused_add_rms_norm")
def _(L, chk):
    from liger_kernel.ops.fused_add_rms_norm import LigerFusedAddRMSNormFunction
    h, r, w = randn(2, 5, 48), randn(2, 5, 48), randn(48)
    dy, ds = randn(2, 5, 48), randn(2, 5, 48)
    (x, rg, wg), (xr, rr, wr) = map(_grad, (h, r, w)), map(_grad, (h, r, w))
    y, s = LigerFusedAddRMSNormFunction.apply(x, rg, wg, 1e-6)
    sref = xr + rr
    yref = _ref_rms_norm(sref, wr, 1e-6)
    chk.close("y", y, yref)
    chk.close("residual", s, sref)
    torch.autograd.backward((y, s), (dy, ds))
    torch.autograd.backward((yref, sref), (dy, ds))
    chk.close("dx", x.grad, xr.grad)
    chk.close("dr", rg.grad, rr.grad)
    chk.close("dw", wg.grad, wr.grad, rtol=1e-4)


def _sparsemax_ref(x):
    """Sparsemax over the last dim (Martins & Astudillo): max(x - tau, 0), tau from the sorted row."""
    z = x.sort(-1, descending=True).values
    k = torch.arange(1, x.shape[-1] + 1, dtype=x.dtype)
    cumulative = z.cumsum(-1)
    support = ((1 + k * z) > cumulative).sum(-1, keepdim=True)
    tau = (cumulative.gather(-1, support - 1) - 1) / support.to(x.dtype)
    return (x - tau).clamp(min=0)


@case("liger.sparsemax")
def _(L, chk):
    from liger_kernel.transformers.functional import liger_sparsemax
    h, dy = randn(37, 1000) * 3, randn(37, 1000)
    x, xr = _grad(h), _grad(h)
    chk.with_grads(liger_sparsemax(x), _sparsemax_ref(xr), dy, [("dx", x, xr)])


@case("liger.poly_norm")
def _(L, chk):
    """y = w0 norm(x^3) + w1 norm(x^2) + w2 norm(x) + b, norm(u) = u / rms(u); fp32 and bf16."""
    from liger_kernel.transformers.functional import liger_poly_norm
    for dtype, tol in ((torch.float32, 1e-4), (torch.bfloat16, 2e-2)):
        h, w, b, dy = randn(37, 512, dtype=dtype), randn(3), randn(()), randn(37, 512, dtype=dtype)
        (x, wg, bg), (xr, wr, br) = map(_grad, (h, w, b)), map(_grad, (h.float(), w, b))
        y = liger_poly_norm(x, wg, bg, 1e-6, False)
        norm = lambda u: u * torch.rsqrt(u.pow(2).mean(-1, keepdim=True) + 1e-6)
        ref = wr[0] * norm(xr ** 3) + wr[1] * norm(xr ** 2) + wr[2] * norm(xr) + br
        chk.close_to_scale(f"y {dtype}", y.float(), ref, tol)
        y.backward(dy)
        ref.backward(dy.float())
        for name, ours, theirs in (("dx", x, xr), ("dw", wg, wr), ("db", bg, br)):
            chk.close_to_scale(f"{name} {dtype}", ours.grad.float(), theirs.grad, tol)


@case("liger.modulated_rms_norm")
def _(L, chk):
    """RMSNorm times (1 + scale) plus shift, modulated per token or per sequence (the latter's
    backward sums the scale and shift gradients with atomics), with and without a shift."""
    from liger_kernel.transformers.functional import liger_modulated_rms_norm
    B, T, H = 3, 11, 256
    for per_token, has_shift in ((True, True), (False, True), (False, False)):
        mod_shape = (B, T, H) if per_token else (B, H)
        h, w, sc, sh, dy = randn(B, T, H), randn(H), randn(*mod_shape), randn(*mod_shape), randn(B, T, H)
        (x, wg, scg, shg), (xr, wr, scr, shr) = map(_grad, (h, w, sc, sh)), map(_grad, (h, w, sc, sh))
        y = liger_modulated_rms_norm(x, wg, scg, shg if has_shift else None, 1e-6, 0.0, "llama", False)
        expand = (lambda t: t) if per_token else (lambda t: t[:, None])
        ref = _ref_rms_norm(xr, wr, 1e-6) * (1 + expand(scr)) + (expand(shr) if has_shift else 0)
        grads = [("dx", x, xr, 1e-4), ("dw", wg, wr, 1e-4), ("dscale", scg, scr, 1e-4)]
        chk.with_grads(y, ref, dy, grads + ([("dshift", shg, shr, 1e-4)] if has_shift else []),
                       tag=f" (per token {per_token}, shift {has_shift})")


@case("liger.tvd")
def _(L, chk):
    """Total variation distance between two distributions per row, each reduction."""
    from liger_kernel.transformers.functional import liger_tvd
    p, q = randn(37, 1000).softmax(-1), randn(37, 1000).softmax(-1)
    for reduction, reduce in (("batchmean", lambda t: t.sum(-1).mean()), ("mean", torch.mean), ("sum", torch.sum)):
        x, xr = _grad(p), _grad(p)
        chk.with_grads(liger_tvd(x, q, reduction=reduction), reduce(0.5 * (xr - q).abs()), torch.tensor(1.7),
                       [("dp", x, xr)], tag=f" ({reduction})")


@case("liger.qwen2vl_mrope")
def _(L, chk):
    """Qwen2-VL's multimodal RoPE: sections of the rotary dims take their angle from the
    temporal, height or width position; grouped-query heads."""
    from liger_kernel.transformers.functional import liger_qwen2vl_mrope
    B, H, KH, T, D, sections = 2, 4, 2, 13, 64, [8, 12, 12]
    angles = torch.rand(3, B, T, D // 2) * 6
    cos, sin = torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)
    hq, hk, dq, dk = randn(B, H, T, D), randn(B, KH, T, D), randn(B, H, T, D), randn(B, KH, T, D)
    (q, k), (qr, kr) = map(_grad, (hq, hk)), map(_grad, (hq, hk))
    qo, ko = liger_qwen2vl_mrope(q, k, cos, sin, sections)
    pick = lambda t: torch.cat([part[i % 3] for i, part in enumerate(t.split(sections * 2, -1))], -1).unsqueeze(1)
    c, s = pick(cos), pick(sin)
    _check_q_k(chk, (qo, ko), (qr * c + _rotate_half(qr) * s, kr * c + _rotate_half(kr) * s), (q, k), (qr, kr), (dq, dk))


@case("liger.multi_token_attention")
def _(L, chk):
    """Multi-token attention: causally masked scores through softmax or sparsemax, then a 2D
    convolution over the (query, key) plane, masked again."""
    from liger_kernel.transformers.functional import liger_multi_token_attention
    B, C, T, K = 2, 4, 16, 3
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for sparse in (False, True):
        h, w, b, dy = randn(B, C, T, T), randn(C, C, K, K) * 0.3, randn(C), randn(B, C, T, T)
        (s, wg, bg), (sr, wr, br) = map(_grad, (h, w, b)), map(_grad, (h, w, b))
        y = liger_multi_token_attention(s, wg, bg, 1, 1, 1, 1, sparse)
        masked = sr.masked_fill(~causal, float("-inf"))
        probs = _sparsemax_ref(masked) if sparse else masked.softmax(-1)
        ref = F.conv2d(probs, wr, br, 1, 1, 1, 1).masked_fill(~causal, 0.0)
        chk.with_grads(y, ref, dy, [("dscores", s, sr, 1e-4), ("dweight", wg, wr, 1e-4), ("dbias", bg, br, 1e-4)],
                       tag=f" (sparsemax {sparse})")


@case("liger.neighborhood_attention")
def _(L, chk):
    """Fused neighborhood attention: each query attends to the keys within 3 positions."""
    from liger_kernel.transformers.functional import liger_fused_neighborhood_attention
    B, H, T, D, window = 2, 2, 37, 32, 7
    hq, hk, hv, dy = randn(B, H, T, D), randn(B, H, T, D), randn(B, H, T, D), randn(B, H, T, D)
    (q, k, v), (qr, kr, vr) = map(_grad, (hq, hk, hv)), map(_grad, (hq, hk, hv))
    near = (torch.arange(T)[None] - torch.arange(T)[:, None]).abs() <= window // 2
    ref = (qr @ kr.transpose(-1, -2) / D ** 0.5).masked_fill(~near, float("-inf")).softmax(-1) @ vr
    chk.with_grads(liger_fused_neighborhood_attention(q, k, v, window, 1), ref, dy,
                   [("dq", q, qr, 1e-4), ("dk", k, kr, 1e-4), ("dv", v, vr, 1e-4)])


@case("liger.fused_linear_jsd")
def _(L, chk):
    """Jensen-Shannon divergence (beta 0.5) between a student's and a teacher's softmax over a
    1000-word vocabulary, the student's linear layer fused into the loss."""
    from liger_kernel.transformers.functional import liger_fused_linear_jsd
    h, w = randn(64, 128), randn(1000, 128) * 0.1
    teacher_h, teacher_w = randn(64, 128), randn(1000, 128) * 0.1
    (x, wg), (xr, wr) = map(_grad, (h, w)), map(_grad, (h, w))
    y = liger_fused_linear_jsd(x, wg, teacher_h, teacher_w, None, 0.5, -100, 1.0)
    log_p, log_q = (xr @ wr.T).log_softmax(-1), (teacher_h @ teacher_w.T).log_softmax(-1)
    log_m = ((log_p.exp() + log_q.exp()) / 2).log()
    ref = 0.5 * ((log_q.exp() * (log_q - log_m)).sum() + (log_p.exp() * (log_p - log_m)).sum()) / h.shape[0]
    chk.with_grads(y, ref, torch.tensor(1.3), [("dx", x, xr, 1e-4), ("dw", wg, wr, 1e-4)])


# ---------------------------------------------------------------------------------- FlagGems
