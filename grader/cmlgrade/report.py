"""Every output the grader writes, from StudentResult values only (no
measuring here). Deterministic: sorted keys, fixed order, no timestamps
unless asked for.

  <out>/students/<id>/feedback.md            the student's feedback
  <out>/students/<id>/result.json            everything, machine-readable
  <out>/students/<id>/gradescope/results.json   Gradescope's autograder format
  <out>/students/<id>/prairielearn/results.json PrairieLearn's external grader format
  <out>/gradebook.csv                        a row per student, a column per lab and the total
  <out>/junit.xml                            a testsuite per student and lab
"""
from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from dataclasses import asdict
from pathlib import Path

from .pipeline import safe_name
from .results import Item, LabScore, StudentResult

STATUS_MARK = {"passed": "PASS", "partial": "PARTIAL", "failed": "FAIL", "not_measured": "NOT MEASURED",
               "excluded": "NOT COUNTED"}


def fmt(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".") if x != int(x) else str(int(x))


def _item_text(it: Item) -> str:
    return "\n".join(it.feedback + it.details)


# ------------------------------------------------------------ Markdown

def feedback_markdown(res: StudentResult, run_note: str = "") -> str:
    out = [f"# Feedback for {res.student}", ""]
    out.append(f"Total: **{fmt(res.points)} / {fmt(res.max_points)}**")
    out.append("")
    out.append(f"- Data: {'the public seed (hidden tests not run)' if res.seed == 'public' else 'public and secret seeds'}")
    out.append(f"- Sandbox: {res.sandbox or 'n/a'}")
    if run_note:
        out.append(f"- {run_note}")
    out.append("")
    if res.missing:
        out += ["Nothing was submitted.", ""]
    if res.problems:
        out += ["## About your submission", ""] + [f"- {p}" for p in res.problems] + [""]
    if res.ignored:
        out += [f"Extra files, not graded: {', '.join(f'`{x}`' for x in res.ignored[:20])}"
                + (f" and {len(res.ignored) - 20} more" if len(res.ignored) > 20 else ""), ""]
    for ls in res.labs:
        out += _lab_markdown(ls)
    return "\n".join(out).rstrip() + "\n"


def _lab_markdown(ls: LabScore) -> list[str]:
    out = [f"## {ls.lab}: {ls.title} — {fmt(ls.points)} / {fmt(ls.max_points)}", ""]
    if not ls.submitted:
        return out + ["Not submitted.", ""]
    for n in ls.notes:
        out.append(f"> {n}")
    if ls.notes:
        out.append("")
    if ls.build_errors:
        out += ["Compiler messages:", "", "```"] + ls.build_errors + ["```", ""]
    out += ["| check | result | points |", "|---|---|---:|"]
    for it in ls.items:
        if it.visibility == "hidden":
            continue
        shown = f"{fmt(it.points)} / {fmt(it.max_points)}" if it.counted else "-"
        out.append(f"| {it.name} | {STATUS_MARK[it.status]} | {shown} |")
    out.append("")
    for it in ls.items:
        if it.visibility == "hidden" or not (it.feedback or (it.details and it.status != "passed")):
            continue
        out.append(f"**{it.name}**")
        out += [f"- {f}" for f in it.feedback]
        if it.status != "passed":
            out += [f"  - `{d}`" if len(d) < 200 else f"  - {d}" for d in it.details]
        out.append("")
    if ls.not_counted:
        out += ["Not counted for anyone (the reference solution fails them too in this run, or they were skipped):",
                ""] + [f"- {n}" for n in ls.not_counted[:20]] + [""]
    return out


# ------------------------------------------------------------ JSON

def result_json(res: StudentResult, timestamp: str = "") -> str:
    d = asdict(res)
    d.pop("timings", None)  # wall-clock times differ run to run: see --timings
    if timestamp:
        d["graded_at"] = timestamp
    return json.dumps(d, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# ------------------------------------------------------------ Gradescope

def gradescope_json(res: StudentResult) -> str:
    """Gradescope's results.json: top-level score, output, tests[] each with
    name, score, max_score, output, visibility (and status)."""
    tests = []
    for ls in res.labs:
        for it in ls.items:
            if not it.counted:
                tests.append({"name": f"{ls.lab}: {it.name}", "score": 0.0, "max_score": 0.0,
                              "output": _item_text(it), "visibility": it.visibility, "status": "passed"})
                continue
            tests.append({"name": f"{ls.lab}: {it.name}", "score": float(it.points), "max_score": float(it.max_points),
                          "output": _item_text(it), "visibility": it.visibility,
                          "status": "passed" if it.status == "passed" else "failed"})
        if not ls.items:
            tests.append({"name": f"{ls.lab}", "score": 0.0, "max_score": float(ls.max_points),
                          "output": "; ".join(ls.notes) or "not submitted", "visibility": "visible",
                          "status": "failed"})
    summary = [f"{ls.lab}: {fmt(ls.points)} / {fmt(ls.max_points)}" + (f" ({ls.notes[0]})" if ls.notes else "")
               for ls in res.labs]
    out = {"score": float(res.points), "output": "\n".join(res.problems + summary + [res.sandbox]),
           "visibility": "visible", "stdout_visibility": "hidden", "tests": tests}
    return json.dumps(out, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# ------------------------------------------------------------ PrairieLearn

def prairielearn_json(res: StudentResult) -> str:
    """PrairieLearn's external-grader results.json: gradable, score in 0..1,
    message, tests[] with name, points, max_points, message, output."""
    tests = []
    for ls in res.labs:
        for it in ls.items:
            if it.visibility == "hidden":
                continue
            pts, mx = (it.points, it.max_points) if it.counted else (0.0, 0.0)
            tests.append({"name": f"{ls.lab}: {it.name}", "points": float(pts), "max_points": float(mx),
                          "message": "; ".join(it.feedback), "output": "\n".join(it.details),
                          "description": STATUS_MARK[it.status]})
    score = res.points / res.max_points if res.max_points > 0 else 0.0
    gradable = not res.missing and any(ls.submitted for ls in res.labs)
    out = {"gradable": gradable, "score": round(min(1.0, max(0.0, score)), 4),
           "message": "; ".join(res.problems[:5]) or f"{fmt(res.points)} / {fmt(res.max_points)}",
           "output": "", "tests": tests}
    return json.dumps(out, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# ------------------------------------------------------------ class outputs

def gradebook_csv(results: list[StudentResult], labs: list[str]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["student"] + labs + ["total", "max", "status", "notes"])
    for res in sorted(results, key=lambda r: r.student):
        by = {ls.lab: ls for ls in res.labs}
        row = [res.student] + [fmt(by[lab].points) if lab in by else "" for lab in labs]
        status = "no submission" if res.missing else ("not on roster" if not res.on_roster else "graded")
        notes = "; ".join([p for p in res.problems][:3]
                          + [f"{ls.lab}: {ls.notes[0]}" for ls in res.labs if ls.notes and ls.submitted][:3])
        w.writerow(row + [fmt(res.points), fmt(res.max_points), status, notes])
    return buf.getvalue()


def junit_xml(results: list[StudentResult]) -> str:
    root = ET.Element("testsuites", name="cuda-memory-labs")
    ntests = nfail = 0
    for res in sorted(results, key=lambda r: r.student):
        for ls in res.labs:
            suite = ET.SubElement(root, "testsuite", name=f"{res.student}.{ls.lab}")
            t = f = s = 0
            for it in ls.items:
                case = ET.SubElement(suite, "testcase", classname=f"{res.student}.{ls.lab}", name=it.name)
                case.set("time", "0")
                t += 1
                if not it.counted:
                    ET.SubElement(case, "skipped", message="; ".join(it.feedback)[:500])
                    s += 1
                elif it.status != "passed":
                    fl = ET.SubElement(case, "failure", message=("; ".join(it.feedback) or it.status)[:500],
                                       type=it.status)
                    fl.text = _item_text(it)
                    f += 1
                props = ET.SubElement(case, "properties")
                ET.SubElement(props, "property", name="points", value=fmt(it.points))
                ET.SubElement(props, "property", name="max_points", value=fmt(it.max_points))
            if not ls.items:
                case = ET.SubElement(suite, "testcase", classname=f"{res.student}.{ls.lab}", name="submitted")
                ET.SubElement(case, "failure", message="not submitted", type="failed")
                t += 1
                f += 1
            suite.set("tests", str(t))
            suite.set("failures", str(f))
            suite.set("errors", "0")
            suite.set("skipped", str(s))
            ntests += t
            nfail += f
    root.set("tests", str(ntests))
    root.set("failures", str(nfail))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_all(out: Path, results: list[StudentResult], labs: list[str], timestamp: str = "",
              run_note: str = "") -> list[Path]:
    """Writes every file; returns their paths (sorted)."""
    written = []

    def put(path: Path, text: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)

    for res in results:
        d = out / "students" / safe_name(res.student)
        put(d / "feedback.md", feedback_markdown(res, run_note))
        put(d / "result.json", result_json(res, timestamp))
        put(d / "gradescope" / "results.json", gradescope_json(res))
        put(d / "prairielearn" / "results.json", prairielearn_json(res))
    put(out / "gradebook.csv", gradebook_csv(results, labs))
    put(out / "junit.xml", junit_xml(results))
    return sorted(written)
