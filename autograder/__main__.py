"""Command line:

    python -m autograder grade SUBMISSION --out results.json [--select TAGS]
    python -m autograder regrade EXPORT [--out DIR] [--jobs N] [--select TAGS]
"""
import argparse
import os
import signal
import sys
import time

from .grade import grade
from .report import print_table


def _tags(text):
    return [t.strip() for t in text.split(",") if t.strip()]


def _interrupt(signum, frame):
    """SIGTERM (a regrade's or Gradescope's timeout) unwinds like Ctrl-C, so sandboxes are closed.
    KeyboardInterrupt, not SystemExit: unittest would record the latter as a test error and go on."""
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("grade", help="grade a submission folder, .py file or notebook")
    g.add_argument("submission")
    g.add_argument("--out", default="results.json", help="where to write Gradescope's results.json")
    g.add_argument("--select", default="", help="comma-separated tags; grade only tests carrying one of them")
    g.add_argument("--quiet", action="store_true", help="do not print the score table")
    r = sub.add_parser("regrade", help="grade every submission of a Gradescope export, in parallel")
    r.add_argument("export", help="the export folder, one subfolder per submission")
    r.add_argument("--out", default=os.path.join("out", "regrade"),
                   help="results go to OUT/<submission>/results.json and OUT/summary.csv (default: out/regrade)")
    r.add_argument("--jobs", type=int, default=None, help="grades at a time (default: the number of cores)")
    r.add_argument("--select", default="", help="comma-separated tags; grade only tests carrying one of them")
    r.add_argument("--timeout", type=float, default=900.0, help="seconds before one grade is stopped (default 900)")
    args = parser.parse_args(argv)
    if args.command == "grade":
        signal.signal(signal.SIGTERM, _interrupt)
        document = grade(args.submission, args.out, _tags(args.select) or None)
        if not args.quiet:
            try:
                print_table(document, title=f"{args.submission} -> {args.out}")
            except BrokenPipeError:  # `... | head`: the results file is written all the same
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    if args.command == "regrade":
        from .regrade import regrade
        if not os.path.isdir(args.export):
            parser.error(f"{args.export} is not a folder (expected a Gradescope export, one folder per submission)")
        start = time.monotonic()
        graded = regrade(args.export, args.out, args.jobs, ",".join(_tags(args.select)), args.timeout)
        errors = sorted(name for name, (_, error) in graded.items() if error)
        print(f"graded {len(graded)} submissions in {time.monotonic() - start:.0f} s, {len(errors)} with errors"
              + (f" ({', '.join(errors[:10])}{', ...' if len(errors) > 10 else ''})" if errors else ""))
        print(f"results: {os.path.join(args.out, '<submission>', 'results.json')}")
        print(f"summary: {os.path.join(args.out, 'summary.csv')}")
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
