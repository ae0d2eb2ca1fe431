"""Alerts of new copies: queued in the outbox ahead of the matches, POSTed to the webhook in
batches, retried with back-off while it is down, never lost, never sent twice at once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.webhook import LocalWebhook
from tracker.enforcement.alerts import AlertSender, alert_documents, copies
from tracker.stores.alerts import AlertOutbox
from tracker.stores.pages import MatchStore

pytestmark = pytest.mark.integration

T0 = datetime(2031, 3, 1, 8, 0, tzinfo=UTC)


def match(doc_id: str, work: str = "书", score: float = 0.9) -> dict:
    return {"doc_id": doc_id, "work": work, "title": doc_id, "score": score, "coverage": 0.5}


def test_new_matches_are_queued_once(runtime):
    outbox, matches = AlertOutbox(runtime.db), MatchStore(runtime.db)

    def queue(pairs):
        outbox.add(alert_documents(pairs, T0), T0)

    matches.record_many({"http://a.test/1": [match("书/0001")]}, T0, on_new=queue)
    # Seen again, plus a new chapter: only the new match is queued.
    matches.record_many({"http://a.test/1": [match("书/0001"), match("书/0002")]}, T0, on_new=queue)
    queued = sorted(doc["doc_id"] for doc in runtime.db["alerts"].find())
    assert queued == ["书/0001", "书/0002"]
    # The outbox written, then a crash before the matches: the retry queues nothing twice.
    assert outbox.add(alert_documents([("http://a.test/1", match("书/0001"))], T0), T0) == 0


def test_copies_group_a_page_and_work():
    alerts = alert_documents(
        [
            ("http://a.test/1", match("书/0001", score=0.8)),
            ("http://a.test/1", match("书/0002")),
            ("http://a.test/2", match("书/0003")),
        ],
        T0,
    )
    found = copies(alerts)
    assert [(c["url"], c["doc_ids"], c["score"]) for c in found] == [
        ("http://a.test/1", ["书/0001", "书/0002"], 0.9),
        ("http://a.test/2", ["书/0003"], 0.9),
    ]
    assert found[0]["site"] == "a.test" and found[0]["first_seen"] == T0.isoformat()
    assert len({c["id"] for c in found}) == 2


def test_a_webhook_down_is_retried_with_back_off(runtime):
    outbox = AlertOutbox(runtime.db)
    outbox.add(alert_documents([(f"http://a.test/{k}", match(f"书/{k:04d}")) for k in range(3)],
                               T0), T0)  # fmt: skip
    now = [T0]
    with LocalWebhook() as hook:
        sender = AlertSender(lambda: outbox, hook.url, clock=lambda: now[0])
        hook.status = 503
        assert sender.flush() == {"sent": 0, "failed": 3}
        assert sender.flush() == {"sent": 0, "failed": 0}  # not due again yet
        now[0] = T0 + timedelta(seconds=6)
        assert sender.flush() == {"sent": 0, "failed": 3}  # tried again: next wait is longer
        now[0] = T0 + timedelta(seconds=12)
        assert sender.flush() == {"sent": 0, "failed": 0}
        hook.status = 200
        now[0] = T0 + timedelta(seconds=20)
        assert sender.flush() == {"sent": 3, "failed": 0}
        assert sender.flush() == {"sent": 0, "failed": 0}
    assert hook.attempts == 3
    (body,) = hook.bodies
    assert body["event"] == "new_copies" and len(body["copies"]) == 3
    assert outbox.counts() == {"pending": 0, "sending": 0, "sent": 3}


def test_two_senders_never_send_the_same_alert(runtime):
    outbox = AlertOutbox(runtime.db)
    outbox.add(alert_documents([("http://a.test/1", match("书/0001"))], T0), T0)
    assert len(outbox.claim("one", T0)) == 1
    assert outbox.claim("two", T0) == []
    # A claim abandoned by a sender that died is due again after a while.
    assert len(outbox.claim("two", T0 + timedelta(minutes=6))) == 1
