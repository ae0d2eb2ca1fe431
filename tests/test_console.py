"""The web console in process (FastAPI's TestClient) against the real servers: auth rules, the
JSON API, hostile content, operator injection, body caps, SSRF refusal, run now, read-only
reading."""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import re
import threading
import time
import zipfile
from datetime import date
from html import unescape
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from tests.console_data import (
    HOSTILE_INLINE,
    HOSTILE_TITLE,
    HOSTILE_URL,
    OPERATOR,
    PLAIN_URL,
    SCRIPT_URL,
    UNREAD,
    UNREAD_REASON,
    UNREAD_URL,
    VIEWER,
    drop,
    module_settings,
    seed,
)
from tests.html_check import assert_inert, elements
from tracker.console import create_app
from tracker.index.storage import RedisStorage
from tracker.reports.build import build_report
from tracker.reports.render import to_csv
from tracker.stores.job_runs import JobRunStore

pytestmark = pytest.mark.integration

WORK = "红楼梦"
PAGES = ["/", "/pages", "/works", "/sites", "/unread", "/jobs", "/check", "/reports", "/docs"]


@pytest.fixture(scope="module")
def seeded(server_settings):
    data = seed(module_settings(server_settings, "api"))
    yield data
    drop(data)


@pytest.fixture(scope="module")
def client(seeded):
    with TestClient(create_app(seeded.settings, seeded.runtime)) as client:
        yield client


@pytest.fixture()
def cli_env(seeded, monkeypatch):
    """The ``tracker`` command line on the module's database, key prefix and servers."""
    settings = seeded.settings
    monkeypatch.setenv("TRACKER_MONGO_DB", settings.mongo_db)
    monkeypatch.setenv("TRACKER_REDIS_PREFIX", settings.redis_prefix)
    monkeypatch.setenv("MONGO_URL", settings.mongo_url)
    monkeypatch.setenv("REDIS_URL", settings.redis_url)
    return ["--data-dir", str(settings.data_dir)]


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]{64})"', html)
    assert found, "no CSRF token in the form"
    return found[1]


def login(client: TestClient, name: str, password: str):
    client.cookies.clear()
    form = client.get("/login")
    token = re.search(r'name="token" value="([0-9a-f]+)"', form.text)[1]
    return client.post(
        "/login",
        data={"name": name, "password": password, "token": token, "next": "/pages"},
        follow_redirects=False,
    )


# ------------------------------------------------------------------------------------ auth


def test_no_credentials_is_401_everywhere(client):
    client.cookies.clear()
    for path in ["/api/pages", "/api/page?url=x", "/api/unread", "/api/jobs",
                 "/api/reports/2026-01-01.csv"]:  # fmt: skip
        answer = client.get(path)
        assert answer.status_code == 401, path
        assert answer.headers["www-authenticate"].startswith("Basic ")
    assert client.post("/api/check", json={"text": "x"}).status_code == 401
    for path in [*PAGES, "/page?url=x", "/openapi.json"]:
        answer = client.get(path)
        assert answer.status_code == 401, path
        if path != "/openapi.json":
            assert 'action="/login"' in answer.text  # browsers get the login form
    assert client.get("/", auth=("olga", "wrong-password")).status_code == 401
    assert client.get("/", auth=("nobody", "operator-pass")).status_code == 401
    assert client.get("/", headers={"Authorization": "Basic !!!"}).status_code == 401


def test_viewers_read_and_operators_act(client, seeded):
    client.cookies.clear()
    for path in PAGES:
        expected = 403 if path == "/check" else 200
        assert client.get(path, auth=VIEWER).status_code == expected, path
    assert client.post("/api/check", json={"text": "x"}, auth=VIEWER).status_code == 403
    assert client.post("/api/jobs/report/run", json={}, auth=VIEWER).status_code == 403
    jobs = client.get("/jobs", auth=VIEWER).text
    assert "Run now" not in jobs
    token = csrf_of(client.get("/jobs", auth=OPERATOR).text)
    answer = client.post("/jobs/run", data={"csrf": token, "job": "report"}, auth=VIEWER)
    assert answer.status_code == 403
    assert "Run now" in client.get("/jobs", auth=OPERATOR).text


def test_login_form_session_cookie_and_csrf(client, seeded):
    from tracker.console.users import Users

    assert login(client, "olga", "not-the-password").status_code == 401
    answer = login(client, *OPERATOR)
    assert answer.status_code == 303 and answer.headers["location"] == "/pages"
    cookie = answer.headers["set-cookie"]
    assert "tracker_session=" in cookie and "HttpOnly" in cookie and "SameSite=lax" in cookie
    assert "Secure" not in cookie  # plain http here; over https it is marked Secure
    page = client.get("/check")
    assert page.status_code == 200
    token = csrf_of(page.text)
    # A form without its token (another site's page posting into the console) is refused.
    assert client.post("/check", data={"text": "天下"}).status_code == 403
    assert client.post("/check", data={"text": "天下", "csrf": "0" * 64}).status_code == 403
    checked = client.post("/check", data={"text": seeded.master_text, "csrf": token})
    assert checked.status_code == 200 and seeded.doc_ids[0] in checked.text
    # Another signature, or a user whose password changed, is no session.
    good = client.cookies.get("tracker_session")
    client.cookies.set("tracker_session", good[:-2] + ("AA" if good[-2:] != "AA" else "BB"))
    assert client.get("/api/pages").status_code == 401
    client.cookies.set("tracker_session", good)
    assert client.get("/api/pages").status_code == 200
    Users(seeded.runtime.db).add("olga", "operator", OPERATOR[1], replace=True)
    assert client.get("/api/pages").status_code == 401
    # Signing out drops the cookie; a login never redirects to another site.
    answer = login(client, *OPERATOR)
    token = csrf_of(client.get("/").text)
    out = client.post("/logout", data={"csrf": token}, follow_redirects=False)
    assert out.status_code == 303 and 'tracker_session=""' in out.headers["set-cookie"]
    client.cookies.clear()
    form = client.get("/login")
    login_token = re.search(r'name="token" value="([0-9a-f]+)"', form.text)[1]
    away = client.post(
        "/login",
        data={**dict(zip(("name", "password"), OPERATOR, strict=True)), "token": login_token,
              "next": "//evil.example/"},
        follow_redirects=False,
    )  # fmt: skip
    assert away.headers["location"] == "/"
    client.cookies.clear()


# ------------------------------------------------------------------------------------- API


def test_api_pages_are_the_report_pages_filtered_and_paged(client, seeded):
    report = build_report(seeded.runtime.db, date.fromisoformat(seeded.today))
    answer = client.get("/api/pages", auth=VIEWER).json()
    assert answer["date"] == seeded.today
    assert answer["pages"] == report["pages"] and answer["total"] == 3
    work = report["works"][0]["work"]
    only_work = client.get("/api/pages", params={"work": work}, auth=VIEWER).json()["pages"]
    assert only_work and all(any(c["work"] == work for c in p["copies"]) for p in only_work)
    site = client.get("/api/pages", params={"site": "mirror.example"}, auth=VIEWER).json()
    assert [p["url"] for p in site["pages"]] == [PLAIN_URL]
    assert client.get("/api/pages?min_score=1.0", auth=VIEWER).json()["pages"] == [
        p for p in report["pages"] if p["score"] >= 1.0
    ]
    two = client.get("/api/pages?per_page=2&page=2", auth=VIEWER).json()
    assert two["pages"] == report["pages"][2:] and two["total"] == 3
    yesterday = client.get(f"/api/pages?date={seeded.yesterday}", auth=VIEWER).json()
    assert [p["url"] for p in yesterday["pages"]] == [PLAIN_URL]
    for bad in ["date=2026-13-01", "date=yesterday", "min_score=2", "page=0", "per_page=10000"]:
        assert client.get(f"/api/pages?{bad}", auth=VIEWER).status_code == 422, bad


def test_the_unread_pages_of_a_day_api_and_pages(client, seeded):
    """The pages today's crawls could not read: the report's ``unread``, summed up per site, in
    the API, on their page, the dashboard, the sites page and a site's page; hostile URLs and
    reasons shown as text."""
    report = build_report(seeded.runtime.db, date.fromisoformat(seeded.today))
    answer = client.get("/api/unread", auth=VIEWER).json()
    assert answer["unread"] == report["unread"] and answer["total"] == len(UNREAD) == 3
    assert sorted(u["url"] for u in answer["unread"]) == sorted(url for url, _ in UNREAD)
    walled, pirate = answer["sites"]
    assert (walled["site"], walled["pages"]) == ("walled.example", 2)
    assert walled["reasons"] == [{"reason": "captcha", "pages": 1},
                                 {"reason": "http_502", "pages": 1}]  # fmt: skip
    assert pirate["reasons"] == [{"reason": UNREAD_REASON, "pages": 1}]
    one = client.get("/api/unread?site=pirate.example&per_page=1", auth=VIEWER).json()
    assert [u["url"] for u in one["unread"]] == ["https://pirate.example/book/9.html"]
    assert [s["site"] for s in one["sites"]] == ["pirate.example"]
    second = client.get("/api/unread?per_page=2&page=2", auth=VIEWER).json()
    assert second["unread"] == report["unread"][2:] and second["total"] == 3
    yesterday = client.get(f"/api/unread?date={seeded.yesterday}", auth=VIEWER).json()
    assert (yesterday["unread"], yesterday["sites"], yesterday["total"]) == ([], [], 0)
    assert client.get("/api/unread?site[$ne]=x", auth=VIEWER).json()["total"] == 3
    assert client.get("/api/unread?date=x", auth=VIEWER).status_code == 422

    page = client.get("/unread", auth=VIEWER).text
    parsed = assert_inert(page, scripts=CONSOLE_SCRIPTS)
    text = " ".join(" ".join(parsed.text).split())
    assert "3 pages on 2 sites could not be read" in text and "unread, not clean" in text
    assert "blocked by a captcha" in text and "the site's server failed (HTTP 502)" in text
    assert UNREAD_REASON in text and "<script>alert(" not in page
    assert UNREAD_URL in [a["href"] for tag, a in parsed.found if tag == "a"]
    assert "<img src=x" not in page
    filtered = client.get("/unread?site=walled.example", auth=VIEWER).text
    assert "walled.example/ch/2.html" in filtered and "pirate.example/book/9" not in filtered
    quiet = client.get(f"/unread?date={seeded.yesterday}", auth=VIEWER).text
    assert "on this day was read" in quiet
    dashboard = client.get("/", auth=VIEWER).text
    assert "<strong>3</strong>pages could not be read</a>" in dashboard
    sites = client.get("/sites", auth=VIEWER).text
    assert "Pages we could not read" in sites and "/unread?site=walled.example" in sites
    site = client.get("/site?name=walled.example", auth=VIEWER).text
    assert "2 pages of this site could not be read" in site and "blocked by a captcha" in site


def test_query_parameters_never_become_operators(client, seeded):
    everything = client.get("/api/pages", auth=VIEWER).json()["pages"]
    for query in ["site[$ne]=x", "site%5B%24ne%5D=x", "work[$gt]=", "min_score[$lt]=1"]:
        assert client.get(f"/api/pages?{query}", auth=VIEWER).json()["pages"] == everything
    assert client.get("/api/pages?site=%7B%22%24ne%22%3A%22x%22%7D", auth=VIEWER).json()[
        "pages"
    ] == []  # fmt: skip
    assert client.get("/api/page?url[$ne]=x", auth=VIEWER).status_code == 422
    assert client.get("/api/page", params={"url": '{"$ne": "x"}'}, auth=VIEWER).status_code == 404
    for body in [{"text": {"$ne": ""}}, {"url": {"$gt": ""}}, {"text": ["a"]}, {"x": "y"}, []]:
        answer = client.post("/api/check", json=body, auth=OPERATOR)
        assert answer.status_code == 422, body


def test_api_page_has_matches_with_spans(client, seeded):
    answer = client.get("/api/page", params={"url": HOSTILE_URL}, auth=VIEWER)
    page = answer.json()
    assert page["url"] == HOSTILE_URL and page["title"] == HOSTILE_TITLE
    match = page["matches"][0]
    assert match["doc_id"] == seeded.doc_ids[0] and match["work"] == "红楼梦"
    assert {"doc_id", "work", "title", "score", "coverage", "spans"} <= set(match)
    span = match["spans"][0]
    assert set(span) == {"page_start", "page_end", "master_start", "master_end", "text"}
    assert seeded.copied_text[span["page_start"] : span["page_end"]].startswith(span["text"][:50])
    assert client.get("/api/page?url=https://no.example/", auth=VIEWER).status_code == 404


def test_api_check_answers_what_tracker_check_json_prints(
    client, seeded, tmp_path, capsys, cli_env
):
    from tracker.cli import main

    path = tmp_path / "copy.txt"
    path.write_text(seeded.copied_text, encoding="utf-8")
    assert main([*cli_env, "check", "--json", str(path)]) == 1
    printed = json.loads(capsys.readouterr().out)
    answer = client.post("/api/check", json={"text": seeded.copied_text}, auth=OPERATOR)
    assert answer.status_code == 200
    assert answer.json() == printed and printed["matches"][0]["doc_id"] == seeded.doc_ids[0]
    assert client.post("/api/check", json={}, auth=OPERATOR).status_code == 422
    both = client.post("/api/check", json={"text": "a", "url": "https://x/"}, auth=OPERATOR)
    assert both.status_code == 422
    for url in ["file:///etc/passwd", "/etc/passwd", "ftp://x.example/a", "gopher://x"]:
        answer = client.post("/api/check", json={"url": url}, auth=OPERATOR)
        assert answer.status_code == 422 and "URL" in answer.json()["error"], url
    form = client.post("/api/check", data={"text": "x"}, auth=OPERATOR)
    assert form.status_code in (415, 422)


def test_a_check_against_an_empty_library_says_so(server_settings):
    """The API answers 409 with the reason, the Check page shows it as an alert: an empty
    library cannot call a text clean."""
    from tracker.console.users import Users
    from tracker.servers.runtime import Runtime

    settings = module_settings(server_settings, "empty")
    runtime = Runtime(settings)
    try:
        Users(runtime.db).add(OPERATOR[0], "operator", OPERATOR[1])
        with TestClient(create_app(settings, runtime)) as client:
            answer = client.post("/api/check", json={"text": "天下大势"}, auth=OPERATOR)
            assert answer.status_code == 409
            assert "master library is empty" in answer.json()["error"]
            assert login(client, *OPERATOR).status_code == 303
            token = csrf_of(client.get("/check").text)
            page = client.post("/check", data={"text": "天下大势", "csrf": token})
            assert page.status_code == 409
            alert = re.search(r'<p class="error" role="alert">([^<]*)</p>', page.text)
            assert alert and "master library is empty" in unescape(alert[1])
    finally:
        runtime.mongo.drop_database(settings.mongo_db)
        RedisStorage(runtime.redis, settings.redis_prefix).clear()
        runtime.close()


@pytest.fixture(scope="module")
def local_page(seeded):
    """A page served on 127.0.0.1 holding the hostile copy, and a redirect to it."""
    body = f"<html><body><article><h1>{HOSTILE_TITLE}</h1><p>{seeded.copied_text}</p></article></body></html>"  # noqa: E501

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path == "/redirect":
                self.send_response(302)
                self.send_header("Location", f"http://127.0.0.1:{self.server.server_port}/copy")
                self.end_headers()
                return
            data = body.encode("utf-8")
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def test_check_of_a_url_refuses_private_addresses_unless_allowed(
    client, seeded, local_page, capsys, cli_env
):
    from dataclasses import replace

    from tracker.cli import main

    for url in [f"{local_page}/copy", f"{local_page.replace('127.0.0.1', 'localhost')}/copy"]:
        refused = client.post("/api/check", json={"url": url}, auth=OPERATOR)
        assert refused.status_code == 422
        assert "loopback address" in refused.json()["error"]
    allowed_settings = replace(seeded.settings, console_allow_private_urls=True)
    with TestClient(create_app(allowed_settings, seeded.runtime)) as allowed:
        answer = allowed.post("/api/check", json={"url": f"{local_page}/redirect"}, auth=OPERATOR)
    assert answer.status_code == 200
    assert main([*cli_env, "check", "--json", f"{local_page}/redirect"]) == 1
    assert answer.json() == json.loads(capsys.readouterr().out)
    assert answer.json()["matches"][0]["doc_id"] == seeded.doc_ids[0]


def test_a_public_name_resolving_to_a_private_address_is_refused(monkeypatch):
    """No traffic: the name is resolved (here by a stub), the address checked, nothing sent."""
    import socket

    from tracker.reading.readers import InputError, fetch

    def resolve(host, port, *args, **kwargs):
        address = {"meta.example": "169.254.169.254", "lan.example": "10.1.2.3"}[host]
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    for host, kind in [("meta.example", "link-local"), ("lan.example", "private")]:
        with pytest.raises(InputError, match=f"{host} is .*, a {kind} address"):
            fetch(f"http://{host}/latest", allow_private=False)


def test_request_bodies_are_capped(client):
    big = b'{"text": "' + b"x" * (1100 << 10) + b'"}'
    answer = client.post(
        "/api/check", content=big, headers={"Content-Type": "application/json"}, auth=OPERATOR
    )
    assert answer.status_code == 413

    def chunks():
        for _ in range(12):
            yield b"x" * (100 << 10)

    streamed = client.post(
        "/api/check", content=chunks(), headers={"Content-Type": "application/json"},
        auth=OPERATOR,
    )  # fmt: skip
    assert streamed.status_code == 413


# ------------------------------------------------------------------------- hostile content


def test_hostile_strings_are_escaped_and_only_http_urls_linked(client, seeded):
    evidence = client.get("/page", params={"url": HOSTILE_URL}, auth=VIEWER)
    assert evidence.status_code == 200
    html = evidence.text
    assert HOSTILE_TITLE not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "<script>alert" not in html and "<svg onload" not in html
    passages = re.findall(r'<p class="passage">(.*?)</p>', html, re.S)
    shown = [unescape(re.sub(r"<[^>]+>", "", p)) for p in passages]  # marks taken off
    assert any(HOSTILE_INLINE in p for p in shown)  # quotes and brackets inside, escaped
    assert not any(HOSTILE_INLINE in p for p in passages)
    assert 'href="https://pirate.example/book/1.html?x=&#34;&gt;&lt;script&gt;' in html
    pages = client.get("/pages", auth=VIEWER).text
    assert "<img src=x" not in pages and "&lt;img src=x onerror=alert(1)&gt;" in pages
    javascript = client.get("/page", params={"url": SCRIPT_URL}, auth=VIEWER).text
    assert 'href="javascript:' not in javascript and 'href="javascript:' not in pages
    assert '<span class="unlinked">javascript:alert(4)//pirate</span>' in javascript
    # The passages are side by side, the shared text marked on both sides.
    assert html.count('class="side page-side"') == html.count('class="side master-side"') >= 1
    assert "<mark>" in html


CONSOLE_SCRIPTS = (
    "/static/console.js",
    "/static/docs.js",
    "/static/swagger/swagger-ui-bundle.js",
)


def test_hostile_strings_make_no_element_on_any_page(client, seeded):
    """Every page that shows crawled strings, read as a browser's parser reads it: the hostile
    title, URLs and passage text are text, never an element, a handler or a link."""
    day = seeded.today
    paths = [
        *PAGES,
        f"/page?url={quote(HOSTILE_URL, safe='')}",
        f"/page?url={quote(SCRIPT_URL, safe='')}",
        f"/work?name={quote(WORK)}&date={day}",
        f"/site?name=pirate.example&date={day}",
        f"/site?name=walled.example&date={day}",
        f"/unread?site=walled.example&date={day}",
        f"/pages?site=pirate.example&date={day}",
    ]
    for path in paths:
        answer = client.get(path, auth=OPERATOR)
        assert answer.status_code == 200, path
        parsed = assert_inert(answer.text, scripts=CONSOLE_SCRIPTS)
        links = [a.get("href", "") for tag, a in parsed.found if tag == "a"]
        assert not [h for h in links if h.lower().startswith("javascript")], path
    evidence = client.get("/page", params={"url": HOSTILE_URL}, auth=VIEWER).text
    parsed = assert_inert(evidence, scripts=CONSOLE_SCRIPTS)
    assert HOSTILE_TITLE in parsed.text and HOSTILE_URL in [
        a["href"] for tag, a in parsed.found if tag == "a" and a.get("target") == "_blank"
    ]  # the quotes and brackets of the URL stay inside its attribute


def test_the_evidence_view_shows_what_was_cut_as_cut(client, seeded):
    """A whole chapter copied: the detector keeps 2,000 characters of the page's passage, and
    the view says how much of each side is not shown, rather than styling the master's rest
    as differing text."""
    html = client.get("/page", params={"url": PLAIN_URL}, auth=VIEWER).text
    assert "100.0%</strong> copied share" in html
    parsed = elements(html)
    text = "".join(parsed.text)
    hidden = re.findall(r"… ([\d,]+) characters not shown …", text)
    assert len(hidden) == 2, hidden  # the page's side and the master's
    master = client.get("/api/page", params={"url": PLAIN_URL}, auth=VIEWER).json()["matches"][0]
    span = master["spans"][0]
    assert int(hidden[0].replace(",", "")) == span["page_end"] - span["page_start"] - 2000
    # What is shown of the master differs from the page in no more than a few characters.
    master_side = r'<div class="side master-side">(.*?)</div>\s*<div class="pair-meta">'
    sides = re.findall(master_side, html, re.S)
    differing = re.findall(r'<span class="diff">(.*?)</span>', sides[0], re.S)
    assert sum(len(unescape(d)) for d in differing) < 20, differing


def test_the_console_says_chapters_found_and_copied_share(client, seeded):
    day = seeded.today
    works = client.get("/works", params={"date": day}, auth=VIEWER).text
    work = client.get("/work", params={"name": WORK, "date": day}, auth=VIEWER).text
    site = client.get("/site", params={"name": "mirror.example", "date": day}, auth=VIEWER).text
    pages = client.get("/pages", params={"date": day}, auth=VIEWER).text
    for html in (works, work, site, pages):
        assert "Coverage" not in html and "coverage" not in "".join(elements(html).text)
    assert "Copied share" in work and "Copied share" in pages and "Copied share" in site
    text = " ".join("".join(elements(work).text).split())
    assert "Chapters found: 2 of 2 chapters (100.0%): 2 copied (a chapter counts" in text
    assert "when the pages copy at least 50.0% of it)" in text
    css = client.get("/static/shared/tracker.css")
    assert css.status_code == 200 and '"Noto Sans CJK SC"' in css.text
    assert '"Microsoft YaHei"' in css.text and '"PingFang SC"' in css.text
    dashboard = client.get("/", auth=VIEWER).text
    assert '<link rel="stylesheet" href="/static/shared/tracker.css">' in dashboard


def test_static_files_are_served_without_login(client):
    client.cookies.clear()
    for path in [
        "/static/console.css",
        "/static/console.js",
        "/static/shared/tracker.css",
        "/static/swagger/swagger-ui.css",
    ]:
        assert client.get(path).status_code == 200, path


def test_every_page_has_the_csp_and_no_inline_script(client, seeded):
    for path in [*PAGES, f"/page?url={quote(HOSTILE_URL)}", "/login", "/api/pages"]:
        answer = client.get(path, auth=OPERATOR)
        csp = answer.headers["content-security-policy"]
        assert "default-src 'self'" in csp and "script-src 'self'" in csp
        assert "unsafe-inline" not in csp.split("script-src", 1)[1].split(";", 1)[0]
        assert answer.headers["x-frame-options"] == "DENY"
        if not answer.headers["content-type"].startswith("text/html"):
            continue
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", answer.text), path
        assert not re.search(r"\son[a-z]+\s*=", answer.text.replace("onerror=alert", "")), path


# --------------------------------------------------------------------- reports, jobs, reading


def test_report_downloads(client, seeded):
    day = seeded.today
    report = build_report(seeded.runtime.db, date.fromisoformat(day))
    data = client.get(f"/api/reports/{day}.json", auth=VIEWER).json()
    assert data["pages"] == report["pages"] and data["summary"] == report["summary"]
    csv = client.get(f"/api/reports/{day}.csv", auth=VIEWER)
    assert csv.text == to_csv(report, bom=True) and csv.text.startswith("\ufeffdate,")
    assert "attachment" in csv.headers["content-disposition"]
    html = client.get(f"/api/reports/{day}.html", auth=VIEWER)
    assert html.headers["content-type"].startswith("text/html") and "<svg" in html.text
    archive = zipfile.ZipFile(
        io.BytesIO(client.get(f"/api/reports/{day}.zip", auth=VIEWER).content)
    )
    names = archive.namelist()
    assert f"notices-{day}/notice-pirate.example.txt" in names
    assert HOSTILE_URL in archive.read(f"notices-{day}/notice-pirate.example.txt").decode()
    assert client.get("/api/reports/2026-02-30.json", auth=VIEWER).status_code == 422
    assert client.get(f"/api/reports/{day}.exe", auth=VIEWER).status_code == 422
    listing = client.get("/reports", auth=VIEWER).text
    assert f"/api/reports/{seeded.yesterday}.zip" in listing


def test_run_now_starts_the_job_and_shows_its_ledger_entry(client, seeded):
    answer = client.post("/api/jobs/report/run", json={}, auth=OPERATOR)
    assert answer.status_code == 200
    entry = answer.json()
    assert entry["job"] == "report" and entry["_id"].startswith("report@manual:")
    assert entry["status"] in ("running", "ok") and entry["trigger"] == "manual"
    assert client.post("/api/jobs/nope/run", json={}, auth=OPERATOR).status_code == 404
    page = client.get("/run", params={"id": entry["_id"]}, auth=VIEWER)
    assert page.status_code == 200 and entry["_id"] in page.text
    jobs = client.get("/api/jobs", auth=VIEWER).json()
    report = next(j for j in jobs["jobs"] if j["job"] == "report")
    assert report["history"][0]["_id"] == entry["_id"]
    runs = JobRunStore(seeded.runtime.db)
    deadline = time.monotonic() + 120
    while runs.get(entry["_id"])["status"] == "running" and time.monotonic() < deadline:
        time.sleep(0.2)  # the job is done before the module's database is dropped
    assert runs.get(entry["_id"])["status"] == "ok"


def test_reading_changes_nothing_stored(client, seeded):
    db = seeded.runtime.db

    def snapshot() -> dict[str, str]:
        found = {}
        for name in sorted(db.list_collection_names()):
            if name in ("job_runs", "reports"):  # written by the job the previous test started
                continue
            docs = sorted(json.dumps(d, default=str, sort_keys=True) for d in db[name].find())
            found[name] = hashlib.sha256("\n".join(docs).encode()).hexdigest()
        return found

    before = snapshot()
    for path in [*PAGES, "/api/pages", "/api/unread", "/api/jobs",
                 f"/api/page?url={quote(PLAIN_URL)}", f"/page?url={quote(HOSTILE_URL)}",
                 "/site?name=pirate.example", "/site?name=walled.example",
                 f"/work?name={quote('红楼梦')}", f"/api/reports/{seeded.today}.zip"]:  # fmt: skip
        assert client.get(path, auth=OPERATOR).status_code == 200, path
    assert snapshot() == before


def test_user_command(seeded, capsys, monkeypatch, cli_env):
    from tracker.cli import main

    data_dir = cli_env
    monkeypatch.setattr("sys.stdin", io.StringIO("a-good-password\n"))
    assert main([*data_dir, "user", "add", "carol", "--role", "viewer", "--password-stdin"]) == 0
    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
    assert main([*data_dir, "user", "add", "dave", "--role", "viewer", "--password-stdin"]) == 2
    assert main([*data_dir, "user", "list"]) == 0
    out = capsys.readouterr()
    assert "carol" in out.out and "viewer" in out.out and "shorter than 8" in out.err
    assert main([*data_dir, "user", "remove", "carol"]) == 0
    assert main([*data_dir, "user", "remove", "carol"]) == 1
    assert main([*data_dir, "user", "add", "bad name", "--role", "viewer"]) == 2
    assert main([*data_dir, "user", "add", "erin", "--role", "admin"]) == 2  # before a password
    assert "unknown role 'admin': use viewer or operator" in capsys.readouterr().err
    secret = seeded.settings.data_dir / "console" / "secret"
    assert secret.stat().st_mode & 0o777 == 0o600


def test_tracker_serve_serves_the_console(seeded):
    import base64
    import socket
    import subprocess
    import sys
    import urllib.error
    import urllib.request

    from tracker.crawling.crawl import crawl_environment

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = crawl_environment(seeded.settings)
    server = subprocess.Popen(
        [sys.executable, "-m", "tracker.cli", "serve", "--port", str(port)],
        env={**env, "TRACKER_CONSOLE_CACHE_S": "0"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/pages", timeout=5)
            except urllib.error.HTTPError as exc:
                assert exc.code == 401
                break
            except OSError:
                assert server.poll() is None, server.stdout.read().decode()
                assert time.monotonic() < deadline, "tracker serve did not answer"
                time.sleep(0.2)
        token = base64.b64encode(":".join(VIEWER).encode()).decode()
        request = urllib.request.Request(
            f"{url}/api/pages", headers={"Authorization": f"Basic {token}"}
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert json.loads(answer.read())["total"] == 3
    finally:
        server.terminate()
        server.wait(20)


def test_the_console_queries_use_indexes(seeded):
    """The queries behind the console's pages, explained (SecantusDB scans a collection for an
    unindexed filter)."""
    from tests.test_scheduler import uses_an_index
    from tracker.console.views import crawl_runs

    db = seeded.runtime.db  # its indexes made when it was opened (tracker.stores.indexes)
    db["crawl_runs"].insert_one({"spider": "novel", "sites": ["pirate.example"], "status": "ok"})
    assert crawl_runs(db, "pirate.example", 1)[0]["spider"] == "novel"
    cursors = {
        "a day's pages": db["page_days"].find({"day": seeded.today}),
        "a page": db["pages"].find({"_id": PLAIN_URL}),
        "a page's matches": db["matches"].find({"url": PLAIN_URL}),
        "masters by id": db["masters"].find({"_id": {"$in": seeded.doc_ids}}),
        "latest runs": db["crawl_runs"].find({}).sort("finished_at", -1).limit(21),
        "a site's runs": db["crawl_runs"].find({"sites": "x"}).sort("finished_at", -1),
        "a job's runs": db["job_runs"].find({"job": "report"}).sort("started_at", -1),
        "a user": db["users"].find({"_id": "olga"}),
    }
    for name, cursor in cursors.items():
        assert uses_an_index(cursor), name


def test_the_session_cookie_is_secure_over_https(seeded):
    app = create_app(seeded.settings, seeded.runtime)
    with TestClient(app, base_url="https://console.example") as secure:
        answer = login(secure, *OPERATOR)
        assert answer.status_code == 303
        assert "Secure" in answer.headers["set-cookie"]
