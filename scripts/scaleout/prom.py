"""Prometheus (Debian's) scraping the pods, and instant queries through its
HTTP API: what a KEDA Prometheus trigger would read."""
import json
import os
import subprocess
import time
import urllib.parse
import urllib.request

CONFIG = """global:
  scrape_interval: 250ms
  scrape_timeout: 200ms
scrape_configs:
  - job_name: bonsai
    static_configs:
      - targets: [{targets}]
"""


class Prometheus:
    def __init__(self, pods, port, work_dir):
        self.port = port
        self.work_dir = work_dir
        self.config_path = os.path.join(work_dir, "prometheus.yml")
        self.log_path = os.path.join(work_dir, "prometheus.log")
        targets = ", ".join(f"'{pod.address}:{pod.port}'" for pod in pods)
        with open(self.config_path, "w") as out:
            out.write(CONFIG.format(targets=targets))
        self.process = None

    def start(self):
        subprocess.run(["promtool", "check", "config", self.config_path], check=True,
                       stdout=subprocess.DEVNULL)
        log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            ["prometheus", f"--config.file={self.config_path}",
             f"--storage.tsdb.path={os.path.join(self.work_dir, 'tsdb')}",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"prometheus exited (see {self.log_path})")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=1):
                    return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("prometheus was not ready within 60 s")

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait()

    def query(self, expression):
        """The instant vector of `expression`: [(labels, value)]."""
        url = (f"http://127.0.0.1:{self.port}/api/v1/query?"
               + urllib.parse.urlencode({"query": expression}))
        with urllib.request.urlopen(url, timeout=5) as response:
            answer = json.load(response)
        if answer.get("status") != "success":
            raise RuntimeError(f"prometheus: {expression}: {answer}")
        return [(r["metric"], float(r["value"][1])) for r in answer["data"]["result"]]

    def scalar(self, expression):
        """The single value of `expression` (None when it has none)."""
        result = self.query(expression)
        return result[0][1] if result else None
