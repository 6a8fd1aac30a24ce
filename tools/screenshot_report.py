#!/usr/bin/env python3
"""Render an experiment folder's report.html to a PNG with headless Chromium.

    python tools/screenshot_report.py EXP_DIR [--out report.png] [--width 1000] [--height 2400]

EXP_DIR is an experiment folder holding report.html (write it with
``python -m sealbench.report.report_html EXP_DIR``) or the path of an HTML file. The PNG goes to
EXP_DIR/report.png unless --out is given. Needs ``chromium`` (Debian: ``apt-get install
chromium``) or ``chromium-browser`` / ``google-chrome`` on PATH, or $CHROMIUM; exits 2 with a
message when none is found, 1 when Chromium fails or writes no PNG. Chromium runs with a
throw-away profile, no network services and no sandbox (for containers running as root).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    env = os.environ.get("CHROMIUM")
    if env:
        return env if (os.path.isfile(env) and os.access(env, os.X_OK)) else shutil.which(env)
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def screenshot(html: Path, png: Path, width: int = 1000, height: int = 2400, chromium: str | None = None,
               timeout_s: float = 120.0) -> Path:
    chromium = chromium or find_chromium()
    if not chromium:
        raise FileNotFoundError("chromium not found: install it (apt-get install -y chromium) or set $CHROMIUM "
                                "to the browser binary")
    html = Path(html).resolve()
    png = Path(png).resolve()
    png.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sealbench-chromium-") as profile:
        tmp_png = Path(profile) / "shot.png"
        cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--no-first-run", "--disable-sync", "--hide-scrollbars",
               f"--user-data-dir={profile}/profile", f"--window-size={width},{height}",
               f"--screenshot={tmp_png}", html.as_uri()]
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout_s)
        if proc.returncode != 0 or not tmp_png.is_file() or tmp_png.stat().st_size == 0:
            raise RuntimeError(f"chromium failed (exit {proc.returncode}); stderr:\n{proc.stderr[-2000:]}")
        shutil.move(str(tmp_png), str(png))
    return png


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("target", type=Path, help="experiment folder with report.html, or an HTML file")
    ap.add_argument("--out", type=Path, help="PNG path (default: next to report.html, report.png)")
    ap.add_argument("--width", type=int, default=1000)
    ap.add_argument("--height", type=int, default=2400)
    args = ap.parse_args(argv)
    html = args.target / "report.html" if args.target.is_dir() else args.target
    if not html.is_file():
        print(f"screenshot_report: {html} not found (write it with: python -m sealbench.report.report_html EXP_DIR)",
              file=sys.stderr)
        return 1
    out = args.out or html.with_suffix(".png")
    try:
        png = screenshot(html, out, args.width, args.height)
    except FileNotFoundError as exc:
        print(f"screenshot_report: {exc}", file=sys.stderr)
        return 2
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        print(f"screenshot_report: {exc}", file=sys.stderr)
        return 1
    print(png)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
