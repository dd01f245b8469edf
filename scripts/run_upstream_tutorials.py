#!/usr/bin/env python3
"""Run upstream Triton's tutorials 01-08, unmodified, on the CPU backend.

Each tutorial runs in its own child process (``run_upstream_tutorials.py --child FILE``),
one at a time, and the runner prints one line per tutorial:

    NAME                          PASS|FAIL  SECONDS  [last exception line / failed check]

followed, where applicable, by indented lines naming the statements that were skipped or
failed because they are GPU-only, and the pytest run of 06's ``test_op``. The full output
of every child goes to ``upstream/results/tutorials/<name>.log``; anything a tutorial saves
(CSV/PNG/HTML of its benchmarks) goes to ``upstream/results/tutorials/<name>/``, which is
also the child's working directory. The exit code is 1 if any tutorial fails.

Getting the tutorials
---------------------
They are upstream's files, never committed here: they live in the git-ignored ``upstream/``
folder (see ``scripts/upstream_tests.sh`` for how that folder is populated). From a git copy
of a repository containing upstream commit 63068fcc274cd152fb34abe1bcab10e5078b0df5
(triton-lang/triton; take the files from that commit itself):

    C=63068fcc274cd152fb34abe1bcab10e5078b0df5
    git -C <that repo> archive "$C" pytest.ini python/conftest.py python/tutorials | tar -x -C upstream/
    pip install matplotlib pandas tabulate pytest   # benchmark/tutorial deps, not project deps

``upstream/pytest.ini`` is what lets pytest collect ``tutorials/*.py`` (used for 06's test_op).

Usage
-----
    python scripts/run_upstream_tutorials.py [--only 03] [--timeout 900] [--full] [-v]

    --only NN    run only the tutorial(s) whose name starts with NN (repeatable, or 03,05)
    --timeout S  wall-clock limit per tutorial, including 06's pytest run (default 900)
    --full       do not cut the benchmarks short (patches 1-3 below off; hours on a CPU)
    -v           echo each child's output live

The children get OMP_NUM_THREADS=1, TRITON_CPU_NUM_THREADS=1, MPLBACKEND=Agg and
TRITON_CACHE_DIR=upstream/results/triton-cache unless those are already set.

What the child does to the environment (never to the files)
-----------------------------------------------------------
The tutorial file is executed as ``__main__`` with ``runpy.run_path`` (or statement by
statement, see GPU_ONLY below). Before that, unless --full, it patches Triton's
benchmarking, generally (the same patches for every tutorial):

1. ``triton.testing.Mark.run`` (the object ``@triton.testing.perf_report`` returns): every
   ``Benchmark``'s ``x_vals`` is cut to its first BENCH_X_VALS value(s) for the run (the
   smallest sizes: all tutorials list them ascending), ``show_plots`` is forced off, and a
   given ``save_path`` is redirected to the tutorial's output folder. Every Benchmark, line
   (provider) and its own checks still run; only the sweep is shortened.
2. ``triton.testing.do_bench``: replaced by a short wall-clock version: one timed call; if
   it took under BENCH_SLOW_MS it counts as warm-up (compilation, autotuning) and
   BENCH_REPS more timed calls give the result, otherwise it is the only sample (08's
   torch fp16 reference matmuls at N=K=8192 take ~90 s each on one core). Results go
   through Triton's own ``_summarize_statistics``, so ``quantiles``/``return_mode`` behave
   as upstream. The numbers are a smoke test, not a measurement. The CPU driver's
   ``get_benchmarker()`` returns ``triton.testing.do_bench`` looked up at call time, so
   ``@triton.autotune`` benchmarks its configs with this version too.
3. ``Autotuner.prune_configs``: *while a perf_report benchmark runs* (and only then), the
   configs left after the kernel's own pruning are cut to the first one, so the autotuner
   compiles one config and benchmarks none (06's ``__main__`` benchmark would otherwise
   compile and time 30 attention configs per key). Autotuning outside benchmarks, e.g. in
   03's and 08's unit tests, is untouched.
4. matplotlib is switched to the non-interactive Agg backend (in all modes).

Correctness checks are never patched: the tutorials' asserts, ``torch.testing``
comparisons and their printed results run as written. In addition the runner checks the
child's output (OUTPUT_CHECKS): a printed "maximum difference between torch and triton"
must be at most MAX_DIFF, and a printed "❌" (03's "Triton and Torch differ") fails.

GPU-only statements
-------------------
Files listed in GPU_ONLY are executed statement by statement (``ast``; each top-level
statement compiled with the file's real name and line numbers, in one ``__main__``
namespace). A listed statement is either executed and must fail with the listed exception
("expect-fail": proves it is GPU-only, not hidden), or not executed ("skip": it only uses
the result of a GPU-only statement). Every other statement must succeed. Nothing is faked
(no ``is_cuda`` patching). The table is keyed by upstream line number and checked against
the statement's source, so a changed file is reported rather than silently mismatched.
Currently listed: 02 line 229 (its benchmark calls ``torch.cpu.set_stream``, which does not
exist) and 07 lines 57, 82 (CUDA-tensor assert, NVIDIA/AMD libdevice path) plus 95-98 (the
launch with the custom libdevice path, and its prints).

Failures are reported with the last exception line and the tutorial line it came from;
KNOWN_CAUSES adds a one-line explanation for failures already analysed (still a FAIL).

06-fused-attention.py: test_op
------------------------------
After the file itself (its ``__main__`` benchmark, cut short as above), its pytest
function ``test_op`` runs in a second child, ``python -m pytest`` from ``upstream/`` with
``-k`` PYTEST_SUBSETS['06-fused-attention.py'] (see the comment there for what is chosen
and why). The tutorial passes only if both parts pass.
"""

import argparse
import ast
import builtins
import json
import math
import os
import re
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UPSTREAM = os.path.join(ROOT, "upstream")
TUTORIALS = os.path.join(UPSTREAM, "python", "tutorials")
RESULTS = os.path.join(UPSTREAM, "results", "tutorials")
NAMES = [
    "01-vector-add.py",
    "02-fused-softmax.py",
    "03-matrix-multiplication.py",
    "04-low-memory-dropout.py",
    "05-layer-norm.py",
    "06-fused-attention.py",
    "07-extern-functions.py",
    "08-grouped-gemm.py",
]

BENCH_X_VALS = 1  # x values kept per Benchmark (the first ones, i.e. the smallest)
BENCH_REPS = 2  # timed calls per do_bench, after one untimed call ...
BENCH_SLOW_MS = 1000  # ... unless that call took this long: then it is the only (timed) one
MAX_DIFF = 1e-5  # bound on a printed "maximum difference between torch and triton"
RESULT_TAG = "@@TUTORIAL-RESULT@@"


@dataclass
class GpuOnly:
    line: int  # first line of the top-level statement in upstream commit 63068fcc
    source: str  # how the statement's source starts (checked)
    action: str  # "expect-fail": run it, it must raise `raises`; "skip": do not run it
    reason: str
    raises: type = None  # for "expect-fail": the exception type it must raise ...
    match: str = ""  # ... and a substring of its message


# Top-level statements that cannot work on a non-GPU backend, by nature of the statement.
GPU_ONLY = {
    "02-fused-softmax.py": [
        GpuOnly(229, "benchmark.run(show_plots=True, print_data=True)", "expect-fail",
                "the benchmark body (line 218) calls getattr(torch, DEVICE.type).set_stream(stream), a GPU "
                "stream API: torch.cpu has Stream but no set_stream (the kernel launches and the assert at "
                "line 190 still run)", AttributeError, "set_stream"),
    ],
    "07-extern-functions.py": [
        GpuOnly(57, "assert x.is_cuda and output_triton.is_cuda", "expect-fail",
                "asserts the tensors are CUDA tensors; on the cpu driver they are CPU tensors "
                "(the launch at line 60 and its printed check still run)", AssertionError),
        GpuOnly(82, "if is_cuda():", "expect-fail",
                "picks the NVIDIA (libdevice.10.bc) or AMD (ocml/ockl) bitcode path and raises "
                "RuntimeError('unknown backend') for any other backend", RuntimeError, "unknown backend"),
        GpuOnly(95, "asin_kernel[grid](x, output_triton, n_elements, BLOCK_SIZE=1024, extern_libs=extern_libs)",
                "skip", "passes extern_libs, which only the GPU branch at line 82 defines"),
        GpuOnly(96, "print(output_torch)", "skip", "prints for the skipped launch at line 95"),
        GpuOnly(97, "print(output_triton)", "skip", "prints the result of the skipped launch at line 95"),
        GpuOnly(98, "print(f'The maximum difference between torch and triton is '", "skip",
                "compares the result of the skipped launch at line 95"),
    ],
}

# pytest -k selections of pytest functions in a tutorial, run after the file itself.
# 06 test_op ids read test_op[PROVIDER-MODE-WARP_SPECIALIZE-CAUSAL-HEAD_DIM-N_CTX-H-Z].
# test_op itself skips fwd+fp16 (the bwd case checks the forward output too) and bwd+fp8, so
# "triton-fp16-bwd" is the fp16 forward+backward test and "triton-fp8-fwd" the fp8 forward one.
# Chosen: both of those, Z=1, H=2, N_CTX in (128, 1024), HEAD_DIM in (64, 128), causal and
# not: 16 tests. warp_specialize is only True on Blackwell. Not run: H=48 / Z=4 and
# N_CTX=4096, valid but slow on a CPU (the torch reference alone materialises Z*H*N_CTX^2
# floats: 12 GB at Z=4, H=48, N_CTX=4096).
PYTEST_SUBSETS = {
    "06-fused-attention.py": ("test_op", "(triton-fp16-bwd or triton-fp8-fwd) and (-128-2-1] or -1024-2-1])"),
}

# Explanations of failures seen with this runner, printed under a FAIL whose cause contains
# the given text. They explain; they never turn a FAIL into a PASS.
KNOWN_CAUSES = {
    "03-matrix-multiplication.py": [
        ("matrix_instr_nonkdim",
         "for any backend but cuda the tutorial autotunes its HIP configs, which carry the AMD-only "
         "compile option matrix_instr_nonkdim; the cpu backend's options do not declare it, so "
         "Triton's launcher rejects the keyword (backend gap, not a kernel problem)"),
    ],
    "05-layer-norm.py": [
        ("05-layer-norm.py:322:",
         "db check: torch's CPU fp16 layer_norm backward (the reference) sums the bias gradient "
         "with fp16 rounding error (0.14 from the fp64 sum at M=1151, N=8192), above atol=1e-2; "
         "Triton's db was within 0.009 of the fp64 sum when checked"),
    ],
}

# Checks on a child's output: (regex, function of the match -> problem string or None).
def _check_max_diff(m):
    value = float(m.group(1))
    if not math.isfinite(value) or value > MAX_DIFF:
        return f"printed maximum difference {m.group(1)} > {MAX_DIFF}"
    return None


OUTPUT_CHECKS = [
    (re.compile(r"maximum difference between torch and triton is\s+(\S+)"), _check_max_diff),
    (re.compile(r"❌.*"), lambda m: f"printed {m.group(0).strip()!r}"),
]


# ----------------------------------------------------------------------------------------
# Child side
# ----------------------------------------------------------------------------------------


def _last_exception_line(exc):
    lines = [l.strip() for l in "".join(traceback.format_exception_only(type(exc), exc)).splitlines()]
    lines = [l for l in lines if l]
    return lines[-1] if lines else type(exc).__name__


def _describe_failure(exc, path):
    """The last exception line, plus where in the tutorial file it was raised."""
    where = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == path]
    text = _last_exception_line(exc)
    if where:
        text += f" [{os.path.basename(path)}:{where[-1].lineno}: {(where[-1].line or '').strip()}]"
    return text


_T0 = time.monotonic()


def _note(msg):
    print(f"[runner {time.monotonic() - _T0:6.1f}s] {msg}", flush=True)


def _patch_benchmarking(out_dir):
    import triton
    import triton.testing as tt
    from triton.runtime.autotuner import Autotuner

    in_benchmark = [False]
    original_run, original_prune = tt.Mark.run, Autotuner.prune_configs

    def quick_run(self, show_plots=False, print_data=False, save_path="", return_df=False, **kwargs):
        benchmarks = [self.benchmarks] if isinstance(self.benchmarks, tt.Benchmark) else self.benchmarks
        saved = [b.x_vals for b in benchmarks]
        for b in benchmarks:
            b.x_vals = list(b.x_vals)[:BENCH_X_VALS]
        names = ", ".join(f"{b.plot_name!r} x={b.x_vals}" for b in benchmarks)
        _note(f"benchmark {self.fn.__name__}: {len(benchmarks)} Benchmark(s), x_vals cut to the first "
              f"{BENCH_X_VALS} (of {', '.join(str(len(x)) for x in saved)}), plots not shown: {names}")
        in_benchmark[0] = True
        try:
            return original_run(self, show_plots=False, print_data=print_data,
                                save_path=out_dir if save_path else "", return_df=return_df, **kwargs)
        finally:
            in_benchmark[0] = False
            for b, x_vals in zip(benchmarks, saved):
                b.x_vals = x_vals
            _note(f"benchmark {self.fn.__name__} done")

    def quick_prune(self, kwargs):
        configs = original_prune(self, kwargs)
        if in_benchmark[0] and len(configs) > 1:
            _note(f"autotune {self.base_fn.__name__} inside a benchmark: {len(configs)} configs cut to the first")
            return configs[:1]
        return configs

    def quick_do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean"):
        assert return_mode in ["min", "max", "mean", "median", "all"]
        di = triton.runtime.driver.active.get_device_interface()

        def timed():
            if grad_to_none is not None:
                for x in grad_to_none:
                    x.grad = None
            t0 = time.perf_counter()
            fn()
            di.synchronize()
            return (time.perf_counter() - t0) * 1e3

        first = timed()  # includes compilation / autotuning of what `fn` launches
        times = [first] if first >= BENCH_SLOW_MS else [timed() for _ in range(BENCH_REPS)]
        return tt._summarize_statistics(times, quantiles, return_mode)

    tt.Mark.run = quick_run
    tt.do_bench = quick_do_bench
    Autotuner.prune_configs = quick_prune


def _run_statements(path, src, table):
    """Execute `path` one top-level statement at a time; returns (statement reports, error)."""
    by_line = {g.line: g for g in table}
    tree = ast.parse(src, filename=path)
    namespace = {"__name__": "__main__", "__file__": path, "__builtins__": builtins, "__spec__": None,
                 "__doc__": ast.get_docstring(tree)}
    seen, reports = set(), []
    for stmt in tree.body:
        text = ast.get_source_segment(src, stmt) or ""
        entry = by_line.get(stmt.lineno)
        if entry is not None:
            seen.add(stmt.lineno)
            if not text.startswith(entry.source):
                return reports, (f"GPU_ONLY table out of date: line {stmt.lineno} is {text.splitlines()[0]!r}, "
                                 f"expected {entry.source!r}")
        code = compile(ast.Module(body=[stmt], type_ignores=[]), path, "exec")
        if entry is not None and entry.action == "skip":
            reports.append(dict(line=stmt.lineno, source=text.splitlines()[0], action="skip", outcome="not run",
                                reason=entry.reason))
            _note(f"line {stmt.lineno} skipped (GPU-only): {entry.reason}")
            continue
        try:
            exec(code, namespace)
        except Exception as exc:  # noqa: BLE001
            sys.stdout.flush()
            if entry is not None and entry.raises and isinstance(exc, entry.raises) and entry.match in str(exc):
                reports.append(dict(line=stmt.lineno, source=text.splitlines()[0], action="expect-fail",
                                    outcome=_last_exception_line(exc), reason=entry.reason))
                _note(f"line {stmt.lineno} failed as expected (GPU-only): {_last_exception_line(exc)}")
                continue
            traceback.print_exc()
            return reports, _describe_failure(exc, path)
        if entry is not None:  # expected to fail but did not
            return reports, (f"line {stmt.lineno} was expected to fail with {entry.raises.__name__} "
                             f"(GPU-only) but passed")
    missing = sorted(set(by_line) - seen)
    if missing:
        return reports, f"GPU_ONLY table out of date: no top-level statement starts at line(s) {missing}"
    return reports, None


class _Tee:

    def __init__(self, stream):
        self.stream, self.parts = stream, []

    def write(self, s):
        self.parts.append(s)
        return self.stream.write(s)

    def flush(self):
        self.stream.flush()

    def __getattr__(self, name):
        return getattr(self.stream, name)


def child_main(path, full, out_dir):
    import matplotlib
    matplotlib.use("Agg")

    name = os.path.basename(path)
    result = dict(name=name, error=None, checks=[], statements=[])
    tee = _Tee(sys.stdout)
    sys.stdout = tee
    try:
        if not full:
            _patch_benchmarking(out_dir)
        sys.argv = [path]
        if name in GPU_ONLY:
            with open(path, encoding="utf-8") as f:
                src = f.read()
            result["statements"], result["error"] = _run_statements(path, src, GPU_ONLY[name])
        else:
            import runpy
            runpy.run_path(path, run_name="__main__")
    except BaseException as exc:  # noqa: BLE001  (SystemExit, KeyboardInterrupt included)
        traceback.print_exc()
        result["error"] = _describe_failure(exc, path)
    finally:
        sys.stdout.flush()
        sys.stdout = tee.stream
    output = "".join(tee.parts)
    for regex, check in OUTPUT_CHECKS:
        for m in regex.finditer(output):
            problem = check(m)
            if problem:
                result["checks"].append(problem)
    print("\n" + RESULT_TAG + " " + json.dumps(result), flush=True)
    return 0


# ----------------------------------------------------------------------------------------
# Parent side
# ----------------------------------------------------------------------------------------


def _run_process(cmd, cwd, env, log, timeout, verbose):
    """Run `cmd`, appending its output to `log`; returns (returncode or None on timeout, output)."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, errors="replace", start_new_session=True)
    chunks = []

    def pump():
        for line in proc.stdout:
            chunks.append(line)
            log.write(line)
            if verbose:
                sys.stdout.write(line)
                sys.stdout.flush()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        rc = proc.wait(timeout=max(timeout, 1))
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)  # the child's own session: it and whatever it started
        proc.wait()
        rc = None
    reader.join(10)
    return rc, "".join(chunks)


def _tail_line(output):
    lines = [l.strip() for l in output.splitlines() if l.strip() and not l.startswith(RESULT_TAG)]
    return lines[-1] if lines else "(no output)"


def run_tutorial(name, args, env):
    path = os.path.join(TUTORIALS, name)
    stem = name[:-3]
    out_dir = os.path.join(RESULTS, stem)
    os.makedirs(out_dir, exist_ok=True)
    details, cause = [], None
    start = time.monotonic()
    with open(os.path.join(RESULTS, stem + ".log"), "w", encoding="utf-8") as log:
        cmd = [sys.executable, os.path.abspath(__file__), "--child", path, "--out-dir", out_dir]
        if args.full:
            cmd.append("--full")
        rc, output = _run_process(cmd, out_dir, env, log, args.timeout, args.verbose)
        result = None
        for line in output.splitlines():
            if line.startswith(RESULT_TAG):
                result = json.loads(line[len(RESULT_TAG):])
        if rc is None:
            cause = f"timeout after {args.timeout} s (last output: {_tail_line(output)})"
        elif result is None:
            how = f"signal {-rc}" if rc < 0 else f"exit code {rc}"
            cause = f"child died ({how}): {_tail_line(output)}"
        else:
            cause = result["error"] or ("; ".join(result["checks"]) if result["checks"] else None)
            for st in result["statements"]:
                what = "skipped" if st["action"] == "skip" else f"failed as expected ({st['outcome']})"
                details.append(f"GPU-only line {st['line']} {what}: {st['source']}  -- {st['reason']}")

        if cause is None and name in PYTEST_SUBSETS:
            func, keyword = PYTEST_SUBSETS[name]
            remaining = args.timeout - (time.monotonic() - start)
            cmd = [sys.executable, "-m", "pytest", "-c", os.path.join(UPSTREAM, "pytest.ini"), "--rootdir",
                   UPSTREAM, "-p", "no:cacheprovider", "-q", "-rfE", f"{os.path.relpath(path, UPSTREAM)}::{func}",
                   "-k", keyword]
            log.write(f"\n[runner] {' '.join(cmd)}\n")
            log.flush()
            rc, output = _run_process(cmd, UPSTREAM, env, log, remaining, args.verbose)
            summary = _tail_line(output)
            details.append(f"pytest {func} -k '{keyword}': {summary}")
            if rc is None:
                cause = f"pytest {func}: timeout after {args.timeout} s in total"
            elif rc != 0:
                failed = [l.strip() for l in output.splitlines() if l.startswith(("FAILED", "ERROR"))]
                cause = f"pytest {func}: " + (failed[0] if failed else summary)
    seconds = time.monotonic() - start
    status = "FAIL" if cause else "PASS"
    print(f"{name:<30} {status}  {seconds:7.1f} s" + (f"  {cause}" if cause else ""), flush=True)
    for text, note in KNOWN_CAUSES.get(name, []) if cause else []:
        if text in cause:
            details.append(f"known cause: {note}")
    for d in details:
        print(f"    {d}", flush=True)
    return status == "PASS"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[],
                        help="tutorial number prefix, e.g. 03 (repeatable or comma separated)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per tutorial (default 900)")
    parser.add_argument("--full", action="store_true", help="do not cut the benchmarks short")
    parser.add_argument("-v", "--verbose", action="store_true", help="echo each child's output")
    parser.add_argument("--child", metavar="FILE", help=argparse.SUPPRESS)
    parser.add_argument("--out-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        return child_main(os.path.abspath(args.child), args.full, args.out_dir or os.getcwd())

    missing = [n for n in NAMES if not os.path.exists(os.path.join(TUTORIALS, n))]
    if missing:
        print(f"missing tutorials in {TUTORIALS}: {', '.join(missing)}\n"
              "Fetch them as this script's docstring describes (see also scripts/upstream_tests.sh).",
              file=sys.stderr)
        return 2
    prefixes = [p for o in args.only for p in o.split(",") if p]
    names = [n for n in NAMES if not prefixes or any(n.startswith(p) for p in prefixes)]
    if not names:
        print(f"--only {args.only} matches none of {NAMES}", file=sys.stderr)
        return 2

    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("TRITON_CPU_NUM_THREADS", "1")
    env.setdefault("MPLBACKEND", "Agg")
    env.setdefault("TRITON_CACHE_DIR", os.path.join(UPSTREAM, "results", "triton-cache"))
    env["PYTHONUNBUFFERED"] = "1"
    os.makedirs(RESULTS, exist_ok=True)
    mode = "full benchmarks" if args.full else f"benchmarks cut to {BENCH_X_VALS} x value(s), {BENCH_REPS} reps"
    print(f"upstream tutorials from {TUTORIALS} ({mode}); logs in {RESULTS}", flush=True)
    ok = [run_tutorial(n, args, env) for n in names]
    print(f"{sum(ok)}/{len(ok)} passed", flush=True)
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
