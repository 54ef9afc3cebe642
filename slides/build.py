#!/usr/bin/env python3
"""Build the kit's slide decks to PDF, offline, from text sources.

    python3 slides/build.py                  # charts of docs/results/, then every deck
    python3 slides/build.py 04_reduction     # one deck (a name or a prefix: 04)
    python3 slides/build.py --png DIR        # also every page as DIR/<deck>-NN.png
    python3 slides/build.py --out DIR        # PDFs in DIR (default: build/slides/)

A deck is one Typst file, slides/decks/<NN_name>.typ (the hierarchy deck is
00_hierarchy.typ). It gets from here, as JSON in sys.inputs.kit:
  - the lab's manifest labs/<NN_name>/lab.json (steps, titles, results pages),
  - each step's code: the reference between BEGIN/END SOLUTION markers after
    each TODO(step N) in solutions/<NN_name>/, the task text of that TODO in
    the skeleton labs/<NN_name>/ (file, line numbers and text),
  - the lab's results pages in docs/results/<gpu>/ (the runner's JSON, or its
    Markdown table where a page has no JSON) and their charts (SVG, made by
    slides/charts.py first).
So no measured number, step title or code line is typed into a deck by hand.

Output is deterministic: the PDF's timestamp is fixed and only the fonts that
come inside the typst package are used. Needs `pip install typst`; without
it this prints how to get it and exits with status 77 (CTest: skipped).
"""
import argparse
import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import charts  # noqa: E402

DECKS = os.path.join(HERE, "decks")
TYPST_PIN = "typst==0.15.2"
SKIP = 77


def need_typst(skip_status=SKIP):
    try:
        import typst  # noqa: F401
    except ImportError:
        print(f"slides: SKIPPED: the Python package 'typst' is not installed for {sys.executable}. "
              f"Install it with:  {os.path.basename(sys.executable)} -m pip install {TYPST_PIN}",
              flush=True)
        sys.exit(skip_status)
    return typst


# ---------------------------------------------------------------- the kit's data

def manifests():
    out = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "labs", "*", "lab.json"))):
        with open(path, encoding="utf-8") as f:
            m = json.load(f)
        out[m["name"]] = m
    return out


TODO = re.compile(r"TODO\(step (\d+)\)")


def todo_comments(lines):
    """[(index, step, first_line, text)]: every TODO(step N) comment of a file."""
    out = []
    i = 0
    while i < len(lines):
        m = TODO.search(lines[i])
        if m and lines[i].strip().startswith("//"):
            words, j = [], i
            while j < len(lines) and lines[j].strip().startswith("//") and \
                    "SOLUTION" not in lines[j] and (j == i or not TODO.search(lines[j])):
                words.append(lines[j].strip()[2:].strip())
                j += 1
            text = TODO.sub("", " ".join(words), count=1).lstrip(": ").strip()
            out.append((i, int(m.group(1)), i + 1, text))
            i = j
        else:
            i += 1
    return out


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")


def lab_code(m):
    """{"N": [part, ...]}: each step's code, one part per solution region.

    A part is the reference code between BEGIN SOLUTION and END SOLUTION
    ('//@' lines, which only the skeleton keeps, left out), credited to the
    closest TODO(step N) above it, with that TODO's text and its line in the
    skeleton the student edits (the skeleton is made from the reference, so
    its TODOs come in the same order).
    """
    code = {}
    for fname in m["files"]:
        ref = os.path.join(ROOT, "solutions", m["name"], fname)
        skel = os.path.join(ROOT, "labs", m["name"], fname)
        skel_todos = todo_comments(read_lines(skel)) if os.path.exists(skel) else []
        if not os.path.exists(ref):  # a student edition: the tasks only
            for _, step, line, text in skel_todos:
                code.setdefault(str(step), []).append({
                    "file": fname, "ref": "", "line": 0, "lines": 0, "code": "",
                    "skeleton": os.path.relpath(skel, ROOT), "todo": text, "todo_line": line})
            continue
        lines = read_lines(ref)
        ref_todos = todo_comments(lines)
        last, region, first = None, None, 0
        for i, line in enumerate(lines):
            here = [k for k, t in enumerate(ref_todos) if t[0] == i]
            if here:
                last = here[0]
            if "BEGIN SOLUTION" in line:
                region, first = [], i + 2
            elif "END SOLUTION" in line:
                if last is not None and region is not None:
                    _, step, _, text = ref_todos[last]
                    sk = skel_todos[last] if last < len(skel_todos) else (0, step, 0, text)
                    body = _dedent(region)
                    code.setdefault(str(step), []).append({
                        "file": fname, "ref": os.path.relpath(ref, ROOT),
                        "skeleton": os.path.relpath(skel, ROOT),
                        "line": first, "lines": body.count("\n") + 1,
                        "code": body, "todo": text, "todo_line": sk[2]})
                region = None
            elif region is not None and not line.strip().startswith("//@"):
                region.append(line)
    return code


def _dedent(lines):
    while lines and not lines[-1].strip():
        lines.pop()
    # preprocessor lines (#pragma) start in column 0 whatever the code's indent
    ind = min((len(s) - len(s.lstrip()) for s in lines if s.strip() and not s.lstrip().startswith("#")),
              default=0)
    return "\n".join(s.lstrip() if s.lstrip().startswith("#") else s[ind:] for s in lines)


def lab_mistakes(m):
    """The lab's catalogue of typical mistakes (solutions/<lab>/mistakes.toml): step,
    summary, what catches it; [] in a student edition, which has no solutions/."""
    path = os.path.join(ROOT, "solutions", m["name"], "mistakes.toml")
    if not os.path.exists(path):
        return []
    import tomllib
    with open(path, "rb") as f:
        entries = tomllib.load(f).get("mistake", [])
    return [{"name": e["name"], "step": e.get("step", 0), "summary": e.get("summary", ""),
             "caught_by": e.get("caught_by", "tests")} for e in entries]


def _pages(lab, m, sweeps):
    """(GPU folder, manifest entry, page path, data) of the lab's pages, every
    GPU folder, in the order its manifest names them: the --sweep pages
    (sweeps=True) or the others."""
    if not os.path.isdir(charts.RESULTS):
        return
    for gpu in sorted(os.listdir(charts.RESULTS)):
        d = os.path.join(charts.RESULTS, gpu)
        for entry in (m or {}).get("results", []):
            md = os.path.join(d, f"{lab}{entry['page']}.md")
            if not os.path.exists(md):
                continue
            data = charts.load_page(md)
            if ("sweep" in data) == sweeps:
                yield gpu, entry, md, data


def lab_sweeps(lab, m):
    """The lab's --sweep pages (a step's rate as its data grow): their chart for a slide."""
    return [{"gpu_dir": gpu, "what": entry.get("what", ""), "page": "/" + os.path.relpath(md, ROOT),
             "slide_charts": charts.charts_for([(charts.short_gpu(data.get("gpu")), data)], "", slide=True),
             "data": {k: data.get(k) for k in ("gpu", "date", "l2_bytes", "source")}}
            for gpu, entry, md, data in _pages(lab, m, True)]


def lab_results(lab, m):
    """The lab's results pages (not its --sweep pages), every GPU folder, in the order its manifest names them."""
    out = []
    for gpu, entry, md, data in _pages(lab, m, False):
        base = os.path.basename(md)[:-3]
        svgs = sorted(glob.glob(os.path.join(os.path.dirname(md), base + ".*.svg")))
        for r in data["rows"]:
            r["fraction"] = charts.fraction(r, data)
        slide_svgs = charts.charts_for([(charts.short_gpu(data.get("gpu")), data)], "", slide=True)
        out.append({"gpu_dir": gpu, "what": entry.get("what", ""), "slide_charts": slide_svgs,
                    "chart_titles": {k: charts.CHART_ALT[k] for k in slide_svgs},
                    "page": "/" + os.path.relpath(md, ROOT),
                    "charts": {os.path.basename(s)[len(base) + 1:-4]: "/" + os.path.relpath(s, ROOT)
                               for s in svgs},
                    "data": data})
    return out


def lab_pictures(lab, m):
    """The lab's access pictures (docs/pictures/<lab>_stepN.svg, drawn by the
    kit from the reference's run on the CPU path), in the manifest's order,
    one a step: for a slide each, with the command that draws a student's own."""
    out = []
    idents = {s["num"]: s.get("ident", "") for s in (m or {}).get("steps", [])}
    for p in (m or {}).get("pictures", []):
        step = p["step"]
        path = os.path.join(ROOT, "docs", "pictures", f"{lab}_step{step}.svg")
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            svg = f.read()
        args = p.get("args", "")
        cmd = f"./build/{m['stem']}_run_cpu --step {step} --picture step{step}.svg" + (f" {args}" if args else "")
        out.append({"step": step, "ident": idents.get(step, ""), "shows": p["shows"], "svg": svg,
                    "path": os.path.relpath(path, ROOT), "command": cmd})
    return out


def deck_inputs(deck):
    ms = manifests()
    name = os.path.basename(deck)[:-4]
    kit = {"deck": name, "labs": ms, "lab": None, "code": {}, "results": [], "sweeps": [], "pictures": [], "mistakes": [],
           "all_results": {lab: lab_results(lab, m) for lab, m in ms.items()}}
    if name in ms:
        kit["lab"] = ms[name]
        kit["mistakes"] = lab_mistakes(ms[name])
        kit["code"] = lab_code(ms[name])
        kit["results"] = kit["all_results"][name]
        kit["sweeps"] = lab_sweeps(name, ms[name])
        kit["pictures"] = lab_pictures(name, ms[name])
    elif not name.startswith("00_"):
        raise SystemExit(f"slides: {deck}: no labs/{name}/lab.json (a lab deck is named after its lab)")
    return {"kit": json.dumps(kit, sort_keys=True, ensure_ascii=False)}


# ---------------------------------------------------------------- building

def lab_missing(deck):
    """The lab a deck is about, when this edition of the kit does not have it
    (a student release with some labs only); None for a deck that can build."""
    name = os.path.basename(deck)[:-4]
    if name.startswith("00_") or name in manifests():
        return None
    return name


def decks(select=()):
    all_decks = sorted(d for d in glob.glob(os.path.join(DECKS, "*.typ")) if not lab_missing(d))
    if not select:
        return all_decks
    out = [d for d in all_decks if any(os.path.basename(d).startswith(s) for s in select)]
    if not out:
        raise SystemExit(f"slides: no deck matches {' '.join(select)} in slides/decks/")
    return out


def compiler(typst):
    return typst.Compiler(root=ROOT, font_paths=typst.Fonts(include_system_fonts=False),
                          ignore_system_fonts=True)


def compile_deck(typst, deck, fmt="pdf", ppi=None):
    c = compiler(typst)
    kw = {"format": fmt, "sys_inputs": deck_inputs(deck), "timestamp": 0}
    if ppi:
        kw["ppi"] = ppi
    return c.compile(deck, **kw)


def query(typst, deck, selector):
    c = compiler(typst)
    c.compile(deck, format="pdf", sys_inputs=deck_inputs(deck), timestamp=0)
    return json.loads(c.query(selector, field="value"))


def labs_without_deck():
    have = {os.path.basename(d)[:-4] for d in decks()}
    return [lab for lab in manifests() if lab not in have]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("decks", nargs="*", help="deck names or prefixes (default: all)")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "slides"))
    ap.add_argument("--png", metavar="DIR", help="also render every page to PNG in DIR")
    ap.add_argument("--ppi", type=float, default=72)
    ap.add_argument("--no-charts", action="store_true", help="do not refresh docs/results/ charts")
    ap.add_argument("--skip-missing", action="store_true",
                    help="without the typst package, say so and exit 0 (the build's `slides` target)")
    a = ap.parse_args(argv)
    typst = need_typst(0 if a.skip_missing else SKIP)
    if not a.no_charts:
        for s in charts.write_all():
            print("charts: wrote", s)
    os.makedirs(a.out, exist_ok=True)
    for deck in decks(a.decks):
        name = os.path.basename(deck)[:-4]
        pdf = os.path.join(a.out, name + ".pdf")
        try:
            data = compile_deck(typst, deck)
        except typst.TypstError as e:
            print(f"slides: {os.path.relpath(deck, ROOT)} does not build:\n{e.diagnostic or e.message}",
                  file=sys.stderr)
            return 1
        with open(pdf, "wb") as f:
            f.write(data)
        n = len(query(typst, deck, "<slide>"))
        print(f"slides: {os.path.relpath(pdf)} ({n} slides)")
        if a.png:
            os.makedirs(a.png, exist_ok=True)
            pages = compile_deck(typst, deck, fmt="png", ppi=a.ppi)
            pages = pages if isinstance(pages, list) else [pages]
            for i, png in enumerate(pages, 1):
                with open(os.path.join(a.png, f"{name}-{i:02d}.png"), "wb") as f:
                    f.write(png)
    absent = [os.path.basename(d)[:-4] for d in glob.glob(os.path.join(DECKS, "*.typ")) if lab_missing(d)]
    if absent:
        print("slides: not built, their labs are not in this kit: " + ", ".join(sorted(absent)))
    missing = labs_without_deck()
    if missing:
        print("slides: no deck yet for " + ", ".join(missing) +
              " (add slides/decks/<lab>.typ: see slides/README.md)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
