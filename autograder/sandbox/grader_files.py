"""What the sandbox user may read: nothing of the grader (``protect_grader_files``), but the
Python interpreter and the packages the worker needs (``unreachable`` says what it cannot reach
and why, so a grade can stop once, up front, with a message saying what to do)."""
import importlib.util
import os
import stat
import sys

from .uids import become, running_as_root


def _inside(path, folder):
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def protect_grader_files(package_dir, out_path):
    """As root, before student code runs: take group/other permissions away from what the
    sandbox user must neither read nor write. Owners keep theirs, so it is idempotent and a
    later non-root run by the owner works as before. Returns the paths changed.

    * every entry of the project folder (the parent of ``package_dir``: reference/, autograder/
      with its data, tests/, .git, dist/, out/ ...) except the Python environment the sandbox
      runs (``.venv`` when it lives there); the folder itself keeps o+x so ``.venv`` stays reachable;
    * the packages ``autograder`` and ``reference`` where they are installed (site-packages);
    * the folder of ``out_path`` when it holds files only and is not world-writable (like
      /autograder/results); elsewhere (/tmp) the fallback file owned by root and the atomic
      replace after every sandbox process is dead keep results.json ours.
    Nothing that holds the running interpreter's environment is ever changed.
    """
    if not running_as_root():
        return []
    package_dir = os.path.realpath(package_dir)
    project = os.path.dirname(package_dir)
    envs = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    paths = {package_dir, os.path.join(project, "reference")}
    if os.path.isfile(os.path.join(project, "pyproject.toml")):  # a checkout, not site-packages
        paths |= {os.path.join(project, name) for name in os.listdir(project)}
    folder = os.path.dirname(os.path.abspath(out_path))
    if (os.path.isdir(folder) and not os.stat(folder).st_mode & stat.S_IWOTH
            and all(e.is_file(follow_symlinks=False) for e in os.scandir(folder))):
        paths.add(folder)  # a folder of results files only, like /autograder/results
    changed = []
    for path in sorted(paths):
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode) or any(_inside(env, path) for env in envs) or not st.st_mode & 0o077:
            continue
        os.chmod(path, stat.S_IMODE(st.st_mode) & ~0o077)
        changed.append(path)
    return changed


def interpreter_reachable(path, uid):
    """Whether ``uid`` (not the owner) can reach and execute ``path``: every folder above needs o+x."""
    real = os.path.realpath(path)
    parts = real.split(os.sep)
    for i in range(2, len(parts)):
        st = os.stat(os.sep.join(parts[:i]) or os.sep)
        if st.st_uid != uid and not st.st_mode & 0o001:
            return False
    return bool(os.stat(real).st_mode & 0o001)


def needed_paths(python, modules=("numpy",)):
    """(path, access mode) the worker needs: the interpreter as it is started (every folder on
    its path, links not yet resolved), the standard library and the ``modules``' packages."""
    needed = [(python, os.X_OK), (os.path.dirname(os.__file__), os.R_OK | os.X_OK)]
    for name in modules:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.origin and os.path.isabs(spec.origin):
            needed += [(os.path.dirname(spec.origin), os.R_OK | os.X_OK), (spec.origin, os.R_OK)]
    return needed


def _blocker(path):
    """The first folder above ``path`` this process cannot pass through, or None."""
    parts = os.path.abspath(path).split(os.sep)
    for i in range(2, len(parts)):
        folder = os.sep.join(parts[:i])
        if not os.access(folder, os.X_OK):
            return folder
    return None


def unreachable(user, needed):
    """[(path, folder that blocks it or None)] of the ``needed`` (path, mode) pairs that
    ``user`` cannot use: checked by the kernel itself, in a child that becomes that user."""
    if user is None:
        return []
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            become(user)
            lines = [f"{path}\0{_blocker(path) or ''}" for path, mode in needed if not os.access(path, mode)]
            os.write(w, "\n".join(lines).encode("utf-8", "surrogateescape"))
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        text = f.read().decode("utf-8", "surrogateescape")
    os.waitpid(pid, 0)
    return [(p, b or None) for p, b in (line.split("\0") for line in text.splitlines() if line)]


def unreachable_message(user, problems):
    """What to tell staff when the sandbox user cannot reach the Python environment."""
    path, blocker = problems[0]
    where = f"{path}" + (f" (the folder {blocker} is closed to other users: mode "
                         f"{stat.S_IMODE(os.stat(blocker).st_mode):04o})" if blocker else " (no permission)")
    fix = (f"put the project and its .venv in a folder other users may enter (for example under /opt or /srv), "
           f"or let them pass through it with `chmod o+x {blocker}` (enter, not list)") if blocker else \
        f"make it readable for others (`chmod o+rX {path}`)"
    more = f" and {len(problems) - 1} more path(s)" if len(problems) > 1 else ""
    return (f"the grader cannot run student code: the sandbox user {user[0]!r} (uid {user[1]}), which runs it, "
            f"cannot reach the Python environment: {where}{more}. To fix: {fix}; then grade again. "
            "This is a set-up problem of the grading machine, not the student's.")
