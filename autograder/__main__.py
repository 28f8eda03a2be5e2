"""Command line: ``python -m autograder grade SUBMISSION --out results.json [--select TAGS]``."""
import argparse
import sys

from .grade import grade
from .report import print_table


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("grade", help="grade a submission folder, .py file or notebook")
    g.add_argument("submission")
    g.add_argument("--out", default="results.json", help="where to write Gradescope's results.json")
    g.add_argument("--select", default="", help="comma-separated tags; grade only tests carrying one of them")
    g.add_argument("--quiet", action="store_true", help="do not print the score table")
    args = parser.parse_args(argv)
    if args.command == "grade":
        select = [t.strip() for t in args.select.split(",") if t.strip()]
        document = grade(args.submission, args.out, select or None)
        if not args.quiet:
            print_table(document, title=f"{args.submission} -> {args.out}")
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
