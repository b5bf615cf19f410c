"""What a connection may cost the uvicorn server before a request reaches the app.

uvicorn bounds idle keep-alive connections (`timeout_keep_alive`) and, with
`limit_concurrency`, answers 503 beyond that many connections and requests; but with httptools
it takes headers of any size (64 KB, 1 MB, 30 MB and 20,000 headers were all accepted) and
never closes a connection that is slow to send its headers (slowloris) or sends nothing at
all. `guarded_protocol` is uvicorn's httptools protocol with both bounded: the bytes of a
request line and headers (431 beyond `max_header_bytes`), and the time from a connection's (or
a request's) first byte to its last header (closed after `header_timeout_s`, with 408 when
something was received).
"""

from __future__ import annotations

import json
from asyncio import TimerHandle

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

DEFAULT_MAX_HEADER_BYTES = 16 * 1024  # request line and headers together
DEFAULT_HEADER_TIMEOUT_S = 10.0
BODY_TIMEOUT_S = 30.0  # a request's body, once its headers are in (app.read_request)
DEFAULT_KEEP_ALIVE_S = 5  # uvicorn's own default, made explicit
DEFAULT_MAX_CONCURRENCY = 1024  # connections and requests of one process (the study: <= 384)
REASONS = {408: "Request Timeout", 431: "Request Header Fields Too Large"}


def guarded_protocol(max_header_bytes: int, header_timeout_s: float) -> type:
    """uvicorn's httptools protocol that closes a connection whose headers are over
    `max_header_bytes` (431) or not complete `header_timeout_s` after their first byte (408),
    or after the connection opened (an idle connection is closed without an answer)."""

    class GuardedHttpToolsProtocol(HttpToolsProtocol):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.header_bytes = 0
            self.headers_done = 0  # requests whose headers were complete
            self.awaiting_headers = True
            self.header_timer: TimerHandle | None = None
            self.parsed_bytes = 0  # request line and headers the parser found, this request
            self.refused = False

        def connection_made(self, transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._start_header_clock()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_header_clock()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            done, awaiting = self.headers_done, self.awaiting_headers
            super().data_received(data)
            if self.refused:
                return
            if awaiting and self.awaiting_headers and self.headers_done == done:
                self.header_bytes += len(data)  # within one request's headers: all header
                if self.transport.is_closing():
                    return
                if self.header_bytes > max_header_bytes:
                    self._refuse(431, f"request headers over the {max_header_bytes}-byte limit")

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self.parsed_bytes = 0
            self._start_header_clock()

        def on_url(self, url: bytes) -> None:
            self._count(len(url))
            super().on_url(url)

        def on_header(self, name: bytes, value: bytes) -> None:
            self._count(len(name) + len(value) + 4)
            super().on_header(name, value)

        def _count(self, size: int) -> None:
            """Headers complete within one read are counted as the parser finds them; over
            the limit the request is answered 431 and parsing stops."""
            self.parsed_bytes += size
            if self.parsed_bytes > max_header_bytes:
                self._refuse(431, f"request headers over the {max_header_bytes}-byte limit")
                raise httptools.HttpParserError("headers over the limit")

        def send_400_response(self, msg: str) -> None:
            if not self.refused:  # a parser error of its own, not the refusal above
                super().send_400_response(msg)

        def on_headers_complete(self) -> None:
            self.awaiting_headers, self.header_bytes = False, 0
            self.headers_done += 1
            self._stop_header_clock()
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            super().on_message_complete()
            self.awaiting_headers = True  # the next request's; keep-alive's clock until then

        def _start_header_clock(self) -> None:
            if self.header_timer is None:
                self.header_timer = self.loop.call_later(header_timeout_s, self._header_timeout)

        def _stop_header_clock(self) -> None:
            if self.header_timer is not None:
                self.header_timer.cancel()
                self.header_timer = None

        def _header_timeout(self) -> None:
            self.header_timer = None
            if self.transport.is_closing() or not self.awaiting_headers:
                return
            if self.header_bytes:
                self._refuse(408, f"request headers not complete within {header_timeout_s:g} s")
            else:
                self.transport.close()

        def _refuse(self, status: int, message: str) -> None:
            self.refused = True
            self._stop_header_clock()
            body = json.dumps({"detail": message}).encode()
            head = (
                f"HTTP/1.1 {status} {REASONS[status]}\r\ncontent-type: application/json\r\n"
                f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
            )
            self.transport.write(head.encode() + body)
            self.transport.close()

    return GuardedHttpToolsProtocol
