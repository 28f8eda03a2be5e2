"""Operating-system limits for the student's process, by job (this module re-exports them):

* ``uids``: who student code runs as (claiming a sandbox uid, with locks in a root-only folder);
* ``child``: the child's set-up between fork and exec (session, cgroups, rlimits, namespaces,
  privilege drop); ``worker/syscalls.py``: the seccomp filter the worker installs itself;
* ``cgroups``: the kernel's accounting of memory and CPU time, where a cgroup can be made;
* ``procs``: the one reader of /proc (processes, their memory and CPU time);
* ``kill``: finding and killing every process of a sandbox;
* ``leftovers``: removing what the sandbox user left in world-writable folders;
* ``grader_files``: what the sandbox user may read (the grader's files locked, the Python
  environment reachable).
"""
from .child import become_subreaper, child_setup, network_namespace_possible
from .grader_files import interpreter_reachable, protect_grader_files, unreachable
from .kill import kill_all, targets
from .leftovers import remove as remove_leftovers
from .procs import table as proc_table
from .uids import ANONYMOUS_UIDS, SANDBOX_USERS, claim, resolve_user, running_as_root, sandbox_user

__all__ = ["become_subreaper", "child_setup", "network_namespace_possible", "interpreter_reachable",
           "protect_grader_files", "unreachable", "kill_all", "targets", "remove_leftovers", "proc_table",
           "ANONYMOUS_UIDS", "SANDBOX_USERS", "claim", "resolve_user", "running_as_root", "sandbox_user"]
