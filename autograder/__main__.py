"""Command line:

    python -m autograder grade SUBMISSION --out results.json [--select TAGS] [--quiet]
    python -m autograder grade --paths-from-env [--select TAGS] [--quiet]
    python -m autograder regrade EXPORT [--out DIR] [--jobs N] [--select TAGS] [--timeout SECONDS]

`grade --paths-from-env` reads the submission's path from AUTOGRADER_SUBMISSION and the results
path from AUTOGRADER_OUT (and removes both from its environment), so neither shows on a command
line, which every user can read in /proc; `regrade` starts its grades this way.
EXPORT is Gradescope's export .zip, the unzipped folder, or a folder above it.
"""
import argparse
import os
import signal
import sys
import time

from .grade import grade
from .launch import OUT_ENV, SUBMISSION_ENV
from .report import print_table
from .results.clean import one_line
from .sandbox import procs


def _process_start():
    """When this process started, as a ``time.monotonic()`` value, so the grade's time budget
    counts loading and imports too (Linux: /proc/self/stat; elsewhere: now)."""
    now = time.monotonic()
    try:
        ticks = int(procs.stat_fields("self")[19])  # field 22, starttime
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / procs.TICKS
    except (TypeError, ValueError, IndexError, AttributeError):
        return now
    return now - age if 0 <= age < 3600 else now


def _tags(text):
    return [t.strip() for t in text.split(",") if t.strip()]


def _interrupt(signum, frame):
    """SIGTERM (a regrade's or Gradescope's timeout) unwinds like Ctrl-C, so sandboxes are closed.
    KeyboardInterrupt, not SystemExit: unittest would record the latter as a test error and go on."""
    raise KeyboardInterrupt(f"signal {signum}")


def _parser():
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("grade", help="grade a submission folder, .py file or notebook")
    g.add_argument("submission", nargs="?", help="the submission (a folder, a .py file or a notebook)")
    g.add_argument("--out", default=None, help="where to write Gradescope's results.json (default: results.json)")
    g.add_argument("--paths-from-env", action="store_true",
                   help=f"take SUBMISSION from ${SUBMISSION_ENV} and --out from ${OUT_ENV} (both required) instead "
                        "of the command line, which other users can read in /proc; both are removed from the "
                        "environment before grading")
    g.add_argument("--select", default="", help="comma-separated tags; grade only tests carrying one of them")
    g.add_argument("--quiet", action="store_true", help="do not print the score table")
    r = sub.add_parser("regrade", help="grade every submission of a Gradescope export, in parallel")
    r.add_argument("export", help="Gradescope's export: its .zip, the unzipped folder (holding submission_metadata.yml "
                                  "and one folder per submission), or a folder above it")
    r.add_argument("--out", default=os.path.join("out", "regrade"),
                   help="results go to OUT/<submission>/results.json and OUT/summary.csv (default: out/regrade)")
    r.add_argument("--jobs", type=int, default=None, help="grades at a time (default: the number of cores)")
    r.add_argument("--select", default="", help="comma-separated tags; grade only tests carrying one of them")
    r.add_argument("--timeout", type=float, default=900.0, help="seconds before one grade is stopped (default 900)")
    return parser


def _paths(parser, args):
    """(submission, out) from the command line or, with --paths-from-env, the environment."""
    if not args.paths_from_env:
        if args.submission is None:
            parser.error("grade: give the SUBMISSION to grade (or --paths-from-env)")
        return args.submission, args.out or "results.json"
    if args.submission is not None or args.out is not None:
        parser.error("grade: --paths-from-env takes SUBMISSION and --out from the environment, not the command line")
    submission, out = os.environ.pop(SUBMISSION_ENV, ""), os.environ.pop(OUT_ENV, "")
    if not submission or not out:
        parser.error(f"grade --paths-from-env: set both {SUBMISSION_ENV} and {OUT_ENV}")
    return submission, out


def _regrade(parser, args):
    from .regrade import regrade
    from .results.export import ExportError
    start = time.monotonic()
    try:
        graded = regrade(args.export, args.out, args.jobs, ",".join(_tags(args.select)), args.timeout)
    except ExportError as e:
        parser.error(str(e))
    errors = sorted(name for name, (_, error) in graded.items() if error)
    print(f"graded {len(graded)} submissions in {time.monotonic() - start:.0f} s, {len(errors)} with errors"
          + (f" ({', '.join(one_line(e) for e in errors[:10])}{', ...' if len(errors) > 10 else ''})"
             if errors else ""))
    print(f"results: {os.path.join(args.out, '<submission>', 'results.json')}")
    print(f"summary: {os.path.join(args.out, 'summary.csv')} (names from submission_metadata.yml; "
          "the notes column says which rows need a look)")
    return 0


def main(argv=None):
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "grade":
        submission, out = _paths(parser, args)
        signal.signal(signal.SIGTERM, _interrupt)
        document = grade(submission, out, _tags(args.select) or None, started=_process_start())
        if not args.quiet:
            try:
                print_table(document, title=f"{submission} -> {out}")
            except BrokenPipeError:  # `... | head`: the results file is written all the same
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    if args.command == "regrade":
        return _regrade(parser, args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
