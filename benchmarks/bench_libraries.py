"""Ops of three real Triton kernel libraries, Liger-Kernel, FlagGems and SGLang, on CPU tensors
through this backend, timed against the torch eager op they replace, in one run.

    python benchmarks/bench_libraries.py [--threads 2] [--only NAME,...]

The libraries are loaded the way scripts/kernel_libraries.py loads them (pip-installed with
--no-deps into the git-ignored upstream/libs, its shim for the libraries' GPU-only Python
wrappers; never a change to a kernel). Sizes are those of a small model's activations:
4096 x 1024 rows, 2^22-element vectors, a 512 x 32000 vocabulary. Each op and its torch
reference run interleaved in bursts of ~0.2 s, best of 3; the ratio is torch time / library
time (> 1: the library on this backend is faster). Informational: no floors. FlagGems picks
its CPU vendor's configs ("arm": e.g. 4-element tiles for its softmax and row sums), which
decide much of its speed here; Liger sizes its blocks from the row length. SGLang's decode and
extend attention read a KV pool through a table of token slots (a random permutation: every
row a gather); their torch reference gathers the rows, then calls scaled_dot_product_attention
(the gather is part of its time).
"""
import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, "scripts"))


def _seconds(fn):
    """Best of 3 bursts of about 0.2 s."""
    fn()
    t = time.perf_counter()
    fn()
    n = max(3, int(0.2 / max(time.perf_counter() - t, 1e-6)))
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t) / n)
    return best


def cases(liger, gems, sglang):
    """[(name, library op, torch op)] of the libraries that are installed."""
    import torch
    import torch.nn.functional as F
    torch.manual_seed(0)
    x, w, b = torch.randn(4096, 1024), torch.randn(1024), torch.randn(1024)
    a, g = torch.randn(4096, 2048), torch.randn(4096, 2048)
    v = torch.randn(1 << 22)
    out = []
    if gems is not None:
        ops = gems.ops
        out += [
            ("flaggems add", lambda: ops.add(v, v), lambda: torch.add(v, v)),
            ("flaggems exp", lambda: ops.exp(v), lambda: torch.exp(v)),
            ("flaggems silu", lambda: ops.silu(v), lambda: F.silu(v)),
            ("flaggems gelu", lambda: ops.gelu(v), lambda: F.gelu(v)),
            ("flaggems gelu tanh", lambda: ops.gelu(v, approximate="tanh"), lambda: F.gelu(v, approximate="tanh")),
            ("flaggems softmax", lambda: ops.softmax(x, -1), lambda: torch.softmax(x, -1)),
            ("flaggems layer_norm", lambda: ops.layer_norm(x, [1024], w, b, 1e-5),
             lambda: F.layer_norm(x, (1024,), w, b, 1e-5)),
            ("flaggems rms_norm", lambda: ops.rms_norm(x, [1024], w, 1e-5), lambda: F.rms_norm(x, (1024,), w, 1e-5)),
            ("flaggems sum(dim=1)", lambda: ops.sum_dim(x, [1]), lambda: x.sum(1)),
            ("flaggems mean(dim=0)", lambda: ops.mean_dim(x, [0]), lambda: x.mean(0)),
            ("flaggems argmax", lambda: ops.argmax(x, 1), lambda: x.argmax(1)),
            ("flaggems var_mean", lambda: ops.var_mean(x, [1]), lambda: torch.var_mean(x, 1)),
            ("flaggems cumsum", lambda: ops.cumsum(x, 1), lambda: x.cumsum(1)),
        ]
    if liger is not None:
        from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction
        from liger_kernel.ops.geglu import LigerGELUMulFunction
        from liger_kernel.ops.kl_div import LigerKLDivLossFunction
        from liger_kernel.ops.layer_norm import LigerLayerNormFunction
        from liger_kernel.ops.rms_norm import LigerRMSNormFunction
        from liger_kernel.ops.softmax import LigerSoftmaxFunction
        from liger_kernel.ops.swiglu import LigerSiLUMulFunction
        logits, target = torch.randn(512, 32000), torch.randint(0, 32000, (512,))
        logp, q = torch.log_softmax(torch.randn(512, 8192), -1), torch.softmax(torch.randn(512, 8192), -1)
        out += [
            ("liger rms_norm", lambda: LigerRMSNormFunction.apply(x, w, 1e-6, 0.0, "llama", False),
             lambda: F.rms_norm(x, (1024,), w, 1e-6)),
            ("liger layer_norm", lambda: LigerLayerNormFunction.apply(x, w, b, 1e-5),
             lambda: F.layer_norm(x, (1024,), w, b, 1e-5)),
            ("liger swiglu", lambda: LigerSiLUMulFunction.apply(a, g), lambda: F.silu(a) * g),
            ("liger geglu", lambda: LigerGELUMulFunction.apply(a, g), lambda: F.gelu(a, approximate="tanh") * g),
            ("liger softmax", lambda: LigerSoftmaxFunction.apply(x), lambda: torch.softmax(x, -1)),
            ("liger cross_entropy", lambda: LigerCrossEntropyFunction.apply(logits, target, None, -100, 0.0, 0.0,
                                                                            "mean"),
             lambda: F.cross_entropy(logits, target)),
            ("liger kl_div", lambda: LigerKLDivLossFunction.apply(logp, q, "batchmean", False, 1e-10),
             lambda: F.kl_div(logp, q, reduction="batchmean")),
        ]
    if sglang is not None:
        out += _sglang_attention()
    return out


def _sglang_attention():
    """SGLang's decode attention (8 sequences of 1024 tokens, 32 query and 8 KV heads of 128,
    bf16) and extend attention (2 sequences: 512 cached tokens + 512 new ones, 16 and 4 heads)."""
    return [_sglang_decode(), _sglang_extend()]


def _sglang_decode():
    import torch
    import torch.nn.functional as F
    from sglang.kernels.ops.attention.decode_attention import decode_attention_fwd
    seqs, length, heads, kv_heads, dim, splits = 8, 1024, 32, 8, 128, 8
    k, v = (torch.randn(seqs * length + 64, kv_heads, dim, dtype=torch.bfloat16) for _ in range(2))
    slots = torch.randperm(k.shape[0])[:seqs * length].to(torch.int32)
    starts = torch.arange(seqs + 1, dtype=torch.int32) * length
    q = torch.randn(seqs, heads, dim, dtype=torch.bfloat16)
    o, logits, lse = torch.empty_like(q), torch.empty(seqs, heads, splits, dim), torch.empty(seqs, heads, splits)
    split_counts, scale, rows = torch.full((seqs,), splits, dtype=torch.int32), dim ** -0.5, slots.long()

    def ref():
        pk, pv = (t[rows].view(seqs, length, kv_heads, dim).transpose(1, 2) for t in (k, v))
        return F.scaled_dot_product_attention(q[:, :, None], pk, pv, scale=scale, enable_gqa=True)
    return ("sglang decode attention",
            lambda: decode_attention_fwd(q, k, v, o, starts, slots, logits, lse, split_counts, splits, scale, 1.0, 1.0),
            ref)


def _sglang_extend():
    import torch
    import torch.nn.functional as F
    from sglang.kernels.ops.attention.extend_attention import extend_attention_fwd
    seqs, cached, new, heads, kv_heads, dim = 2, 512, 512, 16, 4, 128
    kb, vb = (torch.randn(seqs * cached + 64, kv_heads, dim, dtype=torch.bfloat16) for _ in range(2))
    slots = torch.randperm(kb.shape[0])[:seqs * cached].to(torch.int32)
    kv_starts, q_starts = (torch.arange(seqs + 1, dtype=torch.int32) * n for n in (cached, new))
    q = torch.randn(seqs * new, heads, dim, dtype=torch.bfloat16)
    k, v = (torch.randn(seqs * new, kv_heads, dim, dtype=torch.bfloat16) for _ in range(2))
    o, rows = torch.empty_like(q), slots.long()
    visible = torch.ones(new, cached + new, dtype=torch.bool).tril(cached)

    def ref():
        pk, pv = (torch.cat([pool[rows].view(seqs, cached, kv_heads, dim), t.view(seqs, new, kv_heads, dim)], 1)
                  .transpose(1, 2) for pool, t in ((kb, k), (vb, v)))
        return F.scaled_dot_product_attention(q.view(seqs, new, heads, dim).transpose(1, 2), pk, pv,
                                              attn_mask=visible, enable_gqa=True)
    return ("sglang extend attention",
            lambda: extend_attention_fwd(q, k, v, o, kb, vb, q_starts, kv_starts, slots, None, True, None, new,
                                         1.0, 1.0),
            ref)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", default="", help="comma-separated substrings of op names")
    args = ap.parse_args()
    os.environ.setdefault("TRITON_CPU_NUM_THREADS", str(args.threads))
    import torch
    import kernel_libraries as libs
    torch.set_num_threads(args.threads)
    liger, why_liger = libs.load_library("liger")
    gems, why_gems = libs.load_library("flaggems")
    sglang, why_sglang = libs.load_library("sglang")
    for why in (why_liger, why_gems, why_sglang):
        if why:
            print(f"skipped: {why}")
    only = [s for s in args.only.split(",") if s]
    print(f"threads = {args.threads}; times per call, best of 3 bursts")
    print(f"{'op':<24} {'library ms':>11} {'torch ms':>10} {'torch/library':>14}")
    ratios = []
    with torch.no_grad():
        for name, ours, ref in cases(liger, gems, sglang):
            if only and not any(s in name for s in only):
                continue
            t_ours, t_ref = _seconds(ours), _seconds(ref)
            ratios.append(t_ref / t_ours)
            print(f"{name:<24} {t_ours * 1e3:>11.3f} {t_ref * 1e3:>10.3f} {t_ref / t_ours:>13.2f}x", flush=True)
    if ratios:
        print(f"geomean torch/library: {statistics.geometric_mean(ratios):.2f}x over {len(ratios)} ops")


if __name__ == "__main__":
    main()
