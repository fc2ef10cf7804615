#!/usr/bin/env python3
"""The scale-out test (scripts/test-scaleout.sh runs it as root): three
`bonsai serve` pods behind HAProxy, scraped by Prometheus and by an
endpoint-picker-like scraper, under a steady load of streaming clients:
  1. a rolling restart of every pod (drain, SIGTERM, start, ready): no failed
     request, no cut stream;
  2. SIGTERM without a drain: no failed request (the balancer retries);
  3. SIGKILL of one pod: no failure but the requests it was running, and out
     of rotation within a second;
  4. overload: the queue a KEDA trigger reads rises above 0, then falls to 0;
  5. every scrape parses, the KV share stays in [0, 1], scrape p99 < 50 ms.
Prints each figure, and one line per check; exit 0 when all pass, 1 if not."""
import argparse
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from balancer import Balancer  # noqa: E402
from load import Load, burst, summary  # noqa: E402
from pods import Pod  # noqa: E402
from prom import Prometheus  # noqa: E402
from scrape import Scraper, percentile  # noqa: E402

PARALLEL = 2
GRACE_S = 10
KEDA_QUEUED = "sum(bonsai_queue_depth)"
KEDA_QUEUED_AND_RUNNING = "sum(bonsai_queue_depth) + sum(bonsai_slots_busy)"


class Checks:
    def __init__(self):
        self.failed = []

    def check(self, ok, what):
        print(f"{'PASS' if ok else 'FAIL'}: {what}", flush=True)
        if not ok:
            self.failed.append(what)


def say(text):
    print(f"[{time.monotonic() - START:6.1f} s] {text}", flush=True)


def up(balancer, name):
    return balancer.wait_for(name, lambda row: row["status"].startswith("UP"))


def pods_of(balancer):
    return [name for name in balancer.servers() if name != "BACKEND"]


def retried(balancer):
    """HAProxy's retries and redispatches so far, over the backend."""
    row = balancer.servers()["BACKEND"]
    return int(row["wretr"] or 0), int(row["wredis"] or 0)


def describe(outcomes):
    return "; ".join(f"{o.result} {o.status} on {o.server or '?'}: {o.detail}"
                     for o in outcomes if o.result != "ok")[:2000]


def rolling_restart(pods, balancer, load_args, checks):
    load = Load(*load_args)
    load.start()
    time.sleep(1.0)
    for pod in pods:
        balancer.set_state(pod.name, "drain")
        drained = balancer.wait_for(pod.name, lambda row: row["scur"] == "0")
        pod.signal(signal.SIGTERM)
        exited, code = pod.wait_exit()
        pod.start()
        ready = pod.wait_ready()
        balancer.set_state(pod.name, "ready")
        back = up(balancer, pod.name)
        say(f"rolling restart {pod.name}: drained in {drained:.2f} s, exited {code} in "
            f"{exited:.2f} s, ready in {ready:.2f} s, in rotation {back:.2f} s later")
        checks.check(code == 0, f"{pod.name} exits 0 on SIGTERM (got {code})")
    time.sleep(1.0)
    outcomes = load.stop()
    counts = summary(outcomes)
    say(f"rolling restart: {counts['ok']} requests ok, {counts['failed']} failed, "
        f"{counts['cut']} streams cut")
    checks.check(counts["failed"] == 0 and counts["cut"] == 0 and counts["ok"] > 0,
                 f"rolling restart: no failed request, no cut stream ({describe(outcomes)})")


def sigterm_without_drain(pod, balancer, load_args, checks):
    # The balancer's health check is paused for this pod, as when a
    # readiness probe has not yet seen the 503: requests keep arriving while
    # it stops, and only the balancer's retries keep them from failing. A
    # retry needs a free slot elsewhere (HAProxy falls back to the replica it
    # avoids when the others are full), so this load leaves one per pod.
    # Long streams keep the pod stopping (finishing them) for a while.
    host, port, clients, tokens = load_args
    load = Load(host, port, clients - len(pods_of(balancer)), 1800)
    load.start()
    time.sleep(1.5)
    begun = time.monotonic()
    retries_before = retried(balancer)
    refused_before = int(balancer.servers()[pod.name]["hrsp_5xx"] or 0)
    balancer.command(f"disable health bonsai/{pod.name}")
    pod.signal(signal.SIGTERM)
    exited, code = pod.wait_exit()
    pod.start()
    ready = pod.wait_ready()
    balancer.command(f"enable health bonsai/{pod.name}")
    back = up(balancer, pod.name)
    time.sleep(1.0)
    outcomes = load.stop()
    counts = summary(outcomes)
    retries, redispatches = (a - b for a, b in zip(retried(balancer), retries_before))
    refused = int(balancer.servers()[pod.name]["hrsp_5xx"] or 0) - refused_before
    say(f"SIGTERM {pod.name} without a drain (its health check paused): exited {code} "
        f"{exited:.2f} s after the signal, ready {ready:.2f} s after restart, back in rotation "
        f"{back:.2f} s later; {counts['ok']} ok, {counts['failed']} failed, {counts['cut']} cut; "
        f"{refused} answers 5xx from {pod.name}, HAProxy retried {retries} times, redispatched "
        f"{redispatches} "
        f"({time.monotonic() - begun:.1f} s)")
    checks.check(counts["failed"] == 0 and counts["cut"] == 0,
                 f"SIGTERM without a drain: no failed request ({describe(outcomes)})")


def sigkill(pod, balancer, load_args, checks):
    load = Load(*load_args)
    load.start()
    time.sleep(1.5)
    running = int(balancer.servers()[pod.name]["scur"])
    killed_at = time.monotonic()
    pod.kill()
    out = balancer.wait_for(pod.name, lambda row: not row["status"].startswith("UP"),
                            step=0.005)
    time.sleep(1.0)
    pod.start()
    pod.wait_ready()
    up(balancer, pod.name)
    time.sleep(0.5)
    outcomes = load.stop()
    counts = summary(outcomes)
    lost = [o for o in outcomes if o.result != "ok"]
    in_flight = [o for o in lost
                 if o.server == pod.name and o.started <= killed_at <= o.ended]
    say(f"SIGKILL {pod.name}: {running} requests running on it just before, out of rotation "
        f"{out * 1000:.0f} ms after the kill; {counts['ok']} ok, {counts['failed']} failed, "
        f"{counts['cut']} cut")
    checks.check(out <= 1.0, f"SIGKILL: out of rotation within a second ({out:.3f} s)")
    checks.check(len(lost) == len(in_flight) and len(lost) <= PARALLEL,
                 f"SIGKILL: the only failures are requests it was running "
                 f"({len(lost)} lost, {len(in_flight)} of them in flight on {pod.name}, at most "
                 f"{PARALLEL} can run there; {describe(outcomes)})")


def overload(pods, balancer, prometheus, checks):
    # Straight to the pods, as a Kubernetes Service sends them: the queue
    # builds in bonsai, where the KEDA trigger reads it.
    per_pod = 4 * PARALLEL
    threads, results = [], []
    for pod in pods:
        t, r = burst(pod.address, pod.port, per_pod, 300)
        threads += t
        results.append(r)
    peak = peak_total = 0.0
    while any(t.is_alive() for t in threads):
        peak = max(peak, prometheus.scalar(KEDA_QUEUED) or 0.0)
        peak_total = max(peak_total, prometheus.scalar(KEDA_QUEUED_AND_RUNNING) or 0.0)
        time.sleep(0.1)
    for t in threads:
        t.join()
    deadline = time.monotonic() + 10
    after = prometheus.scalar(KEDA_QUEUED)
    while after != 0 and time.monotonic() < deadline:
        time.sleep(0.1)
        after = prometheus.scalar(KEDA_QUEUED)
    ok = sum(1 for r in results for o in r if o.result == "ok")
    say(f"overload, {per_pod} requests at once to each pod: '{KEDA_QUEUED}' peaked at {peak:.0f}, "
        f"'{KEDA_QUEUED_AND_RUNNING}' at {peak_total:.0f}, then {after}; {ok} of "
        f"{per_pod * len(pods)} answered 200")
    checks.check(peak > 0 and after == 0,
                 f"overload: the KEDA queue figure rose above 0 ({peak:.0f}) and fell to 0 ({after})")
    # Through HAProxy, maxconn = --parallel keeps the queue in the balancer.
    t, r = burst("127.0.0.1", balancer.port, per_pod * len(pods), 300)
    held = queued_in_bonsai = 0
    while any(x.is_alive() for x in t):
        held = max(held, int(balancer.servers()["BACKEND"]["qcur"] or 0))
        queued_in_bonsai = max(queued_in_bonsai, prometheus.scalar(KEDA_QUEUED) or 0.0)
        time.sleep(0.05)
    for x in t:
        x.join()
    say(f"overload through HAProxy ({per_pod * len(pods)} at once): HAProxy's queue peaked at "
        f"{held}, bonsai's at {queued_in_bonsai:.0f} (maxconn = --parallel holds it in the balancer)")
    checks.check(all(o.result == "ok" for o in r), "overload through HAProxy: every request answered")


def scrapes(scraper, prometheus, checks):
    lat = [x * 1000 for x in scraper.latencies]
    p50, p99 = percentile(lat, 0.50), percentile(lat, 0.99)
    say(f"scrapes every 50 ms of each pod: {len(lat)} answered ({scraper.unanswered} not, while a "
        f"pod was down), p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {max(lat):.1f} ms; KV share "
        f"{min(scraper.kv):.3f}..{max(scraper.kv):.3f}; promtool check metrics on "
        f"{scraper.promtool_pages} pages")
    checks.check(not scraper.problems, "every scrape parses, KV share in [0, 1], promtool passes "
                 f"({'; '.join(scraper.problems[:5])})")
    checks.check(p99 < 50.0, f"scrape p99 under 50 ms ({p99:.1f} ms)")
    checks.check(max(scraper.kv) > 0, "the KV share moved under load")
    up_targets = prometheus.scalar("sum(up)")
    vllm = prometheus.query("vllm:num_requests_running")
    ratio_max = prometheus.scalar("max(max_over_time(bonsai_kv_cache_usage_ratio[15m]))")
    say(f"Prometheus: {up_targets} of 3 targets up, KV share max over the run {ratio_max}, "
        f"vLLM-named series from {len(vllm)} pod(s)")
    checks.check(up_targets == 3 and len(vllm) == 1 and ratio_max is not None and ratio_max <= 1,
                 "Prometheus scrapes every pod, vLLM's names included")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bonsai", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--work", required=True, help="a folder for configs, logs and the TSDB")
    parser.add_argument("--prefix", default="bonsai-so")
    parser.add_argument("--clients", type=int, default=6)
    parser.add_argument("--max-tokens", type=int, default=800)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    checks = Checks()
    common = ["--parallel", str(PARALLEL), "-t", "1", "-c", "2048", "--queue", "32",
              "--shutdown-grace", str(GRACE_S)]
    pods = [Pod(i, args.prefix, args.bonsai, args.model,
                common + (["--vllm-metrics"] if i == 3 else []), args.work)
            for i in (1, 2, 3)]
    balancer = Balancer(pods, PARALLEL, 18480, args.work)
    prometheus = Prometheus(pods, 19490, args.work)
    scraper = Scraper(pods)
    try:
        for pod in pods:
            pod.create()
            pod.start()
        for pod in pods:
            say(f"{pod.name} at {pod.address} ready in {pod.wait_ready():.2f} s")
        balancer.start()
        for pod in pods:
            up(balancer, pod.name)
        prometheus.start()
        scraper.start()
        say("HAProxy, Prometheus and the scraper are up")
        load_args = ("127.0.0.1", balancer.port, args.clients, args.max_tokens)
        rolling_restart(pods, balancer, load_args, checks)
        sigterm_without_drain(pods[1], balancer, load_args, checks)
        sigkill(pods[2], balancer, load_args, checks)
        overload(pods, balancer, prometheus, checks)
        time.sleep(0.5)
        scraper.stop()
        scrapes(scraper, prometheus, checks)
    except RuntimeError as error:
        checks.check(False, str(error))
    finally:
        scraper.stop()
        prometheus.stop()
        balancer.stop()
        for pod in pods:
            pod.destroy()
    say(f"done in {time.monotonic() - START:.0f} s")
    print(f"scaleout: {len(checks.failed) == 0 and 'all checks passed' or 'failed'}: "
          f"{len(checks.failed)} failed")
    return 1 if checks.failed else 0


START = time.monotonic()
if __name__ == "__main__":
    sys.exit(main())
