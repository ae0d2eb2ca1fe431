"""JSON for the requests a distributed crawl keeps in Redis (scrapy-redis'
``SCHEDULER_SERIALIZER``, a module with ``dumps`` and ``loads``).

scrapy-redis pickles requests by default, and unpickling what a shared server hands back runs
whatever code a forged entry names. A request's dictionary (``Request.to_dict``: URL, callback
*name*, headers, body, meta…) is plain data: it goes as JSON, bytes as ``{"$b64": …}``, and a
request carrying anything else fails loudly when queued instead of being pickled.
"""

from __future__ import annotations

import base64
import json
from typing import Any

BYTES = "$b64"


def _encode(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return {BYTES: base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, dict):
        return {
            str(key) if not isinstance(key, bytes) else key.decode("latin-1"): _encode(v)
            for key, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_encode(item) for item in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise TypeError(f"a queued request cannot carry a {type(value).__name__}")


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {BYTES}:
            return base64.b64decode(value[BYTES])
        return {key: _decode(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_decode(item) for item in value]
    return value


def dumps(request: dict[str, Any]) -> bytes:
    return json.dumps(_encode(request), ensure_ascii=False, separators=(",", ":")).encode()


def loads(data: bytes) -> dict[str, Any]:
    decoded = _decode(json.loads(data))
    if not isinstance(decoded, dict) or not isinstance(decoded.get("url"), str):
        raise ValueError("not a queued request")
    return decoded
