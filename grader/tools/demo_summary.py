#!/usr/bin/env python3
"""Summarises one or more grading runs of the demonstration batch (see
gpu-demo): for each submission and lab, the points, the lab's first note,
every item that lost points with its feedback lines, the items not measured;
then the build and GPU seconds per submission per lab from --timings files.

Usage: demo_summary.py [--lost-only] RUN_DIR... where each RUN_DIR holds the
grader's output folder `out/` and may hold `timings.json` (the layout
gpu-demo and the issue's runs leave). Labs a submission did not submit are
left out unless the student is on the roster with nothing submitted."""
import json
import statistics
import sys
from pathlib import Path


def results(run: Path):
    for p in sorted((run / "out" / "students").glob("*/result.json")):
        yield json.loads(p.read_text())


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    runs = [Path(a) for a in argv]
    for run in runs:
        if not (run / "out" / "students").is_dir():
            print(f"demo_summary: {run}/out/students is not there (not a grading run's folder?)", file=sys.stderr)
            return 2
    print("== per submission and lab: points, the first note, what lost points (and why)")
    for run in runs:
        for r in results(run):
            for ls in r["labs"]:
                if not ls["submitted"] and not r["missing"]:
                    continue
                print(f"{r['student']:45s} {ls['lab']:16s} {ls['points']:6.2f}/{ls['max_points']:<6.1f} "
                      + "; ".join(ls["notes"][:1])[:140])
                if not ls["submitted"]:
                    continue  # every item says "not submitted"
                for i in ls["items"]:
                    if i["status"] not in ("failed", "partial"):
                        continue
                    print(f"    {i['name']}: {i['status']} {i['points']}/{i['max_points']}")
                    for line in i["feedback"][:4]:
                        print(f"        feedback: {line[:230]}")
                    for line in i["details"][:2]:
                        print(f"        detail:   {line[:230]}")
                nm = [i["name"] for i in ls["items"] if i["status"] == "not_measured"]
                if nm:
                    print(f"    not measured: {', '.join(nm)[:200]}")
                for n in ls.get("not_counted", [])[:2]:
                    print(f"    {n[:200]}")
            for pr in r["problems"][:3]:
                print(f"    submission: {pr[:200]}")
    print("\n== seconds per submission per lab (build: the lab's targets and its share of configure; "
          "gpu: tests, sanitizers, counters and timing, on one GPU)")
    rows, walls = [], []
    for run in runs:
        tf = run / "timings.json"
        if not tf.is_file():
            continue
        t = json.loads(tf.read_text())
        walls.append(f"{run.name}: {t.get('wall_s')} s")
        rows += [(s, lab, v.get("build", 0.0), v.get("gpu", 0.0)) for s, labs in sorted(t["students"].items())
                 for lab, v in sorted(labs.items())]
    for s, lab, b, g in sorted(rows):
        print(f"{s:45s} {lab:16s} build {b:7.1f}  gpu {g:7.1f}")
    if rows:
        print(f"{len(rows)} submission-labs; median build {statistics.median(r[2] for r in rows):.1f} s, "
              f"median gpu {statistics.median(r[3] for r in rows):.1f} s, "
              f"gpu in all {sum(r[3] for r in rows):.0f} s; wall time per run: {', '.join(walls)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
