"""Apple's Cut Cross-Entropy (cut-cross-entropy, `cut_cross_entropy.linear_cross_entropy` with its
"cce" implementation): the cross-entropy of `e @ c.T` without materializing the logits. The
forward computes each row's log-sum-exp over vocabulary blocks (tl.dot tiles, an online max and
sum) and the target logits with an indexed dot; the backward recomputes the logits block by
block and adds each block's `dE` and `dC` products into the bf16/fp16 gradients under spin locks
(`atomic_cas` / `atomic_xchg`), on real threads. No shim: its wrapper launches on any device
(its autotuning is off by default, CCE_AUTOTUNE=0, leaving one config per kernel).

References: the cross-entropy of the same inputs in fp64 (`F.cross_entropy` on `e.double() @
c.double().T`, soft-capped as the library does: `softcap * tanh(logits / softcap)`), and its
autograd gradients. The loss is compared within 1e-4 relative; the gradients within a few bf16 /
fp16 units of their largest element: every vocabulary block's product is rounded to the
gradient's dtype and added into it in that dtype, in whatever order the threads take the locks.
`filter_eps=None` (every block's gradient computed); the library's default filter skips blocks
whose softmax terms are all below 2^-12 (bf16), which changes the gradient by design.
"""
import torch
import torch.nn.functional as F

from kernel_libraries import case, _grad


def _reference(e, c, targets, softcap, shift, ignore_index=-100):
    logits = e.double() @ c.double().T
    if softcap is not None:
        logits = softcap * torch.tanh(logits / softcap)
    if shift:  # position i predicts token i + 1; the last position has no target
        logits, targets = logits[..., :-1, :], targets[..., 1:]
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=ignore_index)


@case("cce.linear_cross_entropy")
def _(cce, chk):
    """Forward and backward in bf16 and fp16, embeddings [2, 150, 96] against a 1000-token
    vocabulary (neither a multiple of the 128 x 128 blocks), with ignored targets, plain, soft-capped
    (30) and with the causal shift."""
    from cut_cross_entropy import linear_cross_entropy
    for dtype in (torch.bfloat16, torch.float16):
        for softcap, shift in ((None, False), (30.0, False), (None, True)):
            e = torch.randn(2, 150, 96, dtype=dtype)
            c = (torch.randn(1000, 96) / 4).to(dtype)
            targets = torch.randint(0, 1000, (2, 150))
            targets[0, 7:19] = -100
            ea, ca, eb, cb = _grad(e), _grad(c), _grad(e), _grad(c)
            loss = linear_cross_entropy(ea, ca, targets, softcap=softcap, shift=shift, filter_eps=None, impl="cce")
            ref = _reference(eb, cb, targets, softcap, shift)
            tag = f" {dtype} softcap={softcap} shift={shift}"
            chk.close("loss" + tag, loss.double(), ref, atol=1e-5, rtol=1e-4)
            loss.backward()
            ref.backward()
            # 8 vocabulary blocks add into each row of dE, 2 token blocks into dC, each rounded
            # (half a unit each): 4 units at 1.0.
            tol = 4 * torch.finfo(dtype).eps
            chk.close_to_scale("dE" + tag, ea.grad, eb.grad.to(dtype), tol)
            chk.close_to_scale("dC" + tag, ca.grad, cb.grad.to(dtype), tol)
