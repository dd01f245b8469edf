"""fla-core's chunked and recurrent linear-attention kernels (autotuned; masked 2-D pointer
tiles, tl.dot on transposed tiles in loops, exp2 gates, the state carried across chunks or
time steps), forward and input gradients, against the library's own naive torch
implementations (fla/ops/*/naive.py: recurrences in torch ops, computed in fp32) on fp64
inputs; its norms against torch.  fp32 results agree to ~2e-6 relative; the tolerance
(1e-4 of each output's largest magnitude) leaves 50x room."""
import importlib

import torch
import torch.nn.functional as F

from kernel_libraries import case, Checker, _grad, _out0, randn, tile_probe


def _fla_inputs(B=2, T=128, H=2, K=32, V=32):
    """{name: tensor}: q, k (unit rows, as the delta rules expect), v, a scalar log-gate per
    head and step (g), a per-channel log-gate (gk), and beta in (0, 1)."""
    q, v = randn(B, T, H, K), randn(B, T, H, V)
    k = F.normalize(randn(B, T, H, K), p=2, dim=-1)
    g, gk = F.logsigmoid(randn(B, T, H)), F.logsigmoid(randn(B, T, H, K))
    return {"q": q, "k": k, "v": v, "g": g, "gk": gk, "beta": torch.rand(B, T, H).sigmoid()}


def _fla_check(chk, fn, ref_fn, inputs, grad=True, tol=1e-4):
    """fn(*inputs) against ref_fn on fp64 copies: output, then each input's gradient."""
    ours = [_grad(x) if grad else x for x in inputs]
    theirs = [_grad(x.double()) if grad else x.double() for x in inputs]
    y, ref = _out0(fn(*ours)), _out0(ref_fn(*theirs)).to(torch.float64)
    chk.close_to_scale("o", y, ref, tol)
    if not grad:
        return
    dy = randn(*y.shape)
    y.backward(dy)
    ref.backward(dy.double())
    for i, (a, b) in enumerate(zip(ours, theirs)):
        chk.close_to_scale(f"d{i}", a.grad, b.grad, tol)


def _heads_first(fn):
    """A naive reference taking [B, H, T, D] called on [B, T, H, D] tensors."""
    def call(*xs):
        return _out0(fn(*(x.transpose(1, 2) for x in xs))).transpose(1, 2)
    return call


def _fla_case(name, op, ref, inputs, op_call=None, ref_call=None, T=128, dtype=None, **check):
    """Registers case fla.<name>: the library function `op` ("module:function", imported when
    the case runs) against its naive reference `ref`, on the _fla_inputs named in `inputs`
    (in that order; cast to `dtype`), each function adapted by `op_call` / `ref_call` (a
    function of it) when its signature or layout differs; `check`: _fla_check's options."""
    def resolve(path):
        module, attr = path.split(":")
        return getattr(importlib.import_module(module), attr)

    @case("fla." + name)
    def _(M, chk):
        xs = _fla_inputs(T=T)
        args = [xs[n] if dtype is None else xs[n].to(dtype) for n in inputs.split()]
        fn, ref_fn = resolve(op), resolve(ref)
        _fla_check(chk, op_call(fn) if op_call else fn, ref_call(ref_fn) if ref_call else ref_fn, args, **check)


def _without_normalize(fn):
    return lambda *x: fn(*x, normalize=False)


def _gated_delta_reference(fn):
    return lambda q, k, v, g, beta: fn(q, k, v, beta, g)  # its beta comes before g


_SIMPLE_GLA_REF = "fla.ops.simple_gla.naive:naive_chunk_simple_gla"
_GLA_REF = "fla.ops.gla.naive:naive_recurrent_gla"
_DELTA_REF = "fla.ops.delta_rule.naive:delta_rule_recurrence"
_GATED_DELTA_REF = "fla.ops.gated_delta_rule.naive:naive_recurrent_gated_delta_rule"
_fla_case("simple_gla_chunk", "fla.ops.simple_gla:chunk_simple_gla", _SIMPLE_GLA_REF, "q k v g",
          T=100)  # not a multiple of the chunk size
_fla_case("simple_gla_fused_recurrent", "fla.ops.simple_gla:fused_recurrent_simple_gla", _SIMPLE_GLA_REF, "q k v g")
_fla_case("gla_chunk", "fla.ops.gla:chunk_gla", _GLA_REF, "q k v gk")
_fla_case("gla_fused_recurrent", "fla.ops.gla:fused_recurrent_gla", _GLA_REF, "q k v gk")
_fla_case("retention_chunk", "fla.ops.retention:chunk_retention", "fla.ops.retention.naive:naive_retention",
          "q k v", ref_call=_heads_first, grad=False)
_fla_case("linear_attn_chunk", "fla.ops.linear_attn:chunk_linear_attn",
          "fla.ops.linear_attn.naive:naive_chunk_linear_attn", "q k v",
          op_call=_without_normalize, ref_call=_without_normalize)
_fla_case("delta_rule_fused_recurrent", "fla.ops.delta_rule:fused_recurrent_delta_rule", _DELTA_REF, "q k v beta",
          ref_call=_heads_first)
# The chunked delta rule refuses fp32; it keeps its intermediate states in bf16, so the
# result is compared, on the same bf16 inputs, within a few bf16 steps of the output's scale.
_fla_case("delta_rule_chunk_bf16", "fla.ops.delta_rule:chunk_delta_rule", _DELTA_REF, "q k v beta",
          op_call=lambda fn: lambda *x: fn(*x)[0].float(), ref_call=_heads_first, dtype=torch.bfloat16,
          grad=False, tol=2e-2)
_fla_case("gated_delta_rule_chunk", "fla.ops.gated_delta_rule:chunk_gated_delta_rule", _GATED_DELTA_REF,
          "q k v g beta", ref_call=_gated_delta_reference)
# Forward only: the library has no backward for it.
_fla_case("gated_delta_rule_fused_recurrent", "fla.ops.gated_delta_rule:fused_recurrent_gated_delta_rule",
          _GATED_DELTA_REF, "q k v g beta", op_call=lambda fn: lambda q, k, v, g, beta: fn(q, k, v, g=g, beta=beta),
          ref_call=_gated_delta_reference, grad=False)


@case("fla.norms")
def _(M, chk):
    from fla.modules.norm.fused_norm_gate import rms_norm_gated
    from fla.modules.norm.l2norm import l2norm
    from fla.modules.norm.layernorm import layer_norm, rms_norm
    x, w, b, gate = randn(64, 300), randn(300), randn(300), randn(64, 300)
    n = (300,)
    for name, fn, ref, args in [
            ("l2norm", l2norm, lambda x: F.normalize(x, p=2, dim=-1, eps=0), [x]),
            ("layer_norm", layer_norm, lambda x, w, b: F.layer_norm(x, n, w, b, 1e-5), [x, w, b]),
            ("rms_norm", lambda x, w: rms_norm(x, w, None), lambda x, w: F.rms_norm(x, n, w, 1e-5), [x, w]),
            ("rms_norm_gated", lambda x, g, w: rms_norm_gated(x, g, w, None),
             lambda x, g, w: F.rms_norm(x, n, w, 1e-6) * F.silu(g), [x, gate, w])]:
        sub = Checker()
        _fla_check(sub, fn, ref, args)
        chk.failures += [f"{name} {f}" for f in sub.failures]


# ------------------------------------------------------------------------------ mamba_ssm


@case("fla.softplus_nv")
def _(M, chk):
    """fla's softplus for NVIDIA GPUs (fla/ops/utils/softplus.py, `softplus_nv` and
    `softplus2_nv`, which its gated kernels call when IS_NVIDIA): inline PTX with a predicate,
    the identity above a threshold and ex2/lg2.approx.ftz below it under the negated
    predicate. Against torch in fp64: log(1 + e^x) and log2(1 + 2^x) below 20 and 15, x
    above, over [-40, 40] and the thresholds themselves."""
    sp = importlib.import_module("fla.ops.utils.softplus")
    x = torch.cat([torch.linspace(-40, 40, 4094), torch.tensor([20.0, 15.0])]).reshape(64, 64)
    xd = x.double()
    got = tile_probe(sp.softplus_nv, x, torch.float32)
    chk.close("softplus", got.double(), torch.where(xd > 20, xd, torch.log1p(torch.exp(xd))), rtol=2e-6, atol=1e-7)
    got = tile_probe(sp.softplus2_nv, x, torch.float32)
    chk.close("softplus2", got.double(), torch.where(xd > 15, xd, torch.log2(1 + torch.exp2(xd))), rtol=2e-6, atol=1e-7)
