"""Mamba-2's Triton ops (mamba_ssm.ops.triton), each against the library's own torch reference
(`*_ref`) run on fp64 copies of the inputs: the SSD chunked scan (five kernels forward,
more backward, autotuned), its chunk-state / state-passing / chunk-scan steps on their own,
the decoding step (selective_state_update), the gated and the residual-add norms, SwiGLU.
Inputs are drawn so that exp(dA) stays in (0, 1] as in a trained model: A < 0, dt > 0."""
import math

import torch
import torch.nn.functional as F

from kernel_libraries import case, Checker, _grad, randn


def _mamba_check(chk, name, y, ref, tol=1e-5):
    chk.close_to_scale(name, y, ref, tol)


def _mamba_grads(chk, y, ref, ours, theirs):
    """Output, then the gradients of both from the same random cotangent."""
    _mamba_check(chk, "y", y, ref)
    dy = randn(*y.shape)
    y.backward(dy)
    ref.backward(dy.double())
    for name, a, b in zip(ours, ours.values(), theirs.values()):
        _mamba_check(chk, "d" + name, a.grad, b.grad)


def _mamba_ssd_inputs(b=2, l=256, h=4, p=32, n=16, g=2):
    return {"x": randn(b, l, h, p), "dt": torch.rand(b, l, h) * 0.5 + 0.01, "A": -torch.rand(h) - 0.1,
            "B": randn(b, l, g, n), "C": randn(b, l, g, n), "D": randn(h), "dt_bias": randn(h) * 0.1}


@case("mamba.ssd_chunk_scan_combined")
def _(M, chk):
    from mamba_ssm.ops.triton.ssd_combined import mamba_chunk_scan_combined, ssd_chunk_scan_combined_ref
    xs = _mamba_ssd_inputs(l=200)  # not a multiple of the chunk size
    ours = {k: _grad(v) for k, v in xs.items()}
    theirs = {k: _grad(v.double()) for k, v in xs.items()}
    y = mamba_chunk_scan_combined(**ours, chunk_size=64, dt_softplus=True)
    # The reference takes whole chunks only: its inputs are zero-padded along the sequence to
    # 256 and its output cut back (the scan is causal: the padding changes no earlier output).
    padded = {k: F.pad(v, (0, 0) * (v.dim() - 2) + (0, 56)) if k in ("x", "dt", "B", "C") else v
              for k, v in theirs.items()}
    ref = ssd_chunk_scan_combined_ref(**padded, chunk_size=64, dt_softplus=True)[:, :200]
    _mamba_grads(chk, y, ref, ours, theirs)


@case("mamba.ssd_initial_states")
def _(M, chk):
    """A sequence scanned in two calls, the second starting from the state the first returns
    (return_final_states / initial_states), against the reference over the whole sequence."""
    from mamba_ssm.ops.triton.ssd_combined import mamba_chunk_scan_combined, ssd_chunk_scan_combined_ref
    xs = _mamba_ssd_inputs()
    first = {k: v[:, :128] if k in ("x", "dt", "B", "C") else v for k, v in xs.items()}
    second = {k: v[:, 128:] if k in ("x", "dt", "B", "C") else v for k, v in xs.items()}
    y1, state = mamba_chunk_scan_combined(**first, chunk_size=64, dt_softplus=True, return_final_states=True)
    y2 = mamba_chunk_scan_combined(**second, chunk_size=64, dt_softplus=True, initial_states=state)
    ref = ssd_chunk_scan_combined_ref(**{k: v.double() for k, v in xs.items()}, chunk_size=64, dt_softplus=True)
    _mamba_check(chk, "y", torch.cat([y1, y2], dim=1), ref)


@case("mamba.ssd_steps")
def _(M, chk):
    """The SSD pipeline one step at a time, each step on the reference's own inputs."""
    from einops import rearrange
    from mamba_ssm.ops.triton.ssd_chunk_scan import chunk_scan, chunk_scan_ref
    from mamba_ssm.ops.triton.ssd_chunk_state import chunk_state, chunk_state_ref
    from mamba_ssm.ops.triton.ssd_state_passing import state_passing, state_passing_ref
    xs = _mamba_ssd_inputs()
    cs = 64
    dt = rearrange(xs["dt"], "b (c l) h -> b h c l", l=cs)
    dA_cumsum = torch.cumsum(dt * rearrange(xs["A"], "h -> h 1 1"), dim=-1)
    args = (xs["B"], xs["x"], dt, dA_cumsum)
    states = chunk_state(*args)
    _mamba_check(chk, "chunk_state", states, chunk_state_ref(*(t.double() for t in args)))
    flat = rearrange(states, "... p n -> ... (p n)")
    passed, final = state_passing(flat, dA_cumsum[:, :, :, -1])
    passed_ref, final_ref = state_passing_ref(flat.double(), dA_cumsum[:, :, :, -1].double())
    _mamba_check(chk, "state_passing", passed, passed_ref)
    _mamba_check(chk, "state_passing_final", final, final_ref)
    prev = rearrange(passed, "... (p n) -> ... p n", n=states.shape[-1])
    args = (xs["B"], xs["C"], xs["x"], dt, dA_cumsum, prev, xs["D"])
    _mamba_check(chk, "chunk_scan", chunk_scan(*args), chunk_scan_ref(*(t.double() for t in args)))


@case("mamba.selective_state_update")
def _(M, chk):
    from mamba_ssm.ops.triton.selective_state_update import selective_state_update, selective_state_update_ref
    b, h, p, n, g = 3, 4, 64, 16, 2
    state = randn(b, h, p, n)
    args = (randn(b, h, p), randn(b, h, p), -torch.rand(h, p, n), randn(b, g, n), randn(b, g, n),
            randn(h, p), randn(b, h, p), randn(h, p))
    ours, theirs = state.clone(), state.double()
    y = selective_state_update(ours, *args, dt_softplus=True)
    ref = selective_state_update_ref(theirs, *(t.double() for t in args), dt_softplus=True)
    _mamba_check(chk, "y", y, ref)
    _mamba_check(chk, "state", ours, theirs)  # updated in place by both


@case("mamba.rmsnorm_gated")
def _(M, chk):
    from mamba_ssm.ops.triton.layernorm_gated import rms_norm_ref, rmsnorm_fn
    xs = {"x": randn(64, 256), "z": randn(64, 256), "weight": randn(256), "bias": randn(256)}
    for before in (True, False):
        sub = Checker()
        ours = {k: _grad(v) for k, v in xs.items()}
        theirs = {k: _grad(v.double()) for k, v in xs.items()}
        y = rmsnorm_fn(**ours, group_size=64, norm_before_gate=before)
        ref = rms_norm_ref(**theirs, group_size=64, norm_before_gate=before)
        _mamba_grads(sub, y, ref, ours, theirs)
        chk.failures += [f"norm_before_gate={before} {f}" for f in sub.failures]


@case("mamba.add_norm")
def _(M, chk):
    """The fused residual add + LayerNorm / RMSNorm of Mamba's blocks (prenorm: the sum is
    returned too), forward and backward."""
    from mamba_ssm.ops.triton.layer_norm import layer_norm_fn, layer_norm_ref, rms_norm_fn, rms_norm_ref
    xs = {"x": randn(64, 384), "residual": randn(64, 384), "weight": randn(384), "bias": randn(384)}
    for name, fn, ref_fn in (("layer_norm", layer_norm_fn, layer_norm_ref), ("rms_norm", rms_norm_fn, rms_norm_ref)):
        sub = Checker()
        ours = {k: _grad(v) for k, v in xs.items()}
        theirs = {k: _grad(v.double()) for k, v in xs.items()}
        y, total = fn(**ours, eps=1e-5, prenorm=True)
        ref, ref_total = ref_fn(**theirs, eps=1e-5, prenorm=True)
        _mamba_check(sub, "residual_out", total, ref_total)
        # one cotangent for both outputs: y + total backward as a single sum
        _mamba_grads(sub, torch.cat([y, total]), torch.cat([ref, ref_total]), ours, theirs)
        chk.failures += [f"{name} {f}" for f in sub.failures]


@case("mamba.swiglu")
def _(M, chk):
    from mamba_ssm.ops.triton.k_activations import _swiglu_bwd, _swiglu_fwd
    xy, dout = randn(32, 512), randn(32, 256)
    ref_in = _grad(xy.double())
    x, y = ref_in.chunk(2, dim=-1)
    ref = F.silu(x) * y
    ref.backward(dout.double())
    _mamba_check(chk, "y", _swiglu_fwd(xy), ref)
    _mamba_check(chk, "dxy", _swiglu_bwd(xy, dout), ref_in.grad)


# Mamba-3 (mamba_ssm.ops.triton.mamba3): its kernels call the GPU's approximations through inline
# PTX (tanh/sin/cos.approx.f32), which the inline-ptx pass runs as the math functions.
# The package has no torch reference for them; `_mamba3_step_ref` is one, written from the
# recurrence the step kernel documents (fp64; the kernels round the state and the query to
# bf16 for their dot, hence the tolerance of 2e-2 of each output's scale).

def _mamba3_inputs(b=1, l=96, h=2, hq=1, dqk=32, dv=32, da=8):
    dt = torch.rand(b, h, l) * 0.5 + 0.01
    return {"Q": randn(b, l, hq, dqk), "K": randn(b, l, hq, dqk), "V": randn(b, l, h, dv),
            "ADT": -dt * (torch.rand(h, 1) + 0.5), "DT": dt, "Trap": randn(b, h, l), "Q_bias": randn(h, dqk),
            "K_bias": randn(h, dqk), "Angles": randn(b, l, h, da), "D": randn(h), "Z": randn(b, l, h, dv)}


def _mamba3_step_ref(Q, K, V, ADT, DT, Trap, Q_bias, K_bias, Angles, D, Z, states):
    """One token: Q, K [b, hq, dqk]; V, Z [b, h, dv]; ADT, DT, Trap [b, h]; Angles [b, h, da];
    states (angle [b, h, da], ssm [b, h, dv, dqk], k [b, h, dqk], v [b, h, dv])."""
    angle_state, ssm, k_prev, v_prev = states
    h, dqk = V.shape[1], Q.shape[-1]
    q = Q.repeat_interleave(h // Q.shape[1], dim=1) + Q_bias
    k = K.repeat_interleave(h // K.shape[1], dim=1) + K_bias
    angle = torch.tanh(Angles) * math.pi * DT[..., None] + angle_state
    angle = torch.remainder(angle, 2 * math.pi)
    theta = F.pad(angle, (0, dqk // 2 - angle.shape[-1]))  # the dimensions past Angles are not rotated

    def rotate(x):  # pairs (x[2i], x[2i + 1]) rotated by theta[i]
        x0, x1 = x[..., 0::2], x[..., 1::2]
        c, s = torch.cos(theta), torch.sin(theta)
        return torch.stack([x0 * c - x1 * s, x0 * s + x1 * c], dim=-1).flatten(-2)
    q, k = rotate(q), rotate(k)
    alpha = torch.exp(ADT)[..., None, None]
    trap = torch.sigmoid(Trap)[..., None, None]
    dt = DT[..., None, None]
    ssm = ssm * alpha + alpha * dt * (1 - trap) * v_prev[..., :, None] * k_prev[..., None, :] \
        + trap * dt * V[..., :, None] * k[..., None, :]
    out = (ssm @ q[..., None])[..., 0] + D[:, None] * V
    return out * F.silu(Z), (angle, ssm, k, V)


def _mamba3_zero_states(xs):
    b, _, h, dv = xs["V"].shape
    dqk, da = xs["Q"].shape[-1], xs["Angles"].shape[-1]
    return (torch.zeros(b, h, da), torch.zeros(b, h, dv, dqk), torch.zeros(b, h, dqk), torch.zeros(b, h, dv))


def _mamba3_token(xs, t):
    """Token t of the sequence-shaped inputs, as the step kernel takes them."""
    per_token = {"Q", "K", "V", "Angles", "Z"}
    return {k: v[:, t] if k in per_token else v[:, :, t] if k in ("ADT", "DT", "Trap") else v for k, v in xs.items()}


@case("mamba.mamba3_angle_dt")
def _(M, chk):
    """cumsum(tanh(angle) * pi * dt) mod 2 pi along the sequence, in chunks of 64."""
    from mamba_ssm.ops.triton.mamba3.angle_dt import angle_dt_fwd
    angle, dt = randn(2, 200, 4, 8), torch.rand(2, 4, 200)
    out = angle_dt_fwd(angle, dt)
    ref = torch.cumsum(torch.tanh(angle.double()) * math.pi * dt.double().transpose(1, 2)[..., None], dim=1)
    # compared on the circle: angles near 0 and near 2 pi are close
    gap = torch.remainder(out.double() - ref, 2 * math.pi)
    distance = torch.minimum(gap, 2 * math.pi - gap)
    chk.close("angle (distance on the circle)", distance, torch.zeros_like(distance), atol=1e-5 * 2 * math.pi, rtol=0)


@case("mamba.mamba3_siso_step")
def _(M, chk):
    """Mamba-3's decoding step from random states, against _mamba3_step_ref."""
    from mamba_ssm.ops.triton.mamba3.mamba3_siso_step import mamba3_siso_step
    xs = _mamba3_token(_mamba3_inputs(b=2), 5)
    states = tuple(randn(*s.shape) for s in _mamba3_zero_states(_mamba3_inputs(b=2)))
    out, new = mamba3_siso_step(**xs, Input_States=states)
    ref, ref_new = _mamba3_step_ref(**{k: v.double() for k, v in xs.items()}, states=[s.double() for s in states])
    _mamba_check(chk, "out", out, ref, tol=2e-2)
    for name, a, b in zip(("angle", "ssm", "k", "v"), new, ref_new):
        _mamba_check(chk, name + "_state", a, b, tol=2e-2)


@case("mamba.mamba3_siso_chunked")
def _(M, chk):
    """Mamba-3's chunked forward (mamba3_siso_combined: rotary, trapezoidal discretization,
    gating, skip) over a sequence of two and a half chunks, against _mamba3_step_ref stepped
    token by token from zero states."""
    from mamba_ssm.ops.triton.mamba3.mamba3_siso_combined import mamba3_siso_combined
    xs = _mamba3_inputs(l=160)
    out = mamba3_siso_combined(**xs, chunk_size=64)
    states, ref = [s.double() for s in _mamba3_zero_states(xs)], []
    for t in range(xs["V"].shape[1]):
        y, states = _mamba3_step_ref(**{k: v.double() for k, v in _mamba3_token(xs, t).items()}, states=states)
        ref.append(y)
    _mamba_check(chk, "out", out.float(), torch.stack(ref, dim=1), tol=2e-2)


# ------------------------------------------------------------------------------ Unsloth
