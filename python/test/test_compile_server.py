"""The compile server (triton_cpu/compile_server.py): a process that imported the compiler
once forks the compiler worker of each process that connects.

Each test names its own server: the socket's name hashes PYTHONPATH, so a test that runs its
processes with a PYTHONPATH of its own gets a server no other test (or user) shares, and
stops it at the end."""
import os
import signal
import socket
import struct
import subprocess
import sys
import time

import pytest

from triton_cpu import compile_server

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the server is Linux-only (abstract sockets)")

CHILD = r"""
import sys, torch, triton, triton.language as tl
from triton_cpu import compile_server, llvm_worker

@triton.jit
def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, tl.exp(x) * 2.0, mask=offs < n)

x = torch.randn(1000)
out = torch.empty(1000)
scale[(8,)](x, out, 1000, BLOCK=128)
torch.testing.assert_close(out, torch.exp(x) * 2.0)
w = llvm_worker._worker
kind = "none" if w is None else "server" if w.sock is not None else "spawned"
started = len(compile_server._servers)
print(kind, started, sorted(m for m in sys.modules if m == "xdsl" or m.startswith("xdsl.")))
"""


def _env(tmp_path, **extra):
    env = dict(os.environ, TRITON_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(tmp_path / "path"), **extra)
    env.pop("TRITON_CPU_LLVM_IN_PROCESS", None)
    return env


def _run(tmp_path, env):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = dict(env, TRITON_CACHE_DIR=str(tmp_path / f"cache{time.monotonic_ns()}"))  # a cache miss each time
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    kind, started, xdsl = out.stdout.strip().splitlines()[-1].split(" ", 2)
    return kind, int(started), xdsl


def _address(env):
    saved = dict(os.environ)
    os.environ["PYTHONPATH"] = env["PYTHONPATH"]
    try:
        return compile_server.address()
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _listening(env) -> bool:
    """Whether a server listens under `env`'s name (read from /proc: connecting would count
    as a connection and restart its idle time)."""
    name = "@" + _address(env)[1:].decode()
    with open("/proc/net/unix") as f:
        return any(line.split()[-1] == name for line in f if len(line.split()) >= 8)


def _server_pid(env):
    """The pid of the server listening under `env`'s name, or None."""
    addr = _address(env)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        try:
            s.connect(addr)
        except OSError:
            return None
        creds = s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return struct.unpack("3i", creds)[0]


@pytest.fixture
def server_env(tmp_path):
    env = _env(tmp_path)
    yield env
    pid = _server_pid(env)
    if pid is not None:
        os.kill(pid, signal.SIGTERM)


def test_the_first_process_starts_the_server_and_the_next_one_is_served_by_it(tmp_path, server_env):
    """Both processes compile through a child of the server (correct results against torch);
    only the first started a server, and neither imported xDSL itself."""
    assert _server_pid(server_env) is None
    assert _run(tmp_path, server_env) == ("server", 1, "[]")
    assert _server_pid(server_env) is not None
    assert _run(tmp_path, server_env) == ("server", 0, "[]")


def test_with_the_server_off_each_process_spawns_its_worker(tmp_path):
    env = _env(tmp_path, TRITON_CPU_COMPILE_SERVER="0")
    assert _run(tmp_path, env) == ("spawned", 0, "[]")
    assert _server_pid(env) is None


def test_the_server_exits_after_its_idle_time(tmp_path, server_env):
    env = dict(server_env, TRITON_CPU_COMPILE_SERVER_IDLE="5")
    assert _run(tmp_path, env)[:2] == ("server", 1)
    deadline = time.monotonic() + 30
    assert _listening(env)
    while _listening(env):
        assert time.monotonic() < deadline, "the server did not exit after 5 s without a connection"
        time.sleep(0.2)


def test_a_bad_idle_time_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("TRITON_CPU_COMPILE_SERVER_IDLE", "soon")
    with pytest.raises(ValueError, match="TRITON_CPU_COMPILE_SERVER_IDLE='soon'"):
        compile_server.idle_seconds()


def test_a_worker_takes_its_clients_environment_and_directory(tmp_path, server_env):
    """The server was started by another process, in another directory and environment: the
    child serving this one works in this one's (the `whoami` request reports them)."""
    _run(tmp_path, server_env)  # starts the server
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import os\n"
        "from triton_cpu import llvm_worker\n"
        "pid, cwd, env = llvm_worker.call('whoami')\n"
        "print(pid != os.getpid(), llvm_worker._worker.sock is not None, cwd, env.get('PROBE'))\n")
    here = tmp_path / "elsewhere"
    here.mkdir()
    out = subprocess.run([sys.executable, str(probe)], env=dict(server_env, PROBE="42"), cwd=str(here),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", str(here), "42"]


def test_a_server_that_never_answers_is_left_for_a_worker_of_ones_own(tmp_path):
    """Something holds the server's name and accepts no connection (a stopped server): the
    process waits HANDSHAKE_TIMEOUT for its worker's greeting, warns, and compiles in a
    worker it spawns."""
    env = _env(tmp_path)
    stuck = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stuck.bind(_address(env))
    stuck.listen(8)
    script = tmp_path / "stuck.py"
    script.write_text("from triton_cpu import compile_server\ncompile_server.HANDSHAKE_TIMEOUT = 1.0\n" + CHILD)
    try:
        out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    finally:
        stuck.close()
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[:2] == ["spawned", "0"]
    assert "compile server's worker did not answer within 1 s" in out.stderr


def test_the_warm_up_kernel_compiles():
    """The server swallows a failing warm-up (its workers are only colder): check it here, in
    a process of its own as the server runs it (without Triton imported)."""
    out = subprocess.run([sys.executable, "-c", "import sys\nfrom triton_cpu import stages\nstages.warm_up()\n"
                          "print('triton' in sys.modules)"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False"]
