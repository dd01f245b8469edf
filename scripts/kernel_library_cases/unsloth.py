"""unsloth.kernels: its norms, gated activations, rotary embedding and cross-entropy through
the library's own wrappers, forward and backward, against torch in fp64; its MoE grouped
GEMM kernels (unsloth.kernels.moe.grouped_gemm) launched as its wrappers launch them, whose
first line asserts CUDA tensors; unsloth_zoo's two inline-PTX MXFP4 decoders through its own
probe kernel."""
import importlib
import types

import torch
import torch.nn.functional as F

from kernel_libraries import case, _grad, randn, _ref_rms_norm


def _unsloth(name):
    return importlib.import_module("unsloth.kernels." + name)


@case("unsloth.rms_layernorm")
def _(U, chk):
    m = _unsloth("rms_layernorm")
    for gemma in (False, True):                       # Gemma scales by (1 + w)
        for n in (1000, 4096):
            x, w = randn(3, 37, n), randn(n)
            xs, ws = _grad(x), _grad(w)
            xr, wr = _grad(x.double()), _grad(w.double())
            y = m.fast_rms_layernorm(types.SimpleNamespace(weight=ws, variance_epsilon=1e-6), xs, gemma=gemma)
            ref = _ref_rms_norm(xr, wr, 1e-6, offset=1.0 if gemma else 0.0)
            tag = f"[gemma={gemma}, n={n}]"
            chk.close("y" + tag, y.double(), ref)
            dy = randn(*y.shape)
            y.backward(dy), ref.backward(dy.double())
            chk.close("dx" + tag, xs.grad.double(), xr.grad, atol=1e-4, rtol=1e-4)
            chk.close("dw" + tag, ws.grad.double(), wr.grad, atol=1e-3, rtol=1e-4)


@case("unsloth.layernorm")
def _(U, chk):
    m = _unsloth("layernorm")
    for n in (1000, 2048):
        x = randn(4, 33, n)
        ln = torch.nn.LayerNorm(n, eps=1e-5)
        with torch.no_grad():
            ln.weight.copy_(randn(n)), ln.bias.copy_(randn(n))
        xs, xr = _grad(x), _grad(x.double())
        y = m.fast_layernorm(ln, xs)
        ref = F.layer_norm(xr, (n,), ln.weight.detach().double(), ln.bias.detach().double(), 1e-5)
        chk.close(f"y[n={n}]", y.double(), ref)
        dy = randn(*y.shape)
        y.backward(dy), ref.backward(dy.double())
        chk.close(f"dx[n={n}]", xs.grad.double(), xr.grad, atol=1e-4, rtol=1e-4)


def _glu_grads(act, e, g, dh):
    """h = act(e) * g and the gradients of e and g for the cotangent dh, in fp64."""
    e, g = _grad(e.double()), _grad(g.double())
    h = act(e) * g
    h.backward(dh.double())
    return h.detach(), e.grad, g.grad


@case("unsloth.swiglu")
def _(U, chk):
    m = _unsloth("swiglu")
    e, g = randn(2, 17, 1000), randn(2, 17, 1000)
    chk.close("h", m.swiglu_fg_kernel(e, g).double(), F.silu(e.double()) * g.double())
    # The backward kernel overwrites its three inputs with h, dg and de (2-D, rows of hd).
    dh, e2, g2 = randn(34, 1000), e.reshape(34, 1000).clone(), g.reshape(34, 1000).clone()
    h, de, dg = _glu_grads(F.silu, e2, g2, dh)
    out = m.swiglu_DWf_DW_dfg_kernel(dh.clone(), e2, g2)
    for name, got, ref in zip(("h", "dg", "de"), out, (h, dg, de)):
        chk.close("backward " + name, got.double(), ref, atol=1e-5, rtol=1e-5)


@case("unsloth.geglu")
def _(U, chk):
    m = _unsloth("geglu")
    e, g = randn(2, 17, 1000), randn(2, 17, 1000)
    for approx, fwd, bwd in ((False, m.geglu_exact_forward_kernel, m.geglu_exact_backward_kernel),
                             (True, m.geglu_approx_forward_kernel, m.geglu_approx_backward_kernel)):
        act = (lambda x: F.gelu(x, approximate="tanh")) if approx else F.gelu
        chk.close(f"h[approx={approx}]", fwd(e, g).double(), act(e.double()) * g.double(), atol=1e-5, rtol=1e-5)
        dh, e2, g2 = randn(34, 1000), e.reshape(34, 1000).clone(), g.reshape(34, 1000).clone()
        h, de, dg = _glu_grads(act, e2, g2, dh)
        out = bwd(dh.clone(), e2, g2)
        for name, got, ref in zip(("h", "dg", "de"), out, (h, dg, de)):
            chk.close(f"backward {name}[approx={approx}]", got.double(), ref, atol=1e-5, rtol=1e-5)


@case("unsloth.rope")
def _(U, chk):
    m = _unsloth("rope_embedding")
    b, s, d = 2, 9, 64
    q, k = randn(b, 4, s, d), randn(b, 2, s, d)        # grouped-query: fewer K heads
    freqs = torch.outer(torch.arange(s).double(), 1.0 / 10000 ** (torch.arange(0, d, 2).double() / d))
    angles = torch.cat([freqs, freqs], -1)
    cos, sin = angles.cos(), angles.sin()
    qs, ks, qr, kr = _grad(q), _grad(k), _grad(q.double()), _grad(k.double())
    q_out, k_out = m.fast_rope_embedding(qs, ks, cos.float(), sin.float())

    def rotate(x):
        return x * cos + torch.cat([-x[..., d // 2:], x[..., :d // 2]], -1) * sin
    q_ref, k_ref = rotate(qr), rotate(kr)
    chk.close("q", q_out.double(), q_ref)
    chk.close("k", k_out.double(), k_ref)
    dq, dk = randn(*q.shape), randn(*k.shape)
    ((q_out * dq).sum() + (k_out * dk).sum()).backward()
    ((q_ref * dq.double()).sum() + (k_ref * dk.double()).sum()).backward()
    chk.close("dq", qs.grad.double(), qr.grad)
    chk.close("dk", ks.grad.double(), kr.grad)


@case("unsloth.cross_entropy")
def _(U, chk):
    """Vocabularies under and over 65536 (one block per row, or the chunked kernels), with
    Gemma-style logit soft-capping and Cohere-style scaling; ignored labels (-100)."""
    m = _unsloth("cross_entropy_loss")
    for vocab, softcap, scale in ((1000, 0, 0), (32000, 0, 0), (70000, 0, 0), (32000, 30.0, 0),
                                  (5000, 0, 0.5), (70000, 20.0, 0)):
        logits = randn(2, 13, vocab) * 3
        labels = torch.randint(0, vocab, (2, 13))
        labels[0, 3] = labels[1, 0] = -100
        xs, xr = _grad(logits), _grad(logits.double())
        loss = m.fast_cross_entropy_loss(xs, labels, logit_softcapping=softcap, logit_scaling=scale)
        z = xr * scale if scale else xr
        z = softcap * torch.tanh(z / softcap) if softcap else z
        ref = F.cross_entropy(z.reshape(-1, vocab), labels.reshape(-1), ignore_index=-100, reduction="sum") \
            / (labels != -100).sum()
        tag = f"[vocab={vocab}, softcap={softcap}, scale={scale}]"
        chk.close("loss" + tag, loss.double(), ref)
        loss.backward(), ref.backward()
        chk.close("dlogits" + tag, xs.grad.double(), xr.grad, atol=1e-7, rtol=1e-4)


@case("unsloth.fp8_block")
def _(U, chk):
    """DeepSeek-V3's block fp8 kernels as Unsloth ships them: activations quantized per
    128-element block to e4m3 (scale = amax / 448; exact bytes against torch's conversion),
    a weight dequantized per 128 x 128 block (masked edges), and the w8a8 block-scaled
    matmul (SGLang's kernel) against the dequantized product."""
    m = _unsloth("fp8")
    x = randn(8, 512) * 5
    x[1, :128] = 0                                    # an all-zero block keeps scale 1
    y, s = m.act_quant(x, 128)
    blocks = x.reshape(8, 4, 128).double()
    s_ref = blocks.abs().amax(-1) / 448.0
    s_ref = torch.where(s_ref == 0, torch.ones_like(s_ref), s_ref)
    chk.close("act scale", s.double(), s_ref, atol=0, rtol=1e-6)
    y_ref = (x.reshape(8, 4, 128) / s_ref.float()[..., None]).to(torch.float8_e4m3fn).reshape(8, 512)
    chk.equal("act e4m3 bytes", y.view(torch.uint8), y_ref.view(torch.uint8))

    w, ws = (randn(300, 260) * 100).to(torch.float8_e4m3fn), torch.rand(3, 3) + 0.5
    out = torch.empty(300, 260, dtype=torch.bfloat16)
    m.weight_dequant_kernel[(3, 3)](w, ws, out, 300, 260, BLOCK_SIZE=128)
    per_element = ws.double().repeat_interleave(128, 0).repeat_interleave(128, 1)[:300, :260]
    chk.equal("weight dequant", out, (w.double() * per_element).to(torch.bfloat16))

    M, N, K = 50, 384, 512
    a, a_s = randn(M, K).to(torch.float8_e4m3fn), torch.rand(M, K // 128) + 0.5
    b, b_s = randn(N, K).to(torch.float8_e4m3fn), torch.rand(N // 128, K // 128) + 0.5
    c = m.w8a8_block_fp8_matmul_triton(a, b, a_s, b_s, [128, 128], torch.float32)
    a_ref = a.double() * a_s.double().repeat_interleave(128, 1)
    b_ref = b.double() * b_s.double().repeat_interleave(128, 0).repeat_interleave(128, 1)
    chk.close_to_scale("w8a8 matmul", c, a_ref @ b_ref.T, 1e-5)


def _unsloth_routing(experts=4, tokens=37, topk=2):
    """Each token's top-k experts; the (token, slot) pairs in expert order (the index
    token * topk + slot of each, as `gather_indices`); tokens per expert (`m_sizes`)."""
    chosen = torch.stack([torch.randperm(experts)[:topk] for _ in range(tokens)]).reshape(-1)
    order = torch.sort(chosen, stable=True).indices
    return chosen, order.to(torch.int32), torch.bincount(chosen, minlength=experts).to(torch.int32)


@case("unsloth.moe_grouped_gemm")
def _(U, chk):
    """The MoE grouped GEMM forward (X in expert order, or gathered from token order: permute_x;
    Y in expert order, or scattered back to token order: permute_y; W through a tensor
    descriptor: use_tma_load_w) in fp32 and bf16, then its dX and dW kernels, against
    per-pair products in fp64. Persistent kernels (a grid of NUM_SMS programs) looping over
    the experts' tiles."""
    import triton
    fwd = _unsloth("moe.grouped_gemm.kernels.forward")
    bwd = _unsloth("moe.grouped_gemm.kernels.backward")
    # Device-side tensor descriptors take their scratch from Triton's allocator.
    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8))
    experts, tokens, topk, K, N = 4, 37, 2, 128, 96
    chosen, gather, m_sizes = _unsloth_routing(experts, tokens, topk)
    pair = gather.long()
    token, expert = pair // topk, chosen[pair]
    blocks = dict(NUM_SMS=2, BLOCK_SIZE_M=32, BLOCK_SIZE_N=32, BLOCK_SIZE_K=32)
    shape = dict(NUM_EXPERTS=experts, NUM_TOKENS=tokens, TOPK=topk, N=N, K=K)

    def to_tokens(rows):                               # expert order -> token * topk + slot order
        out = torch.empty_like(rows)
        out[pair] = rows
        return out

    for dtype, tol in ((torch.float32, 1e-5), (torch.bfloat16, 1e-2)):
        x, w = randn(tokens, K, dtype=dtype), (randn(experts, N, K) / 8).to(dtype)
        ref = torch.stack([x[t].double() @ w[e].double().T for t, e in zip(token, expert)])
        for permute_x, permute_y, tma_w in ((False, False, False), (True, False, False), (False, True, False),
                                            (True, False, True)):
            y = torch.empty(tokens * topk, N, dtype=dtype)
            fwd._grouped_gemm_forward_kernel[(2,)](
                x_ptr=x if permute_x else x[token].contiguous(), w_ptr=w, y_ptr=y, m_sizes_ptr=m_sizes,
                gather_indices_ptr=gather, topk_weights_ptr=None, PERMUTE_X=permute_x, PERMUTE_Y=permute_y,
                USE_TMA_LOAD_W=tma_w, **shape, **blocks)
            chk.close_to_scale(f"y[{dtype}, permute_x={permute_x}, permute_y={permute_y}, tma_w={tma_w}]",
                               y, to_tokens(ref) if permute_y else ref, tol)

    x, w, dy = randn(tokens, K), randn(experts, N, K) / 8, randn(tokens * topk, N)
    dx_ref = torch.stack([dy[i].double() @ w[e].double() for i, e in enumerate(expert)])
    for permute_x, permute_y in ((False, False), (False, True), (True, False)):
        dx = torch.zeros(tokens * topk, K)
        bwd._grouped_gemm_dX_kernel[(2,)](dY_ptr=to_tokens(dy) if permute_y else dy, w_ptr=w, dX_ptr=dx,
                                          gather_indices_ptr=gather, m_sizes_ptr=m_sizes, PERMUTE_X=permute_x,
                                          PERMUTE_Y=permute_y, **shape, **blocks)
        chk.close_to_scale(f"dX[permute_x={permute_x}, permute_y={permute_y}]", dx,
                           to_tokens(dx_ref) if permute_x else dx_ref, 1e-5)
    dw_ref = torch.zeros(experts, N, K, dtype=torch.float64)
    for i, e in enumerate(expert):
        dw_ref[e] += torch.outer(dy[i].double(), x[token[i]].double())
    for permute_x, permute_y in ((False, False), (True, False), (False, True)):
        dw = torch.zeros(experts, N, K)
        bwd._grouped_gemm_dW_kernel[(2,)](x_ptr=x if permute_x else x[token].contiguous(),
                                          dY_ptr=to_tokens(dy) if permute_y else dy, dW_ptr=dw, m_sizes_ptr=m_sizes,
                                          gather_indices_ptr=gather, PERMUTE_X=permute_x, PERMUTE_Y=permute_y,
                                          **shape, **blocks)
        chk.close_to_scale(f"dW[permute_x={permute_x}, permute_y={permute_y}]", dw, dw_ref, 1e-5)


# ------------------------------------------------------------------------------ vLLM


@case("unsloth.mxfp4_decode")
def _(U, chk):
    """The MXFP4 tile decode of unsloth_zoo's MXFP4 grouped GEMM (unsloth_zoo.mxfp4_gemm), through
    the library's own probe kernel, which its GPU path runs to choose between two inline-PTX
    decoders: integer bit moves with `fma.rn.bf16x2` (four bytes per register, pack = 4) and
    the scaled conversion `cvt.rn.bf16x2.e2m1x2.scaled::n2::ue8m0` (predicated fix-up for scale
    255). Every byte with every scale (65536 rows of 16 different bytes), both decoders exactly
    against torch: e2m1 value * 2^(scale - 127) in fp64, rounded to bf16, low nibble first;
    scale 255 gives value * 2^128, as the library's reference does."""
    from unsloth_zoo.mxfp4_gemm import _decode_probe_kernel
    rows = torch.arange(65536)
    blocks = ((rows[:, None] + 37 * torch.arange(16)) % 256).to(torch.uint8)
    scales = (rows // 256).to(torch.uint8)
    grid = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    table = torch.tensor([(-1.0 if c & 8 else 1.0) * grid[c & 7] for c in range(16)], dtype=torch.float64)
    byte = blocks.long()
    value = torch.stack([table[byte & 15], table[byte >> 4]], dim=-1).reshape(65536, 32)
    ref = (value * torch.exp2(scales.double() - 127)[:, None]).bfloat16()
    for cvt in (False, True):
        out = torch.empty(65536, 32, dtype=torch.bfloat16)
        _decode_probe_kernel[(1024,)](blocks, scales, out, CVT=cvt, enable_fp_fusion=True)
        chk.equal("cvt.scaled" if cvt else "fma.bf16x2", out.view(torch.int16), ref.view(torch.int16))
