#!/usr/bin/env python
"""torch.compile every op of torch's OpInfo database on CPU tensors, with Inductor emitting
Triton (`cpu_backend = "triton"`), and compare each result with eager.

    python scripts/inductor_opinfo.py [--dtype float32] [--samples 2] [--dynamic] [--backward]
                                     [-k SUBSTRING] [-j 2] [--out results.jsonl] [-v]

The kernels are Inductor's, generated for ops nobody on this project chose: the widest
source of foreign Triton code we can run without a download (the OpInfo database ships in the
torch wheel, `torch.testing._internal`; it needs `pip install expecttest hypothesis`).

For each op that supports the dtype on CPU, the first `--samples` sample inputs are each
compiled on their own (dynamo reset, static shapes) and run; the outcome is one of

    pass            matches eager (torch.testing.assert_close, the dtype's default tolerances;
                    an unstable sort's indices only need to pick eager's sorted values)
    no-triton       matches eager, but Inductor generated no Triton kernel (extern calls only)
    random          the op draws random numbers (eager differs between two seeds): shapes and
                    dtypes compared only
    rounding        differs from eager, the C++ backend matches eager, and ours is no more than
                    twice as far as eager from the op computed in float64 (Triton may fuse a*b+c
                    into an fma, as on a GPU: enable_fp_fusion)
    mismatch        differs from eager, and Inductor's C++ backend matches eager
    mismatch-both   differs from eager, and so does the C++ backend, and ours is no more than
                    twice as far as the C++ backend's from the op computed in float64
                    (Inductor's rounding, not ours)
    error           raised in this backend, or raised where the C++ backend compiles it (the
                    first line is printed)
    error-both      raised with the C++ backend too
    triton-refuses  stock Triton's frontend refused the kernel Inductor generated (it would for a
                    GPU too: e.g. tl.atomic_add on 8-bit integers, for index_add)
    crash, timeout  the worker process died or took longer than --timeout seconds

A case is run in a worker process (`-j` of them), restarted after a crash or a timeout.
Exit status 1 when any case is `mismatch`, `error`, `crash` or `timeout`.
"""
import argparse
import collections
import json
import multiprocessing as mp
import os
import queue
import sys
import time
import traceback

OURS = ("mismatch", "error", "crash", "timeout")


def _leaves_to_args(sample):
    """(rebuild, tensors): rebuild(*tensors) gives the sample's (input, args, kwargs) with
    those tensors in place of its own; the other arguments stay as they are (constants of
    the compiled graph)."""
    import torch
    from torch.utils import _pytree as pytree
    flat, spec = pytree.tree_flatten((sample.input, sample.args, sample.kwargs))
    slots = [i for i, x in enumerate(flat) if isinstance(x, torch.Tensor)]
    tensors = [flat[i] for i in slots]

    def rebuild(*ts):
        items = list(flat)
        for i, t in zip(slots, ts):
            items[i] = t
        return pytree.tree_unflatten(items, spec)
    return rebuild, tensors


# How cases are compiled and run, set in each worker from the command line: dynamic shapes
# (torch.compile(dynamic=True)), and the backward pass (the gradients of every output that
# requires one, for fixed random cotangents, through Inductor's compiled backward graph).
_MODE = {"dynamic": False, "backward": False}


def _clone(tensors):
    return [t.detach().clone().requires_grad_(t.requires_grad) for t in tensors]


def _with_grads(out, inputs):
    """(outputs, gradients of the inputs) in backward mode, else the outputs."""
    import torch
    from torch.utils import _pytree as pytree
    if not _MODE["backward"]:
        return out
    outs = [o for o in pytree.tree_leaves(out) if isinstance(o, torch.Tensor) and o.requires_grad]
    wrt = [t for t in inputs if t.requires_grad]
    if not outs or not wrt:
        return out, None
    g = torch.Generator().manual_seed(1234)
    cotangents = [torch.randn(o.shape, generator=g, dtype=torch.float64).to(o.dtype) for o in outs]
    grads = torch.autograd.grad(outs, wrt, cotangents, allow_unused=True)
    return out, [x.detach() if x is not None else None for x in grads]


def _compare(actual, expected, dtype_only=False):
    import torch
    from torch.utils import _pytree as pytree
    a, e = pytree.tree_leaves(actual), pytree.tree_leaves(expected)
    if len(a) != len(e):
        raise AssertionError(f"{len(a)} outputs, eager has {len(e)}")
    for x, y in zip(a, e):
        if isinstance(y, torch.Tensor):
            if not isinstance(x, torch.Tensor):
                raise AssertionError(f"output is {type(x).__name__}, eager's a tensor")
            if x.shape != y.shape or x.dtype != y.dtype:
                raise AssertionError(f"output {tuple(x.shape)} {x.dtype}, eager {tuple(y.shape)} {y.dtype}")
            if not dtype_only:
                torch.testing.assert_close(x, y, equal_nan=True, check_stride=False)
        elif not dtype_only and isinstance(y, (int, float, bool)):
            torch.testing.assert_close(x, y, equal_nan=True)


def _run_case(op, sample, backend):
    """Compiled result of the op on the sample with Inductor's `backend` ("triton" or "cpp"):
    (outputs, generated source)."""
    import torch
    from torch._inductor import config
    from torch._inductor.utils import run_and_get_code
    rebuild, tensors = _leaves_to_args(sample)

    def fn(*ts):
        inp, args, kwargs = rebuild(*ts)
        return op.op(inp, *args, **kwargs)
    torch._dynamo.reset()
    # fullgraph: a backend that raises must fail the case, not become a graph break that
    # runs the op in eager
    with config.patch(cpu_backend=backend, compile_threads=1, fx_graph_cache=False):
        torch.manual_seed(0)
        inputs = _clone(tensors)
        out, code = run_and_get_code(torch.compile(fn, dynamic=_MODE["dynamic"], fullgraph=True), *inputs)
        out = _with_grads(out, inputs)
    return out, "\n".join(code)


def _eager(op, sample, seed):
    import torch
    rebuild, tensors = _leaves_to_args(sample)
    inputs = _clone(tensors)
    inp, args, kwargs = rebuild(*inputs)
    torch.manual_seed(seed)
    return _with_grads(op.op(inp, *args, **kwargs), inputs)


def _frontend_message(text):
    """The last line of an exception's text: what Triton's frontend said."""
    lines = [line.strip() for line in text.splitlines()
             if line.strip() and "TORCHDYNAMO" not in line and "TORCH_LOGS" not in line]
    return lines[-1][:300] if lines else "Triton's frontend raised"


def _first_line(exc):
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


def classify(op, sample):
    """(outcome, detail) of one sample; see the module docstring."""
    try:
        expected = _eager(op, sample, 0)
    except Exception as e:  # an invalid sample for eager: not a case
        return "skip", "eager raised " + _first_line(e)
    try:
        again = _eager(op, sample, 1)
        _compare(again, expected)
        random = False
    except Exception:
        random = True
    try:
        actual, code = _run_case(op, sample, "triton")
    except Exception as e:
        detail = _first_line(e)
        trace = "".join(traceback.format_exception(e)) + str(e)
        if "triton_cpu" in trace or "TTIR" in detail:
            return "error", detail
        if "triton/language/semantic.py" in trace or "CompilationError" in detail:
            # stock Triton's frontend refused Inductor's kernel: it would on a GPU too
            return "triton-refuses", _frontend_message(str(e))
        try:
            _run_case(op, sample, "cpp")
        except Exception:
            return "error-both", detail
        return "error", detail
    has_triton = "@triton.jit" in code
    try:
        _compare(actual, expected, dtype_only=random)
    except Exception as e:
        detail = _first_line(e)
        if _same_unstable_sort(op, sample, actual, expected):
            return ("pass" if has_triton else "no-triton"), "ties in another order (an unstable sort)"
        try:
            cpp, _ = _run_case(op, sample, "cpp")
        except Exception:
            return "mismatch", detail + " (the C++ backend raises)"
        try:
            _compare(cpp, expected)
            cpp_matches = True
        except Exception:
            cpp_matches = False
        ours = _distance(op, sample, actual)
        if cpp_matches:
            # The C++ backend rounds as eager does. Ours may round otherwise where Triton
            # allows it (fp fusion: an fma for a*b+c, as on a GPU): accepted when it is no
            # further than eager from the op computed in float64.
            eager = _distance(op, sample, expected)
            if ours is not None and eager is not None and ours <= 2 * eager + 1e-12:
                return "rounding", f"{detail} (from float64: ours {ours:.3g}, eager {eager:.3g})"
            return "mismatch", detail
        # Both differ from eager (low precision: Inductor computes in float32 where eager
        # rounds each op). Ours is attributed to Inductor when it is no further than the
        # C++ backend's result from the op computed in float64.
        theirs = _distance(op, sample, cpp)
        if ours is None or theirs is None or ours <= 2 * theirs + 1e-6:
            return "mismatch-both", detail
        return "mismatch", f"{detail} (from float64: ours {ours:.3g}, C++ backend {theirs:.3g})"
    if random:
        return "random", ""
    return ("pass" if has_triton else "no-triton"), ""


def _same_unstable_sort(op, sample, actual, expected):
    """sort and argsort without stable=True leave the order of equal elements unspecified
    (Inductor's Triton sort is a bitonic network, eager's another algorithm): their
    indices are right when they pick eager's sorted values from the input."""
    import torch
    if op.name not in ("sort", "argsort") or sample.kwargs.get("stable") or not sample.input.dim() or \
            _MODE["backward"]:
        return False
    dim = sample.args[0] if sample.args else sample.kwargs.get("dim", -1)
    if not isinstance(dim, int) or isinstance(dim, bool):
        return False
    ours = actual[1] if op.name == "sort" else actual
    theirs = expected[1] if op.name == "sort" else expected
    if op.name == "sort" and not torch.equal(actual[0], expected[0]):
        return False
    return (ours.shape == theirs.shape and
            torch.equal(sample.input.gather(dim, ours), sample.input.gather(dim, theirs)))


def _distance(op, sample, actual):
    """Largest absolute difference between `actual` and the op computed in float64 from
    the same inputs (None when the op does not run in float64)."""
    import torch
    from torch.utils import _pytree as pytree
    rebuild, tensors = _leaves_to_args(sample)
    wide = [t.detach().double().requires_grad_(t.requires_grad) if t.is_floating_point() else t.clone()
            for t in tensors]
    try:
        inp, args, kwargs = rebuild(*wide)
        torch.manual_seed(0)
        reference = _with_grads(op.op(inp, *args, **kwargs), wide)
    except Exception:
        return None
    worst = 0.0
    for x, y in zip(pytree.tree_leaves(actual), pytree.tree_leaves(reference)):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and x.numel() and x.shape == y.shape:
            d = (x.double() - y.double()).abs()
            d = d[~torch.isnan(d)]
            if d.numel():
                worst = max(worst, d.max().item())
    return worst


def _name(op) -> str:
    """The op's name as the command line and the reports give it: name[.variant]."""
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


def _ops(dtype_name, pattern):
    """The names of the ops that support the dtype on CPU (and contain `pattern`)."""
    import torch
    from torch.testing._internal.common_methods_invocations import op_db
    dtype = getattr(torch, dtype_name)
    return [_name(op) for op in op_db if pattern in _name(op) and dtype in op.supported_dtypes("cpu")]


def _find(name):
    from torch.testing._internal.common_methods_invocations import op_db
    op = next((op for op in op_db if _name(op) == name), None)
    if op is None:
        raise KeyError(name)
    return op


def _worker(tasks, results, dtype_name, n_samples, mode):
    """Runs (op name) tasks: one result message per sample, then a "done" for the op."""
    import warnings
    warnings.filterwarnings("ignore")
    import torch
    torch.set_num_threads(1)
    _MODE.update(mode)
    dtype = getattr(torch, dtype_name)
    parent = os.getppid()
    while True:
        try:
            name = tasks.get(timeout=5)
        except queue.Empty:
            if os.getppid() != parent:  # the driver was killed: stop too
                return
            continue
        if name is None:
            return
        try:
            op = _find(name)
            grad = _MODE["backward"] and op.supports_autograd and dtype.is_floating_point
            if _MODE["backward"] and not grad:
                results.put(("done", name))
                continue
            samples = op.sample_inputs("cpu", dtype, requires_grad=grad)
            for i, sample in enumerate(samples):
                if i >= n_samples:
                    break
                results.put(("start", name, i))
                try:
                    outcome, detail = classify(op, sample)
                except Exception as e:
                    outcome, detail = "error", "harness: " + _first_line(e)
                results.put(("case", name, i, outcome, detail))
        except Exception as e:
            results.put(("case", name, 0, "skip", "samples: " + _first_line(e)))
        results.put(("done", name))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--samples", type=int, default=2, help="sample inputs per op (default 2)")
    ap.add_argument("-k", default="", help="only ops whose name contains this")
    ap.add_argument("-j", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per sample (default 300)")
    ap.add_argument("--out", help="write one JSON line per case here")
    ap.add_argument("--dynamic", action="store_true", help="compile with dynamic shapes")
    ap.add_argument("--backward", action="store_true",
                    help="also compare the inputs' gradients (ops with autograd, floating dtypes)")
    ap.add_argument("-v", action="store_true", help="print passing cases too")
    a = ap.parse_args()

    names = _ops(a.dtype, a.k)
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    todo = list(reversed(names))
    workers = {}  # process -> [task queue, current (op, sample) or None, start time]
    mode = dict(dynamic=a.dynamic, backward=a.backward)

    def spawn():
        tasks = ctx.Queue()
        p = ctx.Process(target=_worker, args=(tasks, results, a.dtype, a.samples, mode), daemon=True)
        p.start()
        workers[p] = [tasks, None, time.time()]
        feed(p)

    def feed(p):
        if todo:
            name = todo.pop()
            workers[p][0].put(name)
            workers[p][1] = (name, None)
            workers[p][2] = time.time()
        else:
            workers[p][0].put(None)
            workers[p][1] = None

    cases = []
    out = open(a.out, "w") if a.out else None
    start = time.time()

    def record(name, i, outcome, detail):
        cases.append((name, i, outcome, detail))
        if out:
            out.write(json.dumps(dict(op=name, sample=i, outcome=outcome, detail=detail)) + "\n")
            out.flush()
        if a.v or outcome in OURS:
            print(f"{outcome:<13} {name}[{i}] {detail}", flush=True)

    for _ in range(min(a.j, len(names))):
        spawn()
    while any(w[1] is not None for w in workers.values()):
        try:
            msg = results.get(timeout=1)
        except queue.Empty:
            msg = None
        if msg is not None:
            p = next((q for q, w in workers.items() if w[1] and w[1][0] == msg[1]), None)
            if msg[0] == "start" and p is not None:
                workers[p][1] = (msg[1], msg[2])
                workers[p][2] = time.time()
            elif msg[0] == "case":
                record(*msg[1:])
            elif msg[0] == "done" and p is not None:
                feed(p)
        for p, w in list(workers.items()):
            if w[1] is None:
                continue
            dead = not p.is_alive()
            late = time.time() - w[2] > a.timeout
            if dead or late:
                name, i = w[1]
                record(name, i if i is not None else 0, "crash" if dead else "timeout",
                       f"exit code {p.exitcode}" if dead else f"> {a.timeout:.0f} s")
                if late:
                    p.kill()
                del workers[p]
                spawn()
    for p in workers:
        p.join(timeout=5)
    counts = collections.Counter(outcome for _, _, outcome, _ in cases)
    ops_ours = sorted({n for n, _, o, _ in cases if o in OURS})
    print(f"\n{len(names)} ops, {len(cases)} cases in {time.time() - start:.0f} s: "
          + ", ".join(f"{k} {v}" for k, v in counts.most_common()))
    if ops_ours:
        print("ops with a case not passing here only:", " ".join(ops_ours))
    return 1 if ops_ours else 0


if __name__ == "__main__":
    sys.exit(main())
