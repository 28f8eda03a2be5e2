"""The parent's side of the sandbox: start the worker, send it requests, enforce the limits.

``Sandbox(submission_dir).call(op, **args)`` is the one seam through which the grader reaches
student code. The student's process runs as an unprivileged user when we are root, in its own
session and cgroups, with limits on memory, CPU time, processes and file size, without network
(a network namespace, else a seccomp filter); it sees a private copy of the submission and of
the worker package and nothing of the grader. Its stdout and stderr are captured and
truncated. Whatever it answers is data (JSON + arrays), checked here.
"""
import os
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

from . import cgroups, child, grader_files, kill, leftovers, procs, uids
from .watch import MemoryWatch, Output, Tracker
from .worker import wire

WORKER_PACKAGE = os.path.join(os.path.dirname(__file__), "worker")
OUTPUT_CAP = 16_000  # characters of the student's printed output kept per call
KINDS = {"raised", "import", "missing", "exit", "memory", "bad_output", "grader"}
WALL_FACTOR, WALL_SLACK = 3.0, 10.0  # a call's wall-clock backstop: 3 x its CPU seconds + 10 s
START_SECONDS = 120.0  # wall time for a worker to start and preload (torch on half a vCPU: ~10 s)
CPU_POLL = 0.2         # seconds between two readings of the CPU time during a call
_checked = {}          # (uid, python, modules) -> problems: the environment check, once per process


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
    """The grader's own fault, or its environment's (not the student's)."""


def preflight(preload=(), user=None, python=None):
    """Raise GraderError, saying what to do, when the sandbox user cannot run ``python`` (default:
    this one) or import numpy and ``preload`` from where they are installed (a project inside a
    folder others cannot enter, like a 0700 /root). Checked once per process; call it before
    grading to stop once, up front."""
    user = uids.sandbox_user() if user is None else user
    python = python or sys.executable
    key = (user and user[1], python, ("numpy", *preload))
    if user is not None and key not in _checked:
        _checked[key] = grader_files.unreachable(user, grader_files.needed_paths(python, key[2]))
    if user is not None and _checked[key]:
        raise GraderError(grader_files.unreachable_message(user, _checked[key]))


class _Timeout(Exception):
    pass


class _Clock:
    """When a call must stop: after ``cpu`` seconds of CPU time of all the sandbox's processes
    (None: no CPU limit), or after ``wall`` seconds, whichever comes first."""

    def __init__(self, tracker, cpu, wall):
        self.tracker, self.cpu, self.wall, self.start = tracker, cpu, wall, time.monotonic()
        self.base = tracker.cpu_seconds() if cpu is not None else 0.0
        self.used, self.checked = 0.0, self.start

    def left(self):
        """Seconds to wait for the worker before looking again; raises _Timeout when time is up."""
        now = time.monotonic()
        if self.cpu is not None and now - self.checked >= CPU_POLL:
            self.used, self.checked = self.tracker.cpu_seconds() - self.base, now
            if self.used >= self.cpu:
                raise _Timeout("cpu")
        if now - self.start >= self.wall:
            raise _Timeout("wall")
        return min(self.start + self.wall - now, CPU_POLL if self.cpu is not None else self.wall)


class Sandbox:
    def __init__(self, submission_dir, *, timeout=30.0, memory_mb=None, address_space_mb=None, max_processes=64,
                 cpu_seconds=600, threads=None, preload=(), user=None, python=None):
        self.submission_dir = submission_dir
        self.timeout = timeout  # CPU seconds per call (see ``call``)
        # Measured (docs/THREAT_MODEL.md): the Part B worker training the grader's model peaks at
        # ~355-365 MB resident, 700-860 MB virtual; the grader itself at 57-90 MB.
        # 90 + 520 + 60 (one 10 ms poll at 6 GB/s) + 32 (an answer being decoded) = 702 < 768.
        self.memory_bytes = int((memory_mb or _env_number("AUTOGRADER_MEMORY_MB", 520)) * 2**20)
        self.address_space = int((address_space_mb or _env_number("AUTOGRADER_ADDRESS_SPACE_MB", 1024)) * 2**20)
        self.max_processes, self.cpu_seconds = max_processes, cpu_seconds
        self.threads = int(threads or _env_number("AUTOGRADER_THREADS", 1))  # Gradescope gives half a vCPU
        self.preload, self.python = tuple(preload), python or sys.executable
        self.user = uids.sandbox_user() if user is None else user
        self.proc = self.watch = self.workdir = self.cgroups = self.broken = None
        self.isolation = {}  # how the worker is isolated, known once it started (for staff, never students)
        child.become_subreaper()
        preflight(self.preload, self.user, self.python)

    # -- life cycle -------------------------------------------------------------------------
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _prepare(self):
        """A folder the sandbox user can read (code) and one it can write (home), nothing else;
        as root, the copies belong to root and the sandbox user's own group (0750/0640), so
        another grade's sandbox user (another uid and group) cannot read them."""
        self.workdir = tempfile.mkdtemp(prefix="ag-sandbox-")
        lib = os.path.join(self.workdir, "lib")
        shutil.copytree(WORKER_PACKAGE, os.path.join(lib, "_sandbox_worker"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(self.submission_dir, os.path.join(self.workdir, "submission"), symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__"))
        home = os.path.join(self.workdir, "home")
        os.mkdir(home, 0o700)
        gid = self.user[2] if self.user else -1
        for folder in ("lib", "submission"):  # never writable by the student
            for root, _, files in os.walk(os.path.join(self.workdir, folder)):
                os.chown(root, -1, gid)
                os.chmod(root, 0o750)
                for f in files:
                    path = os.path.join(root, f)
                    if not os.path.islink(path):
                        os.chown(path, -1, gid)
                        os.chmod(path, 0o640)
        os.chown(self.workdir, -1, gid)
        os.chmod(self.workdir, 0o750)
        if self.user is not None:
            os.chown(home, self.user[1], self.user[2])

    def _start(self):
        if self.broken:
            raise GraderError(self.broken)
        if self.workdir is None:
            self._prepare()
        if self.cgroups is None:
            self.cgroups = cgroups.Cgroups(self.memory_bytes)
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        out_r, out_w = os.pipe()
        lib, sub, home = (os.path.join(self.workdir, d) for d in ("lib", "submission", "home"))
        netns = self.user is not None and child.network_namespace_possible()
        options = {"seccomp": os.environ.get("AUTOGRADER_SANDBOX_NO_SECCOMP") != "1", "preload": list(self.preload)}
        boot = (f"import sys; sys.path.insert(0, {lib!r}); from _sandbox_worker.main import main; "
                f"main({req_r}, {resp_w}, {sub!r}, {options!r})")
        n = str(self.threads)
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8",
               "MPLBACKEND": "Agg", "MPLCONFIGDIR": home, "PYTHONDONTWRITEBYTECODE": "1",
               "OMP_NUM_THREADS": n, "MKL_NUM_THREADS": n, "OPENBLAS_NUM_THREADS": n,
               "MALLOC_ARENA_MAX": "2"}  # fewer malloc arenas: less address space per thread
        for keep in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_"):
            if os.environ.get(keep):
                env[keep] = os.environ[keep]
        join = self.cgroups.join_fds()
        try:
            self.proc = subprocess.Popen(
                [self.python, "-I", "-c", boot], cwd=sub, env=env, stdin=subprocess.DEVNULL,
                stdout=out_w, stderr=out_w, pass_fds=(req_r, resp_w), close_fds=True,
                preexec_fn=child.child_setup(self.user, self.address_space, self.max_processes, self.cpu_seconds,
                                             cgroup_fds=join, namespaces=netns))
        except OSError as e:
            for fd in (req_r, req_w, resp_r, resp_w, out_r, out_w):
                os.close(fd)
            raise GraderError(f"the sandbox worker could not start: {e}") from e
        finally:
            for fd in join:
                os.close(fd)
        for fd in (req_r, resp_w, out_w):
            os.close(fd)
        self.req_w, self.resp_r = req_w, resp_r
        self.output = Output(out_r, OUTPUT_CAP * 4)
        self.output.start()
        self.tracker = Tracker(self.user, self.proc.pid, self.cgroups)
        self.watch = MemoryWatch(self.tracker, self.memory_bytes, self.cgroups.tasks)
        self.watch.start()
        self._hello(netns)

    def _hello(self, netns):
        """The worker's first message, sent before any student code ran: seccomp and preloads."""
        try:
            hello = self._receive(_Clock(self.tracker, None, START_SECONDS))["value"]
            failed = {name: why for name, why in hello["preload"].items() if why}
            seccomp = hello["seccomp"]
        except (_Timeout, EOFError, wire.WireError, KeyError, TypeError, AttributeError) as e:
            code = self.proc.poll()
            self._stop()
            raise GraderError(f"the sandbox worker did not start ({type(e).__name__}, exit code {code}); "
                              f"it printed: {self.output.text[-1500:]!r}") from None
        if failed:
            self.broken = ("the grading environment could not import " + ", ".join(failed) + " in the sandbox, "
                           "before any of the submission's code ran, so this is not the student's fault: "
                           + "; ".join(f"{name}: {why}" for name, why in failed.items()))
            self._stop()
            raise GraderError(self.broken)
        pid = self.proc.pid
        try:
            separate = netns and os.readlink(f"/proc/{pid}/ns/net") != os.readlink("/proc/self/ns/net")
        except OSError:
            separate = False
        filtered = "by" in seccomp and (procs.fields(pid) or {}).get("Seccomp") == "2"
        self.isolation = {
            "network": "namespace" if separate else "seccomp" if filtered else "open",
            "seccomp": seccomp.get("by") if filtered else f"none: {seccomp.get('error', 'not active')}",
            "memory": "cgroup" if self.cgroups.memory else "watch of /proc",
            "cpu_time": "cgroup" if self.cgroups.cpu else "/proc",
            "user": (self.user[0] if self.user[0].startswith("uid ") else f"{self.user[0]} (uid {self.user[1]})")
            if self.user else "the grader's own user (not root)"}

    def _stop(self):
        if self.proc is not None:
            self.watch.done.set()
            self.watch.join(timeout=10)  # its kill_all must not outlive this worker and hit the next one
            kill.kill_all(self.user, [self.proc.pid], cgroup_pids=self.cgroups.tasks)
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
            if self.user is not None:
                leftovers.remove(self.user[1])

    def close(self):
        """Kill every process the student's code started (by uid as root), remove what it left
        in world-writable folders, the cgroups and the copies."""
        self._stop()
        kill.kill_all(self.user, cgroup_pids=self.cgroups.tasks if self.cgroups else None)
        if self.user is not None:
            leftovers.remove(self.user[1])
        if self.cgroups is not None:
            self.cgroups.close()
            self.cgroups = None
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    # -- requests ---------------------------------------------------------------------------
    def call(self, op, timeout=None, wall=None, **args):
        """Run worker op ``op`` on ``args``; return its value or raise ``StudentError``.

        ``timeout``: CPU seconds (default ``self.timeout``) that all the sandbox's processes
        together may use during the call (threads and children, ended ones included), so a busy
        machine or half a vCPU does not cut off correct code. ``wall``: the wall-clock backstop
        (default ``WALL_FACTOR * timeout + WALL_SLACK``), for code that sleeps or waits.
        """
        try:
            payload = wire.dumps({"op": op, "args": args})
        except wire.WireError as e:
            raise GraderError(f"the grader's request cannot be sent: {e}") from None
        if len(payload) > wire.MAX_MESSAGE_BYTES:
            raise GraderError(f"a request of {len(payload)} bytes is over the wire's limit of {wire.MAX_MESSAGE_BYTES}")
        if self.proc is None:
            self._start()
        timeout = self.timeout if timeout is None else timeout
        wall = WALL_FACTOR * timeout + WALL_SLACK if wall is None else wall
        clock = _Clock(self.tracker, timeout, wall)
        mark = len(self.output.text)
        try:
            self._write(struct.pack(">Q", len(payload)) + payload, clock)
            answer = self._receive(clock)
        except _Timeout as why:
            self._stop()
            seconds = time.monotonic() - clock.start
            message = (f"your code did not finish within {timeout:g} s of CPU time (stopped after {seconds:.0f} s)"
                       if str(why) == "cpu" else f"your code did not finish within {wall:g} s (it used "
                       f"{clock.used:.1f} s of CPU time: was it waiting or sleeping?) (stopped)")
            raise StudentError("timeout", message, output=self._printed(mark)) from None
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

    def _receive(self, clock):
        (n,) = struct.unpack(">Q", self._read(8, clock))
        if n > wire.MAX_MESSAGE_BYTES:
            raise wire.WireError(f"an answer of {n} bytes")
        answer = wire.loads(self._read(n, clock))
        if select.select([self.resp_r], [], [], 0)[0]:  # a worker never writes past its answer
            raise wire.WireError("more bytes than one answer")
        return answer

    def _printed(self, mark):
        return self.output.text[mark:][:OUTPUT_CAP]

    def _died(self, mark):
        code = None
        try:
            code = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        over = self.watch.over
        if not over and self.tracker.oom_kills() > self.watch.ooms:  # the kernel, for the cgroup's limit
            over = (self.memory_bytes, len(self.tracker.members()) or 1)
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

    # -- raw pipe i/o with a clock -----------------------------------------------------------
    def _wait(self, fd, events, clock):
        while True:
            r, w, _ = select.select([fd] if events == "r" else [], [fd] if events == "w" else [], [], clock.left())
            if r or w:
                return

    def _write(self, data, clock):
        view = memoryview(data)
        os.set_blocking(self.req_w, False)
        while view:
            self._wait(self.req_w, "w", clock)
            try:
                sent = os.write(self.req_w, view[:65536])
            except BlockingIOError:
                continue
            except BrokenPipeError:
                raise EOFError() from None
            view = view[sent:]

    def _read(self, n, clock):
        chunks, got = [], 0
        while got < n:
            self._wait(self.resp_r, "r", clock)
            chunk = os.read(self.resp_r, min(n - got, 1 << 20))
            if not chunk:
                raise EOFError()
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)
