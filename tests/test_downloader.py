"""A site's concurrency limit holds: Scrapy 2.19 alone let every queued request of a slot go
at once when no download delay was set (tracker/crawling/downloader.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = r"""
import json, sys, threading, time
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler

import scrapy
from scrapy.crawler import CrawlerProcess

inflight = peak = 0
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        global inflight, peak
        with lock:
            inflight += 1
            peak = max(peak, inflight)
        if self.path == "/":
            body = "".join(f'<a href="/c/{i}.html">{i}</a>' for i in range(12)).encode()
        else:
            time.sleep(0.2)
            body = b"<html><body>x</body></html>"
        with lock:
            inflight -= 1
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()


class Catalogue(scrapy.Spider):
    name = "catalogue"
    start_urls = [f"http://127.0.0.1:{server.server_address[1]}/"]

    def parse(self, response):
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, self.page)

    def page(self, response):
        pass


process = CrawlerProcess({
    "DOWNLOADER": sys.argv[1],
    "CONCURRENT_REQUESTS": 16,
    "CONCURRENT_REQUESTS_PER_DOMAIN": int(sys.argv[2]),
    "LOG_LEVEL": "ERROR",
    "ROBOTSTXT_OBEY": False,
})
process.crawl(Catalogue)
process.start()
print(json.dumps({"peak": peak}))
"""


def peak_in_flight(tmp_path: Path, downloader: str, per_domain: int) -> int:
    script = tmp_path / "crawl.py"
    script.write_text(SCRIPT, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), downloader, str(per_domain)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])["peak"]


@pytest.mark.parametrize("per_domain", [1, 3])
def test_the_project_downloader_keeps_a_sites_concurrency_limit(tmp_path, per_domain):
    from tracker.crawling import settings

    assert settings.DOWNLOADER == "tracker.crawling.downloader.PoliteDownloader"
    assert peak_in_flight(tmp_path, settings.DOWNLOADER, per_domain) == per_domain
