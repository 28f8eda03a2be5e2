"""The parent's side of the sandbox: start the worker, send it requests, enforce the limits.

``Sandbox(submission_dir).call(op, **args)`` is the one seam through which the grader reaches
student code. The student's process runs as an unprivileged user when we are root, in its own
session, with limits on memory, CPU time, processes and file size; it sees a copy of the
submission and of the worker package and nothing of the grader. Its stdout and stderr are
captured and truncated.
"""
import os
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

from . import limits
from .worker import wire

WORKER_PACKAGE = os.path.join(os.path.dirname(__file__), "worker")
OUTPUT_CAP = 16_000  # characters of the student's printed output kept per call


class StudentError(Exception):
    """Student code failed: raised, hung, ran out of memory, exited or returned junk."""

    def __init__(self, kind, message, traceback="", output=""):
        super().__init__(message)
        self.kind, self.message, self.traceback, self.output = kind, message, traceback, output

    def __str__(self):
        text = self.message
        if self.traceback.strip():
            text += "\nWhere, in your code:\n" + self.traceback.rstrip()
        if self.output.strip():
            text += "\nYour code printed (last lines):\n" + self.output.strip()[-1500:]
        return text


class GraderError(RuntimeError):
    """The grader's own fault (not the student's)."""


class _Output(threading.Thread):
    """Drains the worker's stdout+stderr so it can never block on a full pipe."""

    def __init__(self, fd):
        super().__init__(daemon=True)
        self.fd, self.text, self.dropped = fd, "", 0

    def run(self):
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            room = max(0, OUTPUT_CAP * 4 - len(self.text))
            self.text += chunk.decode("utf-8", "replace")[:room]
            self.dropped += max(0, len(chunk) - room)


class Sandbox:
    def __init__(self, submission_dir, *, timeout=30.0, memory_mb=None, max_processes=64, cpu_seconds=600,
                 threads=None):
        self.submission_dir = submission_dir
        self.timeout = timeout
        self.memory_bytes = int((memory_mb or int(os.environ.get("AUTOGRADER_MEMORY_MB", "600"))) * 2**20)
        self.max_processes, self.cpu_seconds = max_processes, cpu_seconds
        self.threads = threads or min(2, os.cpu_count() or 1)
        self.user = limits.sandbox_user()
        self.proc = None
        self.workdir = None
        self.restarts = 0
        limits.become_subreaper()

    # -- life cycle -------------------------------------------------------------------------
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _prepare(self):
        """A folder the sandbox user can read (code) and one it can write (home), nothing else."""
        self.workdir = tempfile.mkdtemp(prefix="ag-sandbox-")
        os.chmod(self.workdir, 0o711)
        lib = os.path.join(self.workdir, "lib")
        shutil.copytree(WORKER_PACKAGE, os.path.join(lib, "_sandbox_worker"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(self.submission_dir, os.path.join(self.workdir, "submission"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        home = os.path.join(self.workdir, "home")
        os.mkdir(home, 0o700)
        for folder in ("lib", "submission"):
            for root, dirs, files in os.walk(os.path.join(self.workdir, folder)):
                os.chmod(root, 0o755)
                for f in files:
                    os.chmod(os.path.join(root, f), 0o644)
        if self.user is not None:
            os.chown(home, self.user[1], self.user[2])
            if not limits.interpreter_reachable(sys.executable, self.user[1]):
                raise GraderError(f"the sandbox user {self.user[0]!r} cannot run {os.path.realpath(sys.executable)}; "
                                  "install the grader with a Python outside a private folder (see README)")

    def _start(self):
        if self.workdir is None:
            self._prepare()
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        out_r, out_w = os.pipe()
        lib = os.path.join(self.workdir, "lib")
        sub = os.path.join(self.workdir, "submission")
        home = os.path.join(self.workdir, "home")
        boot = (f"import sys; sys.path.insert(0, {lib!r}); from _sandbox_worker.main import main; "
                f"main({req_r}, {resp_w}, {sub!r})")
        n = str(self.threads)
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8",
               "MPLBACKEND": "Agg", "MPLCONFIGDIR": home, "PYTHONDONTWRITEBYTECODE": "1",
               "OMP_NUM_THREADS": n, "MKL_NUM_THREADS": n, "OPENBLAS_NUM_THREADS": n}
        for keep in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
            if keep in os.environ:
                env[keep] = os.environ[keep]
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-c", boot], cwd=sub, env=env, stdin=subprocess.DEVNULL,
            stdout=out_w, stderr=out_w, pass_fds=(req_r, resp_w), close_fds=True,
            preexec_fn=limits.child_setup(self.user, self.memory_bytes + 3 * 2**30, self.max_processes,
                                          self.cpu_seconds))
        for fd in (req_r, resp_w, out_w):
            os.close(fd)
        self.req_w, self.resp_r = req_w, resp_r
        self.output = _Output(out_r)
        self.output.start()

    def _stop(self):
        if self.proc is not None:
            limits.kill_all(self.user, [self.proc.pid])
            try:
                self.proc.wait(timeout=5)
            except (subprocess.TimeoutExpired, ChildProcessError):
                pass
            for fd in (self.req_w, self.resp_r):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self.output.join(timeout=1)
            self.proc = None

    def close(self):
        self._stop()
        if self.user is not None:
            limits.kill_all(self.user)
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    # -- requests ---------------------------------------------------------------------------
    def call(self, op, timeout=None, **args):
        """Run worker op ``op`` on ``args``; return its value or raise ``StudentError``."""
        if self.proc is None:
            self._start()
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        mark = len(self.output.text)
        try:
            payload = wire.dumps({"op": op, "args": args})
            self._write(struct.pack(">Q", len(payload)) + payload, deadline)
            (n,) = struct.unpack(">Q", self._read(8, deadline))
            if n > wire.MAX_MESSAGE_BYTES:
                raise wire.WireError(f"an answer of {n} bytes")
            answer = wire.loads(self._read(n, deadline))
        except _Timeout:
            self._stop()
            raise StudentError("timeout", f"your code did not finish within {timeout:g} s (stopped)",
                               output=self._printed(mark)) from None
        except _OverMemory as e:
            self._stop()
            raise StudentError("memory", f"your code used more than {self.memory_bytes / 2**20:.0f} MB of memory "
                               f"({e.args[0] / 2**20:.0f} MB when stopped)", output=self._printed(mark)) from None
        except EOFError:
            raise self._died(mark) from None
        except (wire.WireError, ValueError, KeyError, struct.error, OSError) as e:
            self._stop()
            raise StudentError("protocol", "your code interfered with the grader's channel to it "
                               f"({type(e).__name__}: {e})", output=self._printed(mark)) from None
        if not isinstance(answer, dict) or "ok" not in answer:
            self._stop()
            raise StudentError("protocol", "your code sent the grader an answer it did not ask for")
        if answer["ok"]:
            return answer.get("value")
        if answer.get("kind") == "grader":
            raise GraderError(answer.get("message"))
        raise StudentError(answer.get("kind", "raised"), answer.get("message", "error"),
                           answer.get("traceback", ""), output=self._printed(mark))

    def printed(self):
        return self.output.text if self.proc is not None else ""

    def _printed(self, mark):
        text = self.output.text[mark:]
        return text[:OUTPUT_CAP]

    def _died(self, mark):
        time.sleep(0.05)
        code = self.proc.poll()
        if code is None:
            try:
                code = self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                code = None
        self._stop()
        self.restarts += 1
        if code is not None and code < 0:
            sig = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
            why = {"SIGXCPU": "used up its CPU time", "SIGKILL": "was killed (likely out of memory)",
                   "SIGSEGV": "crashed (segmentation fault)"}.get(sig, f"was killed by {sig}")
            return StudentError("crashed", f"your code {why}", output=self._printed(mark))
        return StudentError("exit", f"your code ended the process (exit code {code}) instead of returning",
                            output=self._printed(mark))

    # -- raw pipe i/o with a deadline and a memory watch -------------------------------------
    def _wait(self, fd, events, deadline):
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _Timeout()
            r, w, _ = select.select([fd] if events == "r" else [], [fd] if events == "w" else [], [],
                                    min(left, 0.05))
            if r or w:
                return
            rss = limits.tree_rss_bytes(self.user, [self.proc.pid])
            if rss > self.memory_bytes:
                raise _OverMemory(rss)

    def _write(self, data, deadline):
        view = memoryview(data)
        os.set_blocking(self.req_w, False)
        while view:
            self._wait(self.req_w, "w", deadline)
            try:
                sent = os.write(self.req_w, view[:65536])
            except BlockingIOError:
                continue
            except BrokenPipeError:
                raise EOFError() from None
            view = view[sent:]

    def _read(self, n, deadline):
        chunks, got = [], 0
        while got < n:
            self._wait(self.resp_r, "r", deadline)
            chunk = os.read(self.resp_r, min(n - got, 1 << 20))
            if not chunk:
                raise EOFError()
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)


class _Timeout(Exception):
    pass


class _OverMemory(Exception):
    pass
