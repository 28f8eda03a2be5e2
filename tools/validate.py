"""Prove the grader right: grade every catalog entry (tests/catalog) and print a confusion table.

    .venv/bin/python tools/validate.py [--jobs 2] [--only ID,ID] [--bugs | --variants] [--full]

A bug is *caught* when it loses points on a test tagged with its broken contract name; losing
points only on other tests counts as a miss (the feedback points the student elsewhere). A
variant must get full marks. Bugs are graded with `--select <part>` (Part B bugs outside the
model with `--select <name>` unless --full: see TRAINED), variants whole. Each grade
is a subprocess `python -m autograder grade`; as root each claims a sandbox uid of its own
(or one of $VALIDATE_SANDBOX_USERS per slot). Writes out/validate.json; exits 1 on any miss.
"""
import argparse
import json
import os
import pwd
import queue
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))
sys.path.insert(0, REPO)
import catalog  # noqa: E402 - tests/ is on the path only now
from autograder import launch  # noqa: E402 - after the path is set
from autograder.sandbox import procs  # noqa: E402 - after the path is set

# Part B names whose tests train a model (the quality tests carry them). A Part B bug elsewhere
# cannot change the trusted training, so without --full only its own tests are graded: the
# verdict "caught" is the same, only "elsewhere" and "missed" are no longer told apart.
TRAINED = {"GPT", "CausalSelfAttention", "MLP", "Block", "GPTConfig"}


def sandbox_users(jobs):
    """One sandbox user per slot, from $VALIDATE_SANDBOX_USERS; None lets each grade claim a free
    uid of its own (the grader's pool), which is also right when not root."""
    wanted = [w.strip() for w in os.environ.get("VALIDATE_SANDBOX_USERS", "").split(",") if w.strip()]
    if os.geteuid() != 0 or not wanted:
        return [None] * jobs
    busy = {p.uid for p in procs.table().values()}
    users = [n for n in wanted if _uid(n) not in (None, 0) and _uid(n) not in busy]
    if len(users) < jobs:
        print(f"note: {len(users)} free sandbox user(s) of {wanted}; running {max(1, len(users))} at a time")
    return users[:jobs] or [None]


def _uid(name):
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        return None


def selection(entry, full):
    if entry.broken is None:
        return None
    return entry.part if full or entry.part == "part-a" or entry.broken in TRAINED else entry.broken


def grade(entry, user, workdir, full=False):
    """Materialize and grade one entry; returns its verdict as a dict."""
    folder = os.path.join(workdir, entry.id)
    path = catalog.materialize(entry, os.path.join(folder, "submission"))
    select = selection(entry, full)
    env = {k: v for k, v in os.environ.items() if k != "AUTOGRADER_SANDBOX_USER"}
    env.update({"AUTOGRADER_SANDBOX_USER": user} if user else {})
    with open(os.path.join(folder, "grade.log"), "w+") as log:
        graded = launch.grade_in_process(path, os.path.join(folder, "results.json"), select=select, env=env,
                                         timeout=900, log=log)
        log.seek(0)
        printed = log.read()[-2000:]
    doc = graded.document or {"tests": [], "crash": f"{graded.error}; exit {graded.returncode}: {printed}"}
    return judge(entry, doc) | {"id": entry.id, "part": entry.part, "broken": entry.broken, "select": select,
                                "seconds": round(graded.seconds, 1), "cpu_seconds": round(graded.cpu_seconds, 1)}


def _lost(t):
    return t["score"] < t["max_score"]


def _first_line(t):
    text = (t.get("output") or "").strip()
    return text.splitlines()[0][:160] if text else ""


def _crash(doc):
    """Why the grade produced no verdicts (the grader's crash entry, or no results), else None."""
    if doc.get("crash"):
        return doc["crash"]
    failed = [t for t in doc.get("tests", []) if t["name"].lower().startswith("the autograder failed")]
    if failed:
        staff = [t for t in doc["tests"] if "traceback" in t["name"].lower()]
        lines = (staff[0].get("output") or "").strip().splitlines() if staff else []
        return "the grader crashed: " + (lines[-1] if lines else _first_line(failed[0]))
    return None


def judge(entry, doc):
    tests = doc.get("tests", [])
    crash = _crash(doc)
    if entry.broken is None:
        total = sum(t["max_score"] for t in tests)
        failed = [f"{t['name']}: {_first_line(t)}" for t in tests if _lost(t)]
        ok = total > 0 and not failed
        return {"kind": "variant", "verdict": "full" if ok else "not_full",
                "score": sum(t["score"] for t in tests), "max_score": total,
                "why": failed or ([crash or "no tests were graded"] if not total else [])}
    part = [t for t in tests if t.get("tags", [None])[0] == entry.part]
    lost = [t for t in part if _lost(t)]
    on_name = [t for t in lost if entry.broken in t["tags"][1:]]
    verdict = "caught" if on_name else ("elsewhere" if lost else "missed")
    result = {"kind": "bug", "verdict": verdict, "lost_on": [t["name"] for t in lost][:10], "crash": crash,
              "tested": sum(entry.broken in t["tags"][1:] for t in part)}
    if on_name and entry.diagnosis:
        text = "\n".join(t.get("output") or "" for t in lost).lower()
        result["diagnosed"] = entry.diagnosis.lower() in text
    return result


def report(results, wall):
    bugs = [r for r in results if r["kind"] == "bug"]
    variants = [r for r in results if r["kind"] == "variant"]

    def count(rs, v):
        return sum(r["verdict"] == v for r in rs)
    with_diag = [r for r in bugs if "diagnosed" in r]
    print(f"\n{'':34}{'part-a':>8}{'part-b':>8}{'total':>8}")
    for label, v in (("bugs caught on their name", "caught"), ("bugs lost points elsewhere (miss)", "elsewhere"),
                     ("bugs missed entirely", "missed")):
        cells = [count([r for r in bugs if r["part"] == p], v) for p in ("part-a", "part-b")]
        print(f"{label:34}{cells[0]:>8}{cells[1]:>8}{sum(cells):>8}")
    print(f"{'variants with full marks':34}{'':>16}{count(variants, 'full'):>8} / {len(variants)}")
    print(f"{'caught bugs with their diagnosis':34}{'':>16}{sum(r['diagnosed'] for r in with_diag):>8} / "
          f"{len(with_diag)}")
    misses = [r for r in results if r["verdict"] in ("elsewhere", "missed", "not_full")]
    if misses:
        print("\nmisses:")
    for r in misses:
        if r["kind"] == "bug":
            if r["lost_on"]:
                where = "lost only on: " + "; ".join(r["lost_on"])
            else:
                where = "lost no points" + (f" ({r['crash']})" if r.get("crash") else "")
            print(f"  {r['id']:42} {r['broken']} ({r['tested']} tests carry the tag): {where}")
        else:
            print(f"  {r['id']:42} {r['score']:g}/{r['max_score']:g}: {' | '.join(r['why'][:3])}")
    undiagnosed = [r["id"] for r in with_diag if not r["diagnosed"]]
    if undiagnosed:
        print(f"\ncaught without the expected diagnosis: {', '.join(undiagnosed)}")
    cpu = sum(r.get("cpu_seconds", 0) for r in results)
    print(f"\n{len(results)} grades in {wall:.0f} s wall, {cpu:.0f} s CPU (load average now "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    return not misses


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", default="", help="comma-separated entry ids")
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--bugs", action="store_true", help="bugs only")
    kind.add_argument("--variants", action="store_true", help="correct variants only")
    parser.add_argument("--full", action="store_true", help="grade every bug with --select <part> (slower)")
    parser.add_argument("--out", default=os.path.join(REPO, "out", "validate.json"))
    args = parser.parse_args(argv)

    entries = ([] if args.variants else catalog.bugs()) + ([] if args.bugs else catalog.variants())
    if args.only:
        wanted = set(args.only.split(","))
        entries = [e for e in entries if e.id in wanted]
    # longest first (whole grades, then trained Part B bugs), so the slots finish together
    entries.sort(key=lambda e: (e.broken is not None, selection(e, args.full) != "part-b", e.part))
    users = queue.Queue()
    for u in sandbox_users(max(1, args.jobs)):
        users.put(u)
    start = time.monotonic()

    def run(entry):
        user = users.get()
        try:
            r = grade(entry, user, workdir, args.full)
        except Exception as e:  # noqa: BLE001 - a broken grade is a miss, not a crash of the table
            r = {"id": entry.id, "part": entry.part, "broken": entry.broken, "seconds": 0, "cpu_seconds": 0,
                 "kind": "bug" if entry.broken else "variant", "verdict": "missed" if entry.broken else "not_full",
                 "lost_on": [], "tested": 0, "score": 0, "max_score": 0, "why": [f"{type(e).__name__}: {e}"],
                 "crash": f"{type(e).__name__}: {e}"}
        finally:
            users.put(user)
        print(f"  {time.monotonic() - start:6.0f}s  {r['verdict']:9} {r['id']} ({r['seconds']} s)", flush=True)
        return r

    with tempfile.TemporaryDirectory(prefix="validate-") as workdir:
        with ThreadPoolExecutor(max_workers=users.qsize()) as pool:
            results = list(pool.map(run, entries))
    wall = time.monotonic() - start
    ok = report(results, wall)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"ok": ok, "wall_seconds": round(wall, 1), "results": results}, f, indent=1)
    print(f"wrote {os.path.relpath(args.out, REPO)}")
    good = sum(r["verdict"] in ("caught", "full") for r in results)
    print(f"validate: {good} passed, {len(results) - good} failed")  # a closing line CI can read
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
