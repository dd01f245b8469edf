"""triton_key_memo: Triton's installation hash remembered between processes, always equal
to what stock `triton.runtime.cache.triton_key()` computes. Each case runs in a fresh
process with its own TRITON_HOME, so the memo file and the process state are its own."""
import json
import os
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent("""
    import json, sys, torch, triton, triton.language as tl
    import triton.runtime.cache as cache

    @triton.jit
    def copy(x_ptr, y_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs))

    x = torch.arange(16, dtype=torch.float32); y = torch.empty_like(x)
    copy[(1,)](x, y, BLOCK=16)
    assert torch.equal(x, y)
    used = cache.triton_key()
    original = getattr(cache.triton_key, "original", None)
    stock = (original or cache.triton_key).__wrapped__()  # the stock function, uncached
    print(json.dumps({"memoized": original is not None, "used": used, "stock": stock}))
""")


def _run(tmp_path, **env):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = dict(os.environ, TRITON_HOME=str(tmp_path), TRITON_CACHE_DIR=str(tmp_path / "cache"), **env)
    out = subprocess.run([sys.executable, str(script)], env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _memo(tmp_path):
    return tmp_path / ".triton" / "cpu" / "triton_key.json"


def test_memo_is_written_and_equals_stock(tmp_path):
    first = _run(tmp_path)
    assert first["memoized"] and first["used"] == first["stock"]
    assert json.loads(_memo(tmp_path).read_text())["key"] == first["stock"]
    second = _run(tmp_path)  # read back from the file
    assert second["used"] == second["stock"] == first["stock"]


def test_stale_memo_is_recomputed(tmp_path):
    """An entry whose signature does not match the installed files is ignored and replaced."""
    _memo(tmp_path).parent.mkdir(parents=True)
    _memo(tmp_path).write_text(json.dumps({"signature": "an older triton", "key": "stale"}))
    out = _run(tmp_path)
    assert out["used"] == out["stock"] != "stale"
    assert json.loads(_memo(tmp_path).read_text())["key"] == out["stock"]


def test_memo_matches_by_signature(tmp_path):
    """A matching signature is what the lookup trusts: the stored key is used as is."""
    _run(tmp_path)
    entry = json.loads(_memo(tmp_path).read_text())
    _memo(tmp_path).write_text(json.dumps(dict(entry, key="from the memo")))
    assert _run(tmp_path)["used"] == "from the memo"


def test_unwritable_home_falls_back_to_stock(tmp_path):
    (tmp_path / ".triton").write_text("a file where the memo directory would go")
    out = _run(tmp_path)
    assert out["used"] == out["stock"]


def test_knob_turns_it_off(tmp_path):
    out = _run(tmp_path, TRITON_CPU_KEY_MEMO="0")
    assert not out["memoized"] and out["used"] == out["stock"]
    assert not _memo(tmp_path).exists()
