"""What a connection may cost the uvicorn server before a request reaches the app.

uvicorn bounds idle keep-alive connections (`timeout_keep_alive`) and, with
`limit_concurrency`, answers 503 beyond that many connections and requests; but with httptools
it takes headers of any size (64 KB, 1 MB, 30 MB and 20,000 headers were all accepted) and
never closes a connection that is slow to send its headers (slowloris) or sends nothing at
all. `guarded_protocol` is uvicorn's httptools protocol with both bounded: the bytes of a
request line and headers (431 beyond `max_header_bytes`), and the time from a connection's (or
a request's) first byte to its last header (closed after `header_timeout_s`, with 408 when
something was received). On top, for every route:
- a body must arrive within `body_timeout_s` of its headers (408, or a close once answered);
- once a request is answered, a body still coming in closes the connection: a `GET /health`
  whose Content-Length promised a large body, then sent one byte a second, was never closed, and
  1,023 of them (340 bytes/s in all) made every valid request get 503 for 60 s;
- one client host holds at most `max_per_client` connections (503 beyond), so no one client
  takes the whole `limit_concurrency`;
- with `max_body_bytes`, a body over it is refused (413) as it arrives: Ray Serve's proxy reads
  every body into a queue for its replica whatever the replica does with it (ray_limits.py);
- each refusal is one log line (`refused`), never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from asyncio import TimerHandle

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

DEFAULT_MAX_HEADER_BYTES = 16 * 1024  # request line and headers together
DEFAULT_HEADER_TIMEOUT_S = 10.0
BODY_TIMEOUT_S = 30.0  # a request's body, once its headers are in (app.read_request)
DEFAULT_KEEP_ALIVE_S = 5  # uvicorn's own default, made explicit
DEFAULT_MAX_CONCURRENCY = 1024  # connections and requests of one process (the study: <= 384)
DEFAULT_MAX_PER_CLIENT = DEFAULT_MAX_CONCURRENCY // 2  # above the study's 384 clients of one host
BACKSTOP_S = 2.0  # the app answers a slow body on /predict itself; the protocol, a bit later
REASONS = {408: "Request Timeout", 413: "Content Too Large", 431: "Request Header Fields Too Large"}
REASONS[503] = "Service Unavailable"


def add_limit_arguments(parser: argparse.ArgumentParser) -> None:
    """The options bounding what a connection may cost, the same on every server engine."""
    parser.add_argument("--max-header-bytes", type=int, default=DEFAULT_MAX_HEADER_BYTES)
    parser.add_argument("--header-timeout-s", type=float, default=DEFAULT_HEADER_TIMEOUT_S)
    parser.add_argument("--keep-alive-s", type=int, default=DEFAULT_KEEP_ALIVE_S)
    parser.add_argument("--body-timeout-s", type=float, default=BODY_TIMEOUT_S)
    parser.add_argument(
        "--max-connections-per-client",
        type=int,
        default=DEFAULT_MAX_PER_CLIENT,
        help="connections one client host may hold (503 beyond)",
    )


def refused(status: int | str, client: object, message: str) -> None:
    """The one log line of a refused request or connection."""
    host = client[0] if isinstance(client, tuple) and client else client
    print(f"[serve] refused {status} {host or '-'}: {message}", file=sys.stderr, flush=True)


def guarded_protocol(
    max_header_bytes: int,
    header_timeout_s: float,
    body_timeout_s: float = BODY_TIMEOUT_S,
    max_per_client: int = DEFAULT_MAX_PER_CLIENT,
    max_body_bytes: int | None = None,
) -> type:
    """uvicorn's httptools protocol that closes a connection whose headers are over
    `max_header_bytes` (431) or not complete `header_timeout_s` after their first byte (408),
    or after the connection opened (an idle connection is closed without an answer); whose
    body is not in `body_timeout_s` after its headers (408, or closed when answered already), is
    over `max_body_bytes` (413, or closed), or is still arriving once the request is answered;
    and one over `max_per_client` connections of its client host (503)."""
    per_client: dict[str, int] = {}

    class GuardedHttpToolsProtocol(HttpToolsProtocol):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.host: str | None = None  # counted in per_client while open
            self.body_timer: TimerHandle | None = None
            self.header_bytes = 0
            self.headers_done = 0  # requests whose headers were complete
            self.awaiting_headers = True
            self.header_timer: TimerHandle | None = None
            self.parsed_bytes = 0  # request line and headers the parser found, this request
            self.body_bytes = 0  # this request's body so far
            self.refused = False

        def connection_made(self, transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            host = self.client[0] if self.client else None
            if host is not None and per_client.get(host, 0) >= max_per_client:
                self._refuse(503, f"over {max_per_client} connections from {host}")
                return
            if host is not None:
                per_client[host] = per_client.get(host, 0) + 1
                self.host = host
            self._start_header_clock()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_header_clock()
            self._stop_body_clock()
            if self.host is not None:
                per_client[self.host] -= 1
                if not per_client[self.host]:
                    del per_client[self.host]
                self.host = None
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            if self.refused:  # answered and closing: nothing more is parsed
                return
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
            self.awaiting_headers, self.header_bytes, self.body_bytes = False, 0, 0
            self.headers_done += 1
            self._stop_header_clock()
            self._stop_body_clock()
            self.body_timer = self.loop.call_later(body_timeout_s + BACKSTOP_S, self._body_timeout)
            super().on_headers_complete()

        def on_body(self, body: bytes) -> None:
            self.body_bytes += len(body)
            if max_body_bytes is not None and self.body_bytes > max_body_bytes:
                message = f"request body over the {max_body_bytes}-byte limit"
                if self.cycle is not None and self.cycle.response_started:
                    refused("close", self.client, message)
                    self.refused = True
                    self._stop_body_clock()
                    self.transport.close()
                else:
                    self._refuse(413, message)
                raise httptools.HttpParserError("body over the limit")  # parsing stops here
            super().on_body(body)

        def on_message_complete(self) -> None:
            self._stop_body_clock()
            super().on_message_complete()
            self.awaiting_headers = True  # the next request's; keep-alive's clock until then

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.awaiting_headers and not self.transport.is_closing():
                refused("close", self.client, "body still arriving after the answer")
                self.transport.close()  # nothing more of this request is waited for

        def _stop_body_clock(self) -> None:
            if self.body_timer is not None:
                self.body_timer.cancel()
                self.body_timer = None

        def _body_timeout(self) -> None:
            self.body_timer = None
            if self.transport.is_closing() or self.awaiting_headers:
                return
            message = f"request body not complete within {body_timeout_s + BACKSTOP_S:g} s"
            if self.cycle is not None and self.cycle.response_started:
                refused("close", self.client, message)
                self.transport.close()
            else:
                self._refuse(408, message)

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
            refused(status, self.client, message)
            self.refused = True
            self._stop_header_clock()
            self._stop_body_clock()
            body = json.dumps({"detail": message}).encode()
            head = (
                f"HTTP/1.1 {status} {REASONS[status]}\r\ncontent-type: application/json\r\n"
                f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
            )
            self.transport.write(head.encode() + body)
            self.transport.close()

    return GuardedHttpToolsProtocol
