"""A readable table of a results.json, for people at a terminal."""


def print_table(document, title="", file=None, width=100):
    print(title, file=file)
    print(f"{'#':<8}{'test':<58}{'points':>12}  {'':<8}", file=file)
    for t in document["tests"]:
        mark = "ok" if t["status"] == "passed" else "FAIL"
        print(f"{t['number']:<8}{t['name'][:57]:<58}{t['score']:>6g} / {t['max_score']:<4g}  {mark:<8}", file=file)
        if t["status"] != "passed" and t.get("output"):
            first = t["output"].strip().splitlines()[0] if t["output"].strip() else ""
            print(f"{'':<8}  -> {first[:width - 12]}", file=file)
    total = sum(t["max_score"] for t in document["tests"])
    print(f"{'':<8}{'TOTAL':<58}{document['score']:>6g} / {total:<4g}", file=file)
    if document.get("leaderboard"):
        for e in document["leaderboard"]:
            print(f"leaderboard: {e['name']} = {e['value']}", file=file)
    print(f"({document['execution_time']:.1f} s)", file=file)
