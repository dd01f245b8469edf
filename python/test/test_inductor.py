"""torch.compile on CPU tensors with Inductor emitting Triton (`cpu_backend = "triton"`):
the generated kernels compile through this backend and match eager.

Each test checks that Inductor really generated Triton kernels (not its C++ ones) and
compares the compiled result with eager's. Inductor's FX graph cache is off so that every
test compiles, and its compile worker pool is off (it would share the two cores).
"""
import pytest
import torch
import torch.nn.functional as F
from torch._inductor import config as inductor_config
from torch._inductor.utils import run_and_get_code


@pytest.fixture(autouse=True)
def triton_on_cpu():
    torch._dynamo.reset()
    with inductor_config.patch(cpu_backend="triton", compile_threads=1, fx_graph_cache=False):
        yield
    torch._dynamo.reset()


def compiled(fn, *args, dynamic=None, **kwargs):
    """fn compiled with Inductor, run once on args; asserts its kernels are Triton's."""
    cfn = torch.compile(fn, dynamic=dynamic)
    out, code = run_and_get_code(cfn, *args, **kwargs)
    src = "\n".join(code)
    assert "@triton.jit" in src, "Inductor generated no Triton kernel"
    assert "cpp_fused" not in src, "Inductor generated C++ kernels: cpu_backend not applied"
    return cfn, out


def test_pointwise_chain():
    def f(x, y):
        return (torch.sigmoid(x) * y + 1).exp().clamp(max=10) - torch.tanh(y) * x.abs().sqrt()
    x, y = torch.randn(300, 257), torch.randn(300, 257)
    _, out = compiled(f, x, y)
    torch.testing.assert_close(out, f(x, y), rtol=1e-5, atol=1e-5)


def test_softmax():
    def f(x):
        return torch.softmax(x * 0.5, dim=-1)
    x = torch.randn(64, 1000) * 4
    _, out = compiled(f, x)
    torch.testing.assert_close(out, f(x), rtol=1e-5, atol=1e-6)


def test_layer_norm_gelu():
    ln = torch.nn.LayerNorm(384)
    with torch.no_grad():
        ln.weight.uniform_(0.5, 1.5)
        ln.bias.uniform_(-0.2, 0.2)

    def f(x):
        return F.gelu(ln(x), approximate="tanh") + F.gelu(x)
    x = torch.randn(2, 50, 384)
    with torch.no_grad():
        _, out = compiled(f, x)
        torch.testing.assert_close(out, f(x), rtol=1e-5, atol=2e-5)


def test_mixed_reductions():
    def f(x):
        return (x.sum(1), x.amax(0), x.var(1, unbiased=True), torch.cumsum(x, 1), x.argmin(1),
                (x * x).mean())
    x = torch.randn(97, 130)
    _, out = compiled(f, x)
    for got, want in zip(out, f(x)):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_gather_index_strided():
    def f(x, idx, g):
        a = x[idx]  # advanced indexing
        b = torch.gather(x, 1, g)
        c = x[:, ::3] * 2 + x.t()[::3, :].t()  # strided views
        d = torch.index_select(x, 0, idx.flip(0))
        e = torch.zeros(10, x.shape[1]).index_add(0, idx % 10, x[idx])
        return a, b, c, d, e
    x = torch.randn(40, 33)
    idx = torch.randint(0, 40, (25,))
    g = torch.randint(0, 33, (40, 7))
    _, out = compiled(f, x, idx, g)
    for got, want in zip(out, f(x, idx, g)):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_bf16_model():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.LayerNorm(128),
                                torch.nn.Linear(128, 32))
    ref_model = model.float()
    x = torch.randn(16, 64)
    with torch.no_grad():
        want = ref_model(x)
        bf = model.to(torch.bfloat16)
        _, out = compiled(bf, x.bfloat16())
        eager = bf(x.bfloat16())
    assert out.dtype == torch.bfloat16
    # No further from the fp32 result than eager bf16 is (with a margin of bf16 rounding).
    err, eager_err = (out.float() - want).abs().max(), (eager.float() - want).abs().max()
    assert err <= 2 * eager_err + 2e-2, (err, eager_err)


def test_mlp_training_step():
    def make():
        torch.manual_seed(1)
        m = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.SiLU(),
                                torch.nn.Linear(64, 10))
        return m, torch.optim.AdamW(m.parameters(), lr=1e-2)

    def step(m, opt, x, y):
        opt.zero_grad()
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        return loss

    x, y = torch.randn(24, 32), torch.randint(0, 10, (24,))
    m_ref, opt_ref = make()
    m, opt = make()
    cstep, out = compiled(step, m, opt, x, y)
    torch.testing.assert_close(out, step(m_ref, opt_ref, x, y), rtol=1e-4, atol=1e-5)
    for _ in range(2):
        torch.testing.assert_close(cstep(m, opt, x, y), step(m_ref, opt_ref, x, y), rtol=1e-4, atol=1e-5)
    for p, q in zip(m.parameters(), m_ref.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)


class Block(torch.nn.Module):
    def __init__(self, d=64, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(), torch.nn.Linear(4 * d, d))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        # Written out (not SDPA) so that the masked softmax is an Inductor-generated kernel.
        s = (q @ k.transpose(-1, -2)) / (d // self.heads) ** 0.5
        s = s.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
        a = (s.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(a)
        return x + self.mlp(self.ln2(x))


def test_transformer_block_causal():
    torch.manual_seed(2)
    blk = Block()
    x = torch.randn(2, 33, 64)
    with torch.no_grad():
        _, out = compiled(blk, x)
        torch.testing.assert_close(out, blk(x), rtol=1e-4, atol=1e-4)


def test_dynamic_shapes():
    def f(x, w):
        return torch.softmax(x @ w, -1).sum(0) + x.mean()
    w = torch.randn(48, 40)
    cf, out = compiled(f, torch.randn(7, 48), w, dynamic=True)
    for n in (7, 19, 64, 130):
        x = torch.randn(n, 48)
        torch.testing.assert_close(cf(x, w), f(x, w), rtol=1e-4, atol=1e-4)


def test_max_autotune_templates():
    """Under max-autotune Inductor writes its own tl.dot kernels, its GEMM and convolution
    templates (block sizes from its config lists, the epilogue fused into the template);
    with the ATen choices left out a template must win the autotuning, so the results below
    are theirs. benchmark_epilogue_fusion is off: with it, Inductor (torch 2.13) writes a
    benchmark module for a CPU device that fails to import (its CPU `get_raw_stream`, two
    lines, breaks the dedent of that module's imports), whichever Triton backend runs it."""
    def f(a, b, bias, x, y, img, w):
        return torch.relu(a @ b + bias), torch.bmm(x, y), F.conv2d(img, w, padding=1)
    args = (torch.randn(96, 200), torch.randn(200, 72), torch.randn(72), torch.randn(3, 40, 64),
            torch.randn(3, 64, 24), torch.randn(2, 3, 12, 12), torch.randn(5, 3, 3, 3))
    with inductor_config.patch(max_autotune=True, max_autotune_gemm_backends="TRITON",
                               max_autotune_conv_backends="TRITON", benchmark_epilogue_fusion=False):
        out, code = run_and_get_code(torch.compile(f), *args)
    src = "\n".join(code)
    assert src.count("def triton_tem") == 3, "Inductor did not choose a Triton template for each op"
    for got, want in zip(out, f(*args)):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
