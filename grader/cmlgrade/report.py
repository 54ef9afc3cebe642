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
import os
import xml.etree.ElementTree as ET
from dataclasses import asdict
from pathlib import Path

from .stagebase import safe_name
from .sandbox import kill_leftovers
from .results import Item, LabScore, StudentResult
from .score import NO_GPU

STATUS_MARK = {"passed": "PASS", "partial": "PARTIAL", "failed": "FAIL", "not_measured": "NOT MEASURED",
               "excluded": "NOT COUNTED"}


def fmt(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".") if x != int(x) else str(int(x))


def _item_text(it: Item) -> str:
    return "\n".join(it.feedback + it.details)


# ------------------------------------------------------------ Markdown

MAX_NOT_COUNTED = 20


def _machine(res: StudentResult) -> str:
    return f"GPU checks not measured: {res.machine}" if res.machine else ""


def _compile_text(ls: LabScore) -> str:
    return "Compiler messages:\n" + "\n".join(ls.build_errors) if ls.build_errors else ""


def feedback_markdown(res: StudentResult, run_note: str = "") -> str:
    out = [f"# Feedback for {res.student}", ""]
    out.append(f"Total: **{fmt(res.points)} / {fmt(res.max_points)}**")
    out.append("")
    if res.missing:  # nothing ran: no word about seeds, sandboxes or GPUs
        return "\n".join(out + ["Nothing was submitted."]) + "\n"
    out.append(f"- Data: {'the public seed (hidden tests not run)' if res.seed == 'public' else 'public and secret seeds'}")
    out.append(f"- Sandbox: {res.sandbox or 'n/a'}")
    for note in dict.fromkeys(n for n in (_machine(res), run_note) if n):
        out.append(f"- {note}")
    out.append("")
    if not res.gradable:
        out += ["Nothing could be graded from this submission.", ""]
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
    no_gpu = [it.name for it in ls.items if it.feedback == [NO_GPU] and not it.details]
    if no_gpu:  # one line for them all; the reason is at the top
        out += [f"Not measured, no usable GPU on this machine: {len(no_gpu)} checks ({', '.join(no_gpu[:3])}"
                + (", ..." if len(no_gpu) > 3 else "") + ").", ""]
    for it in ls.items:
        if it.name in no_gpu:
            continue
        if it.visibility == "hidden" or not (it.feedback or (it.details and it.status != "passed")):
            continue
        out.append(f"**{it.name}**")
        out += [f"- {f}" for f in it.feedback]
        if it.status != "passed":
            out += [f"  - `{d}`" if len(d) < 200 else f"  - {d}" for d in it.details]
        out.append("")
    if ls.not_counted:
        more = len(ls.not_counted) - MAX_NOT_COUNTED
        out += ["Not counted for anyone (the reference solution fails them too in this run, or they were skipped):",
                ""] + [f"- {n}" for n in ls.not_counted[:MAX_NOT_COUNTED]]
        if more > 0:
            out.append(f"- ... and {more} more, not shown here (all of them are in result.json, \"not_counted\")")
        out.append("")
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
        if ls.build_errors:
            tests.append({"name": f"{ls.lab}: compile", "score": 0.0, "max_score": 0.0,
                          "output": _compile_text(ls), "visibility": "visible", "status": "failed"})
        for it in ls.items:
            if not it.counted:  # neither passed nor failed: no status, and the output says which
                tests.append({"name": f"{ls.lab}: {it.name} ({STATUS_MARK[it.status].lower()})", "score": 0.0,
                              "max_score": 0.0, "output": f"{STATUS_MARK[it.status]}: {_item_text(it)}",
                              "visibility": it.visibility})
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
    head = (["Nothing was submitted."] if res.missing else
            [] if res.gradable else ["Nothing could be graded from this submission."])
    tail = [] if res.missing else [n for n in (_machine(res), res.sandbox) if n]
    compile_msgs = [f"{ls.lab}: {_compile_text(ls)}" for ls in res.labs if ls.build_errors]
    out = {"score": float(res.points), "output": "\n".join(head + res.problems + summary + compile_msgs + tail),
           "visibility": "visible", "stdout_visibility": "hidden", "tests": tests}
    return json.dumps(out, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# ------------------------------------------------------------ PrairieLearn

def prairielearn_json(res: StudentResult) -> str:
    """PrairieLearn's external-grader results.json: gradable, score in 0..1,
    message, tests[] with name, points, max_points, message, output. Only
    visible items are listed (PrairieLearn has no "after the due date"):
    the others are counted in one line; the score is the whole grade."""
    tests = []
    held = 0
    for ls in res.labs:
        if ls.build_errors:
            tests.append({"name": f"{ls.lab}: compile", "points": 0.0, "max_points": 0.0,
                          "message": "does not compile", "output": _compile_text(ls), "description": "FAIL"})
        for it in ls.items:
            if it.visibility != "visible":  # PrairieLearn shows everything at once: no after-due-date items
                held += 1
                continue
            pts, mx = (it.points, it.max_points) if it.counted else (0.0, 0.0)
            tests.append({"name": f"{ls.lab}: {it.name}", "points": float(pts), "max_points": float(mx),
                          "message": "; ".join(it.feedback), "output": "\n".join(it.details),
                          "description": STATUS_MARK[it.status]})
    score = res.points / res.max_points if res.max_points > 0 else 0.0
    msg = ("nothing was submitted" if res.missing else "; ".join(res.problems[:5])
           or f"{fmt(res.points)} / {fmt(res.max_points)}")
    output = "\n\n".join([f"{ls.lab}: {_compile_text(ls)}" for ls in res.labs if ls.build_errors]
                          + ([_machine(res)] if _machine(res) and not res.missing else [])
                          + ([f"{held} more checks (hidden data, or shown after the due date) are in the score but "
                              f"not listed here"] if held else []))
    out = {"gradable": res.gradable, "score": round(min(1.0, max(0.0, score)), 4),
           "message": msg, "output": output, "tests": tests}
    return json.dumps(out, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# ------------------------------------------------------------ class outputs

def gradebook_csv(results: list[StudentResult], labs: list[str]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["student"] + labs + ["total", "max", "status", "notes"])
    for res in sorted(results, key=lambda r: r.student):
        by = {ls.lab: ls for ls in res.labs}
        row = [res.student] + [fmt(by[lab].points) if lab in by else "" for lab in labs]
        status = res.status
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
            if ls.build_errors:
                case = ET.SubElement(suite, "testcase", classname=f"{res.student}.{ls.lab}", name="compile")
                case.set("time", "0")
                fl = ET.SubElement(case, "failure", message="does not compile", type="compile_error")
                fl.text = _compile_text(ls)
                t += 1
                f += 1
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

    kill_leftovers()  # no student process outlives the grading it was part of

    def put(path: Path, text: str) -> None:
        """Atomically: a reader sees the old file or the new one, never half."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
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
