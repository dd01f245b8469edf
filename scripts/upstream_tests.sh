#!/usr/bin/env bash
# Run one of upstream Triton's own test files against this CPU backend (`--device cpu`) and
# write a JUnit XML, the pytest log and a grouped summary of the failures.
#
# The upstream tests are not ours and are never committed: they live in the git-ignored
# folder upstream/ at the repository root. Populating it is a manual, one-time step:
#
#   1. Get a git copy of a repository that contains upstream triton-lang/triton commit
#      63068fcc274cd152fb34abe1bcab10e5078b0df5 (the tree whose tests match the triton 3.9.0
#      wheel; see shared/reference/upstream-tests.md). triton-lang/triton itself works; so does
#      intel/intel-xpu-backend-for-triton, which merged that commit (merge 271282e621b1) and
#      therefore contains it as an ancestor. Take the files from 63068fcc itself, not from the
#      merge commit: the merge carries Intel-specific edits to conftest and tests.
#   2. Extract, keeping upstream's layout (the conftest files must sit above the tests):
#        C=63068fcc274cd152fb34abe1bcab10e5078b0df5
#        git -C <that repo> archive "$C" pytest.ini python/conftest.py python/test/conftest.py \
#            python/test/unit/language python/test/unit/runtime python/test/unit/test_*.py \
#          | tar -x -C upstream/
#        echo "$C" > upstream/UPSTREAM_COMMIT
#      (or list single files instead of the folders; upstream-tests.md names the useful ones).
#   3. pip install pytest pytest-xdist pytest-timeout cloudpickle   (into the active venv)
#
# Usage: scripts/upstream_tests.sh [options] <test file> [extra pytest args...]
#   <test file>   relative to upstream/python/test/unit, e.g. language/test_core.py
#   -j N          pytest-xdist workers (default 1; always >= 1 so a crashing test cannot take
#                 the run down: xdist reports it as "worker ... crashed" and goes on)
#   -t SECONDS    per-test timeout (default 120)
#   -s CAP:DIV    deterministic stratified sample: every test function with at most CAP cases
#                 runs completely; a larger one runs max(CAP, ceil(n/DIV)) evenly spaced cases
#   -i FILE       run only the test ids listed in FILE (one per line, relative to
#                 upstream/python/test/unit, as `pytest --co -q` prints them from there)
#   -r REV        test a clean snapshot of git revision REV (e.g. HEAD) instead of the live
#                 working tree, so edits made during a long run do not leak into it; the native
#                 libraries (python/triton_cpu/_C) are copied from the working tree's build
#   -o NAME       output basename (default: the test file's name, plus "-sample" with -s)
# Outputs in upstream/results/: NAME.xml (JUnit), NAME.log (pytest output), NAME.summary.txt.
# Environment: TRITON_CACHE_DIR defaults to upstream/results/triton-cache.
# The summary alone can be redone from an existing XML: scripts/upstream_tests.sh --summary X.xml
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
UP="$ROOT/upstream"
RES="$UP/results"
UNIT="$UP/python/test/unit"

summarize() {  # $1: junit xml; prints the grouped summary
    python3 - "$1" <<'PY'
import collections, re, sys
import xml.etree.ElementTree as ET

counts = collections.Counter()
groups = collections.defaultdict(list)
crashes, timeouts = [], []


def test_id(tc):
    cls, name = tc.get("classname", ""), tc.get("name", "")
    return f"{cls.replace('.', '/')}.py::{name}"


def function(tc):
    return tc.get("name", "").split("[")[0]


def normalise(line):
    line = re.sub(r"0x[0-9a-fA-F]+", "0x?", line)
    line = re.sub(r"\b\d+\b", "N", line)
    return line[:160]


def cause(tc, node):
    msg = node.get("message", "") or ""
    text = (node.text or "") + "\n" + msg
    if "crashed while running" in text or "node down" in text:
        return "crash", None
    if "Timeout" in msg and "pytest-timeout" in msg:
        return "timeout", None
    if "Torch not compiled with CUDA" in text or "torch/cuda/" in text or "pin_memory=True requires" in text:
        return "test itself needs CUDA (torch.cuda / pinned memory)", None
    if "UnsupportedError" in text:
        m = re.search(r"\(TTIR op '([^']+)'\)", msg) or re.search(r"operation '([^']+)'", msg)
        if m:
            return "UnsupportedError: " + m.group(1), None
        first = msg.splitlines()[0] if msg else "?"
        first = re.sub(r"^.*UnsupportedError: (triton-cpu: )?", "", first).replace(" is not supported by the CPU backend yet", "")
        return "UnsupportedError: " + first[:160], None
    first = msg.splitlines()[0] if msg else ""
    if first.startswith(("AssertionError", "assert ")) or "AssertionError" in msg:
        return f"wrong result (AssertionError) in {function(tc)}", None
    if first.startswith("failed on setup with"):
        first = first[len("failed on setup with "):].strip('"')
    if "CompilationError" in first:  # the frontend's wrapper: name the error inside it
        elines = [l[1:].strip() for l in (node.text or "").splitlines() if l.startswith("E ")]
        inner = [l for l in elines if "CompilationError" not in l and re.search(r"\w(Error|Exception)\b", l)]
        first = "CompilationError: " + (inner[-1] if inner else elines[-1] if elines else first)
    return "error: " + normalise(first or "(no message)"), None


for tc in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    bad = tc.find("failure")
    if bad is None:
        bad = tc.find("error")
    if bad is not None:
        counts["failed"] += 1
        key, _ = cause(tc, bad)
        if key == "crash":
            crashes.append(test_id(tc))
        elif key == "timeout":
            timeouts.append(test_id(tc))
        groups[key].append(test_id(tc))
    elif tc.find("skipped") is not None:
        s = tc.find("skipped")
        counts["xfailed" if s.get("type") == "pytest.xfail" else "skipped"] += 1
        groups["skip: " + normalise((s.get("message") or "").splitlines()[0] if s.get("message") else "?")].append(test_id(tc))
    else:
        counts["passed"] += 1

total = sum(counts.values())
print(f"{total} cases: " + ", ".join(f"{counts[k]} {k}" for k in ("passed", "failed", "skipped", "xfailed") if counts[k]))
print(f"\nCRASHES of the worker process ({len(crashes)}):")
for t in crashes:
    print("  " + t)
print(f"\nTIMEOUTS ({len(timeouts)}):")
for t in timeouts:
    print("  " + t)
fails = sorted(((k, v) for k, v in groups.items() if not k.startswith("skip: ")), key=lambda kv: -len(kv[1]))
print(f"\nFailure causes ({len(fails)} groups), most frequent first:")
for k, v in fails:
    print(f"  {len(v):6d}  {k}    e.g. {v[0]}")
skips = sorted(((k, v) for k, v in groups.items() if k.startswith("skip: ")), key=lambda kv: -len(kv[1]))
print(f"\nSkip reasons ({len(skips)}):")
for k, v in skips:
    print(f"  {len(v):6d}  {k[6:]}")
PY
}

if [[ "${1:-}" == "--summary" ]]; then
    summarize "$2"
    exit 0
fi

jobs=1 timeout=120 sample="" rev="" name="" idsfile=""
while getopts "j:t:s:i:r:o:" opt; do
    case "$opt" in
        j) jobs="$OPTARG" ;; t) timeout="$OPTARG" ;; s) sample="$OPTARG" ;;
        i) idsfile="$(realpath "$OPTARG")" ;; r) rev="$OPTARG" ;; o) name="$OPTARG" ;;
        *) sed -n '2,38p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[[ $# -ge 1 ]] || { sed -n '2,38p' "$0"; exit 2; }
file="$1"; shift
[[ -f "$UNIT/$file" ]] || { echo "no $UNIT/$file: populate upstream/ first (see this script's header)" >&2; exit 1; }

name="${name:-$(basename "$file" .py)${sample:+-sample}}"
mkdir -p "$RES"
export TRITON_CACHE_DIR="${TRITON_CACHE_DIR:-$RES/triton-cache}"

if [[ -n "$rev" ]]; then
    # A clean copy of REV; triton_cpu.backend is linked into the package so that it is found on
    # PYTHONPATH before the editable install's mapping to the live third_party/cpu/backend.
    snap="$RES/snapshot-$(git -C "$ROOT" rev-parse --short "$rev")"
    if [[ ! -d "$snap" ]]; then
        mkdir -p "$snap"
        git -C "$ROOT" archive "$rev" | tar -x -C "$snap"
        cp -r "$ROOT/python/triton_cpu/_C" "$snap/python/triton_cpu/_C"
        ln -s ../../third_party/cpu/backend "$snap/python/triton_cpu/backend"
    fi
    git -C "$ROOT" diff --quiet "$rev" -- lib include CMakeLists.txt setup.py \
        || echo "warning: native sources differ between $rev and the working tree, whose _C build was copied" >&2
    export PYTHONPATH="$snap/python${PYTHONPATH:+:$PYTHONPATH}"
    python -c 'import triton_cpu, triton_cpu.backend as b, sys; print("backend from", b.__file__, file=sys.stderr)'
fi

args=("$file")
[[ -n "$idsfile" ]] && args=("@$idsfile")
if [[ -n "$sample" ]]; then
    cd "$UNIT"
    python -m pytest "$file" --device cpu --co -q -p no:cacheprovider 2>/dev/null | grep -E '^[^[:space:]][^:]*\.py::' \
        | sed 's#^python/test/unit/##' > "$RES/$name.ids.all"
    python3 - "$sample" "$RES/$name.ids.all" > "$RES/$name.ids" <<'PY'
import math, sys
cap, div = map(int, sys.argv[1].split(":"))
by = {}
for line in map(str.strip, open(sys.argv[2])):
    by.setdefault(line.split("::")[1].split("[")[0], []).append(line)
for ids in by.values():
    n = len(ids)
    m = n if n <= cap else max(cap, math.ceil(n / div))
    for i in range(m):
        print(ids[i * n // m])
PY
    echo "sample: $(wc -l < "$RES/$name.ids") of $(wc -l < "$RES/$name.ids.all") cases (ids in $RES/$name.ids)"
    args=("@$RES/$name.ids")
fi

cd "$UNIT"
{
    echo "# $(date -u +%FT%TZ) backend $(git -C "$ROOT" rev-parse --short "${rev:-HEAD}")${rev:+ (clean snapshot)}" \
         "$([[ -z "$rev" ]] && ! git -C "$ROOT" diff --quiet HEAD 2>/dev/null && echo '+ uncommitted edits')" \
         "upstream $(cat "$UP/UPSTREAM_COMMIT" 2>/dev/null || echo '?')"
    echo "# python -m pytest ${args[*]} --device cpu -n $jobs --max-worker-restart=100000 --timeout $timeout -q -p no:cacheprovider --junitxml=$RES/$name.xml $(printf '%q ' "$@")"
} > "$RES/$name.log"
set +e
python -m pytest "${args[@]}" --device cpu -n "$jobs" --max-worker-restart=100000 --timeout "$timeout" \
    -q -p no:cacheprovider --junitxml="$RES/$name.xml" "$@" >> "$RES/$name.log" 2>&1
rc=$?
set -e
tail -n 1 "$RES/$name.log"
summarize "$RES/$name.xml" | tee "$RES/$name.summary.txt"
echo "log: $RES/$name.log  junit: $RES/$name.xml  summary: $RES/$name.summary.txt"
exit $rc
