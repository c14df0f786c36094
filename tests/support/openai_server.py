"""A small OpenAI-compatible server on 127.0.0.1 for tests: embeddings and chat completions.

Embeddings are a hashed bag of words (64 dimensions: each lowercased word adds 1 to the
dimension its sha256 picks), so texts about different things get distant vectors and a topic
shift is detectable, deterministically. Chat answers come from ``server.chat_answers``, a list the
test fills: each item is consumed by one request and is either a string (the reply text), or a
tuple ``("status", code)``, ``("sleep", seconds, reply)``, ``("drop",)`` (close the connection
without answering), ``("raw", body)`` (any body, e.g. not JSON), ``("redirect", code, location)``,
``("trickle", seconds)`` (the normal answer, one byte every ``seconds``), ``("endless",)`` (a
chunked body that never ends) or ``("echo", code)`` (answer ``code`` with the request's headers
and body in the body, as a careless server's error page does). An empty list answers
``{"boundaries": []}``. ``server.embedding_faults`` works the same way for embeddings (statuses, sleeps, drops).
``server.embedding_batch_noise`` (default 0) adds that much times the request's number of texts
to every component, like a server whose vectors shift with the batch. ``server.chat_rules`` maps a marker string to such an item: a chat request whose body holds the
marker gets it (not consumed), so a job's documents can be given different answers.
Every request is recorded in ``server.requests`` as ``(path, headers, body)``.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import cast

DIMENSIONS = 64


def bag_of_words(text: str) -> list[float]:
    """The server's embedding of ``text`` (exposed so tests can compute expected distances)."""
    vector = [0.0] * DIMENSIONS
    for word in re.findall(r"\w+", text.lower()):
        vector[int.from_bytes(hashlib.sha256(word.encode("utf-8")).digest()[:4], "big") % DIMENSIONS] += 1.0
    return vector


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet
        pass

    _trickle = 0.0

    @property
    def _fake(self) -> FakeOpenAIServer:
        """The server answered for (``self.server`` is typed as socketserver's base class)."""
        return cast("FakeOpenAIServer", self.server)

    def _send(self, status: int, body: bytes) -> None:
        self._done()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not self._trickle:
            self.wfile.write(body)
            return
        try:
            for i in range(len(body)):
                self.wfile.write(body[i : i + 1])
                self.wfile.flush()
                time.sleep(self._trickle)
        except OSError:  # the client gave up
            self.close_connection = True

    def do_POST(self) -> None:
        server = self._fake
        with server.lock:
            self._generation = server.generation
            server.in_flight[self._generation] = server.in_flight.get(self._generation, 0) + 1
            if self._generation == server.generation:
                server.max_in_flight = max(server.max_in_flight, server.in_flight[self._generation])
        self._counted = True
        try:
            self._answer()
        finally:
            self._done()

    def _done(self) -> None:
        # Before the answer is written: a client may send its next request as soon as it reads it.
        if self._counted:
            self._counted = False
            with self._fake.lock:
                self._fake.in_flight[self._generation] -= 1

    def _answer(self) -> None:
        server = self._fake
        self._trickle = 0.0  # one handler serves every request of a kept-alive connection
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        with server.lock:
            server.requests.append((self.path, dict(self.headers), body))
            queue = server.chat_answers if self.path.endswith("/chat/completions") else server.embedding_faults
            item = queue.pop(0) if queue else None
            if self.path.endswith("/chat/completions"):
                text = raw.decode("utf-8", "replace")
                item = next((v for marker, v in server.chat_rules.items() if marker in text), item)
        if isinstance(item, tuple):
            if item[0] == "status":
                self._send(item[1], b'{"error": {"message": "injected"}}')
                return
            if item[0] == "drop":
                self.close_connection = True
                self.connection.shutdown(2)
                return
            if item[0] == "raw":
                self._send(200, item[1].encode("utf-8"))
                return
            if item[0] == "redirect":
                self._done()
                self.send_response(item[1])
                self.send_header("Location", item[2])
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if item[0] == "echo":
                self._send(
                    item[1],
                    json.dumps(
                        {"error": {"headers": dict(self.headers), "body": raw.decode("utf-8", "replace")}}
                    ).encode(),
                )
                return
            if item[0] == "endless":
                self._done()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                block = b'{"data": [' + b"0," * 32768
                try:
                    while True:  # until the client hangs up
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(block), block))
                except OSError:
                    self.close_connection = True
                return
            if item[0] == "sleep":
                time.sleep(item[1])
                item = item[2] if len(item) > 2 else None
            elif item[0] == "trickle":
                self._trickle = item[1]
                item = None
        if self.path.endswith("/embeddings"):
            texts = body["input"]
            # embedding_batch_noise: vectors shift with the batch's size, as batched GPU inference's do.
            shift = server.embedding_batch_noise * len(texts)
            data = [
                {"object": "embedding", "index": i, "embedding": [x + shift for x in bag_of_words(t)]}
                for i, t in enumerate(texts)
            ]
            self._send(200, json.dumps({"object": "list", "data": data, "model": body.get("model")}).encode())
            return
        if self.path.endswith("/chat/completions"):
            reply = item if isinstance(item, str) else json.dumps({"boundaries": []})
            answer = {"choices": [{"index": 0, "message": {"role": "assistant", "content": reply}}]}
            self._send(200, json.dumps(answer).encode())
            return
        self._send(404, b"{}")


class FakeOpenAIServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.requests: list = []
        self.chat_answers: list = []
        self.chat_rules: dict = {}
        self.embedding_faults: list = []
        self.embedding_batch_noise = 0.0
        # Requests being answered now, by generation (reset() starts a new one, so a slow request
        # left from an earlier test is not counted), and the most at once in this generation.
        self.generation = 0
        self.in_flight: dict[int, int] = {}
        self.max_in_flight = 0
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def start(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()

    def handle_error(self, request, client_address) -> None:
        pass  # a client that timed out closed its end: nothing to report

    def reset(self) -> None:
        with self.lock:
            self.requests.clear()
            self.chat_answers.clear()
            self.chat_rules.clear()
            self.embedding_faults.clear()
            self.embedding_batch_noise = 0.0
            self.max_in_flight = 0
            self.generation += 1
