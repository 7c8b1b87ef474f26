#!/usr/bin/env python3
"""Does an HTML report read well in a real browser? Headless Chromium says.

Opens the report at each width (default 1024 and 1366 px) and checks:

- the page never scrolls sideways (a wide table may scroll inside itself);
- no content is cut off: no element that hides its overflow has more content than room;
- every image loaded and has a size (inline SVG figures: a size);
- no number a person reads is in raw e-notation (``1.2e-06``), outside <pre>/<code>
  (figure text included: tick labels, offsets, values written on a plot);
- with every <details> open, no figure text is drawn smaller than ``MIN_FONT_PX`` (at 1024 px
  and wider; an inline SVG's from its font size and scale, a PNG's from the sizes
  ``figures.figure_html`` wrote on it and its scale), and no two texts of an inline SVG
  overlap as drawn (a PNG's overlaps as matplotlib laid them out).

Prints a table of the findings per width and exits 1 on any problem, 2 when it cannot
check (no report; Chromium not found: "skipped: ..." on stderr, or failing). With ``--screenshots DIR`` writes one PNG per report
section at the widest width (``DIR/<section id>.png``).

    .venv/bin/python scripts/report_browser_check.py report.html [--widths 1024,1366]
        [--screenshots docs/screenshots] [--chromium /usr/bin/chromium]
    .venv/bin/python scripts/report_browser_check.py --build DIR [--screenshots ...]

``--build DIR`` first makes small real runs in DIR/runs (2 ranks: ping-pong, HighVolume
ping-pong, threads, multirate, an FTQ bulk-synchronous run, partitioned sends,
multithreaded matching; 4 ranks: a traced profile of tests/programs/ring_imbalance.c
with call sites, whose ranks wait in MPI for different times; about 30 s) and their
report DIR/report.html, then checks it:
how docs/screenshots/ were made, and what tests/test_report_browser.py runs.

Chromium is driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``):
no package beyond the standard library.
"""

import argparse
import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: Where the page's measurements are made: one JS function returning JSON-able findings.
MEASURE_JS = r"""
(() => {
  const E = /(^|[^\w.])[-\u2212]?\d+(\.\d+)?[eE][-+\u2212]?\d+(?![\d.])/;  // 1.2e+02x too
  const W = window.innerWidth, doc = document.documentElement;
  const found = {page_width: doc.scrollWidth, viewport: W, sideways: [], scrolling: [], cut: [], images: [],
                 enotation: [], figures: 0};
  const held = (el) => {  // inside something that scrolls or clips sideways
    for (; el && el !== document.body; el = el.parentElement)
      if (getComputedStyle(el).overflowX !== 'visible') return true;
    return false;
  };
  const name = (el) => {
    let s = el.tagName.toLowerCase();
    if (el.id) s += '#' + el.id;
    const sec = el.closest('section');
    if (sec && sec !== el) s = sec.id + ' > ' + s;
    const label = el.getAttribute('aria-label') || el.getAttribute('alt');
    if (label) s += ' [' + label.slice(0, 60) + ']';
    return s;
  };
  for (const el of document.body.querySelectorAll('*')) {
    const st = getComputedStyle(el);
    if (st.display === 'none' || el.closest('svg') && el.tagName.toLowerCase() !== 'svg') continue;
    const r = el.getBoundingClientRect();
    const open = !el.closest('details:not([open])');
    const scrolls = ['auto', 'scroll'].includes(st.overflowX) || ['auto', 'scroll'].includes(st.overflowY);
    // beyond the window and not held by a parent that scrolls or clips: the page scrolls
    if (open && r.width > 0 && r.right > W + 1 && !held(el.parentElement))
      found.sideways.push(name(el) + ' right edge at ' + Math.round(r.right) + ' px');
    if (open && scrolls && el.scrollWidth > el.clientWidth + 1 && el.tagName.toLowerCase() !== 'pre')
      found.scrolling.push(name(el) + ' scrolls: ' + el.clientWidth + ' of ' + el.scrollWidth + ' px shown');
    const hides = ['hidden', 'clip'].includes(st.overflowX) || ['hidden', 'clip'].includes(st.overflowY)
                  || st.textOverflow === 'ellipsis';
    if (hides && !scrolls && (el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1))
      found.cut.push(name(el) + ' shows ' + el.clientWidth + 'x' + el.clientHeight + ' of ' +
                     el.scrollWidth + 'x' + el.scrollHeight);
  }
  for (const img of document.images) {
    if (!img.complete || !img.naturalWidth || !img.naturalHeight)
      found.images.push(name(img) + ' not loaded');
    else if (img.closest('details:not([open])') === null && img.getBoundingClientRect().width === 0)
      found.images.push(name(img) + ' drawn 0 px wide');
  }
  for (const svg of document.querySelectorAll('figure.fig > svg')) {
    found.figures++;
    const r = svg.getBoundingClientRect();
    if (!svg.closest('details:not([open])') && (r.width < 1 || r.height < 1))
      found.images.push(name(svg.parentElement) + ' drawn ' + Math.round(r.width) + 'x' + Math.round(r.height));
  }
  found.figures += document.images.length;
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const p = n.parentElement;
    if (!p || p.closest('pre, code, script, style')) continue;
    const m = n.nodeValue.match(E);
    if (m) {
      const at = Math.max(0, m.index - 30), text = n.nodeValue.replace(/\s+/g, ' ');
      found.enotation.push(name(p) + ': "' + (at ? '...' : '') + text.slice(at, m.index + m[0].length + 20).trim() + '"');
    }
  }
  found.sections = [...document.querySelectorAll('body > section, main > section')].map((s) => {
    const r = s.getBoundingClientRect();
    return {id: s.id, x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height};
  });
  return found;
})()
"""


#: No figure text is drawn smaller than this many CSS pixels (at 1024 px and wider).
MIN_FONT_PX = 9.0

#: Figure text as drawn, with every <details> open: the smallest font of each figure and
#: the pairs of an inline SVG's texts whose boxes overlap.
FIGURES_JS = (
    r"""
(() => {
  document.querySelectorAll('details').forEach((d) => { d.open = true; });
  const out = {small: [], overlaps: [], height: document.documentElement.scrollHeight};
  const where = (el) => { const s = el.closest('section'); return (s ? s.id : '') + ' [' +
    (el.getAttribute('aria-label') || el.getAttribute('alt') || '').slice(0, 50) + ']'; };
  for (const svg of document.querySelectorAll('figure.fig > svg')) {
    const r = svg.getBoundingClientRect(), vb = svg.viewBox.baseVal;
    if (!r.width || !vb || !vb.width) continue;
    const scale = r.width / vb.width;  // CSS px per user unit (a point of matplotlib's)
    const boxes = [];
    for (const t of svg.querySelectorAll('text')) {
      const text = t.textContent.trim();
      if (!text) continue;
      const pt = parseFloat(getComputedStyle(t).fontSize) || 0;
      if (pt * scale < """
    + str(MIN_FONT_PX)
    + r""")
        out.small.push(where(svg.parentElement) + ': "' + text.slice(0, 30) + '" at ' +
                       (pt * scale).toFixed(1) + ' px');
      const b = t.getBoundingClientRect();
      if (b.width > 1 && b.height > 1) boxes.push([text, b]);
    }
    for (let i = 0; i < boxes.length; i++)
      for (let j = i + 1; j < boxes.length; j++) {
        const [ta, a] = boxes[i], [tb, b] = boxes[j];
        const same = ta === tb && Math.abs(a.x - b.x) < 1.5 && Math.abs(a.y - b.y) < 1.5;
        if (!same && a.left + 1 < b.right - 1 && b.left + 1 < a.right - 1 &&
            a.top + 1 < b.bottom - 1 && b.top + 1 < a.bottom - 1)
          out.overlaps.push(where(svg.parentElement) + ': "' + ta.slice(0, 30) + '" and "' +
                            tb.slice(0, 30) + '"');
      }
  }
  for (const img of document.querySelectorAll('img[data-texts]')) {
    const r = img.getBoundingClientRect();
    if (!r.width || !img.naturalWidth) continue;
    const dpi = parseFloat(img.dataset.dpi || '110');
    const scale = r.width / img.naturalWidth * dpi / 72;  // CSS px per point
    for (const t of JSON.parse(img.dataset.texts)) {
      if (t.pt * scale < """
    + str(MIN_FONT_PX)
    + r""")
        out.small.push(where(img) + ': "' + t.text.slice(0, 30) + '" at ' +
                       (t.pt * scale).toFixed(1) + ' px');
    }
    for (const pair of JSON.parse(img.dataset.overlaps || '[]'))
      out.overlaps.push(where(img) + ': "' + pair[0] + '" and "' + pair[1] + '"');
  }
  return out;
})()
"""
)


class Chromium:
    """A headless Chromium driven over the DevTools protocol on a pipe (fds 3 and 4)."""

    def __init__(self, binary, timeout=60.0):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="cs-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        # above 4 before the child moves them to 3 and 4 (neither overwrites the other)
        for fd in (to_child_r, from_child_w):
            high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
            os.close(fd)
            if fd == to_child_r:
                to_child_r = high
            else:
                from_child_w = high

        def fds():  # the browser reads commands on fd 3 and writes answers on fd 4
            os.dup2(to_child_r, 3)
            os.dup2(from_child_w, 4)

        args = [
            binary,
            "--headless=new",
            "--remote-debugging-pipe",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--hide-scrollbars",
            "--mute-audio",
            "--disable-extensions",
            "--disable-background-networking",
            f"--user-data-dir={self.profile}",
            "about:blank",
        ]
        self.proc = subprocess.Popen(
            args,
            preexec_fn=fds,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            close_fds=True,
            pass_fds=(3, 4),
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf, self._id, self.events = b"", 0, []
        self.session = None

    def send(self, method, params=None, session=True):
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error'].get('message')}")
                return reply.get("result", {})
            self.events.append(reply)

    def _read(self):
        deadline = time.monotonic() + self.timeout
        while b"\0" not in self._buf:
            if time.monotonic() > deadline:
                raise TimeoutError("Chromium did not answer")
            ready, _, _ = select.select([self._from_child], [], [], 1.0)
            if ready:
                chunk = os.read(self._from_child, 1 << 20)
                if not chunk:
                    err = self.proc.stderr.read().decode(errors="replace")[-500:]
                    raise RuntimeError(f"Chromium exited: {err.strip()}")
                self._buf += chunk
        msg, _, self._buf = self._buf.partition(b"\0")
        return json.loads(msg)

    def wait_event(self, method):
        deadline = time.monotonic() + self.timeout
        while True:
            for i, ev in enumerate(self.events):
                if ev.get("method") == method:
                    return self.events.pop(i)
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {method}")
            self.events.append(self._read())

    def open(self, url, width, height=900):
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)
        self.session = self.send(
            "Target.attachToTarget",
            {"targetId": target["targetId"], "flatten": True},
            session=False,
        )["sessionId"]
        self.send("Page.enable")
        self.resize(width, height)
        self.events.clear()
        sent = self.send("Page.navigate", {"url": url})
        if sent.get("errorText"):  # else Chromium's own error page would be checked
            raise RuntimeError(f"cannot open {url}: {sent['errorText']}")
        self.wait_event("Page.loadEventFired")

    def resize(self, width, height):
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )

    def evaluate(self, expression):
        res = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in res:
            raise RuntimeError(res["exceptionDetails"].get("text", "script failed"))
        return res["result"].get("value")

    def screenshot(self, clip):
        data = self.send(
            "Page.captureScreenshot",
            {"format": "png", "clip": {**clip, "scale": 1}, "captureBeyondViewport": True},
        )["data"]
        return base64.b64decode(data)

    def close(self):
        try:
            self.send("Browser.close", session=False)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_child, self._from_child):
            os.close(fd)
        shutil.rmtree(self.profile, ignore_errors=True)


class NoBrowser(Exception):
    """No Chromium here: the check cannot run (a skip, not a failure)."""


def small_png(data):
    """The screenshot in 256 colours (a report page has few): a third of the bytes."""
    import io

    from PIL import Image  # matplotlib's dependency: always there with commscope

    image = Image.open(io.BytesIO(data)).convert("RGB").quantize(256, dither=Image.Dither.NONE)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def find_chromium(given=None):
    """The Chromium binary to use (``given``, else the first on PATH), or None."""
    for name in (
        [given]
        if given
        else ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"]
    ):
        path = shutil.which(name) if name else None
        if path:
            return path
    return None


def check(report, widths=(1024, 1366), chromium=None, screenshots=None, timeout=60.0):
    """``{width: findings}`` for the report (findings: see MEASURE_JS); with ``screenshots``
    one PNG per section at the widest width is written there."""
    binary = find_chromium(chromium)
    if binary is None:
        raise NoBrowser("no chromium found (Debian: apt-get install chromium)")
    if not Path(report).is_file():
        raise FileNotFoundError(f"{report}: no such report")
    url = Path(report).resolve().as_uri()
    browser = Chromium(binary, timeout)
    results = {}
    try:
        for width in widths:
            browser.open(url, width)
            results[width] = browser.evaluate(MEASURE_JS)
            results[width]["page_height"] = browser.evaluate(
                "document.documentElement.scrollHeight"
            )
            results[width]["drawn"] = browser.evaluate(FIGURES_JS)
        if screenshots:
            out = Path(screenshots)
            out.mkdir(parents=True, exist_ok=True)
            width = max(widths)
            browser.open(url, width)
            # every <details> open: a screenshot shows what the section holds
            browser.evaluate(
                "document.querySelectorAll('section details').forEach(d => d.open = true)"
            )
            sections = browser.evaluate(MEASURE_JS)["sections"]
            for s in sections:
                if s["id"] == "runs" or s["height"] < 1:
                    continue
                # a little margin around the section, the heading included
                clip = {
                    "x": 0,
                    "y": max(0, s["y"] - 8),
                    "width": width,
                    "height": min(s["height"] + 16, 12000),
                }
                (out / f"{s['id']}.png").write_bytes(small_png(browser.screenshot(clip)))
    finally:
        browser.close()
    return results


ROOT = Path(__file__).resolve().parents[1]


def build_report(workdir):
    """Small real runs of most report sections in ``workdir``/runs, and their report."""
    from commscope import mpi
    from commscope.cli import main as commscope

    workdir = Path(workdir)
    runs = workdir / "runs"
    small = ["-i", "20", "-x", "2", "-I", "5", "-X", "1"]
    benches = {
        "pingpong": ["pingpong", "-m", "1:64K", *small],
        "hvpingpong": [
            "hvpingpong",
            "--messages",
            "1:1000",
            "--per-decade",
            "2",
            "-i",
            "3",
            "-x",
            "1",
        ],
        "threads": [
            "threads",
            "--ranks",
            "2",
            "--threads",
            "2",
            "--iterations",
            "20",
            "--trials",
            "1",
            "--compute",
            "0.002",
            "--compute-mode",
            "sleep",
            "--laggard-prob",
            "0.3",
            "--laggard-extra",
            "0.005",
            "--seed",
            "1",
        ],
        "multirate": [
            "multirate",
            "--threads",
            "1,2",
            "--window",
            "32",
            "-i",
            "10",
            "-x",
            "1",
            "--reps",
            "3",
        ],
        "bsp": ["bsp", "-w", "ftq", "-n", "2", "-k", "20", "--compute", "0.002", "--seed", "1"],
        "partitioned": [
            "partitioned",
            "--threads",
            "2",
            "--compute",
            "0.004",
            "--variability",
            "0.4",
            "--sizes",
            "64K,1M",
            "--runs-per-size",
            "3",
            "--seed",
            "5",
        ],
        "mtmatch": ["mtmatch", "--points", "9", "--decomp", "2x2", "-t", "3", "-x", "1"],
    }
    for name, argv in benches.items():
        if not (runs / name).exists():
            if commscope(["bench", *argv, "--runs", str(runs), "--name", name, "--quiet"]) != 0:
                raise RuntimeError(f"bench {name} failed")
    if not (runs / "ring").exists():
        lib = mpi.select_mpi()
        mpi.build(lib)
        exe = workdir / "ring_imbalance"
        subprocess.run(
            [
                lib.mpicc,
                "-O2",
                "-g",
                str(ROOT / "tests" / "programs" / "ring_imbalance.c"),
                "-o",
                str(exe),
            ],
            check=True,
        )
        if (
            commscope(
                [
                    "profile",
                    "-n",
                    "4",
                    "--trace",
                    "--callsites",
                    "--runs",
                    str(runs),
                    "--name",
                    "ring",
                    "--quiet",
                    "--",
                    str(exe),
                    "20",
                    "2000",
                ]
            )
            != 0
        ):
            raise RuntimeError("profile of ring_imbalance failed")
    report = workdir / "report.html"
    if commscope(["report", str(runs), "-o", str(report), "--overwrite"]) != 0:
        raise RuntimeError("commscope report failed")
    return report


def problems(found):
    """The problems of one width's findings, as (kind, detail) pairs."""
    out = []
    if found["page_width"] > found["viewport"]:
        out.append(
            (
                "sideways scroll",
                f"page {found['page_width']} px wide in a {found['viewport']} px window",
            )
        )
    out += [("sideways scroll", d) for d in found["sideways"]]
    out += [("cut off", d) for d in found["cut"]]
    out += [("figure", d) for d in found["images"]]
    out += [("e-notation", d) for d in found["enotation"]]
    drawn = found.get("drawn") or {}
    if found["viewport"] >= 1024:  # narrower windows shrink figures below any minimum
        out += [("small font", d) for d in drawn.get("small", [])]
    out += [("overlapping text", d) for d in drawn.get("overlaps", [])]
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("report", nargs="?", help="the HTML report (commscope report -o)")
    ap.add_argument(
        "--build",
        metavar="DIR",
        help="first make small real runs and their "
        "report in DIR (DIR/report.html), then check that",
    )
    ap.add_argument("--widths", default="1024,1366", help="window widths, px (default 1024,1366)")
    ap.add_argument("--screenshots", metavar="DIR", help="write one PNG per section here")
    ap.add_argument("--chromium", help="the Chromium binary (default: chromium on PATH)")
    ap.add_argument("--json", action="store_true", help="print the findings as JSON")
    args = ap.parse_args(argv)
    widths = [int(w) for w in args.widths.split(",") if w.strip()]
    if bool(args.report) == bool(args.build):
        ap.error("give a report or --build DIR")
    if args.build:
        Path(args.build).mkdir(parents=True, exist_ok=True)
        args.report = build_report(args.build)
    try:
        results = check(args.report, widths, args.chromium, args.screenshots)
    except NoBrowser as exc:
        print(f"skipped: {exc}", file=sys.stderr)
        return 2
    except (RuntimeError, TimeoutError, OSError) as exc:
        print(f"report_browser_check: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        json.dump({str(w): f for w, f in results.items()}, sys.stdout, indent=2)
        print()
    bad = 0
    print(
        f"{'width':>6}  {'sideways':>8}  {'cut off':>7}  {'figures':>7}  {'bad figs':>8}  "
        f"{'e-notation':>10}  {'small fonts':>11}  {'overlaps':>8}  {'height px':>9}  "
        f"{'tables scrolling inside':>23}"
    )
    for width, found in results.items():
        kinds = [k for k, _ in problems(found)]
        print(
            f"{width:>6}  {kinds.count('sideways scroll'):>8}  {kinds.count('cut off'):>7}  "
            f"{found['figures']:>7}  {kinds.count('figure'):>8}  {kinds.count('e-notation'):>10}  "
            f"{kinds.count('small font'):>11}  {kinds.count('overlapping text'):>8}  "
            f"{found.get('page_height', 0):>9}  {len(found['scrolling']):>23}"
        )
    for width, found in results.items():
        for detail in found["scrolling"]:  # allowed: the page stays put, the table scrolls
            print(f"{width} px: note: {detail}")
        for kind, detail in problems(found):
            bad += 1
            print(f"{width} px: {kind}: {detail}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
