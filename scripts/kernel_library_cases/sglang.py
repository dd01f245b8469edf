"""SGLang's Triton kernels (sglang.kernels.ops and a few in sglang.srt.layers), through their own
Python functions where those launch Triton on any device, else launched as the wrapper does."""
import sys
import types

import torch
import torch.nn.functional as F

from kernel_libraries import _attention_ref, case, _merged_states_ref, randn


@case("sglang.decode_attention")
def _(S, chk):
    """The split-KV decode attention over a KV pool addressed by token slots (a random
    permutation, so every row is a gather): multi-head, grouped-query and one KV head;
    page size 16's strides, soft-capping, attention sinks; a different split count per
    sequence, one sequence of length 1; fp32, bf16, fp16 with head size 80 (padded)."""
    from sglang.kernels.ops.attention.decode_attention import decode_attention_fwd
    lens, splits = (37, 1, 130), (4, 1, 3)
    variants = [dict(), dict(page=16), dict(softcap=30.0), dict(sinks=True), dict(heads=8, kv_heads=2),
                dict(heads=16, kv_heads=1, dim=128), dict(dtype=torch.bfloat16),
                dict(heads=8, kv_heads=2, dim=80, dtype=torch.float16)]
    for variant in variants:
        o = dict(heads=8, kv_heads=8, dim=64, page=1, softcap=0.0, sinks=False, dtype=torch.float32)
        o.update(variant)
        k, v = (randn(512, o["kv_heads"], o["dim"], dtype=o["dtype"]) for _ in range(2))
        slots = torch.randperm(512)[:sum(lens)].to(torch.int32)
        starts = torch.tensor((0,) + lens).cumsum(0).to(torch.int32)
        q = randn(len(lens), o["heads"], o["dim"], dtype=o["dtype"])
        out, scale = torch.empty_like(q), o["dim"] ** -0.5
        most = max(splits)
        logits, lse = torch.empty(len(lens), o["heads"], most, o["dim"]), torch.empty(len(lens), o["heads"], most)
        sink = randn(o["heads"]) if o["sinks"] else None
        decode_attention_fwd(q, k, v, out, starts, slots, logits, lse, torch.tensor(splits, dtype=torch.int32), most,
                             scale, 1.0, 1.0, logit_cap=o["softcap"], sinks=sink, page_size=o["page"])
        seq_slots = [slots[starts[i]:starts[i + 1]].long() for i in range(len(lens))]
        ref = torch.cat([_attention_ref(q[i:i + 1], k[rows], v[rows], scale, softcap=o["softcap"], sink=sink)
                         for i, rows in enumerate(seq_slots)])
        chk.close_to_scale(str(variant), out.double(), ref, 1e-5 if o["dtype"] == torch.float32 else 1e-2)


@case("sglang.extend_attention")
def _(S, chk):
    """Prefill: new tokens attending to a cached prefix (read through a slot table) and
    causally to themselves (extend_attention_fwd), grouped-query, soft-capping, a sliding
    window, non-causal, bf16; and prefill without a prefix (context_attention_fwd) over
    sequences of 33, 100 and 1 tokens, fp32 and grouped-query fp16."""
    from sglang.kernels.ops.attention.extend_attention import extend_attention_fwd
    from sglang.kernels.ops.attention.prefill_attention import context_attention_fwd
    prefix, new = (5, 40), (17, 70)
    for variant in (dict(), dict(softcap=20.0), dict(window=8), dict(dtype=torch.bfloat16),
                    dict(kv_heads=4, causal=False)):
        o = dict(heads=4, kv_heads=2, dim=64, softcap=0.0, window=-1, causal=True, dtype=torch.float32)
        o.update(variant)
        kv = tuple(randn(256, o["kv_heads"], o["dim"], dtype=o["dtype"]) for _ in range(2))
        slots = torch.randperm(256)[:sum(prefix)].to(torch.int32)
        kv_starts = torch.tensor((0,) + prefix).cumsum(0).to(torch.int32)
        q_starts = torch.tensor((0,) + new).cumsum(0).to(torch.int32)
        q = randn(sum(new), o["heads"], o["dim"], dtype=o["dtype"])
        k, v = (randn(sum(new), o["kv_heads"], o["dim"], dtype=o["dtype"]) for _ in range(2))
        out, scale = torch.empty_like(q), o["dim"] ** -0.5
        extend_attention_fwd(q, k, v, out, *kv, q_starts, kv_starts, slots, None, o["causal"], None, max(new),
                             1.0, 1.0, sm_scale=scale, logit_cap=o["softcap"], sliding_window_size=o["window"])
        refs = []
        for i in range(len(new)):
            rows, cached = slice(q_starts[i], q_starts[i + 1]), slots[kv_starts[i]:kv_starts[i + 1]].long()
            keys, values = torch.cat([kv[0][cached], k[rows]]), torch.cat([kv[1][cached], v[rows]])
            refs.append(_attention_ref(q[rows], keys, values, scale, prefix[i] if o["causal"] else None,
                                            o["window"], o["softcap"]))
        tol = 1e-5 if o["dtype"] == torch.float32 else 1e-2
        chk.close_to_scale(f"extend {variant}", out.double(), torch.cat(refs), tol)
    lens = torch.tensor([33, 100, 1], dtype=torch.int32)
    starts = (lens.cumsum(0) - lens).to(torch.int32)
    for causal, heads, kv_heads, dtype in ((True, 4, 4, torch.float32), (False, 4, 4, torch.float32),
                                           (True, 8, 2, torch.float16)):
        q = randn(int(lens.sum()), heads, 64, dtype=dtype)
        k, v = randn(int(lens.sum()), kv_heads, 64, dtype=dtype), randn(int(lens.sum()), kv_heads, 64, dtype=dtype)
        out = torch.empty_like(q)
        context_attention_fwd(q, k, v, out, starts, lens, int(lens.max()), is_causal=causal)
        ref = torch.cat([_attention_ref(q[a:a + n], k[a:a + n], v[a:a + n], 64 ** -0.5, 0 if causal else None)
                         for a, n in zip(starts.tolist(), lens.tolist())])
        chk.close_to_scale(f"context causal={causal} {heads}/{kv_heads} heads {dtype}", out.double(), ref,
                           1e-5 if dtype == torch.float32 else 1e-2)


@case("sglang.merge_state")
def _(S, chk):
    """Two partial attention results merged by their log-sum-exps; +inf and -inf LSEs count
    as empty parts; head size 80 (padded) in fp32 and 64 in bf16."""
    from sglang.kernels.ops.attention.merge_state import merge_state_triton
    for dim, dtype in ((80, torch.float32), (64, torch.bfloat16)):
        prefix, suffix = randn(9, 5, dim, dtype=dtype), randn(9, 5, dim, dtype=dtype)
        prefix_lse, suffix_lse = randn(9, 5) * 3, randn(9, 5) * 3
        prefix_lse[0, 0], suffix_lse[1, 1] = float("inf"), float("-inf")
        out, out_lse = merge_state_triton(prefix, prefix_lse, suffix, suffix_lse)
        ref, ref_lse = _merged_states_ref(prefix, prefix_lse, suffix, suffix_lse)
        chk.close_to_scale(f"out {dtype}", out.double(), ref, 1e-5 if dtype == torch.float32 else 1e-2)
        chk.close(f"lse {dtype}", out_lse.double(), ref_lse)


@case("sglang.lora_routing")
def _(S, chk):
    """LoRA's route builders: (token, group) pairs sorted into buckets (adapter slot times
    groups per slot, plus one for invalid ids), each bucket padded to whole blocks. The
    one-program builder, and the large one (a histogram with atomics or tl.histogram, a scan,
    a binary search per block, slots claimed with atomic adds); checked against the buckets
    computed in torch: every pair once, each block holding pairs of its bucket only."""
    from sglang.kernels.ops.lora.common import routing
    for tokens, width, per_slot, loras, block, large in ((300, 1, 1, 4, 16, False), (40, 3, 2, 5, 8, False),
                                                         (5, 1, 1, 3, 16, False), (20000, 1, 1, 6, 64, True),
                                                         (9000, 2, 3, 4, 32, True)):
        slots = torch.randint(-1, loras + 1, (tokens,), dtype=torch.int32)
        groups = None
        if width > 1 or per_slot > 1:
            groups = torch.randint(-1, per_slot + 1, (tokens, width), dtype=torch.int32)
        slot = slots.repeat_interleave(width).long()
        live, bucket = (slot >= 0) & (slot < loras), slot
        if groups is not None:
            g = groups.reshape(-1).long()
            live &= (g >= 0) & ((g < per_slot) if per_slot > 1 else True)
            bucket = slot * per_slot + g if per_slot > 1 else slot
        bucket = torch.where(live, bucket, -1)
        if large:
            view = routing._build_large_route(slots, groups, groups_per_slot=per_slot, max_loras=loras,
                                              block_size=block, workspace=None, tensor_prefix="case")
        else:
            view = routing.build_route(slots, group_ids=groups, groups_per_slot=per_slot, max_loras=loras,
                                       block_size=block)
        tag = f"{tokens} tokens x {width}, {per_slot} groups per slot, {loras} adapters, blocks of {block}"
        padded = int(view.maybe_num_pairs_post_padded[0])
        want = sum(-(-int(n) // block) * block for n in torch.unique(bucket, return_counts=True)[1])
        chk.true(f"padded pairs, {tag}", padded == want, f"{padded}, expected {want}")
        if padded != want:
            continue
        placed = view.maybe_sorted_pair_ids[:padded].long().view(-1, block)
        labels = view.maybe_block_bucket_ids[:padded // block].long()
        real = placed < bucket.numel()
        chk.equal(f"every pair once, {tag}", placed[real].sort().values, torch.arange(bucket.numel()))
        chk.true(f"blocks hold their bucket's pairs, {tag}",
                 bool((bucket[placed.clamp(max=bucket.numel() - 1)] == labels[:, None])[real].all()))


@case("sglang.topk")
def _(S, chk):
    """Top-k selections: gate_topk (value and index packed in one integer key, tl.topk and
    tl.bitonic_merge over column blocks, tl.sort), row_logsumexp and row_logsumexp_topk
    (its tie order: the lowest index first), row_argmax and div_argmax (a tl.reduce over
    (value, index) pairs), and lilicorr's tiled top-k with log-sum-exp, whose wrapper runs
    Triton only for CUDA tensors (`is_cuda` answers True around that call)."""
    from sglang.kernels.ops.moe.gate_topk import gate_topk
    from sglang.kernels.ops.speculative import lilicorr, row_argmax
    from sglang.srt.layers import logsumexp
    for rows, cols, k, dtype in ((37, 64, 6, torch.float32), (70, 200, 8, torch.bfloat16), (5, 33, 1, torch.float16),
                                 (64, 256, 32, torch.float32)):
        x = randn(rows, cols).to(dtype)
        values, index = gate_topk(x, k)
        ref = torch.topk(x.float(), k, dim=-1).values
        chk.equal(f"gate_topk values {rows}x{cols} k={k} {dtype}", values.float(), ref)
        chk.equal(f"gate_topk index {rows}x{cols} k={k} {dtype}", x.float().gather(1, index.long()), ref)
    ties = torch.randint(0, 4, (6, 300)).float()
    for name, x in (("7x1000 fp32", randn(7, 1000) * 3), ("3x40000 bf16", (randn(3, 40000) * 3).bfloat16()),
                    ("4x5 fp16", (randn(4, 5) * 3).half()), ("ties", ties)):
        top, lse = logsumexp.row_logsumexp(x)
        xd = x.double()
        chk.equal(f"row max {name}", top.double(), xd.max(1).values)
        chk.close(f"row logsumexp {name}", lse.double(), torch.logsumexp(xd, 1) - xd.max(1).values)
        order = torch.sort(x.float(), dim=1, descending=True, stable=True)
        for k in sorted({1, 3, min(logsumexp.FUSED_TOPK_MAX_K, x.shape[1])}):
            top2, lse2, values, index = logsumexp.row_logsumexp_topk(x, k)
            chk.equal(f"topk values {name} k={k}", values, order.values[:, :k])
            chk.equal(f"topk index {name} k={k}", index, order.indices[:, :k])
            chk.equal(f"fused max and lse {name} k={k}", torch.stack([top2, lse2]), torch.stack([top, lse]))
    for rows, cols in ((3, 50000), (100, 9000), (2, 17)):
        x = randn(rows, cols)
        x[0, cols - 1] = x[0, 5] = x[0].max() + 1                # a tie: the first index wins
        d = torch.rand(rows, cols) + 0.5
        chk.equal(f"row_argmax {rows}x{cols}", row_argmax.row_argmax(x), x.argmax(-1))
        chk.equal(f"div_argmax {rows}x{cols}", row_argmax.div_argmax(x, d), (x / d).argmax(-1))
    is_cuda = torch.Tensor.is_cuda
    for rows, vocab, k in ((3, 32000, 8), (2, 151936, 16)):
        x = randn(rows, vocab) * 4
        torch.Tensor.is_cuda = property(lambda self: True)
        try:
            values, index, lse = lilicorr.lilicorr_topk_lse(x, k)
        finally:
            torch.Tensor.is_cuda = is_cuda
        ref = torch.topk(x, k, dim=-1)
        chk.equal(f"lilicorr values {rows}x{vocab} k={k}", values, ref.values)
        chk.equal(f"lilicorr index {rows}x{vocab} k={k}", index, ref.indices)
        chk.close(f"lilicorr lse {rows}x{vocab} k={k}", lse.double(), torch.logsumexp(x.double(), -1))


@case("sglang.moe_fused_gate")
def _(S, chk):
    """The MoE router: scoring (sigmoid, sqrt-softplus, softmax with tanh soft-capping), the
    per-expert bias for ranking only, DeepSeek-V3's grouped selection (the top-2 sum per
    group, the best groups kept), top-k by repeated argmax, renormalization, the routed
    scaling factor, a fused shared expert, padding rows, and the packed (id << 16 | bf16
    weight) output. Its CUDA radix-select path is switched off (`covered` answers False)."""
    from sglang.kernels.ops.moe import moe_fused_gate as gate
    covered = gate.moe_route_radix.covered
    gate.moe_route_radix.covered = lambda *args, **kwargs: False
    try:
        for o in (dict(M=33, N=256, k=8, func="sigmoid", groups=8, keep=4, scale=2.5, on_output=True),
                  dict(M=5, N=64, k=6, func="softmax", cap=30.0, bias=False),
                  dict(M=17, N=384, k=6, func="sqrtsoftplus", shared=1, scale=1.5),
                  dict(M=9, N=896, k=16, func="sigmoid", dtype=torch.bfloat16),
                  dict(M=64, N=160, k=6, func="softmax", renorm=False, bias=False, dtype=torch.float16),
                  dict(M=10, N=64, k=4, func="sigmoid", padded=6)):
            M, N, k, shared, scale = o["M"], o["N"], o["k"], o.get("shared", 0), o.get("scale", 1.0)
            groups, keep, cap = o.get("groups", 1), o.get("keep", 1), o.get("cap", 0.0)
            renorm, on_output = o.get("renorm", True), o.get("on_output", False)
            scores = randn(M, N).to(o.get("dtype", torch.float32))
            bias = randn(N) * 0.1 if o.get("bias", True) else None
            packed = torch.empty(M, k, dtype=torch.int32)
            live = o.get("padded", M)
            weights, ids = gate.moe_fused_gate(
                scores, bias, k, scoring_func=o["func"], num_fused_shared_experts=shared, renormalize=renorm,
                routed_scaling_factor=scale, apply_routed_scaling_factor_on_output=on_output, moe_softcapping=cap,
                num_expert_group=groups, topk_group=keep, packed_out=packed,
                num_token_non_padded=torch.tensor([live], dtype=torch.int32) if "padded" in o else None)
            s, b = scores[:live].double(), (bias.double() if bias is not None else torch.zeros(N, dtype=torch.float64))
            if o["func"] == "softmax":
                ranked = (cap * torch.tanh(s / cap) if cap else s) + b
                act = ranked.softmax(-1)
            else:
                act = torch.sigmoid(s) if o["func"] == "sigmoid" else F.softplus(s).sqrt()
                ranked = act + b
            if groups > 1:
                best = ranked.view(live, groups, -1).topk(2, -1).values.sum(-1).topk(keep, -1).indices
                kept = torch.zeros(live, groups, dtype=torch.bool).scatter_(1, best, True)
                ranked = ranked.masked_fill(~kept.repeat_interleave(N // groups, 1), float("-inf"))
            chosen = ranked.topk(k - shared, -1).indices
            w = act.gather(1, chosen)
            w = w / w.sum(-1, keepdim=True) if renorm else w
            w = w * scale if on_output else w
            if shared:
                chosen = torch.cat([chosen, (N + torch.arange(shared)).expand(live, -1)], 1)
                shared_w = torch.full((live, shared), 1.0 if on_output else 1.0 / scale, dtype=torch.float64)
                w = torch.cat([w, shared_w], 1)
            tag = ", ".join(f"{key}={val}" for key, val in o.items())
            chk.equal(f"ids {tag}", ids[:live].long(), chosen)
            chk.close(f"weights {tag}", weights[:live].double(), w)
            chk.true(f"padding rows {tag}", bool((ids[live:] == -1).all() and (weights[live:] == 0).all()))
            bits = weights.bfloat16().view(torch.int16).to(torch.int32) & 0xFFFF
            chk.equal(f"packed {tag}", packed, (ids << 16) | bits)
    finally:
        gate.moe_route_radix.covered = covered


@case("sglang.mhc")
def _(S, chk):
    """DeepSeek-V4's manifold-constrained hyper-connections: the split-K mixing projection
    with the RMS statistics (tl.dot with input_precision "tf32x3"), checked in fp64 and for
    batch invariance (a row computed alone is bitwise the row computed in a batch); its
    fusion with the Sinkhorn normalization of the 4x4 mixing matrix, and the Triton port of
    that normalization alone; the weighted combine of the streams, their broadcast and their
    mean. mhc.py imports TileLang, TVM-FFI and the serving stack's data-parallel attention
    for its CUDA paths: stub modules stand in for them while it is imported (nothing of
    theirs runs)."""
    from unittest import mock
    stubbed = ["tvm_ffi", "tilelang", "tilelang.language", "sglang.srt.layers.dp_attention",
               "sglang.srt.layers.attention.dsa.utils", "sglang.kernels.ops.communication.all_reduce"]

    class Stub(types.ModuleType):
        def __getattr__(self, name):
            return mock.MagicMock()
    added = [name for name in stubbed if name not in sys.modules]
    try:
        sys.modules.update({name: Stub(name) for name in added})
        import sglang.kernels.ops.layernorm.mhc as mhc
    finally:  # other cases and libraries must not see the stubs (a library probing for tilelang)
        for name in added:
            del sys.modules[name]
    hc, eps = 4, 1e-6
    for m, k, dtype in ((7, 2048, torch.bfloat16), (130, 4096, torch.float32), (1, 1024, torch.bfloat16)):
        x, fn = randn(m, k).to(dtype), randn(6 * hc, k) * 0.02
        mixes = mhc.hc_mix_stats(x, fn, eps)
        xd = x.double()
        ref = (xd @ fn.double().T) * torch.rsqrt(xd.square().mean(-1, keepdim=True) + eps)
        chk.close_to_scale(f"hc_mix_stats {m}x{k} {dtype}", mixes.double(), ref, 1e-5)
        every = max(1, m // 5)
        alone = torch.cat([mhc.hc_mix_stats(x[i:i + 1].contiguous(), fn, eps) for i in range(0, m, every)])
        chk.equal(f"hc_mix_stats batch-invariant {m}x{k}", alone, mixes[::every])
        scale, base = torch.rand(3) + 0.5, randn(6 * hc) * 0.1
        pre = torch.sigmoid(ref[:, :hc] * scale[0] + base[:hc]) + eps
        post = 2.0 * torch.sigmoid(ref[:, hc:2 * hc] * scale[1] + base[hc:2 * hc])
        comb = (ref[:, 2 * hc:].view(m, hc, hc) * scale[2] + base[2 * hc:].view(hc, hc)).softmax(-1) + eps
        comb = comb / (comb.sum(-2, keepdim=True) + eps)
        for _ in range(19):
            comb = comb / (comb.sum(-1, keepdim=True) + eps)
            comb = comb / (comb.sum(-2, keepdim=True) + eps)
        fused = mhc.hc_mix_stats_sinkhorn(x, fn, scale, base, hc, 20, eps, eps)
        split = mhc._hc_split_sinkhorn_triton(ref.float().view(1, m, -1), scale, base, hc, 20, eps)
        for name, got in (("fused", fused), ("split", split)):
            for part, ours, want in zip(("pre", "post", "comb"), got, (pre, post, comb)):
                chk.close(f"sinkhorn {name} {part} {m}x{k}", ours.reshape(want.shape).double(), want)
        weights = torch.rand(m, hc)
        chk.close(f"mhc_combine {m}x{k} {dtype}", mhc.mhc_combine(x, weights, hc, torch.float32).double(),
                  (weights.double()[:, :, None] * xd.view(m, hc, -1)).sum(1))
        h = k // hc
        row, streams = randn(m, h).to(dtype), torch.empty(m, hc, h, dtype=dtype)
        mhc._hc_broadcast_kernel[(m, -(-h // 1024))](row, streams, h, row.stride(0), HC=hc, BLOCK_H=1024)
        chk.equal(f"hc_broadcast {m}x{h}", streams, row[:, None].expand(m, hc, h))
        streams, mean = randn(m, hc, h).to(dtype), torch.empty(m, h, dtype=dtype)
        mhc._mhc_stream_mean_kernel[(m, -(-h // 1024))](streams, mean, h, streams.stride(0), streams.stride(1),
                                                        mean.stride(0), HC=hc, BLOCK_H=1024)
        chk.close_to_scale(f"stream mean {m}x{h} {dtype}", mean.double(), streams.double().mean(1),
                           1e-6 if dtype == torch.float32 else 1e-2)


@case("sglang.sampling")
def _(S, chk):
    """Sampling helpers: MurmurHash3 over (64-bit seed, position, column) in uint32 and
    uint64 arithmetic (against a Python implementation), the speculative decoder's selector
    walk (a softmax and an inverse-CDF draw per step, greedy rows; against the library's own
    torch version), and top-p/top-k renormalization's masking and normalizing kernels."""
    from sglang.kernels.ops.sampling import renorm_triton
    from sglang.kernels.ops.sampling.murmur_hash import murmur_hash32_kernel
    from sglang.kernels.ops.speculative import dflash, lilicorr
    full = 0xFFFFFFFF

    def murmur(words):
        def rotl(x, r):
            return ((x << r) | (x >> (32 - r))) & full
        h = 0
        for k in words:
            k = rotl((k * 0xCC9E2D51) & full, 15) * 0x1B873593 & full
            h = (rotl(h ^ k, 13) * 5 + 0xE6546B64) & full
        h ^= 16
        h = ((h ^ (h >> 16)) * 0x85EBCA6B) & full
        h = ((h ^ (h >> 13)) * 0xC2B2AE35) & full
        return h ^ (h >> 16)
    rows, cols = 5, 1500
    seed = torch.randint(0, 2 ** 62, (rows,), dtype=torch.int64)
    pos = torch.randint(0, 2 ** 31 - 1, (rows,), dtype=torch.int32)
    col = torch.randint(0, 2 ** 31 - 1, (cols,), dtype=torch.int32)
    out = torch.empty(rows, cols, dtype=torch.uint32)
    murmur_hash32_kernel[(rows, -(-cols // 1024))](seed, pos, col, out, rows, cols, BLOCK_SIZE=1024)
    ref = torch.tensor([[murmur((int(seed[r]) & full, int(seed[r]) >> 32, int(pos[r]), int(col[c]))) for c in range(cols)]
                        for r in range(rows)], dtype=torch.int64)
    chk.equal("murmur_hash32", out.to(torch.int64) & full, ref)
    batch, steps, top_k = 6, 5, 8
    walk = dict(candidate_ids=torch.randint(0, 1000, (batch, steps, top_k)), scores=randn(batch, steps, top_k, top_k),
                uniforms=torch.rand(batch, steps), temperatures=torch.rand(batch) + 0.5,
                greedy_mask=torch.tensor([True, False, False, True, False, False]))
    tokens, q = dflash.selector_walk_triton(**walk)
    ref_tokens, ref_q = lilicorr._selector_walk_torch(**walk)
    chk.equal("selector walk tokens", tokens, ref_tokens)
    chk.close("selector walk q", q, ref_q)
    probs = torch.rand(4, 3000).softmax(-1)
    pivots = probs.kthvalue(2990, dim=1).values.contiguous()
    kept = torch.where(probs >= pivots[:, None], probs, 0.0)
    chk.close("renorm", renorm_triton._renorm_from_pivots(probs, pivots), kept / kept.sum(1, keepdim=True))


def _e4m3_codes(x):
    """torch's fp32 -> e4m3fn bytes of x after clamping to +-448 (the kernels clamp first)."""
    return x.clamp(-448.0, 448.0).to(torch.float8_e4m3fn).view(torch.uint8)


@case("sglang.fp8_rowwise")
def _(S, chk):
    """FLUX.3's row-wise E4M3 quantizers (sglang.kernels.ops.diffusion.quantization), launched as
    their wrappers launch them (the wrappers require a GPU of SM89+): their fp32 -> e4m3 cast is
    the inline PTX `cvt.rn.satfinite.e4m3x2.f32` with `cvt.u32.u16` and, in the tiled SwiGLU
    kernel, `shr.b32` over pack = 2. The plain quantizer's bytes and scales exactly against
    torch (x / scale per element, as the kernel's div_rn); the SwiGLU ones within one e4m3
    step of torch's bf16 SwiGLU, and the tiled kernel (two elements per asm instance) equal to
    the untiled one byte for byte."""
    import triton
    from sglang.kernels.ops.diffusion.quantization.fp8_rowwise_triton import _fp8_rowwise_kernel
    from sglang.kernels.ops.diffusion.quantization.swiglu_fp8_rowwise_triton import (
        _swiglu_fp8_rowwise_kernel, _swiglu_fp8_rowwise_tiled_kernel)
    for m, k in ((37, 300), (8, 2048)):
        x = randn(m, k) * 3
        x[0, :5] = torch.tensor([0.0, -0.0, 1e-30, 5.0, -5.0])
        q = torch.empty(m, k, dtype=torch.float8_e4m3fn)
        scale = torch.empty(m)
        _fp8_rowwise_kernel[(m,)](x, q, scale, m, k, triton.next_power_of_2(k), enable_fp_fusion=False)
        ref_scale = torch.clamp(x.abs().amax(1) * torch.tensor(1.0 / 448.0), min=1e-12)
        chk.equal(f"scales {m}x{k}", scale, ref_scale)
        chk.equal(f"codes {m}x{k}", q.view(torch.uint8), _e4m3_codes(x / ref_scale[:, None]))
    b, t, hidden = 2, 5, 1000
    x = (randn(b, t, 2 * hidden) * 2).bfloat16()
    rows = b * t
    outs = []
    for kernel, block in ((_swiglu_fp8_rowwise_kernel, triton.next_power_of_2(hidden)),
                          (_swiglu_fp8_rowwise_tiled_kernel, 256)):
        q, s = torch.empty(rows, hidden, dtype=torch.float8_e4m3fn), torch.empty(rows)
        kernel[(rows,)](x, q, s, rows, hidden, x.stride(1), block, enable_fp_fusion=False)
        outs.append((q, s))
    gate, up = x.reshape(rows, 2 * hidden).float().split(hidden, dim=1)
    value = (F.silu(gate).bfloat16().float() * up).bfloat16().double()
    ref_scale = value.abs().amax(1) / 448
    for name, (q, s) in zip(("swiglu", "swiglu tiled"), outs):
        chk.close(f"{name} scales", s.double(), ref_scale, rtol=1e-6, atol=0)
        # within one e4m3 step (2^-3 relative; 2^-9 absolute at the bottom of the range)
        chk.close(f"{name} values", q.double() * s.double()[:, None], value, rtol=0.0625,
                  atol=2.0**-9 * float(ref_scale.max()))
    chk.equal("tiled = untiled codes", outs[1][0].view(torch.uint8), outs[0][0].view(torch.uint8))
    chk.equal("tiled = untiled scales", outs[1][1], outs[0][1])
