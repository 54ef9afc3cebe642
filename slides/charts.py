#!/usr/bin/env python3
"""Charts of the kit's results, as SVG, from the runners' JSON.

    python3 slides/charts.py                      # every page in docs/results/
    python3 slides/charts.py --check              # fail if a chart or link is stale
    python3 slides/charts.py mine.json [--vs docs/results/<gpu>/<page>.json] [-o DIR]

The first form writes, beside each results page docs/results/<gpu>/<page>.md,
<page>.rate.svg (each step's rate as a share of the ceiling measured in the
same run) and the lab's own charts (lab 01: <page>.probe.svg, conflict degree
against cycles), and puts the image links at the end of the page between
'charts:' markers (the runner rewrites the page; this puts them back).

The third form draws a learner's own run (`./build/<stem>_run --json >
mine.json`) beside a published one, into DIR (default: charts-mine/).

The data is the page's JSON (<page>.json, written by the runner with --json).
A page whose manifest entry has no JSON is read from its Markdown table, which
the same runner writes in a fixed format; the chart's caption says which.
Standard library only; output is byte-for-byte reproducible.
"""
import argparse
import json
import math
import os
import re
import sys
from xml.sax.saxutils import escape

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "docs", "results")
BEGIN = "<!-- charts:begin"
END = "<!-- charts:end -->"

FONT = "DejaVu Sans, Verdana, Helvetica, Arial, sans-serif"
COLOURS = {"step": "#2f6db5", "anchor": "#e07b1a", "ceiling": "#8c8c8c"}
SERIES = ["#2f6db5", "#2a9d5c", "#c0392b", "#8e44ad"]


# ---------------------------------------------------------------- reading results

def read_json(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    data["source"] = os.path.basename(path)
    return data


def _num(text):
    return float(text.replace(",", ""))


def read_markdown(path):
    """A runner's Markdown page in the shape of its JSON (rows, ceiling, unit).

    The runner library writes every page alike (common/src/report.c): a
    'Measured on ...' sentence ending '100% is <ceiling> at <rate> <unit>,
    measured in the same run.', then the table (step, kernel, check, median
    ms, <unit>, of max[, note]); a lab may add its own tables below (lab 02:
    the cost at d distinct addresses, read into extra.cost_table).
    """
    with open(path, encoding="utf-8") as f:
        text = f.read()
    head = re.match(r"# (\S+) on (.+)\n", text)
    if not head:
        raise ValueError(f"{path}: not a runner's page (no '# <lab> on <GPU>')")
    data = {"lab": head.group(1), "gpu": head.group(2).strip(),
            "source": os.path.basename(path) + " (its table: this page has no JSON)"}
    m = re.search(r"Measured on [^,(]+(?:\([^)]*\))?, (\d{4}-\d\d-\d\d)\. (.*?), seed (\d+)\.", text)
    if m:
        data["date"], data["params"], data["seed"] = m.group(1), m.group(2), int(m.group(3))
    m = re.search(r"100% is (.+?) at ([\d.,]+) (\S+?), measured in the same run", text)
    if not m:
        raise ValueError(f"{path}: no '100% is <ceiling> at <rate> <unit>, measured in the same run' sentence")
    data["ceiling"] = {"name": m.group(1), "rate": _num(m.group(2))}
    data["unit"] = m.group(3)
    data["emulated"] = "EMULATED" in text
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 6 or not line.startswith("|"):
            continue
        kind = {"max": "ceiling", "lib": "anchor"}.get(cells[0])
        if kind is None and cells[0].isdigit():
            kind = "step"
        if kind is None:
            continue
        try:
            ms, rate = _num(cells[3]), _num(cells[4])
        except ValueError:
            ms, rate = None, None
        rows.append({"kind": kind, "step": int(cells[0]) if kind == "step" else 0,
                     "name": cells[1], "status": cells[2], "correct": cells[2] == "ok",
                     "median_ms": ms, "rate": rate, "note": cells[6] if len(cells) > 6 else ""})
    if not rows:
        raise ValueError(f"{path}: no results table")
    data["rows"] = rows
    table = _cost_table(text)
    if table:
        data["extra"] = {"cost_table": table}
    return data


def _cost_table(text):
    """Lab 02's table '| d | step 2 distinct | ...' as {"d": [...], "curves": [{step, name, cost}]}."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or cells[0] != "d" or len(cells) < 2:
            continue
        heads = [re.match(r"step (\d+) (\S+)", c) for c in cells[1:]]
        if not all(heads):
            continue
        ds, cols = [], [[] for _ in heads]
        for row in lines[i + 2:]:
            vals = [c.strip() for c in row.strip().strip("|").split("|")]
            if not row.startswith("|") or not vals[0].isdigit():
                break
            ds.append(int(vals[0]))
            for k, v in enumerate(vals[1:len(heads) + 1]):
                cols[k].append(_num(v))
        return {"d": ds, "curves": [{"step": int(h.group(1)), "name": h.group(2), "cost": c}
                                    for h, c in zip(heads, cols)]}
    return None


def d_curves(data):
    """Lab 02: (d values, [(step, name, cost at each d as a multiple of d = 1)]), or None.

    From the JSON's extra.curve (ms per walk at d = 1, 2, 4, ..., the runner's
    cm_d(k) = 2^k) or from the page's table when the page has no JSON.
    """
    extra = data.get("extra") or {}
    if extra.get("cost_table"):
        t = extra["cost_table"]
        return t["d"], [(c["step"], c["name"], c["cost"]) for c in t["curves"]]
    if extra.get("curve"):
        names = {r["step"]: r["name"] for r in data["rows"] if r["kind"] == "step"}
        curves = [(c["step"], names.get(c["step"], ""), [ms / c["ms"][0] for ms in c["ms"]])
                  for c in extra["curve"] if c.get("ms") and c["ms"][0] > 0]
        if curves:
            return [1 << k for k in range(len(curves[0][2]))], curves
    return None


def load_page(md_path):
    """The data of one results page: its JSON if there is one, else its table."""
    js = md_path[:-3] + ".json"
    return read_json(js) if os.path.exists(js) else read_markdown(md_path)


def fraction(row, data):
    if row.get("rate") is None or not data["ceiling"]["rate"]:
        return None
    return row["rate"] / data["ceiling"]["rate"]


def short_gpu(name):
    return re.sub(r"^NVIDIA ", "", name or "?")


# ---------------------------------------------------------------- SVG writing

class Svg:
    def __init__(self, width, height, title, fs=1.0):
        self.w, self.h, self.fs = width, height, fs
        self.out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
                    f'viewBox="0 0 {width} {height}" font-family="{FONT}" font-size="13">',
                    f"<title>{escape(title)}</title>",
                    f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>']

    def text(self, x, y, s, size=13, anchor="start", weight="normal", fill="#222222"):
        size = f"{round(size * self.fs, 1):g}"
        self.out.append(f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
                        f'font-weight="{weight}" fill="{fill}">{escape(s)}</text>')

    def rect(self, x, y, w, h, fill, stroke="none"):
        self.out.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0):.1f}" height="{h:.1f}" '
                        f'fill="{fill}" stroke="{stroke}"/>')

    def line(self, x1, y1, x2, y2, stroke="#999999", width=1, dash=None):
        d = f' stroke-dasharray="{dash}"' if dash else ""
        self.out.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
                        f'stroke="{stroke}" stroke-width="{width}"{d}/>')

    def polyline(self, points, stroke, width=2, dash=None):
        d = f' stroke-dasharray="{dash}"' if dash else ""
        pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        self.out.append(f'<polyline points="{pts}" fill="none" stroke="{stroke}" stroke-width="{width}"{d}/>')

    def circle(self, x, y, r, fill):
        self.out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r:g}" fill="{fill}"/>')

    def done(self):
        return "\n".join(self.out + ["</svg>", ""])


def _caption(data):
    when = data.get("date", "undated")
    emu = " (EMULATED on the CPU: not a GPU's speed)" if data.get("emulated") else ""
    return f"{short_gpu(data.get('gpu'))}{emu}, {when}; data: {data['source']}"


def rate_chart(series, title, slide=False):
    """Horizontal bars: each row's rate as a share of its own run's ceiling.

    series: list of (label, data); one series is a results page, two or more
    are drawn side by side per row (a learner's GPU beside the published one).
    """
    base = series[0][1]
    keys = []
    for _, data in series:
        for r in data["rows"]:
            k = (r["kind"], r["step"], r["name"])
            if k not in keys:
                keys.append(k)
    order = {"step": 0, "anchor": 1, "ceiling": 2}
    keys.sort(key=lambda k: (order[k[0]], k[1], k[2] if k[0] != "step" else ""))
    n = len(series)
    # a slide's version: wider, larger type, no title or caption (the slide has them)
    fs, width = (1.45, 1000) if slide else (1.0, 720)
    bar, gap = (22, 8) if slide else (18, 10)
    head = 6 if slide else 52
    top, left, right = head + 6 + (16 * fs * n if n > 1 else 16), int(250 * fs), int(175 * fs)
    plot_w = width - left - right
    row_h = n * bar + gap
    height = top + len(keys) * row_h + (30 if slide else 48)
    fmax = max((fraction(r, d) or 0) for _, d in series for r in d["rows"])
    # a run whose rows pass 3x the ceiling (lab 02's cached table reads) gets a log scale
    log = fmax > 3
    svg = Svg(width, height, title, fs)
    if not slide:
        svg.text(12, 24, title, size=16, weight="bold")
        svg.text(12, 44, f"bar: {unit_of(base)} as a share of the ceiling measured in the same run" +
                 (f" (100% = {escape_unit(base)})" if n == 1 else ", for each run"),
                 size=12, fill="#555555")
    for i, (label, data) in enumerate(series):
        if n > 1:
            svg.rect(12, head + 16 * fs * i, 12, 10, SERIES[i % len(SERIES)])
            svg.text(30, head + 9 + 16 * fs * i, f"{label}: 100% = {escape_unit(data)}", size=11)
    if log:
        lo = 10 ** math.floor(math.log10(min(f for _, d in series for r in d["rows"]
                                               if (f := fraction(r, d)))))
        hi = 10 ** math.ceil(math.log10(fmax))
        lo = min(lo, 0.1)

        def xof(f):
            return left + (math.log10(max(f, lo)) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * plot_w
        ticks = [10 ** e for e in range(round(math.log10(lo)), round(math.log10(hi)) + 1)]
    else:
        xmax = max(1.1, fmax + 0.05)

        def xof(f):
            return left + f / xmax * plot_w
        ticks = [p / 100 for p in range(0, int(xmax * 100) + 1, 25)]
    y0, y1 = top - 6, top + len(keys) * row_h
    for t in ticks:
        x = xof(t)
        svg.line(x, y0, x, y1, stroke="#555555" if t == 1 else "#dddddd", dash=None if t == 1 else "3,3")
        svg.text(x, y1 + 16, f"{t * 100:g}%", size=11, anchor="middle", fill="#555555")
    if log:
        svg.text(xof(ticks[0]) - 22 * fs, y1 + 16, "log scale", size=11, anchor="end", fill="#555555",
                 weight="bold")
    for j, key in enumerate(keys):
        y = top + j * row_h
        kind, step, name = key
        tag = f"step {step} {name}" if kind == "step" else (
            f"lib: {name}" if kind == "anchor" else f"max: {name}")
        svg.text(left - 8, y + n * bar / 2 + 4, clip(tag, 34), size=12, anchor="end",
                 weight="bold" if kind == "step" else "normal")
        for i, (_, data) in enumerate(series):
            row = next((r for r in data["rows"] if (r["kind"], r["step"], r["name"]) == key), None)
            yy = y + i * bar
            colour = SERIES[i % len(SERIES)] if n > 1 else COLOURS[kind]
            if row is None:
                svg.text(left + 4, yy + 13, "not in this run", size=11, fill="#888888")
                continue
            f = fraction(row, data)
            if f is None or row.get("status", "ok") != "ok":
                svg.text(left + 4, yy + 13, f"{row.get('status', '?')}: not timed", size=11,
                         fill="#c0392b")
                continue
            svg.rect(left, yy + 2, xof(f) - left, bar - 4, colour)
            svg.text(xof(f) + 6, yy + bar / 2 + 4, f"{row['rate']:.0f} {unit_of(data)}  {f * 100:.0f}%",
                     size=11)
    if not slide:
        svg.text(12, height - 12, "; ".join(_caption(d) for _, d in series), size=11, fill="#555555")
    return svg.done()


def unit_of(data):
    """The rate's unit as the runner wrote it: GB/s, or GFLOP/s for lab 03."""
    return data.get("unit") or "GB/s"


def escape_unit(data):
    return f"{data['ceiling']['name']}, {data['ceiling']['rate']:.0f} {unit_of(data)}"


def clip(s, n):
    return s if len(s) <= n else s[: n - 1] + "…"


def probe_chart(series, title, slide=False):
    """Lab 01: each pattern's conflict degree (the bank model) against its cost (cycles)."""
    pats = [p["pattern"] for p in series[0][1]["extra"]["patterns"]]
    n = len(series)
    fs = 1.3 if slide else 1.0
    left, top, bottom = 56, (44 if slide else 78), (124 if slide else 104)
    group = 62
    bar = (group - 14) / (n + 1)
    width = left + group * len(pats) + 20
    plot_h = 250
    height = top + plot_h + bottom - (24 if slide else 0)
    svg = Svg(width, height, title, fs)
    if not slide:
        svg.text(12, 24, title, size=16, weight="bold")
    y = 18 if slide else 44
    svg.text(12, y, "grey: the conflict degree the bank model predicts (passes per warp-wide load)",
             size=12, fill="#555555")
    if n == 1:
        svg.text(12, y + 18 * fs, f"blue: SM cycles per warp-wide 4-byte load, measured ({series[0][0]})",
                 size=12, fill="#555555")
    else:
        svg.text(12, y + 18 * fs, "SM cycles per warp-wide 4-byte load, measured:", size=12, fill="#555555")
        x = 12 + 300 * fs
        for i, (label, _) in enumerate(series):
            svg.rect(x, y + 18 * fs - 9, 12, 10, SERIES[i % len(SERIES)])
            svg.text(x + 16, y + 18 * fs, label, size=12, fill="#555555")
            x += 16 + 7 * fs * len(label) + 14
    top_cycles = max((p.get("cycles_per_access") or 0) for _, d in series
                     for p in d.get("extra", {}).get("patterns", []) if p.get("measured"))
    ymax = max(34, top_cycles * 1.08)
    sy = plot_h / ymax
    y_base = top + plot_h
    for v in (0, 4, 8, 16, 32):
        y = y_base - v * sy
        svg.line(left, y, width - 12, y, stroke="#dddddd", dash="3,3")
        svg.text(left - 6, y + 4, str(v), size=11, anchor="end", fill="#555555")
    for j, pat in enumerate(pats):
        x = left + j * group + 7
        model = next(p for p in series[0][1]["extra"]["patterns"] if p["pattern"] == pat)["model"]
        svg.rect(x, y_base - model * sy, bar - 2, model * sy, "#bbbbbb")
        svg.text(x + bar / 2, y_base - model * sy - 4, str(model), size=10, anchor="middle",
                 fill="#555555")
        for i, (_, data) in enumerate(series):
            p = next((q for q in data.get("extra", {}).get("patterns", []) if q["pattern"] == pat), None)
            xx = x + (i + 1) * bar
            if p is None or not p.get("measured"):
                svg.text(xx + bar / 2, y_base - 4, "–", size=10, anchor="middle", fill="#888888")
                continue
            c = p["cycles_per_access"]
            svg.rect(xx, y_base - c * sy, bar - 2, c * sy, SERIES[i % len(SERIES)])
            svg.text(xx + bar / 2, y_base - c * sy - 4, f"{c:.1f}", size=10, anchor="middle")
        cx, cy = x + group / 2 - 4, y_base + 12
        svg.out.append(f'<text x="{cx:.1f}" y="{cy:.1f}" font-size="{12 * fs:.1f}" text-anchor="end" '
                       f'font-weight="bold" fill="#222222" transform="rotate(-40 {cx:.1f} {cy:.1f})">'
                       f'{escape(pat)}</text>')
    svg.line(left, y_base, width - 12, y_base, stroke="#555555")
    if not slide:
        svg.text(12, height - 12, "; ".join(_caption(d) for _, d in series), size=11, fill="#555555")
    return svg.done()


def _nice_step(top, n=5):
    """A tick step of 1, 2 or 5 times a power of ten, about n ticks up to top."""
    raw = max(top, 1e-9) / n
    e = 10 ** math.floor(math.log10(raw))
    return next(m * e for m in (1, 2, 5, 10) if m * e >= raw)


def _captions(svg, series, height):
    """Each run's caption on a line of its own, the last one at the bottom."""
    for i, (_, data) in enumerate(series):
        svg.text(12, height - 12 - 15 * (len(series) - 1 - i), _caption(data), size=11, fill="#555555")


def _legend_runs(svg, series, x, y, dashes):
    """For two or more runs: one short line per run in its dash pattern, with its label."""
    for i, (label, _) in enumerate(series):
        svg.line(x, y - 4, x + 28, y - 4, stroke="#333333", width=2, dash=dashes[i % len(dashes)])
        svg.text(x + 34, y, label, size=12, fill="#555555")
        x += 34 + 7 * svg.fs * len(label) + 24


def addresses_chart(series, title, slide=False):
    """Lab 02: a walk's cost at d distinct addresses per warp and read, as a multiple of
    its cost at d = 1, for steps 2-4, against the ideal d x of one address at a time."""
    fs = 1.6 if slide else 1.0
    width, plot_h = (1000, 330) if slide else (720, 300)
    left, right = int(64 * fs), int(225 * fs)
    top = (14 if slide else 60) + (20 * fs if len(series) > 1 else 0) + 22 * fs
    bottom = 46 * fs + (0 if slide else 7 + 15 * len(series))
    height = int(top + plot_h + bottom)
    svg = Svg(width, height, title, fs)
    if not slide:
        svg.text(12, 24, title, size=16, weight="bold")
    y = 18 if slide else 44
    svg.text(12, y, "cost of one walk at d distinct table entries per warp and read, as a multiple of "
             "its cost at d = 1 (log scales)", size=12, fill="#555555")
    dashes = [None, "7,4", "2,3", "10,3,2,3"]
    if len(series) > 1:
        _legend_runs(svg, series, 12, y + 20 * fs, dashes)
    got = [(label, d_curves(data)) for label, data in series]
    ds = next((c[0] for _, c in got if c), [1, 2, 4, 8, 16, 32])
    costs = [v for _, c in got if c for _, _, vals in c[1] for v in vals if v > 0]
    hi = max([ds[-1]] + costs) * 1.15
    lo = min([1.0] + costs) / 1.15
    plot_w = width - left - right

    def xof(d):
        return left + 10 + (math.log2(d) - math.log2(ds[0])) / max(math.log2(ds[-1] / ds[0]), 1) * (plot_w - 20)

    def yof(v):
        return top + plot_h - (math.log2(v) - math.log2(lo)) / (math.log2(hi) - math.log2(lo)) * plot_h

    for v in (1, 2, 4, 8, 16, 32, 64, 128):
        if lo <= v <= hi:
            svg.line(left, yof(v), left + plot_w, yof(v), stroke="#dddddd", dash="3,3")
            svg.text(left - 6, yof(v) + 4, f"{v}x", size=11, anchor="end", fill="#555555")
    for d in ds:
        svg.line(xof(d), top, xof(d), top + plot_h, stroke="#eeeeee")
        svg.text(xof(d), top + plot_h + 16 * fs, str(d), size=11, anchor="middle", fill="#555555")
    svg.text(left + plot_w / 2, top + plot_h + 34 * fs, "d: distinct addresses per warp-wide read",
             size=12, anchor="middle", fill="#555555")
    svg.line(left, top + plot_h, left + plot_w, top + plot_h, stroke="#555555")
    # the ideal: one address at a time, d times the cost of one
    svg.line(xof(ds[0]), yof(ds[0]), xof(ds[-1]), yof(ds[-1]), stroke="#8c8c8c", width=2, dash="5,4")
    labels = [(yof(ds[-1]), "d x: one address at a time", "#8c8c8c")]
    for i, (_, c) in enumerate(got):
        if not c:
            continue
        for j, (step, name, vals) in enumerate(c[1]):
            colour = SERIES[j % len(SERIES)]
            pts = " ".join(f"{xof(d):.1f},{yof(v):.1f}" for d, v in zip(ds, vals) if v > 0)
            dash = dashes[i % len(dashes)]
            extra = f' stroke-dasharray="{dash}"' if dash else ""
            svg.out.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="2.5"{extra}/>')
            for d, v in zip(ds, vals):
                if v > 0:
                    svg.out.append(f'<circle cx="{xof(d):.1f}" cy="{yof(v):.1f}" r="{3.5 * fs:.1f}" '
                                   f'fill="{colour}"/>')
            if i == 0:
                labels.append((yof(vals[-1]), f"step {step} {name}: {vals[-1]:.2f}x", colour))
    # the labels at the right end, pushed apart so that none overlaps another
    labels.sort()
    gap = 16 * fs
    placed = []
    for yy, text, colour in labels:
        yy = max(yy, placed[-1] + gap) if placed else yy
        placed.append(yy)
        svg.text(left + plot_w + 8, yy + 4, text, size=12, fill=colour, weight="bold")
    if not slide:
        _captions(svg, series, height)
    return svg.done()


def _rate_grid(svg, left, plot_w, yof, ymax, tick):
    """The horizontal grid lines of a rate axis, every tick from 0 to ymax, labelled."""
    v = 0.0
    while v <= ymax + 1e-9:
        svg.line(left, yof(v), left + plot_w, yof(v), stroke="#dddddd", dash="3,3")
        svg.text(left - 6, yof(v) + 4, f"{v:,.0f}", size=11, anchor="end", fill="#555555")
        v += tick


def gflops_chart(series, title, slide=False):
    """Lab 03: each step's GFLOP/s as a bar, the library (cuBLAS) measured in the same run as a line."""
    fs = 1.6 if slide else 1.0
    width, plot_h = (1000, 330) if slide else (720, 300)
    n = len(series)
    steps = sorted({r["step"] for _, d in series for r in d["rows"] if r["kind"] == "step"})
    names = {}
    for _, d in series:
        for r in d["rows"]:
            if r["kind"] == "step":
                names.setdefault(r["step"], r["name"])
    left, right = int(70 * fs), int(24 * fs)
    top = (14 if slide else 60) + 22 * fs + (20 * fs if n > 1 else 0)
    bottom = 74 * fs + (0 if slide else 7 + 15 * n)
    height = int(top + plot_h + bottom)
    svg = Svg(width, height, title, fs)
    if not slide:
        svg.text(12, 24, title, size=16, weight="bold")
    y = 18 if slide else 44

    def lib(data):
        return next((r for r in data["rows"] if r["kind"] == "anchor" and r.get("rate")),
                    next((r for r in data["rows"] if r["kind"] == "ceiling" and r.get("rate")), None))
    unit = unit_of(series[0][1])
    svg.text(12, y, f"bars: each step's {unit}; line: {(lib(series[0][1]) or {}).get('name', 'the library')}"
             f", timed in the same run on the same data", size=12, fill="#555555")
    if n > 1:
        x = 12
        for i, (label, data) in enumerate(series):
            ref = lib(data)
            text = f"{label}" + (f": {ref['rate']:,.0f} {unit}" if ref else "")
            svg.rect(x, y + 20 * fs - 9, 12, 10, SERIES[i % len(SERIES)])
            svg.text(x + 16, y + 20 * fs, text, size=12, fill="#555555")
            x += 16 + 6.6 * fs * len(text) + 20
    top_rate = max([r.get("rate") or 0 for _, d in series for r in d["rows"] if r["kind"] in ("step", "anchor")])
    tick = _nice_step(top_rate * 1.1)
    ymax = tick * math.ceil(top_rate * 1.12 / tick)
    plot_w = width - left - right
    group = plot_w / max(len(steps), 1)
    bar = (group - 14 * fs) / n

    def yof(v):
        return top + plot_h - v / ymax * plot_h

    _rate_grid(svg, left, plot_w, yof, ymax, tick)
    for i, (label, data) in enumerate(series):
        colour = SERIES[i % len(SERIES)]
        for j, step in enumerate(steps):
            x = left + j * group + 7 * fs + i * bar
            row = next((r for r in data["rows"] if r["kind"] == "step" and r["step"] == step), None)
            if row is None or row.get("rate") is None or row.get("status", "ok") != "ok":
                svg.text(x + bar / 2, yof(0) - 4, "–", size=10, anchor="middle", fill="#888888")
                continue
            svg.rect(x, yof(row["rate"]), bar - 2, yof(0) - yof(row["rate"]), colour)
            svg.text(x + bar / 2, yof(row["rate"]) - 4, f"{row['rate']:,.0f}", size=10 if n == 1 else 9,
                     anchor="middle")
        ref = lib(data)
        if ref:
            svg.line(left, yof(ref["rate"]), left + plot_w, yof(ref["rate"]),
                     stroke=COLOURS["anchor"] if n == 1 else colour, width=2, dash="6,4")
            if n == 1:
                svg.text(left + 6, yof(ref["rate"]) - 6, f"{ref['name']}: {ref['rate']:,.0f} {unit}",
                         size=12, weight="bold", fill=COLOURS["anchor"])
    svg.line(left, yof(0), left + plot_w, yof(0), stroke="#555555")
    for j, step in enumerate(steps):
        cx, cy = left + j * group + group / 2, yof(0) + 16 * fs
        svg.text(cx, cy, f"step {step}", size=12, anchor="middle", weight="bold")
        svg.text(cx, cy + 15 * fs, clip(names[step], 14), size=10, anchor="middle", fill="#555555")
        shares = [f"{r['rate'] / lib(d)['rate'] * 100:.0f}%" for _, d in series
                  for r in d["rows"] if r["kind"] == "step" and r["step"] == step and r.get("rate")
                  and lib(d) and r.get("status", "ok") == "ok"]
        svg.text(cx, cy + 30 * fs, " / ".join(shares), size=11, anchor="middle", fill=COLOURS["anchor"])
    if not slide:
        _captions(svg, series, height)
    return svg.done()


def _bytes_words(b):
    return f"{b / 2 ** 30:g} GiB" if b >= 2 ** 30 else f"{b / 2 ** 20:g} MiB"


def sweep_chart(series, title, slide=False):
    """`--sweep`: the step's rate against the bytes a run moves (log scale),
    the copy kernel and cudaMemcpy on as many bytes beside it, L2's size marked."""
    fs = 1.5 if slide else 1.0
    width, plot_h = (1000, 330) if slide else (720, 300)
    n = len(series)
    left, right = int(70 * fs), int(172 * fs)  # room for a 24-character line name in bold
    top = (14 if slide else 64) + (18 * fs * n if n > 1 else 0) + 12
    height = int(top + plot_h + 44 * fs + (0 if slide else 12 + 15 * n))
    svg = Svg(width, height, title, fs)
    if not slide:
        svg.text(12, 24, title, size=16, weight="bold")
        svg.text(12, 44, f"{unit_of(series[0][1])} against the bytes one run moves (log scale); the copies "
                 "move as many, timed at each size", size=12, fill="#555555")
    pts = [p for _, d in series for p in d["sweep"]["points"]]
    lo = min(p["bytes"] for p in pts)
    hi = max(p["bytes"] for p in pts)
    top_rate = max(max(p["rate"], p.get("copy_kernel", 0), p.get("memcpy", 0)) for p in pts)
    tick = _nice_step(top_rate * 1.1)
    ymax = tick * math.ceil(top_rate * 1.08 / tick)
    plot_w = width - left - right
    span = max(math.log2(hi) - math.log2(lo), 1)

    def xof(b):
        return left + (math.log2(b) - math.log2(lo)) / span * plot_w

    def yof(v):
        return top + plot_h - v / ymax * plot_h
    _rate_grid(svg, left, plot_w, yof, ymax, tick)
    # Ticks at powers of 4 bytes (1 MiB, 4 MiB, ...) inside the measured
    # range: a lab whose sizes are not powers of two (lab 05's cubes) still
    # reads in whole MiB and GiB.
    b = 4 ** math.ceil(math.log(lo, 4) - 1e-9)
    while b <= hi * 1.0001:
        svg.line(xof(b), yof(0), xof(b), yof(0) + 4, stroke="#555555")
        svg.text(xof(b), yof(0) + 17 * fs, _bytes_words(b), size=10, anchor="middle", fill="#555555")
        b *= 4
    svg.line(left, yof(0), left + plot_w, yof(0), stroke="#555555")
    l2s = []
    for label, data in series:  # each GPU's L2, once a size
        l2 = data.get("l2_bytes") or 0
        if lo <= l2 <= hi and l2 not in [b for b, _ in l2s]:
            l2s.append((l2, label))
    for i, (l2, label) in enumerate(l2s):
        svg.line(xof(l2), top, xof(l2), yof(0), stroke="#555555", dash="5,4")
        svg.text(xof(l2) + 4, top + 12 + 14 * i, f"L2 {_bytes_words(l2)}" + (f" ({label})" if len(l2s) > 1 else ""),
                 size=11, fill="#555555")
    y = 18 if slide else 54
    labels = []
    for i, (label, data) in enumerate(series):
        colour = SERIES[i % len(SERIES)]
        sp = data["sweep"]["points"]
        lines = [(f"step {data['sweep']['step']} {data['sweep']['name']}", "rate", colour, None),
                 ("cudaMemcpy", "memcpy", "#555555" if n == 1 else colour, "7,4"),
                 ("copy kernel", "copy_kernel", COLOURS["ceiling"] if n == 1 else colour, "2,3")]
        for name, key, c, dash in lines:
            xy = [(xof(p["bytes"]), yof(p[key])) for p in sp if p.get(key) is not None]
            if not xy:
                continue
            svg.polyline(xy, c, width=2.5 if key == "rate" else 1.5, dash=dash)
            if key == "rate":
                for x, yy in xy:
                    svg.circle(x, yy, 3, c)
            labels.append((xy[-1][1], clip(name, 24), c, key == "rate"))
        if n > 1:
            svg.rect(12, y + 18 * fs * i, 12, 10, colour)
            svg.text(30, y + 9 + 18 * fs * i, label, size=11)
    placed = []  # the line ends' names, top to bottom, never on top of each other
    for yy, text, c, bold in sorted(labels):
        yy = max(yy, placed[-1] + 13 * fs) if placed else yy
        placed.append(yy)
        svg.text(left + plot_w + 8, yy + 4, text, size=11, fill=c, weight="bold" if bold else "normal")
    if not slide:
        _captions(svg, series, height)
    return svg.done()


# what each chart shows: the link's alt text on the page, the slide's title
CHART_ALT = {"rate": "each step's rate against the ceiling",
             "probe": "conflict degree against cost",
             "addresses": "d distinct addresses per warp against cost",
             "gflops": "GFLOP/s of each step against cuBLAS",
             "sweep": "the step's rate as its data grow, L2 marked"}


def charts_for(series, stem_title, slide=False):
    """{suffix: svg text} for one page's data (and any compared runs).

    slide=True: the same charts drawn for a slide (larger type, no title).
    """
    data = series[0][1]
    if "sweep" in data:
        return {"sweep": sweep_chart(series, f"{data['lab']}{stem_title}: step {data['sweep']['step']} "
                                     "as its data grow", slide)}
    out = {"rate": rate_chart(series, f"{data['lab']}{stem_title}: each step against the ceiling", slide)}
    if data["lab"].startswith("01_") and "patterns" in data.get("extra", {}):
        out["probe"] = probe_chart(series, f"{data['lab']}: conflict degree against cost", slide)
    if data["lab"].startswith("02_") and d_curves(data):
        out["addresses"] = addresses_chart(series, f"{data['lab']}{stem_title}: d addresses against cost", slide)
    if data["lab"].startswith("03_"):
        out["gflops"] = gflops_chart(series, f"{data['lab']}{stem_title}: {unit_of(data)} against cuBLAS", slide)
    return out


# ---------------------------------------------------------------- the results pages

def is_rate_page(path):
    """A runner's results page (rates against a ceiling), not an access or a --profile page."""
    if os.path.basename(path) == "access.md":
        return False
    with open(path, encoding="utf-8") as f:
        return "<!-- profile:begin -->" not in f.read(4096)


def pages(results=RESULTS):
    out = []
    for gpu in sorted(os.listdir(results)):
        d = os.path.join(results, gpu)
        if os.path.isdir(d):
            # every lab's runner page (a table of rates); not access.md (tools/gpu-verify access)
            # nor a --profile page (what limits a step): they hold no rates to chart
            out += [os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(".md") and is_rate_page(os.path.join(d, f))]
    return out


def page_outputs(md_path):
    """{path: text} for one page: its charts and the page with the links."""
    data = load_page(md_path)
    base = os.path.basename(md_path)[:-3]
    what = base[len(data["lab"]):].replace("_", " ").strip()
    charts = charts_for([(short_gpu(data.get("gpu")), data)], f" {what}" if what else "")
    out = {}
    links = []
    for suffix, svg in charts.items():
        name = f"{base}.{suffix}.svg"
        out[os.path.join(os.path.dirname(md_path), name)] = svg
        alt = CHART_ALT[suffix]
        links.append(f"![{base}: {alt}]({name})")
    with open(md_path, encoding="utf-8") as f:
        page = f.read()
    page = re.sub(re.escape(BEGIN) + r".*?" + re.escape(END) + r"\n?", "", page, flags=re.S).rstrip("\n")
    block = (f"{BEGIN} (made by slides/charts.py from {data['source'].split(' ')[0]}; "
             f"do not edit) -->\n" + "\n\n".join(links) + f"\n{END}\n")
    out[md_path] = page + "\n\n" + block
    return out


def all_outputs(results=RESULTS):
    out = {}
    for md in pages(results):
        out.update(page_outputs(md))
    return out


def write_all(results=RESULTS, check=False):
    stale = []
    for path, text in sorted(all_outputs(results).items()):
        old = None
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                old = f.read()
        if old == text:
            continue
        stale.append(os.path.relpath(path, ROOT))
        if not check:
            with open(path, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
    return stale


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("json", nargs="*", help="your runner's --json output(s)")
    ap.add_argument("--vs", action="append", default=[],
                    help="a published results JSON (or .md page) to draw beside yours")
    ap.add_argument("-o", "--out", default="charts-mine", help="folder for your charts")
    ap.add_argument("--check", action="store_true",
                    help="change nothing; exit 1 if a chart or a page's links are stale")
    a = ap.parse_args(argv)
    if not a.json:
        stale = write_all(check=a.check)
        for s in stale:
            print(("stale: " if a.check else "wrote: ") + s)
        if a.check and stale:
            print("charts: run `python3 slides/charts.py` (or `python3 slides/build.py`) and commit")
            return 1
        if not stale:
            print("charts: every results page's charts are up to date")
        return 0
    os.makedirs(a.out, exist_ok=True)
    for mine in a.json:
        data = read_json(mine)
        if data.get("emulated"):
            print(f"charts: {mine} is a CPU-path run (emulated): its times say nothing about a GPU's, "
                  "so no chart is drawn; run the same command on a GPU")
            continue
        series = [(f"yours ({short_gpu(data.get('gpu'))})", data)]
        refs = a.vs or _published_for(data)
        for ref in refs:
            r = load_page(ref) if ref.endswith(".md") else read_json(ref)
            if r["lab"] != data["lab"]:
                print(f"charts: {ref} is lab {r['lab']}, {mine} is {data['lab']}: not drawn beside it")
                continue
            if ("sweep" in r) != ("sweep" in data):
                print(f"charts: one of {ref} and {mine} is a --sweep run and the other is not: not drawn beside it")
                continue
            series.append((f"published ({short_gpu(r.get('gpu'))})", r))
        base = os.path.splitext(os.path.basename(mine))[0]
        for suffix, svg in charts_for(series, "").items():
            path = os.path.join(a.out, f"{base}.{suffix}.svg")
            with open(path, "w", encoding="utf-8", newline="\n") as f:
                f.write(svg)
            print("wrote", path)
    return 0


def _published_for(data):
    """The first published JSON of the same lab and kind (a --sweep run or not;
    docs/results/, GPU folders in name order)."""
    for md in pages():
        js = md[:-3] + ".json"
        if os.path.exists(js) and os.path.basename(md).startswith(data["lab"]):
            with open(js, encoding="utf-8") as f:
                if ("sweep" in json.load(f)) == ("sweep" in data):
                    return [js]
    return []


if __name__ == "__main__":
    sys.exit(main())
