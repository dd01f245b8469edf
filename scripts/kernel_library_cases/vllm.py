"""vLLM's Triton attention ops (vllm.v1.attention.ops), through their own Python functions:
the unified attention of its V1 engine (variable-length queries over a paged KV cache) and
the split-KV decode attention, against softmax attention in fp64 over the same pages; and,
further down, its MoE, sampling, quantization and KV-cache kernels and an inline-PTX fp8 byte
decoder."""
import contextlib
import importlib
import os
import sys
from pathlib import Path

import torch

from kernel_libraries import _attention_ref, case, _merged_states_ref, randn, tile_probe


def _paged_kv(pages, page_size, kv_heads, head_dim, lens, dtype=torch.float32):
    """A paged K and V cache, and for each sequence its pages in a random order."""
    k = randn(pages, page_size, kv_heads, head_dim, dtype=dtype)
    v = randn(pages, page_size, kv_heads, head_dim, dtype=dtype)
    per_seq = max(-(-n // page_size) for n in lens)
    table = torch.stack([torch.randperm(pages)[:per_seq] for _ in lens]).to(torch.int32)
    return k, v, table


def _paged_attention_ref(q, k, v, table, seq, kv_len, scale, window=-1, softcap=0.0, sink=None, causal=True):
    """_attention_ref of the queries `q`, the last q_len positions of a sequence of kv_len
    tokens, over that sequence's pages of `k`, `v` [pages, page_size, kv_heads, dim]
    (row `seq` of `table`); causal, or with causal=False over every key."""
    pages = table[seq, :-(-kv_len // k.shape[1])].long()
    keys, values = (t[pages].reshape(-1, *t.shape[2:])[:kv_len] for t in (k, v))
    return _attention_ref(q, keys, values, scale, kv_len - q.shape[0] if causal else None, window, softcap, sink)


@case("vllm.unified_attention")
def _(V, chk):
    """A decode step, a short and a long prefill chunk in one batch; grouped-query heads;
    fp32, bf16, fp16; a sliding window, soft-capping, attention sinks; head size 128 with
    64-token pages."""
    from vllm.v1.attention.ops.triton_unified_attention import unified_attention
    variants = [dict(dtype=torch.float32), dict(dtype=torch.bfloat16), dict(dtype=torch.float16),
                dict(window=7), dict(softcap=20.0), dict(sinks=True),
                dict(heads=4, kv_heads=4, dim=128, page=32, q_lens=(3, 64), kv_lens=(100, 64))]
    for variant in variants:
        o = dict(dtype=torch.float32, heads=8, kv_heads=2, dim=64, page=16, q_lens=(1, 5, 17), kv_lens=(30, 20, 17),
                 window=-1, softcap=0.0, sinks=False)
        o.update(variant)
        k, v, table = _paged_kv(40, o["page"], o["kv_heads"], o["dim"], o["kv_lens"], o["dtype"])
        starts = torch.tensor((0,) + o["q_lens"]).cumsum(0).to(torch.int32)
        q = randn(int(starts[-1]), o["heads"], o["dim"], dtype=o["dtype"])
        out, scale = torch.empty_like(q), o["dim"] ** -0.5
        sink = randn(o["heads"]) if o["sinks"] else None
        unified_attention(q=q, k=k, v=v, out=out, cu_seqlens_q=starts, max_seqlen_q=max(o["q_lens"]),
                          seqused_k=torch.tensor(o["kv_lens"], dtype=torch.int32), max_seqlen_k=max(o["kv_lens"]),
                          softmax_scale=scale, causal=True, window_size=(o["window"], -1), block_table=table,
                          softcap=o["softcap"], q_descale=None, k_descale=None, v_descale=None, sinks=sink)
        ref = torch.cat([_paged_attention_ref(q[starts[i]:starts[i + 1]], k, v, table, i, n, scale, o["window"],
                                              o["softcap"], sink) for i, n in enumerate(o["kv_lens"])])
        tol = 1e-5 if o["dtype"] == torch.float32 else 1e-2
        chk.close_to_scale(str(variant), out.double(), ref, tol)


@case("vllm.decode_attention")
def _(V, chk):
    """The split-KV decode kernels (a stage per KV split, then their merge): one query token
    per sequence, multi-head and grouped-query (the grouped kernel), soft-capping, bf16."""
    from vllm.v1.attention.ops.triton_decode_attention import decode_attention_fwd
    lens, splits, dim, page = (30, 7, 64), 4, 64, 16
    for heads, kv_heads, softcap, dtype in ((8, 8, 0.0, torch.float32), (8, 2, 0.0, torch.float32),
                                            (16, 1, 30.0, torch.float32), (8, 2, 0.0, torch.bfloat16)):
        k, v, table = _paged_kv(40, page, kv_heads, dim, lens, dtype)
        q = randn(len(lens), heads, dim, dtype=dtype)
        out, lse = torch.empty_like(q), torch.empty(len(lens), heads)
        logits = torch.empty(len(lens), heads, splits, dim + 1)
        decode_attention_fwd(q, k, v, out, lse, table, torch.tensor(lens, dtype=torch.int32), logits, splits,
                             dim ** -0.5, page, softcap)
        ref = torch.cat([_paged_attention_ref(q[i:i + 1], k, v, table, i, n, dim ** -0.5, softcap=softcap)
                         for i, n in enumerate(lens)])
        tol = 1e-5 if dtype == torch.float32 else 1e-2
        chk.close_to_scale(f"heads={heads}, kv_heads={kv_heads}, softcap={softcap}, {dtype}", out.double(), ref, tol)


@case("vllm.prefix_prefill")
def _(V, chk):
    """Prefill of new tokens after a cached prefix (prefix caching, chunked prefill): queries
    attend to the context in the paged cache (K [pages, heads, dim / 8, page, 8], V [pages,
    heads, dim, page], read through each sequence's block table) and causally to the new
    tokens, passed dense; sequences with 30, 0 and 20 cached tokens and 1, 5 and 17 new ones;
    grouped-query heads; fp32, bf16, fp16; a sliding window of 8 keys; attention sinks."""
    from vllm.v1.attention.ops.prefix_prefill import context_attention_fwd
    heads, kv_heads, dim, page, q_lens, ctx_lens = 8, 2, 64, 16, (1, 5, 17), (30, 0, 20)
    kv_lens = tuple(c + n for c, n in zip(ctx_lens, q_lens))
    for variant in (dict(dtype=torch.float32), dict(dtype=torch.bfloat16), dict(dtype=torch.float16),
                    dict(sliding_window=8), dict(sinks=True)):
        dtype = variant.get("dtype", torch.float32)
        k_pages, v_pages, table = _paged_kv(20, page, kv_heads, dim, kv_lens, dtype)
        starts = torch.tensor((0, ) + q_lens).cumsum(0).to(torch.int32)
        q = randn(int(starts[-1]), heads, dim, dtype=dtype)
        k_new, v_new = randn(int(starts[-1]), kv_heads, dim, dtype=dtype), randn(int(starts[-1]), kv_heads, dim, dtype=dtype)
        for i, c in enumerate(ctx_lens):               # the new tokens in the cache too, for the reference
            for j in range(q_lens[i]):
                pos = c + j
                k_pages[table[i, pos // page], pos % page] = k_new[starts[i] + j]
                v_pages[table[i, pos // page], pos % page] = v_new[starts[i] + j]
        k_cache = k_pages.reshape(20, page, kv_heads, dim // 8, 8).permute(0, 2, 3, 1, 4).contiguous()
        v_cache = v_pages.permute(0, 2, 3, 1).contiguous()
        sink = randn(heads) if variant.get("sinks") else None
        out, one = torch.empty_like(q), torch.tensor(1.0)
        context_attention_fwd(q, k_new, v_new, out, "auto", k_cache, v_cache, table, starts,
                              torch.tensor(kv_lens, dtype=torch.int32), max(kv_lens), max(q_lens), one, one,
                              sliding_window=variant.get("sliding_window"), sinks=sink)
        window = variant.get("sliding_window", 0) - 1    # vLLM's window counts the query's own key
        ref = torch.cat([_paged_attention_ref(q[starts[i]:starts[i + 1]], k_pages, v_pages, table, i, n, dim ** -0.5,
                                              window=window, sink=sink) for i, n in enumerate(kv_lens)])
        tol = 1e-5 if dtype == torch.float32 else 1e-2
        chk.close_to_scale(str(variant), out.double(), ref, tol)


@case("vllm.prefill_attention")
def _(V, chk):
    """The prefill attention over packed variable-length sequences (lengths 17, 1, 64, 33),
    causal and not, grouped-query heads, head sizes 64, 80 (padded) and 128, fp32/bf16/fp16,
    against fp64 softmax attention per sequence. Output rows start as NaN."""
    from vllm.v1.attention.ops.triton_prefill_attention import context_attention_fwd
    lens = torch.tensor([17, 1, 64, 33], dtype=torch.int32)
    starts = torch.cat([torch.zeros(1, dtype=torch.int32), lens.cumsum(0)[:-1].to(torch.int32)])
    for dtype, causal, heads, kv_heads, dim in ((torch.float32, True, 8, 2, 64), (torch.float32, False, 4, 4, 80),
                                                (torch.bfloat16, True, 8, 8, 128), (torch.float16, True, 6, 2, 64)):
        n = int(lens.sum())
        q = randn(n, heads, dim, dtype=dtype)
        k, v = randn(n, kv_heads, dim, dtype=dtype), randn(n, kv_heads, dim, dtype=dtype)
        out = torch.full_like(q, float("nan"))
        context_attention_fwd(q, k, v, out, starts, lens, int(lens.max()), is_causal=causal)
        one_page = torch.zeros(1, 1, dtype=torch.int32)      # each sequence as a single page
        ref = torch.cat([_paged_attention_ref(q[s:s + length], k[None, s:s + length], v[None, s:s + length], one_page,
                                              0, length, dim ** -0.5, causal=causal)
                         for s, length in zip(starts.tolist(), lens.tolist())])
        tol = 1e-5 if dtype == torch.float32 else 1e-2
        chk.close_to_scale(f"{dtype}, causal={causal}, heads={heads}/{kv_heads}, dim={dim}", out.double(), ref, tol)


# vLLM's other kernels: the fused MoE GEMM, the merge of two partial attention results, the
# speculative-decoding rejection sampler and the combined top-k/top-p mask. The modules of the
# first, third and fourth import vLLM's serving stack (zmq, openai, msgspec, ...), which the
# `--no-deps` install leaves out; `_vllm_kernels` loads their @triton.jit functions from the
# installed file's own text instead, and each case launches them as the module's wrapper does.

def _vllm_kernels(relpath):
    """The @triton.jit functions and upper-case constants of a vLLM source file, by name.
    The file's top-level `triton.jit`-decorated functions and NAME = ... constants are
    compiled from the installed file, at its own path and line numbers (Triton reads a
    kernel's source back through them), in a namespace holding torch, triton and tl; the
    rest of the module (its imports, its Python wrappers) is not run."""
    import ast
    import triton
    import triton.language as tl
    path = Path(importlib.util.find_spec("vllm").origin).parent / relpath
    tree = ast.parse(path.read_text())
    keep = [node for node in tree.body
            if (isinstance(node, ast.FunctionDef)
                and any(ast.unparse(d).startswith("triton.jit") for d in node.decorator_list))
            or (isinstance(node, ast.Assign)
                and all(isinstance(t, ast.Name) and t.id.isupper() for t in node.targets))]
    namespace = {"torch": torch, "triton": triton, "tl": tl, "__name__": "vllm_kernels." + relpath}
    exec(compile(ast.Module(body=keep, type_ignores=[]), str(path), "exec"), namespace)
    return namespace


def _moe_blocks(topk_ids, block_m, experts):
    """What vLLM's moe_align_block_size computes: token slots (token * top_k + k) grouped by
    expert, each group padded to block_m with the sentinel numel, the expert of each block,
    and the padded length; two padding blocks of expert -1 follow, past that length."""
    flat = topk_ids.reshape(-1)
    ids, block_experts = [], []
    for e in range(experts):
        slots = (flat == e).nonzero().reshape(-1).tolist()
        slots += [flat.numel()] * (-len(slots) % block_m)
        ids += slots
        block_experts += [e] * (len(slots) // block_m)
    padded = len(ids)
    ids += [flat.numel()] * 2 * block_m
    block_experts += [-1, -1]
    return (torch.tensor(ids, dtype=torch.int32), torch.tensor(block_experts, dtype=torch.int32),
            torch.tensor([padded], dtype=torch.int32))


def _launch_fused_moe(kernel, a, w, c, router, ids, compute, *, bias=None, a_scale=None, w_scale=None,
                      scale_strides=(0, 0, 0, 0, 0), group=(0, 0), weighted=True, naive=False, td=False,
                      swap=False, quant="none", bm=16, bn=32, bk=32):
    """Launches vLLM's fused_moe_kernel with the arguments its `invoke_fused_moe_triton_kernel`
    passes: the token slots sorted into blocks by expert (`_moe_blocks`), or with `naive` one
    block per token slot; `quant` is "none", "fp8 block", "int8 w8a16" or "int8 w8a8" (the
    last with per-channel scales)."""
    import triton
    if naive:
        slots, block_experts = None, ids.reshape(-1)
        em = ids.numel() * bm
        padded = torch.tensor([em], dtype=torch.int32)
    else:
        slots, block_experts, padded = _moe_blocks(ids, bm, w.shape[0])
        em = slots.numel()
    n, k = w.shape[1], w.shape[2]
    grid = (triton.cdiv(em, bm) * triton.cdiv(n, bn), )
    kernel[grid](a, w, c, bias, a_scale, w_scale, router, slots, block_experts, padded, n, k, em, ids.numel(),
                 a.stride(0), a.stride(1), w.stride(0), w.stride(2), w.stride(1), c.stride(1), c.stride(2),
                 *scale_strides, bias.stride(0) if bias is not None else 0, bias.stride(1) if bias is not None else 0,
                 *group, MUL_ROUTED_WEIGHT=weighted, top_k=ids.shape[1], compute_type=compute,
                 use_fp8_w8a8=quant == "fp8 block", use_int8_w8a8=quant == "int8 w8a8",
                 use_int8_w8a16=quant == "int8 w8a16", per_channel_quant=quant == "int8 w8a8",
                 naive_block_assignment=naive, HAS_BIAS=bias is not None, BLOCK_SIZE_K=bk, SWAP_AB=swap, USE_TD=td,
                 BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, GROUP_SIZE_M=1, SPLIT_K=1)


@case("vllm.fused_moe")
def _(V, chk):
    """The fused MoE kernel (unquantized): each token's hidden state times the weights of its
    top-k experts, through expert-sorted token blocks and through the naive one-block-per-
    slot assignment; the router weight applied or not, a bias, the tensor-descriptor path;
    fp32, bf16, fp16; K and N not multiples of the blocks; then quantized operands
    (`_vllm_fused_moe_quantized`). Output rows the kernel must not write start as NaN."""
    import triton.language as tl
    kernel = _vllm_kernels("model_executor/layers/fused_moe/fused_moe.py")["fused_moe_kernel"]
    compute = {torch.float32: tl.float32, torch.bfloat16: tl.bfloat16, torch.float16: tl.float16}
    variants = [dict(), dict(naive=True, tokens=3, experts=16), dict(k=100, n=70, weighted=False),
                dict(bias=True), dict(td=True, k=100), dict(dtype=torch.bfloat16),
                dict(dtype=torch.float16, naive=True)]
    for variant in variants:
        o = dict(tokens=33, k=128, n=96, experts=4, top_k=2, dtype=torch.float32, naive=False, weighted=True,
                 bias=False, td=False)
        o.update(variant)
        a = randn(o["tokens"], o["k"], dtype=o["dtype"])
        w = (randn(o["experts"], o["n"], o["k"]) / o["k"] ** 0.5).to(o["dtype"])
        bias = randn(o["experts"], o["n"], dtype=o["dtype"]) if o["bias"] else None
        c = torch.full((o["tokens"], o["top_k"], o["n"]), float("nan"), dtype=o["dtype"])
        router, ids = torch.topk(torch.softmax(randn(o["tokens"], o["experts"]), -1), o["top_k"])
        ids = ids.to(torch.int32)
        _launch_fused_moe(kernel, a, w, c, router, ids, compute[o["dtype"]], bias=bias,
                          weighted=o["weighted"], naive=o["naive"], td=o["td"])
        ref = torch.einsum("mk,mtnk->mtn", a.double(), w.double()[ids.long()])
        if bias is not None:
            ref = ref + bias.double()[ids.long()]
        if o["weighted"]:
            ref = ref * router.double()[..., None]
        tol = 1e-5 if o["dtype"] == torch.float32 else 1e-2
        chk.close_to_scale(str(variant), c.double(), ref, tol)
    _vllm_fused_moe_quantized(kernel, chk)


def _vllm_fused_moe_quantized(kernel, chk):
    """The same kernel on quantized operands, bf16 out: fp8 e4m3 activations and weights with
    64 x 64 block scales (plain and SWAP_AB, the transposed dot), int8 weights with a scale
    per output channel on bf16 activations (w8a16), int8 activations and weights with
    per-token and per-channel scales (w8a8). The reference multiplies the dequantized
    operands in fp64."""
    import triton.language as tl
    tokens, k, n, experts, top_k, group = 33, 256, 192, 4, 2, 64
    a, w = randn(tokens, k), randn(experts, n, k) / k ** 0.5
    router, ids = torch.topk(torch.softmax(randn(tokens, experts), -1), top_k)
    ids = ids.to(torch.int32)
    for mode, swap in (("fp8 block", False), ("fp8 block", True), ("int8 w8a16", False), ("int8 w8a8", False)):
        if mode == "fp8 block":
            a_blocks = a.view(tokens, k // group, group)
            w_blocks = w.view(experts, n // group, group, k // group, group)
            a_scale = a_blocks.abs().amax(-1) / 448
            w_scale = w_blocks.abs().amax((2, 4)) / 448
            aq = (a_blocks / a_scale[..., None]).to(torch.float8_e4m3fn).view(tokens, k)
            wq = (w_blocks / w_scale[:, :, None, :, None]).to(torch.float8_e4m3fn).view(experts, n, k)
            a_ref = (aq.double().view(tokens, k // group, group) * a_scale[..., None].double()).view(tokens, k)
            w_ref = (wq.double().view(experts, n // group, group, k // group, group)
                     * w_scale[:, :, None, :, None].double()).view(experts, n, k)
            strides, groups = (a_scale.stride(0), a_scale.stride(1), w_scale.stride(0), w_scale.stride(2),
                               w_scale.stride(1)), (group, group)
        elif mode == "int8 w8a16":
            w_scale = (w.abs().amax(-1) / 127).to(torch.bfloat16)
            wq = torch.round(w / w_scale.float()[..., None]).to(torch.int8)
            aq, a_scale = a.to(torch.bfloat16), None
            a_ref, w_ref = aq.double(), wq.double() * w_scale.double()[..., None]
            strides, groups = (0, 0, w_scale.stride(0), 0, w_scale.stride(1)), (0, 0)
        else:
            a_scale, w_scale = a.abs().amax(-1, keepdim=True) / 127, w.abs().amax(-1, keepdim=True) / 127
            aq, wq = torch.round(a / a_scale).to(torch.int8), torch.round(w / w_scale).to(torch.int8)
            a_ref, w_ref = aq.double() * a_scale.double(), wq.double() * w_scale.double()
            strides, groups = (a_scale.stride(0), a_scale.stride(1), w_scale.stride(0), w_scale.stride(2),
                               w_scale.stride(1)), (0, 0)
        c = torch.full((tokens, top_k, n), float("nan"), dtype=torch.bfloat16)
        _launch_fused_moe(kernel, aq, wq, c, router, ids, tl.bfloat16, a_scale=a_scale, w_scale=w_scale,
                          scale_strides=strides, group=groups, swap=swap, quant=mode, bn=64, bk=64)
        ref = torch.einsum("mk,mtnk->mtn", a_ref, w_ref[ids.long()]) * router.double()[..., None]
        chk.close_to_scale(f"{mode}, SWAP_AB={swap}", c.double(), ref, 1e-2)


@case("vllm.merge_attn_states")
def _(V, chk):
    """Two partial attention results (a prefix and a suffix over disjoint keys) merged by
    their log-sum-exps, as chunked prefill does; an infinite LSE counts as an empty part;
    the LSE tensors strided views; fp32, bf16, fp16, head sizes 64, 80 (padded) and 128."""
    from vllm.v1.attention.ops.triton_merge_attn_states import merge_attn_states
    for tokens, heads, dim, dtype in ((7, 4, 64, torch.float32), (5, 3, 80, torch.bfloat16),
                                      (9, 2, 128, torch.float16)):
        prefix, suffix = randn(tokens, heads, dim, dtype=dtype), randn(tokens, heads, dim, dtype=dtype)
        prefix_lse = randn(tokens, heads).T * 3                 # [heads, tokens], a transposed view
        suffix_lse = randn(heads, tokens) * 3
        prefix_lse[0, 0], suffix_lse[1, 1] = float("inf"), float("-inf")
        out, out_lse = torch.empty(tokens, heads, dim, dtype=dtype), torch.empty(heads, tokens)
        merge_attn_states(out, prefix, prefix_lse, suffix, suffix_lse, out_lse)
        ref, ref_lse = _merged_states_ref(prefix, prefix_lse.T, suffix, suffix_lse.T)
        tol = 1e-5 if dtype == torch.float32 else 1e-2
        chk.close_to_scale(f"out {dtype}", out.double(), ref, tol)
        chk.close(f"lse {dtype}", out_lse.double(), ref_lse.T, atol=1e-5, rtol=1e-5)


@case("vllm.rejection_sampler")
def _(V, chk):
    """Speculative decoding's rejection sampling: the greedy kernel (a draft token kept while
    it equals the target's argmax), the random kernel (kept while target/draft probability
    >= a uniform draw; a padded -1 draft rejected), both appending the bonus token when all
    drafts are kept, and the recovered-token kernel (argmax of max(target - draft, 0) or of
    the target without the draft token, times exponential noise) over a 1000-token
    vocabulary in tiles of 256; requests with 0 to 4 draft tokens."""
    k = _vllm_kernels("v1/sample/rejection_sampler.py")
    drafts_per_req, max_spec, vocab = torch.tensor([4, 0, 2, 4, 1, 3]), 4, 1000
    reqs, ends = len(drafts_per_req), drafts_per_req.cumsum(0).to(torch.int32)
    n = int(ends[-1])
    greedy = torch.tensor([True, False, True, False, True, False])
    # Greedy: request 0 rejects its second draft, request 4 its only one, request 2 keeps both.
    # Random: request 3 keeps all four (uniform draws of 0), request 5 a padded -1 second
    # draft (its first decided by a uniform draw), request 1 has no draft: the bonus only.
    draft = torch.randint(0, vocab, (n, ), dtype=torch.int32)
    draft[12] = -1
    argmax = draft.long().clone()
    argmax[[1, 10]] += 1
    bonus = torch.randint(0, vocab, (reqs, ), dtype=torch.int32)
    target_p, draft_p = torch.softmax(randn(n, vocab) * 3, -1), torch.softmax(randn(n, vocab) * 3, -1)
    uniform, recovered = torch.rand(n), torch.randint(0, vocab, (n, ), dtype=torch.int32)
    uniform[6:10] = 0
    out = torch.full((reqs, max_spec + 1), -7, dtype=torch.int32)
    k["rejection_greedy_sample_kernel"][(reqs, )](out, ends, draft, argmax, bonus, greedy, max_spec, None, None,
                                                  SYNTHETIC_MODE=False)
    k["rejection_random_sample_kernel"][(reqs, )](out, ends, draft, draft_p, target_p, bonus, recovered, uniform,
                                                  greedy, max_spec, vocab, None, NO_DRAFT_PROBS=False,
                                                  SYNTHETIC_MODE=False)
    ref, start = torch.full_like(out, -7), 0
    for r in range(reqs):
        count, rejected = int(drafts_per_req[r]), False
        for pos in range(count):
            t, d = start + pos, int(draft[start + pos])
            if greedy[r]:
                token, rejected = int(argmax[t]), d != int(argmax[t])
            else:
                kept = d >= 0 and float(target_p[t, d]) / float(draft_p[t, d]) >= float(uniform[t])
                token, rejected = (d if kept else int(recovered[t])), not kept
            ref[r, pos] = token
            if rejected:
                break
        if not rejected:
            ref[r, count] = bonus[r]
        start += count
    chk.equal("accepted tokens", out, ref)
    inv_q = 1 / torch.empty(reqs, vocab).exponential_()
    for no_draft_probs in (False, True):
        got = torch.full((n, ), -1, dtype=torch.int32)
        k["sample_recovered_tokens_kernel"][(reqs, max_spec)](got, ends, draft, None if no_draft_probs else draft_p,
                                                              target_p, inv_q, vocab, BLOCK_SIZE=256,
                                                              NO_DRAFT_PROBS=no_draft_probs, USE_FP64_GUMBEL=False)
        want = []
        for t in range(n):
            r = int(torch.searchsorted(ends, t, right=True))
            if no_draft_probs:
                prob = target_p[t].clone()
                if draft[t] >= 0:
                    prob[draft[t]] = 0
            else:
                prob = (target_p[t] - draft_p[t]).clamp(min=0)
            want.append(int(torch.argmax(prob * inv_q[r])))
        chk.equal(f"recovered tokens (no draft probs: {no_draft_probs})", got, torch.tensor(want, dtype=torch.int32))


@case("vllm.top_k_top_p")
def _(V, chk):
    """The sampler's combined top-k / top-p mask (pivot search over the vocabulary in tiles,
    as vLLM launches it on CPU: tiles of 256, one program per row up to the core count):
    top-k alone, top-p alone and both, vocabularies of 1000 to 50257, one row whose k covers
    the vocabulary; the kept set must equal a sort-based mask's and keep its logits exactly."""
    import os
    k = _vllm_kernels("v1/sample/ops/topk_topp_triton.py")
    tables = (torch.tensor(k["_PERCENTILE_TO_STD_TABLE"]), torch.tensor(k["_NORMAL_CDF_TO_SIGMA_TABLE"]))
    for batch, vocab, use_k, use_p in ((4, 1000, True, False), (4, 1000, False, True), (8, 5000, True, True),
                                       (2, 50257, True, True)):
        logits = randn(batch, vocab) * 3
        top_k = torch.randint(1, 200, (batch, ), dtype=torch.int32) if use_k else None
        if use_k:
            top_k[0] = vocab
        top_p = torch.rand(batch) * 0.9 + 0.05 if use_p else None
        programs = min(os.cpu_count() or 1, batch)
        got = logits.clone()
        k["_topk_topp_kernel"][(programs, )](got, got.stride(0), torch.empty(programs, vocab), *tables,
                                             top_k if use_k else got, top_p if use_p else got, batch,
                                             VOCAB_SIZE=vocab, MASK_VALUE=float("-inf"), BLOCK_SIZE=256,
                                             BLOCK_SIZE_TRUNC=128, TOPK_ENABLED=use_k, TOPP_ENABLED=use_p,
                                             SPLIT_COVERS_PONLY=False)
        ordered, order = logits.sort(-1)                 # the sort-based mask, ascending
        if use_k:
            ordered = ordered.masked_fill(ordered < ordered.gather(1, (vocab - top_k.long())[:, None]), float("-inf"))
        if use_p:
            drop = ordered.softmax(-1).cumsum(-1) <= 1 - top_p[:, None]
            drop[:, -1] = False
            ordered = ordered.masked_fill(drop, float("-inf"))
        ref = torch.empty_like(logits).scatter_(-1, order, ordered)
        tag = f"batch={batch}, vocab={vocab}, k={use_k}, p={use_p}"
        chk.equal(f"kept set, {tag}", torch.isfinite(got), torch.isfinite(ref))
        chk.equal(f"kept logits, {tag}", got[torch.isfinite(ref)], logits[torch.isfinite(ref)])


# vLLM's quantized GEMMs and quantizers: AWQ's int4 weights, fp8 per-token-group quantization
# with its block-scaled GEMM, and compressed-tensors' scaled int8/fp8 GEMM. Their modules sit
# in packages whose __init__ imports the serving stack, so the kernels come from
# `_vllm_kernels` and are launched with the arguments of the module's own wrapper.

_AWQ_ORDER = (0, 4, 1, 5, 2, 6, 3, 7)          # nibble i of a packed word holds column _AWQ_ORDER[i]


def _awq_unpack(packed):
    """AWQ's int32 words [rows, cols / 8] as their 4-bit values [rows, cols], in column order."""
    nibbles = [(packed >> (4 * _AWQ_ORDER[i])) & 0xF for i in range(8)]
    return torch.stack(nibbles, -1).reshape(packed.shape[0], -1)


@case("vllm.awq")
def _(V, chk):
    """AWQ 4-bit weights (8 nibbles per int32 word in AWQ's interleaved order, unpacked with
    `tl.interleave` and per-column shifts): the dequantize kernel and the GEMM with split-K 1
    and 4 (partial sums added by the wrapper), groups of 64 and 128 rows, fp16 scales."""
    k = _vllm_kernels("model_executor/layers/quantization/awq_triton.py")
    import triton
    for K, N, group in ((256, 512, 128), (128, 256, 64)):
        qweight = torch.randint(-2**31, 2**31 - 1, (K, N // 8), dtype=torch.int32)
        qzeros = torch.randint(-2**31, 2**31 - 1, (K // group, N // 8), dtype=torch.int32)
        scales = torch.rand(K // group, N, dtype=torch.float16) * 0.1
        weight = ((_awq_unpack(qweight) - _awq_unpack(qzeros).repeat_interleave(group, 0)).double()
                  * scales.double().repeat_interleave(group, 0))
        out = torch.empty(K, N, dtype=torch.float16)
        k["awq_dequantize_kernel"][(triton.cdiv(N // 8, 32), triton.cdiv(K, 32))](
            qweight, scales, qzeros, group, out, N // 8, K, BLOCK_SIZE_X=32, BLOCK_SIZE_Y=32)
        chk.close_to_scale(f"dequantize K={K} N={N} group={group}", out.double(), weight, 1e-3)
        M = 33
        x = randn(M, K, dtype=torch.float16)
        for split in (1, 4):
            partial = torch.zeros(split, M, N, dtype=torch.float16)
            k["awq_gemm_kernel"][(triton.cdiv(M, 32) * triton.cdiv(N, 32), split)](
                x, qweight, partial, qzeros, scales, M, N, K, group, BLOCK_SIZE_M=32, BLOCK_SIZE_N=32,
                BLOCK_SIZE_K=32, SPLIT_K=split)
            chk.close_to_scale(f"gemm K={K} N={N} group={group} split_k={split}", partial.sum(0).double(),
                               x.double() @ weight, 1e-2)


@case("vllm.fp8_quant")
def _(V, chk):
    """fp8 e4m3 activations: per-token-group quantization (groups of 128, scales rounded up to
    a power of two or not; quantized values must match torch's conversion bit for bit), the
    GEMM of fp8 activations and weights with 128x128 block scales into fp16 and bf16, and
    compressed-tensors' scaled GEMM over int8 and fp8 with per-tensor or per-row/column scales,
    a bias, and its weight as a transposed view (B_T)."""
    import triton
    import triton.language as tl
    e4m3 = torch.float8_e4m3fn
    quant = _vllm_kernels("model_executor/layers/quantization/utils/fp8_utils.py")
    rows, cols, group = 37, 512, 128
    x = randn(rows, cols, dtype=torch.bfloat16) * 3
    for ue8m0 in (False, True):
        q, scales = torch.empty(rows, cols, dtype=e4m3), torch.empty(rows, cols // group)
        quant["_per_token_group_quant_fp8"][(rows * cols // group, )](
            x, q, scales, group, cols, x.stride(0), 1e-10, fp8_min=-448.0, fp8_max=448.0, use_ue8m0=ue8m0, BLOCK=group)
        g = x.float().reshape(rows, -1, group)
        ref_scales = g.abs().amax(-1).clamp_min(1e-10) * torch.tensor(1 / 448.0)   # the kernel's fp32 product
        if ue8m0:
            ref_scales = torch.exp2(torch.ceil(torch.log2(ref_scales)))
        chk.equal(f"group scales (ue8m0={ue8m0})", scales, ref_scales)
        ref_q = (g / ref_scales[..., None]).clamp(-448, 448).to(e4m3).reshape(rows, cols)
        chk.equal(f"quantized values (ue8m0={ue8m0})", q.view(torch.uint8), ref_q.view(torch.uint8))
    M, N, K = 45, 384, 512
    a, b = randn(M, K).to(e4m3), randn(N, K).to(e4m3)
    a_scales, b_scales = torch.rand(M, K // 128) + 0.5, torch.rand(N // 128, K // 128) + 0.5
    ref = ((a.double() * a_scales.double().repeat_interleave(128, 1))
           @ (b.double() * b_scales.double().repeat_interleave(128, 0).repeat_interleave(128, 1)).T)
    for out_dtype in (torch.float16, torch.bfloat16):
        c = torch.empty(M, N, dtype=out_dtype)
        quant["_w8a8_triton_block_scaled_mm"][(triton.cdiv(M, 64) * triton.cdiv(N, 128), )](
            a, b, c, a_scales, b_scales, M, N, K, 128, 128, a.stride(-2), a.stride(-1), b.stride(1), b.stride(0),
            c.stride(-2), c.stride(-1), a_scales.stride(-2), a_scales.stride(-1), b_scales.stride(1), b_scales.stride(0),
            BLOCK_SIZE_M=64, BLOCK_SIZE_N=128, BLOCK_SIZE_K=128, GROUP_SIZE_M=32)
        chk.close_to_scale(f"block-scaled GEMM into {out_dtype}", c.double(), ref, 1e-2)
    scaled_mm = _vllm_kernels("model_executor/layers/quantization/compressed_tensors/triton_scaled_mm.py")["scaled_mm_kernel"]
    M, K, N = 40, 256, 192
    for dtype, per_row, transposed in ((torch.int8, False, False), (torch.int8, True, True), (e4m3, False, True),
                                       (e4m3, True, False)):
        if dtype == torch.int8:
            a, b = torch.randint(-128, 128, (M, K), dtype=dtype), torch.randint(-128, 128, (K, N), dtype=dtype)
        else:
            a, b = randn(M, K).to(dtype), randn(K, N).to(dtype)
        if transposed:                                  # a checkpoint's [N, K] weight seen as [K, N]
            b = b.T.contiguous().T
        scale_a = torch.rand(M if per_row else 1, 1) * 1e-3
        scale_b = torch.rand(N if per_row else 1, 1) * 1e-2
        bias = randn(N) if per_row else None
        c = torch.empty(M, N)
        scaled_mm[(triton.cdiv(M, 32) * triton.cdiv(N, 64), )](
            a, b, scale_a, scale_b, c, bias, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
            c.stride(1), tl.int32 if dtype == torch.int8 else tl.float32, BLOCK_SIZE_M=32,
            BLOCK_SIZE_N=64, BLOCK_SIZE_K=64, BLOCK_SIZE_SCALE_A=32 if per_row else 1,
            BLOCK_SIZE_SCALE_B=64 if per_row else 1, USE_TD=False, B_T=transposed)
        ref = (a.double() @ b.double()) * scale_a.double() * scale_b.double().T + (bias.double() if per_row else 0)
        chk.close_to_scale(f"scaled GEMM {dtype}, per-row scales {per_row}, transposed weight {transposed}",
                           c.double(), ref, 1e-5)


@case("vllm.reshape_and_cache")
def _(V, chk):
    """The KV-cache write of each step: every token's K and V rows stored at its slot of a
    paged cache (a slot of -1, a padding token, writes nothing), in the flash layout
    [pages, page size, heads, dim] and the head-major one (K [pages, heads, dim / 8, page
    size, 8], V [pages, heads, dim, page size]); fp32 and bf16 inputs into a cache of the
    same type, or divided by a scale and stored into an fp8 e4m3 cache (the store converts)."""
    import triton
    kernel = _vllm_kernels("v1/attention/ops/triton_reshape_and_cache_flash.py")["reshape_and_cache_kernel_flash"]
    tokens, heads, dim, pages, page = 13, 4, 64, 6, 16
    for dtype in (torch.float32, torch.bfloat16):
        for fp8 in (False, True):
            for head_major in (False, True):
                k, v = randn(tokens, heads, dim, dtype=dtype), randn(tokens, heads, dim, dtype=dtype)
                slots = torch.randperm(pages * page)[:tokens]
                slots[3] = -1
                cache_dtype = torch.float8_e4m3fn if fp8 else dtype
                if head_major:
                    k_cache = torch.zeros(pages, heads, dim // 8, page, 8, dtype=cache_dtype)
                    v_cache = torch.zeros(pages, heads, dim, page, dtype=cache_dtype)
                    strides = dict(head_stride=k_cache.stride(1), dim_stride_k=k_cache.stride(2),
                                   dim_stride_v=v_cache.stride(2), x=8)
                else:
                    k_cache = torch.zeros(pages, page, heads, dim, dtype=cache_dtype)
                    v_cache = torch.zeros_like(k_cache)
                    strides = dict(head_stride=k_cache.stride(2), dim_stride_k=0, dim_stride_v=0, x=1)
                k_scale, v_scale = torch.tensor([0.5]), torch.tensor([2.0])
                n = heads * dim
                kernel[(tokens, triton.cdiv(n, 128))](
                    key_ptr=k, value_ptr=v, key_cache_ptr=k_cache, value_cache_ptr=v_cache, slot_mapping_ptr=slots,
                    k_scale=k_scale, v_scale=v_scale, key_stride=k.stride(0), value_stride=v.stride(0),
                    block_stride=k_cache.stride(0), page_stride=k_cache.stride(1), num_heads=heads, head_size=dim,
                    block_size=page, USE_HEAD_MAJOR_LAYOUT=head_major, INTERLEAVED_V_PACK_FACTOR=0, FP8_KV_CACHE=fp8,
                    TILE_SIZE=128, **strides)
                want_k = torch.zeros(pages, page, heads, dim, dtype=cache_dtype)
                want_v = torch.zeros_like(want_k)
                for t, slot in enumerate(slots.tolist()):
                    if slot >= 0:
                        kk, vv = (k[t].float() / 0.5, v[t].float() / 2.0) if fp8 else (k[t], v[t])
                        want_k[slot // page, slot % page] = kk.to(cache_dtype)
                        want_v[slot // page, slot % page] = vv.to(cache_dtype)
                if head_major:
                    got_k = k_cache.permute(0, 3, 1, 2, 4).reshape(pages, page, heads, dim)
                    got_v = v_cache.permute(0, 3, 1, 2)
                else:
                    got_k, got_v = k_cache, v_cache
                tag = f"{dtype}, fp8 cache {fp8}, head-major {head_major}"
                chk.equal(f"K cache, {tag}", got_k.float(), want_k.float())
                chk.equal(f"V cache, {tag}", got_v.float(), want_v.float())


@case("vllm.triton_kernels")
def _(V, chk):
    """triton_kernels, Triton's own kernel library for MoE (vendored by vLLM for gpt-oss):
    the routing (top-k over 8 to 128 experts with the softmax after or before it, a bitmatrix
    of the choices, histograms, the gather/scatter permutations) and matmul_ogs, its grouped
    GEMM: dense, batched, and per expert with the token rows gathered and the outputs
    scattered back and summed over each token's experts. Its launch heuristics know only
    CUDA and HIP, so `_triton_kernels` fixes its block sizes (its own override, `set_opt_flags`)."""
    with _triton_kernels() as (routing, matmul_ogs):
        for tokens, experts, top_k, softmax_first in ((300, 128, 4, False), (1000, 32, 2, True), (64, 8, 1, False)):
            logits = randn(tokens, experts)
            rd, gather, scatter = routing(logits, top_k, sm_first=softmax_first)
            values, chosen = logits.topk(top_k, -1)
            probs = (logits.softmax(-1).gather(1, chosen) if softmax_first else values.softmax(-1))
            chosen, order = chosen.sort(-1)             # each token's experts in expert order
            probs = probs.gather(1, order)
            slots = gather.src_indx.long()              # slot = token * top_k + its j-th expert
            tag = f"{tokens} tokens, {experts} experts, top {top_k}, softmax first {softmax_first}"
            chk.equal(f"histogram, {tag}", rd.expt_hist.long(), torch.bincount(chosen.reshape(-1), minlength=experts))
            chk.true(f"slots by expert, {tag}", bool((chosen.reshape(-1)[slots].diff() >= 0).all()),
                     "the gathered slots are not grouped by expert")
            chk.equal(f"inverse permutation, {tag}", gather.dst_indx.long()[slots], torch.arange(tokens * top_k))
            chk.equal(f"scatter indices, {tag}", scatter.src_indx, gather.dst_indx)
            chk.close(f"gate weights, {tag}", rd.gate_scal.double(), probs.reshape(-1)[slots].double())
        for dtype in (torch.float32, torch.bfloat16):
            tol = 1e-5 if dtype == torch.float32 else 1e-2
            x, w, b = randn(100, 256, dtype=dtype), randn(256, 192, dtype=dtype), randn(192)
            chk.close_to_scale(f"dense {dtype}", matmul_ogs(x, w, b).double(), x.double() @ w.double() + b.double(), tol)
            xb, wb = randn(3, 40, 128, dtype=dtype), randn(3, 128, 64, dtype=dtype)
            chk.close_to_scale(f"batched {dtype}", matmul_ogs(xb, wb, None).double(), xb.double() @ wb.double(), tol)
            tokens, experts, top_k = 64, 8, 2
            logits = randn(tokens, experts)
            rd, gather, scatter = routing(logits, top_k)
            x, w, b = randn(tokens, 128, dtype=dtype), randn(experts, 128, 96, dtype=dtype), randn(experts, 96)
            y = matmul_ogs(x, w, b, rd, gather_indx=gather, scatter_indx=scatter)
            chosen = logits.topk(top_k, -1).indices
            ref = sum(torch.einsum("td,tdn->tn", x.double(), w.double()[chosen[:, j]]) + b.double()[chosen[:, j]]
                      for j in range(top_k))
            chk.close_to_scale(f"experts gathered and scattered {dtype}", y.double(), ref, tol)


@contextlib.contextmanager
def _triton_kernels():
    """triton_kernels from vLLM's third_party folder, ready for CPU tensors: its SM count (a
    torch.cuda query) set to the core count, and its launch heuristics (CUDA and HIP only)
    replaced by fixed block sizes through its own `set_opt_flags`; yields (routing, matmul_ogs)."""
    folder = str(Path(importlib.util.find_spec("vllm").origin).parent / "third_party")
    sys.path.insert(0, folder)
    try:
        import triton_kernels.target_info as target_info
        from triton_kernels.matmul_ogs import matmul_ogs
        from triton_kernels.matmul_ogs_details import opt_flags
        from triton_kernels.routing import routing
        target_info.num_sms = lambda: os.cpu_count() or 1
        opt_flags.set_opt_flags(opt_flags.OptFlags(
            block_m=32, block_n=64, block_k=32, num_warps=4, num_stages=1, group_m=8, xcd_swizzle=1,
            w_cache_modifier=None, split_k=1, is_persistent=False, fused_scatter=False, idle_sms=0,
            epilogue_subtile=1, arch=None, target_kernel_kwargs={}))
        try:
            yield routing, matmul_ogs
        finally:
            opt_flags._opt_flags = None
    finally:
        sys.path.remove(folder)


# ------------------------------------------------------------------------------ SGLang


@case("vllm.qsa_fp8_bytes")
def _(V, chk):
    """The FP8 byte decode of vLLM's sparse paged GQA attention for GPUs without fp8 types
    (models/qwen4_exp/nvidia/ops/qsa.py, `_maybe_dequant`): inline PTX over pack = 4 (four
    bytes per 32-bit register; shf.r.wrap, lop3, prmt, and) that turns each e4m3 byte into the
    fp16 of its value * 2^-8. Every byte value in a [64, 32] tile in random order, exactly
    against torch's e4m3 decode; the two NaN codes decode to +-480 * 2^-8, as the file says."""
    dequant = _vllm_kernels("models/qwen4_exp/nvidia/ops/qsa.py")["_maybe_dequant"]
    codes = torch.arange(256).repeat(8)[torch.randperm(2048)].to(torch.uint8).reshape(64, 32)
    out = tile_probe(dequant, codes, torch.float16)
    value = codes.view(torch.float8_e4m3fn).float()
    value = torch.where(value.isnan(), torch.where(codes >= 128, -480.0, 480.0), value)
    chk.equal("fp16 of value * 2^-8", out, (value * 2.0**-8).half())
