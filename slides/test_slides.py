#!/usr/bin/env python3
"""The slides' and charts' tests (CTest, label host; slides/CMakeLists.txt).

    python3 slides/test_slides.py builds DECK        # PDF made, one page per slide (nothing overflows)
    python3 slides/test_slides.py titles DECK        # step slides match the lab's manifest
    python3 slides/test_slides.py renders DECK       # every page renders to a non-blank PNG
    python3 slides/test_slides.py reproducible DECK  # two builds, in two processes, same bytes
    python3 slides/test_slides.py charts             # charts and page links are made from the JSON
    python3 slides/test_slides.py decks_for_labs     # every lab has a deck (skips, naming those without)

DECK is a file name in slides/decks/ without .typ. Exit status 0 pass, 1
fail, 77 skipped (no typst package, or nothing to test), with the reason.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import build  # noqa: E402
import charts  # noqa: E402

SKIP = build.SKIP


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def deck_path(name):
    path = os.path.join(build.DECKS, name + ".typ")
    if not os.path.exists(path):
        fail(f"no deck slides/decks/{name}.typ")
    if build.lab_missing(path):
        print(f"SKIPPED: the deck {name} is about labs/{name}, which this edition of the kit does not have")
        sys.exit(SKIP)
    return path


def slides_of(typst, deck):
    return build.query(typst, deck, "<slide>")


def pages_of(typst, deck, ppi=20):
    pages = build.compile_deck(typst, deck, fmt="png", ppi=ppi)
    return pages if isinstance(pages, list) else [pages]


# ---------------------------------------------------------------- PNG decoding (stdlib)

def png_pixels(data):
    """(width, height, channels, rows of bytes) of an 8-bit RGB(A)/grey PNG."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype = ihdr[0], ihdr[1], ihdr[2], ihdr[3]
    if depth != 8 or ctype not in (0, 2, 4, 6):
        raise ValueError(f"PNG colour type {ctype} depth {depth} not handled")
    ch = {0: 1, 2: 3, 4: 2, 6: 4}[ctype]
    raw = zlib.decompress(idat)
    stride = w * ch
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - ch] if i >= ch else 0
            b = prev[i]
            c = prev[i - ch] if i >= ch else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, ch, rows


def ink(data, top=0.0, bottom=0.88):
    """Share of pixels, between top and bottom (fractions of the height), that are not background."""
    w, h, ch, rows = png_pixels(data)
    bg = rows[0][:ch]
    inked = total = 0
    for y in range(int(h * top), int(h * bottom)):
        r = rows[y]
        for x in range(0, w * ch, ch):
            total += 1
            if r[x:x + ch] != bg:
                inked += 1
    return inked / max(total, 1)


# ---------------------------------------------------------------- the tests

def plain(content):
    """The text of a slide title as typst's query gives it (a string or content as a dict)."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        if content.get("func") == "space":
            return " "
        if "text" in content and isinstance(content["text"], str):
            return content["text"]
        return "".join(plain(c) for c in content.get("children", []) + [content.get("body", "")])
    return ""


def t_builds(typst, name):
    deck = deck_path(name)
    pdf = build.compile_deck(typst, deck)
    if not pdf.startswith(b"%PDF-"):
        fail(f"{name}: the output is not a PDF")
    slides = slides_of(typst, deck)
    over = build.query(typst, deck, "<overflow>")
    if over:
        fail(f"{name}: does not fit its slide: " + "; ".join(str(o.get("overflow")) for o in over))
    ends = build.query(typst, deck, "<slide-end>")
    runs = [e for e in ends if e["last"] != e["first"]]
    if runs:
        fail(f"{name}: " + "; ".join(
            f"the slide on page {e['first']} ('{plain(e['title'])}') "
            f"runs on to page {e['last']}" for e in runs) +
             " (render with `python3 slides/build.py --png DIR` and look)")
    pages = pages_of(typst, deck, ppi=10)
    if len(pages) != len(slides):
        fail(f"{name}: {len(pages)} pages for {len(slides)} slides: a slide's content overflows "
             "onto a page of its own (render with `python3 slides/build.py --png DIR` and look)")
    print(f"ok: {name}: a PDF of {len(pdf)} bytes, {len(slides)} slides, one page each")


def t_titles(typst, name):
    deck = deck_path(name)
    slides = slides_of(typst, deck)
    titles = [s.get("title") for s in slides]
    if not slides or any(not t for t in titles):
        fail(f"{name}: a slide without a title")
    ms = build.manifests()
    if name not in ms:
        labs = [s for s in slides if s.get("kind") == "step"]
        if labs:
            fail(f"{name}: step slides in a deck that is not a lab's")
        print(f"ok: {name}: {len(slides)} slides, each with a title (not a lab deck: no steps to match)")
        return
    steps = ms[name]["steps"]
    got = [s for s in slides if s.get("kind") == "step"]
    nums = [s["num"] for s in got]
    want = [s["num"] for s in steps]
    if sorted(set(nums)) != want:
        fail(f"{name}: step slides for steps {sorted(set(nums))}, the manifest has {want}")
    if nums != sorted(nums):
        fail(f"{name}: step slides out of order: {nums}")
    for s in steps:
        mine = [g for g in got if g["num"] == s["num"]]
        if len(mine) > 2:
            fail(f"{name}: step {s['num']} has {len(mine)} slides (one or two per step)")
        for g in mine:
            if g["step_title"] != s["title"] or g["ident"] != s["ident"]:
                fail(f"{name}: step {s['num']} slide says '{g['ident']}: {g['step_title']}', "
                     f"the manifest '{s['ident']}: {s['title']}'")
    results = [s for s in slides if s.get("kind") == "results"]
    if not results:
        fail(f"{name}: no results slide (a lab without a GPU page says so on one)")
    print(f"ok: {name}: {len(want)} steps in {len(got)} slides, titles as in labs/{name}/lab.json; "
          f"{len(results)} results slides")


def t_renders(typst, name):
    deck = deck_path(name)
    pages = pages_of(typst, deck, ppi=24)
    blank = []
    for i, png in enumerate(pages, 1):
        if ink(png) < 0.004:
            blank.append(i)
    if blank:
        fail(f"{name}: pages {blank} are blank (no ink above the footer)")
    print(f"ok: {name}: {len(pages)} pages rendered, none blank")


def t_reproducible(typst, name):
    deck_path(name)
    outs = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(2):
            d = os.path.join(tmp, str(k))
            r = subprocess.run([sys.executable, os.path.join(HERE, "build.py"), "--no-charts",
                                "--out", d, name], capture_output=True, text=True)
            if r.returncode != 0:
                fail(f"{name}: build {k + 1} failed:\n{r.stdout}{r.stderr}")
            with open(os.path.join(d, name + ".pdf"), "rb") as f:
                outs.append(f.read())
    if outs[0] != outs[1]:
        fail(f"{name}: two builds differ ({len(outs[0])} and {len(outs[1])} bytes)")
    print(f"ok: {name}: two builds in two processes, {len(outs[0])} identical bytes")


def t_charts():
    stale = charts.write_all(check=True)
    if stale:
        fail("charts or their links differ from what the results JSON makes: " + ", ".join(stale) +
             "\n  run `python3 slides/charts.py` and commit")
    with tempfile.TemporaryDirectory() as tmp:  # only runners' rate pages are charted
        os.makedirs(os.path.join(tmp, "gpu"))
        for name, text in (("access.md", "# Memory access on X: the CPU path against Nsight Compute\n"),
                           ("05_stencil_profile.md", "# 05_stencil on X\n\nWhat limits step 6.\n\n<!-- profile:begin -->\n"),
                           ("05_stencil.md", "# 05_stencil on X\n")):
            with open(os.path.join(tmp, "gpu", name), "w", encoding="utf-8") as f:
                f.write(text)
        got = [os.path.basename(p) for p in charts.pages(tmp)]
        if got != ["05_stencil.md"]:
            fail(f"charts.pages() should list the runner's page only, not access.md or a --profile page: {got}")
    pages = charts.pages()
    if not pages:
        print("SKIPPED: no results page in docs/results/")
        sys.exit(SKIP)
    for md in pages:
        with open(md, encoding="utf-8") as f:
            text = f.read()
        base = os.path.basename(md)[:-3]
        data = charts.load_page(md)
        if "sweep" in data:
            if f"]({base}.sweep.svg)" not in text:
                fail(f"{md}: a --sweep page without a link to its sweep chart")
            continue
        if f"]({base}.rate.svg)" not in text:
            fail(f"{md}: no link to its rate chart")
        want = {"02_": "addresses", "03_": "gflops"}.get(data["lab"][:3])
        if want == "addresses" and not any(r.get("kind") == "step" and 2 <= r.get("step", 0) <= 4 for r in data["rows"]):
            want = None   # a page of the convolution's steps alone (e.g. the odd size's): no walk, no d curve
        if want and f"]({base}.{want}.svg)" not in text:
            fail(f"{md}: no link to its {want} chart (lab {data['lab']})")
        if want == "addresses" and not charts.d_curves(data):
            fail(f"{md}: lab 02's page without the d-addresses curve (JSON extra.curve or the page's d table)")
    # a chart follows its JSON: change one rate in a copy, the chart changes with it
    with tempfile.TemporaryDirectory() as tmp:
        gpu = os.path.join(tmp, "gpu")
        os.makedirs(gpu)
        src = next((p for p in pages if os.path.exists(p[:-3] + ".json") and "sweep" not in charts.load_page(p)),
                   None)
        if src is None:
            fail("no results page with a JSON to test against")
        base = os.path.basename(src)[:-3]
        for ext in (".md", ".json"):
            shutil.copy(src[:-3] + ext, os.path.join(gpu, base + ext))
        before = charts.all_outputs(tmp)
        with open(os.path.join(gpu, base + ".json"), encoding="utf-8") as f:
            data = json.load(f)
        step = next(r for r in data["rows"] if r["kind"] == "step")
        step["rate"] = round(data["ceiling"]["rate"] * 0.4321, 3)
        with open(os.path.join(gpu, base + ".json"), "w", encoding="utf-8") as f:
            json.dump(data, f)
        after = charts.all_outputs(tmp)
        svg = os.path.join(gpu, base + ".rate.svg")
        if before[svg] == after[svg] or "43%" not in after[svg]:
            fail(f"{base}: the rate chart does not follow the JSON (a step set to 43% of the ceiling)")
        # a learner's run beside the published one, the documented command
        out = os.path.join(tmp, "mine")
        r = subprocess.run([sys.executable, os.path.join(HERE, "charts.py"),
                            os.path.join(gpu, base + ".json"), "--vs", src[:-3] + ".json", "-o", out],
                           capture_output=True, text=True)
        if r.returncode != 0 or not os.path.exists(os.path.join(out, base + ".rate.svg")):
            fail(f"charts.py on a learner's JSON failed:\n{r.stdout}{r.stderr}")
        with open(os.path.join(out, base + ".rate.svg"), encoding="utf-8") as f:
            mine = f.read()
        if "yours" not in mine or "published" not in mine:
            fail("a learner's chart does not show both runs")
    t_sweep_chart()
    print(f"ok: {len(pages)} results pages, their charts made from the JSON and linked; "
          "a changed JSON changes its chart; a learner's run is drawn beside the published one; "
          "a --sweep run's chart follows its points and marks L2")


def sweep_run(rates, l2=60 << 20):
    """A --sweep run's JSON as the runner library writes it (common/src/lab_sweep.c)."""
    points = [{"bytes": (1 << 20) << k, "size": f"n = {(1 << 18) << k} int", "median_ms": 0.01,
               "rate": r, "copy_kernel": 3700.0, "memcpy": 3900.0} for k, r in enumerate(rates)]
    return {"lab": "04_reduction", "title": "t", "date": "2026-11-29", "gpu": "NVIDIA Test GPU",
            "compute_capability": "9.0", "sm_count": 132, "l2_bytes": l2, "emulated": False, "seed": 1,
            "unit": "GB/s", "sweep": {"step": 8, "name": "shuffle_vec4", "runs": 50, "points": points},
            "source": "sweep.json"}


def t_sweep_chart():
    rates = [1000.0 + 250 * k for k in range(13)]
    svg = charts.charts_for([("T", sweep_run(rates))], "")
    if list(svg) != ["sweep"]:
        fail(f"a --sweep run gives the charts {list(svg)}, expected the sweep chart alone")
    text = svg["sweep"]
    if "L2 60 MiB" not in text or "1 MiB" not in text or "4 GiB" not in text:
        fail("the sweep chart does not mark L2 (60 MiB) or lacks the 1 MiB .. 4 GiB axis")
    moved = list(rates)
    moved[5] = 4321.0
    if charts.charts_for([("T", sweep_run(moved))], "")["sweep"] == text:
        fail("the sweep chart does not follow its points (one rate changed, same SVG)")
    with tempfile.TemporaryDirectory() as tmp:
        mine = os.path.join(tmp, "mine.json")
        with open(mine, "w", encoding="utf-8") as f:
            json.dump(sweep_run(rates), f)
        r = subprocess.run([sys.executable, os.path.join(HERE, "charts.py"), mine, "-o", tmp],
                           capture_output=True, text=True)
        if r.returncode != 0 or not os.path.exists(os.path.join(tmp, "mine.sweep.svg")):
            fail(f"charts.py on a learner's --sweep JSON failed:\n{r.stdout}{r.stderr}")
        # a deck takes a --sweep page as a sweep (its own slide), never as a results page with rows
        gpu = os.path.join(tmp, "results", "test-gpu")
        os.makedirs(gpu)
        with open(os.path.join(gpu, "04_reduction_sweep.json"), "w", encoding="utf-8") as f:
            json.dump({k: v for k, v in sweep_run(rates).items() if k != "source"}, f)
        with open(os.path.join(gpu, "04_reduction_sweep.md"), "w", encoding="utf-8") as f:
            f.write("# 04_reduction on NVIDIA Test GPU: step 8 (shuffle_vec4) as its data grow\n")
        m = {"results": [{"page": "_sweep", "args": "--sweep", "handout": False, "json": True, "what": "sweep"}]}
        saved, charts.RESULTS = charts.RESULTS, os.path.join(tmp, "results")
        try:
            pages, sweeps = build.lab_results("04_reduction", m), build.lab_sweeps("04_reduction", m)
        finally:
            charts.RESULTS = saved
        if pages or len(sweeps) != 1 or "sweep" not in sweeps[0]["slide_charts"]:
            fail(f"a --sweep page read as {len(pages)} results page(s) and {len(sweeps)} sweep(s)")


def t_decks_for_labs():
    missing = build.labs_without_deck()
    if missing:
        print("SKIPPED: no deck yet for " + ", ".join(missing) +
              ": add slides/decks/<lab>.typ (slides/README.md says how)")
        sys.exit(SKIP)
    print("ok: every lab has a deck")


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    what, rest = argv[0], argv[1:]
    if what == "charts":
        t_charts()
        return 0
    if what == "decks_for_labs":
        t_decks_for_labs()
        return 0
    typst = build.need_typst()
    fn = {"builds": t_builds, "titles": t_titles, "renders": t_renders,
          "reproducible": t_reproducible}.get(what)
    if fn is None or len(rest) != 1:
        print(__doc__)
        return 2
    fn(typst, rest[0])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
