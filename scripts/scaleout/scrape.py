"""Scrapes every replica's /metrics every 50 ms, as the inference gateway's
endpoint picker does, for the whole run: the time of each answer, each page
parsed as the Prometheus text format (every sample line a name, optional
labels and a number), the KV share checked to stay in [0, 1], and every few
seconds a page per replica handed to `promtool check metrics`."""
import http.client
import math
import re
import subprocess
import threading
import time

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$')
# promtool lints vLLM's names too: a colon is a recording rule's mark, which
# vLLM uses anyway. That lint alone is allowed, on vllm: names only.
VLLM_LINT = re.compile(r"^vllm:\S+ metric names should not contain ':'$")


def parse(page):
    """{name: value} of unlabelled samples and the problems found."""
    values, problems = {}, []
    for line in page.splitlines():
        if not line or line.startswith("#"):
            continue
        match = SAMPLE.match(line)
        if not match:
            problems.append(f"not a sample line: {line!r}")
            continue
        try:
            value = float(match.group(3))
        except ValueError:
            problems.append(f"not a number: {line!r}")
            continue
        if match.group(2) is None:
            values[match.group(1)] = value
    return values, problems


def promtool(page):
    """promtool's complaints about `page`, less the allowed vLLM lint."""
    result = subprocess.run(["promtool", "check", "metrics"], input=page.encode(),
                            capture_output=True)
    lines = (result.stdout + result.stderr).decode().splitlines()
    complaints = [line for line in lines if line.strip() and not VLLM_LINT.match(line.strip())]
    if result.returncode != 0 and not complaints and not lines:
        complaints = [f"promtool exited {result.returncode}"]
    return complaints


class Scraper:
    def __init__(self, pods, interval=0.05, promtool_every=2.0):
        self.pods = pods
        self.interval = interval
        self.promtool_every = promtool_every
        self.latencies = []  # seconds, answered scrapes
        self.unanswered = 0  # a replica restarting or killed
        self.problems = []
        self.kv = []  # every KV share seen
        self.promtool_pages = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = []

    def _scrape(self, pod):
        last_lint = 0.0
        connection = None
        while not self._stop.is_set():
            begun = time.monotonic()
            try:
                if connection is None:
                    connection = http.client.HTTPConnection(pod.address, pod.port, timeout=2)
                connection.request("GET", "/metrics")
                response = connection.getresponse()
                page = response.read().decode()
                took = time.monotonic() - begun
                if response.getheader("Connection", "").lower() == "close":
                    connection.close()
                    connection = None
            except (OSError, http.client.HTTPException):
                if connection is not None:
                    connection.close()
                connection = None
                with self._lock:
                    self.unanswered += 1
                time.sleep(self.interval)
                continue
            values, problems = parse(page)
            share = values.get("bonsai_kv_cache_usage_ratio")
            if response.status != 200:
                problems.append(f"status {response.status}")
            elif share is None or math.isnan(share) or not 0.0 <= share <= 1.0:
                problems.append(f"bonsai_kv_cache_usage_ratio is {share}")
            lint = []
            if response.status == 200 and begun - last_lint >= self.promtool_every:
                last_lint = begun
                lint = promtool(page)
            with self._lock:
                self.latencies.append(took)
                if share is not None:
                    self.kv.append(share)
                if lint or begun == last_lint:
                    self.promtool_pages += 1
                self.problems += [f"{pod.name}: {p}" for p in problems + lint]
            time.sleep(max(0.0, self.interval - (time.monotonic() - begun)))

    def start(self):
        for pod in self.pods:
            thread = threading.Thread(target=self._scrape, args=(pod,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self):
        self._stop.set()
        for thread in self._threads:
            thread.join()


def percentile(values, fraction):
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(math.ceil(fraction * len(ordered))) - 1)]
