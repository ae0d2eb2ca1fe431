"""Challenge and captcha pages: what a site shows instead of the page until a human (or a
browser that runs its scripts) proves itself.

Such a page is never the page asked for, whatever its status (Cloudflare answers 403 or 503,
many Chinese sites 200): storing it would overwrite the page's stored copy with a challenge and
close its matches, and "no copy found" on it would be a lie. The crawl records it as *unread*
(:mod:`tracker.crawling.unread`) and leaves the stored copy alone.

* **Challenges** (any status): Cloudflare's ``cf-mitigated: challenge`` header, its
  interstitial's ``_cf_chl_opt`` / ``/cdn-cgi/challenge-platform/`` scripts and "Just a
  moment..." title, and the other browser-check walls (``__jsl_clearance``, "Checking your
  browser", "DDoS protection by", Aliyun's ``acw_sc__v2``, Yunsuo's ``security_verify_data``,
  Safedog's "网站防火墙").
* **Captchas**: geetest, reCAPTCHA, hCaptcha, Turnstile widgets, "请输入验证码", "安全验证",
  "人机验证", "滑动验证"…, but only on a page that has not much text of its own or came with an
  error status (403, 429, 503): a chapter page with a captcha on its comment form is a page.
"""

from __future__ import annotations

import re

#: Markers of a browser-check interstitial (case-insensitive, in the first part of the page).
CHALLENGE = re.compile(
    r"_cf_chl_opt|/cdn-cgi/challenge-platform/|cf-browser-verification|cf_chl_|"
    r"<title[^>]*>\s*just a moment|checking your browser before|ddos protection by|"
    r"__jsl_clearance|attention required! \| cloudflare|请稍候，正在验证|正在进行安全检查|"
    # Chinese WAFs' browser checks and interception pages: Aliyun's cookie script, Yunsuo's
    # screen-size jump, Safedog's and Knownsec's walls
    r"acw_sc__v2|security_verify_data|yunsuo_?session_?verify|yunsuoautojump|"
    r"<title[^>]*>\s*网站防火墙|已被网站管理员设置拦截|safedog\.cn|创宇盾|ddos-guard",
    re.I,
)
#: Markers of a captcha form.
CAPTCHA = re.compile(
    r"geetest|initgeetest|g-recaptcha|recaptcha/api\.js|h-captcha|hcaptcha\.com|"
    r"cf-turnstile|challenges\.cloudflare\.com/turnstile|"
    r"请输入验证码|安全验证|人机验证|滑动验证|拖动滑块|请完成验证|访问验证|验证后继续访问",
    re.I,
)
#: How much of a page is searched: interstitials are small, and put their markers early.
SCANNED_CHARS = 65_536
#: A page with at least this many characters of text outside links is a content page: a
#: captcha widget on it (a comment form) does not make it a captcha page.
CONTENT_CHARS = 400
ERROR_STATUSES = frozenset((403, 429, 503))


def challenge_of(status: int, headers: dict[str, str], html: str, text_chars: int) -> str | None:
    """``"challenge"`` or ``"captcha"`` when the response is one (see the module doc), else
    None. ``headers`` by lower-case name; ``text_chars``: the page's visible characters
    outside links."""
    if headers.get("cf-mitigated", "").strip().lower() == "challenge":
        return "challenge"
    head = html[:SCANNED_CHARS]
    if status in ERROR_STATUSES or text_chars < CONTENT_CHARS:
        if CHALLENGE.search(head):
            return "challenge"
        if CAPTCHA.search(head):
            return "captcha"
    return None
