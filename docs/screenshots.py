"""Make the documentation's screenshots of the console from the demo's data, so they show the
console as it is and a realistic case (the demo's pirate copies of 红楼梦 and 人民日报).

    python docs/screenshots.py          # writes docs/console-dashboard.png, console-evidence.png

In a fresh home and data directory of its own (nothing of yours is read or changed): runs
``tracker demo``, adds an operator, serves the console on a free port of 127.0.0.1, signs in
and photographs the dashboard and the evidence page of the demo's most copied page in Debian's
``chromium`` (headless, through Playwright: ``pip install -e '.[test]'``, ``apt install
chromium fonts-noto-cjk``), then stops the console and the embedded servers and removes the
folders. ``--chromium PATH`` names another browser; ``--out DIR`` another folder.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from base64 import b64encode
from pathlib import Path
from urllib.parse import quote

DOCS = Path(__file__).resolve().parent
USER, PASSWORD = "editor", "screenshots for the documentation"
VIEWPORT = {"width": 1280, "height": 860}


def tracker(env: dict[str, str], *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "tracker.cli", *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(f"tracker {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return done.stdout


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def api(base: str, path: str) -> dict:
    request = urllib.request.Request(base + path)
    token = b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    request.add_header("Authorization", f"Basic {token}")
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.load(answer)


def wait_for(base: str, process: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit("tracker serve stopped before it answered")
        try:
            urllib.request.urlopen(base + "/login", timeout=2).close()
            return
        except OSError:
            time.sleep(0.3)
    sys.exit(f"the console did not answer at {base} within {seconds:.0f} s")


def photograph(base: str, chromium: Path, out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    from tracker.crawling.rendering import LAUNCH_ARGS

    pages = api(base, "/api/pages?per_page=500")["pages"]
    if not pages:
        sys.exit("the demo left no infringing page to show")

    # The evidence page with the most copied passages (the pirate's inserted lines cut the
    # copy into passages): the passages side by side, the inserted lines struck through.
    def passages(url: str) -> int:
        stored = api(base, f"/api/page?url={quote(url, safe='')}")
        return sum(len(match["spans"]) for match in stored["matches"])

    shown = max(pages, key=lambda page: (passages(page["url"]), page["url"]))
    written = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=list(LAUNCH_ARGS))
        try:
            page = browser.new_page(viewport=VIEWPORT, device_scale_factor=1, locale="zh-CN")
            page.goto(f"{base}/login")
            page.fill("input[name=name]", USER)
            page.fill("input[name=password]", PASSWORD)
            page.click("button[type=submit]")
            page.wait_for_url(f"{base}/")
            page.wait_for_selector("svg.chart")
            written.append(out / "console-dashboard.png")
            page.screenshot(path=str(written[-1]), full_page=True)

            page.goto(f"{base}/page?url={quote(shown['url'], safe='')}")
            page.wait_for_selector(".pair")
            written.append(out / "console-evidence.png")
            page.screenshot(path=str(written[-1]), full_page=False)
        finally:
            browser.close()
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chromium", type=Path, default=Path("/usr/bin/chromium"))
    parser.add_argument("--out", type=Path, default=DOCS)
    args = parser.parse_args()
    if not args.chromium.exists():
        sys.exit(f"no browser at {args.chromium} (apt install chromium fonts-noto-cjk)")
    home = Path(tempfile.mkdtemp(prefix="tracker-shots-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACKER_", "SCRAPY"))}
    env.pop("MONGO_URL", None)
    env.pop("REDIS_URL", None)
    env.update(HOME=str(home), TRACKER_DATA_DIR=str(home / "data"), TRACKER_CHECK_WARM_S="0")
    console = None
    try:
        tracker(env, "demo")
        tracker(env, "user", "add", USER, "--role", "operator", "--password-stdin", stdin=PASSWORD)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        console = subprocess.Popen(
            [sys.executable, "-m", "tracker.cli", "serve", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for(base, console)
        for path in photograph(base, args.chromium, args.out):
            print(f"{path} ({path.stat().st_size:,} bytes)")
    finally:
        if console is not None:
            console.terminate()
            console.wait(30)
        subprocess.run(
            [sys.executable, "-m", "tracker.cli", "services", "stop"],
            env=env,
            capture_output=True,
            timeout=120,
            check=False,
        )
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
