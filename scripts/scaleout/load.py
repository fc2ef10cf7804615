"""Concurrent streaming clients: each sends /v1/completions with
"stream": true, one request after another, and records every request's
outcome: ok (200 and a stream that ends with [DONE]), failed (another status,
or no answer) or cut (a stream that stopped before [DONE]), with the replica
that served it and its start and end times."""
import http.client
import json
import threading
import time


class Outcome:
    def __init__(self, client, number, started):
        self.client = client
        self.number = number
        self.started = started
        self.ended = None
        self.status = None
        self.server = ""
        self.result = "failed"  # ok, failed, cut
        self.detail = ""
        self.tokens = 0


def one_request(host, port, client, number, max_tokens, timeout):
    outcome = Outcome(client, number, time.monotonic())
    body = json.dumps({"prompt": f"Client {client} asks question {number}: tell a story",
                       "max_tokens": max_tokens, "stream": True,
                       "stream_options": {"include_usage": True}})
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        connection.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        outcome.status = response.status
        outcome.server = response.getheader("X-Served-By", "")
        if response.status != 200:
            outcome.detail = response.read(300).decode(errors="replace")
            return outcome
        done = False
        for raw in response:
            line = raw.decode().strip()
            if line == "data: [DONE]":
                done = True
            elif line.startswith("data: "):
                usage = json.loads(line[6:]).get("usage")
                if usage:
                    outcome.tokens = usage.get("completion_tokens", 0)
        outcome.result = "ok" if done else "cut"
        if not done:
            outcome.detail = "the stream ended before [DONE]"
    except (OSError, http.client.HTTPException, ValueError) as error:
        # A stream that had begun and then broke is cut; no answer is a failure.
        outcome.result = "cut" if outcome.status == 200 else "failed"
        outcome.detail = f"{type(error).__name__}: {error}"
    finally:
        outcome.ended = time.monotonic()
        connection.close()
    return outcome


class Load:
    """`clients` threads sending requests until stop()."""

    def __init__(self, host, port, clients, max_tokens, timeout=60.0):
        self.host, self.port = host, port
        self.clients = clients
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.outcomes = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = []

    def _client(self, client):
        number = 0
        while not self._stop.is_set():
            outcome = one_request(self.host, self.port, client, number, self.max_tokens,
                                  self.timeout)
            number += 1
            with self._lock:
                self.outcomes.append(outcome)

    def start(self):
        for client in range(self.clients):
            thread = threading.Thread(target=self._client, args=(client,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self):
        """Lets every request in flight finish; returns the outcomes."""
        self._stop.set()
        for thread in self._threads:
            thread.join()
        return list(self.outcomes)


def summary(outcomes):
    counts = {"ok": 0, "failed": 0, "cut": 0}
    for outcome in outcomes:
        counts[outcome.result] += 1
    return counts


def burst(host, port, count, max_tokens, timeout=120.0):
    """`count` requests at once (not streamed); their outcomes."""
    results = [None] * count

    def send(i):
        outcome = Outcome(-1, i, time.monotonic())
        body = json.dumps({"prompt": f"Burst request {i}", "max_tokens": max_tokens})
        connection = http.client.HTTPConnection(host, port, timeout=timeout)
        try:
            connection.request("POST", "/v1/completions", body,
                               {"Content-Type": "application/json"})
            response = connection.getresponse()
            response.read()
            outcome.status = response.status
            outcome.result = "ok" if response.status == 200 else "failed"
        except (OSError, http.client.HTTPException) as error:
            outcome.detail = f"{type(error).__name__}: {error}"
        finally:
            outcome.ended = time.monotonic()
            connection.close()
        results[i] = outcome

    threads = [threading.Thread(target=send, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    return threads, results
