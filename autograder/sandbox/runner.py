"""The parent's side of the sandbox: start the worker, send it requests, enforce the limits.

``Sandbox(submission_dir).call(op, **args)`` is the one seam through which the grader reaches
student code. The student's process runs as an unprivileged user when we are root, in its own
session, with limits on memory, CPU time, processes and file size; it sees a copy of the
submission and of the worker package and nothing of the grader. Its stdout and stderr are
captured and truncated. Whatever it answers is data (JSON + arrays), checked here.
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
KINDS = {"raised", "import", "missing", "exit", "memory", "bad_output", "grader"}


def _env_number(name, default):
    return float(os.environ.get(name) or default)


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
    """Drains the worker's stdout+stderr so it can never block on a full pipe; keeps the start."""

    def __init__(self, fd):
        super().__init__(daemon=True)
        self.fd, self.text = fd, ""

    def run(self):
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                return
            if not chunk:
                os.close(self.fd)
                return
            self.text += chunk.decode("utf-8", "replace")[:max(0, OUTPUT_CAP * 4 - len(self.text))]


class _MemoryWatch(threading.Thread):
    """Polls the resident memory of all the sandbox's processes while the worker lives (during
    calls and between them); over the limit, kills them all and remembers why."""

    def __init__(self, user, pid, limit):
        super().__init__(daemon=True)
        self.user, self.pid, self.limit = user, pid, limit
        self.tracker, self.over, self.done = limits.Tracker(user, pid), None, threading.Event()

    def run(self):
        period = 0.05
        while not self.done.wait(period):
            try:
                rss, n = self.tracker.rss_bytes()
            except OSError:  # a /proc race: look again
                continue
            if rss > self.limit:
                self.over = (rss, n)
                limits.kill_all(self.user, [self.pid])
                return
            period = 0.01 if rss > self.limit / 2 else 0.05  # NumPy faults in up to ~6 GB/s


class Sandbox:
    def __init__(self, submission_dir, *, timeout=30.0, memory_mb=None, address_space_mb=None, max_processes=64,
                 cpu_seconds=600, threads=None):
        self.submission_dir = submission_dir
        self.timeout = timeout
        # Measured (docs/THREAT_MODEL.md): the Part B worker training the grader's model peaks at
        # ~355-365 MB resident, 700-860 MB virtual; the grader itself at 57-90 MB.
        # 90 + 520 + 60 (one 10 ms poll at 6 GB/s) + 32 (an answer being decoded) = 702 < 768.
        self.memory_bytes = int((memory_mb or _env_number("AUTOGRADER_MEMORY_MB", 520)) * 2**20)
        self.address_space = int((address_space_mb or _env_number("AUTOGRADER_ADDRESS_SPACE_MB", 1024)) * 2**20)
        self.max_processes, self.cpu_seconds = max_processes, cpu_seconds
        self.threads = int(threads or _env_number("AUTOGRADER_THREADS", 1))  # Gradescope gives half a vCPU
        self.user = limits.sandbox_user()
        self.proc = self.watch = self.workdir = None
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
        shutil.copytree(self.submission_dir, os.path.join(self.workdir, "submission"), symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__"))
        home = os.path.join(self.workdir, "home")
        os.mkdir(home, 0o700)
        for folder in ("lib", "submission"):  # root-owned: readable, never writable, by the student
            for root, dirs, files in os.walk(os.path.join(self.workdir, folder)):
                os.chmod(root, 0o755)
                for f in files:
                    if not os.path.islink(os.path.join(root, f)):
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
        lib, sub, home = (os.path.join(self.workdir, d) for d in ("lib", "submission", "home"))
        boot = (f"import sys; sys.path.insert(0, {lib!r}); from _sandbox_worker.main import main; "
                f"main({req_r}, {resp_w}, {sub!r})")
        n = str(self.threads)
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8",
               "MPLBACKEND": "Agg", "MPLCONFIGDIR": home, "PYTHONDONTWRITEBYTECODE": "1",
               "OMP_NUM_THREADS": n, "MKL_NUM_THREADS": n, "OPENBLAS_NUM_THREADS": n,
               "MALLOC_ARENA_MAX": "2"}  # fewer malloc arenas: less address space per thread
        for keep in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_"):
            if os.environ.get(keep):
                env[keep] = os.environ[keep]
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-c", boot], cwd=sub, env=env, stdin=subprocess.DEVNULL,
                stdout=out_w, stderr=out_w, pass_fds=(req_r, resp_w), close_fds=True,
                preexec_fn=limits.child_setup(self.user, self.address_space, self.max_processes, self.cpu_seconds))
        except OSError as e:
            for fd in (req_r, req_w, resp_r, resp_w, out_r, out_w):
                os.close(fd)
            raise GraderError(f"the sandbox worker could not start: {e}") from e
        for fd in (req_r, resp_w, out_w):
            os.close(fd)
        self.req_w, self.resp_r = req_w, resp_r
        self.output = _Output(out_r)
        self.output.start()
        self.watch = _MemoryWatch(self.user, self.proc.pid, self.memory_bytes)
        self.watch.start()

    def _stop(self):
        if self.proc is not None:
            self.watch.done.set()
            self.watch.join(timeout=10)  # its kill_all must not outlive this worker and hit the next one
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
        """Kill every process the student's code started (by uid as root) and remove the copies."""
        self._stop()
        limits.kill_all(self.user)
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    # -- requests ---------------------------------------------------------------------------
    def call(self, op, timeout=None, **args):
        """Run worker op ``op`` on ``args``; return its value or raise ``StudentError``."""
        payload = wire.dumps({"op": op, "args": args})
        if len(payload) > wire.MAX_MESSAGE_BYTES:
            raise GraderError(f"a request of {len(payload)} bytes is over the wire's limit of {wire.MAX_MESSAGE_BYTES}")
        if self.proc is None:
            self._start()
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        mark = len(self.output.text)
        try:
            self._write(struct.pack(">Q", len(payload)) + payload, deadline)
            (n,) = struct.unpack(">Q", self._read(8, deadline))
            if n > wire.MAX_MESSAGE_BYTES:
                raise wire.WireError(f"an answer of {n} bytes")
            answer = wire.loads(self._read(n, deadline))
            if select.select([self.resp_r], [], [], 0)[0]:  # a worker never writes past its answer
                raise wire.WireError("more bytes than one answer")
        except _Timeout:
            self._stop()
            raise StudentError("timeout", f"your code did not finish within {timeout:g} s (stopped)",
                               output=self._printed(mark)) from None
        except EOFError:
            raise self._died(mark) from None
        except Exception as e:  # noqa: BLE001 - whatever the student's process sent, it is their fault
            self._stop()
            raise StudentError("protocol", "your code interfered with the grader's channel to it "
                               f"({type(e).__name__}: {str(e)[:200]})", output=self._printed(mark)) from None
        if not isinstance(answer, dict) or not isinstance(answer.get("ok"), bool):
            self._stop()
            raise StudentError("protocol", "your code sent the grader an answer it did not ask for")
        if answer["ok"]:
            return answer.get("value")
        kind, message = answer.get("kind"), str(answer.get("message", "error"))[:4000]
        if kind == "grader":
            raise GraderError(message)
        raise StudentError(kind if kind in KINDS else "raised", message, str(answer.get("traceback") or "")[:4000],
                           output=self._printed(mark))

    def _printed(self, mark):
        return self.output.text[mark:][:OUTPUT_CAP]

    def _died(self, mark):
        code = None
        try:
            code = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        over = self.watch.over
        self._stop()
        if over:
            return StudentError("memory", f"your code used more than {self.memory_bytes / 2**20:.0f} MB of memory "
                                f"({over[0] / 2**20:.0f} MB in {over[1]} process(es) when stopped)",
                                output=self._printed(mark))
        if code is not None and code < 0:
            sig = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
            why = {"SIGXCPU": "used up its CPU time", "SIGKILL": "was killed (SIGKILL)",
                   "SIGSEGV": "crashed (segmentation fault)"}.get(sig, f"was killed by {sig}")
            return StudentError("crashed", f"your code {why}", output=self._printed(mark))
        if code is None:
            return StudentError("protocol", "your code closed its channel to the grader (the process was stopped)",
                                output=self._printed(mark))
        return StudentError("exit", f"your code ended the process (exit code {code}) instead of returning",
                            output=self._printed(mark))

    # -- raw pipe i/o with a deadline --------------------------------------------------------
    def _wait(self, fd, events, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise _Timeout()
        r, w, _ = select.select([fd] if events == "r" else [], [fd] if events == "w" else [], [], left)
        if not (r or w):
            raise _Timeout()

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
