"""Checks parse_ttir's op-shape memo against xDSL's parser on every TTIR file of Triton caches.

    python scripts/check_ttir_memo.py [--limit N] [DIR ...]

DIRs default to $TRITON_CACHE_DIR (else ~/.triton/cache). Every distinct *.ttir under them is
parsed twice: with the memo off (each op through xDSL's parser) and with it on, in a shuffled
order so that the memo carries shapes from one kernel into the next; the two modules, printed
with their locations, must be the same text. Prints the count of files that differ (and the
first differences) and exits non-zero when there is one.
"""
import argparse
import difflib
import hashlib
import os
import random
import sys
import time


def ttir_files(dirs, limit):
    seen = {}
    for d in dirs:
        for root, _, names in os.walk(d):
            for name in names:
                if name.endswith(".ttir"):
                    path = os.path.join(root, name)
                    with open(path, "rb") as f:
                        seen.setdefault(hashlib.md5(f.read()).hexdigest(), path)
    files = sorted(seen.values())
    random.Random(0).shuffle(files)
    return files[:limit] if limit else files


def printed(ttir, text):
    try:
        return ttir.print_ir(ttir.parse_ttir(text), locations=True)
    except Exception as e:  # the same error either way is agreement too
        return f"error: {type(e).__name__}: {e}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="*")
    ap.add_argument("--limit", type=int, default=0, help="at most N files (0: all)")
    args = ap.parse_args()
    dirs = args.dirs or [os.environ.get("TRITON_CACHE_DIR") or os.path.expanduser("~/.triton/cache")]
    from triton_cpu.dialects import ttir
    files = ttir_files(dirs, args.limit)
    texts = {f: open(f).read() for f in files}

    memoized = ttir._MEMOIZED
    ttir._MEMOIZED = ()
    t = time.perf_counter()
    reference = {f: printed(ttir, text) for f, text in texts.items()}
    plain = time.perf_counter() - t
    ttir._MEMOIZED = memoized
    ttir._MEMO.clear()

    differ = []
    t = time.perf_counter()
    for f in files:
        got = printed(ttir, texts[f])
        if got != reference[f]:
            differ.append(f)
            if len(differ) <= 3:
                diff = difflib.unified_diff(reference[f].splitlines(True), got.splitlines(True), "xdsl", "memo")
                print(f"{f}:\n" + "".join(list(diff)[:20]))
    memo = time.perf_counter() - t
    print(f"{len(files)} distinct TTIR files, {len(differ)} differ; parse and print: "
          f"{plain:.1f} s without the memo, {memo:.1f} s with it")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
