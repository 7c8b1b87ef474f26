#!/usr/bin/env python3
"""Full-page screenshots of a study report and a profile report, to look at by eye.

``make screenshots`` runs this: the study report and the report of the study's profile
run, each at 1366 and 1920 px wide, as a person sees them (every <details> closed), into
docs/screenshots/: ``study-1366.png`` (the whole page), ``study-1366-first-screen.png``
(the first 1366 x 768 px, what opens), and the same for ``profile`` and 1920. Prints each
page's height in px and in screens.

The study: ``--study DIR`` (a folder ``commscope study`` wrote), else the newest under
studies/ with a profile run, else a new ``commscope study --quick`` into
build/screenshots/study (about two minutes on 2 cores). Its runs are rendered again with
this checkout (``commscope report``), so the pictures show the current report.

    .venv/bin/python scripts/report_screenshots.py [--study DIR] [--out docs/screenshots]
        [--widths 1366,1920] [--screen-height 768] [--reports A.html,B.html]
"""

import argparse
import importlib.util
import io
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Chromium cannot capture a page taller than this in one piece: taller ones are tiled.
TILE = 8000


def _checker():
    spec = importlib.util.spec_from_file_location(
        "report_browser_check", ROOT / "scripts" / "report_browser_check.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def find_study(given=None):
    """A study folder with runs and a profile run: ``given``, the newest under studies/,
    else a new quick study in build/screenshots/study."""
    if given:
        return Path(given)
    done = sorted(
        (p.parent for p in (ROOT / "studies").glob("*/runs") if any(p.glob("profile*/meta.json"))),
        key=lambda p: p.name,
    )
    if done:
        return done[-1]
    out = ROOT / "build" / "screenshots" / "study"
    if not (out / "runs").is_dir():
        print(
            f"report_screenshots: no study under studies/: running commscope study --quick "
            f"-o {out}",
            file=sys.stderr,
        )
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "commscope.cli", "study", "--quick", "-o", str(out)], check=True
        )
    return out


def render(study, workdir):
    """The study's report and its profile run's report, rendered by this checkout."""
    workdir.mkdir(parents=True, exist_ok=True)
    reports = {}
    model = study / "machine-model.json"
    argv = [str(study / "runs"), "-o", str(workdir / "study.html"), "--overwrite"]
    if model.is_file():
        argv += ["--machine-model", str(model)]
    subprocess.run([sys.executable, "-m", "commscope.cli", "report", *argv], check=True)
    reports["study"] = workdir / "study.html"
    profile = sorted((study / "runs").glob("profile*"))
    if profile:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "commscope.cli",
                "report",
                str(profile[0]),
                "-o",
                str(workdir / "profile.html"),
                "--overwrite",
            ],
            check=True,
        )
        reports["profile"] = workdir / "profile.html"
    return reports


def full_page(browser, check, width, screen_height):
    """(whole page PNG, first screen PNG, page height px) of the page open in ``browser``."""
    from PIL import Image

    height = int(browser.evaluate("document.documentElement.scrollHeight"))
    tiles = []
    for y in range(0, height, TILE):
        clip = {"x": 0, "y": y, "width": width, "height": min(TILE, height - y)}
        tiles.append(Image.open(io.BytesIO(browser.screenshot(clip))).convert("RGB"))
    page = Image.new("RGB", (width, height), "white")
    y = 0
    for t in tiles:
        page.paste(t, (0, y))
        y += t.height
    first = page.crop((0, 0, width, min(screen_height, height)))

    def png(image):  # 256 colours chosen by an octree: a figure's rarer colours stay apart
        buf = io.BytesIO()
        image.quantize(256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE).save(
            buf, format="PNG", optimize=True
        )
        return buf.getvalue()

    return png(page), png(first), height


def shoot(reports, out, widths=(1366, 1920), screen_height=768, chromium=None, open_all=False):
    """Write ``<name>-<width>.png`` and ``<name>-<width>-first-screen.png`` per report and
    width; return {(name, width): page height px}."""
    check = _checker()
    binary = check.find_chromium(chromium)
    if binary is None:
        raise check.NoBrowser("no chromium found (Debian: apt-get install chromium)")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    heights = {}
    browser = check.Chromium(binary, timeout=120)
    try:
        for name, report in reports.items():
            url = Path(report).resolve().as_uri()
            for width in widths:
                browser.open(url, width, screen_height)
                if open_all:  # every disclosure open: to look at what each holds
                    browser.evaluate(
                        "document.querySelectorAll('details').forEach(d => d.open = true)"
                    )
                whole, first, height = full_page(browser, check, width, screen_height)
                (out / f"{name}-{width}.png").write_bytes(whole)
                (out / f"{name}-{width}-first-screen.png").write_bytes(first)
                heights[(name, width)] = height
    finally:
        browser.close()
    return heights


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--study",
        help="a study folder (default: the newest under studies/, else a new quick study)",
    )
    ap.add_argument("--reports", help="comma-separated NAME=REPORT.html to shoot instead")
    ap.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    ap.add_argument("--widths", default="1366,1920")
    ap.add_argument(
        "--screen-height",
        type=int,
        default=768,
        help="px of one screen (default 768: a 1366 x 768 laptop)",
    )
    ap.add_argument("--chromium")
    ap.add_argument("--open", action="store_true", help="open every <details> first")
    args = ap.parse_args(argv)
    if args.reports:
        reports = dict(item.split("=", 1) for item in args.reports.split(","))
    else:
        reports = render(find_study(args.study), ROOT / "build" / "screenshots")
    widths = [int(w) for w in args.widths.split(",")]
    try:
        heights = shoot(reports, args.out, widths, args.screen_height, args.chromium, args.open)
    except _checker().NoBrowser as exc:
        print(f"skipped: {exc}", file=sys.stderr)
        return 2
    for (name, width), height in heights.items():
        print(
            f"{name} at {width} px: {height:,} px high = {height / args.screen_height:.1f} "
            f"screens of {args.screen_height} px; {args.out}/{name}-{width}.png"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
