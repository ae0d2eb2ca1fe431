"""Keep each response's HTTP exchange as it came off the connection, for the evidence.

Placed just before Scrapy's ``HttpCompressionMiddleware`` (590) in the response's way back, so it
sees the body still compressed as the server sent it, after redirects were followed (600) and
retries made (950): what it keeps is the final answer, byte for byte. The exchange
(:class:`tracker.enforcement.capture.Exchange`: the request headers sent, status, headers, body,
time, IP address) is kept by the request object (not in its meta: nothing to serialise) until
the spider hands it on with the page; it holds references, not copies, and is written out only
if the page matches.
"""

from __future__ import annotations

from scrapy.http import Request, Response

from tracker.enforcement.capture import Exchange, keep_exchange


class ExchangeMiddleware:
    def process_response(self, request: Request, response: Response) -> Response:
        keep_exchange(request, Exchange.of(request, response))
        return response
