"""Mail by SMTP (the standard library's ``smtplib``) to the server of ``smtp_url``.

``smtp://user:pass@host:port`` connects in plain text and switches to TLS with STARTTLS when
the server offers it (port 25 by default; 587 is the usual submission port); ``smtps://`` speaks
TLS from the start (port 465). A user and password in the URL log in (they may be
percent-encoded). A server that cannot be reached, does not answer within ``TIMEOUT_S``,
refuses the login, the sender or every recipient, or answers something that is not SMTP raises
:class:`MailError` naming the server (its password masked) and what it said.
"""

from __future__ import annotations

import smtplib
import ssl
from email.message import EmailMessage
from urllib.parse import unquote, urlsplit

from tracker.enforcement.capture import mask_url

TIMEOUT_S = 30.0


class MailError(RuntimeError):
    """The mail was not accepted by the SMTP server."""


def send(smtp_url: str, message: EmailMessage, timeout: float = TIMEOUT_S) -> None:
    """Hand ``message`` to the server of ``smtp_url`` for its ``To`` recipients."""
    parts = urlsplit(smtp_url)
    where = mask_url(smtp_url)
    scheme = parts.scheme.lower()
    if scheme not in ("smtp", "smtps") or not parts.hostname:
        raise MailError(f"smtp_url {where}: expected smtp://host[:port] or smtps://host[:port]")
    try:
        port = parts.port or (465 if scheme == "smtps" else 25)
    except ValueError:
        raise MailError(f"smtp_url {where}: the port is not a number") from None
    context = ssl.create_default_context()
    try:
        if scheme == "smtps":
            client: smtplib.SMTP = smtplib.SMTP_SSL(
                parts.hostname, port, timeout=timeout, context=context
            )
        else:
            client = smtplib.SMTP(parts.hostname, port, timeout=timeout)
        with client:
            client.ehlo()
            if scheme == "smtp" and client.has_extn("starttls"):
                client.starttls(context=context)
                client.ehlo()
            if parts.username:
                client.login(unquote(parts.username), unquote(parts.password or ""))
            refused = client.send_message(message)
    except smtplib.SMTPAuthenticationError as exc:
        raise MailError(f"SMTP server {where} refused the login: {_said(exc)}") from None
    except smtplib.SMTPRecipientsRefused as exc:
        said = "; ".join(f"{to}: {_said(e)}" for to, e in exc.recipients.items())
        raise MailError(f"SMTP server {where} refused the recipient(s): {said}") from None
    except smtplib.SMTPSenderRefused as exc:
        raise MailError(f"SMTP server {where} refused the sender: {_said(exc)}") from None
    except smtplib.SMTPResponseException as exc:
        raise MailError(f"SMTP server {where} answered {_said(exc)}") from None
    except smtplib.SMTPNotSupportedError as exc:
        raise MailError(f"SMTP server {where}: {exc}") from None
    except smtplib.SMTPServerDisconnected as exc:
        raise MailError(f"SMTP server {where} hung up: {exc or 'connection closed'}") from None
    except smtplib.SMTPException as exc:
        raise MailError(f"SMTP server {where}: {exc}") from None
    except TimeoutError:
        raise MailError(f"SMTP server {where} did not answer within {timeout:g} s") from None
    except ssl.SSLError as exc:
        raise MailError(f"SMTP server {where}: TLS failed ({exc.reason or exc})") from None
    except (OSError, UnicodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise MailError(f"SMTP server {where} cannot be reached: {reason}") from None
    if refused:
        said = "; ".join(f"{to}: {code} {text!r}" for to, (code, text) in refused.items())
        raise MailError(f"SMTP server {where} refused some recipients: {said}")


def _said(exc: smtplib.SMTPResponseException) -> str:
    text = exc.smtp_error.decode("utf-8", "replace") if isinstance(exc.smtp_error, bytes) else ""
    return f"{exc.smtp_code} {text}".strip()
