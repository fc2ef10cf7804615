"""Replicas of `bonsai serve`, each in its own network namespace (a "pod"),
reached from the host over a veth pair. Addresses come from 198.18.0.0/15,
the range set aside for network benchmarks (RFC 2544): nothing outside this
machine answers there, and the namespaces are this run's own."""
import http.client
import os
import signal
import subprocess
import time


def run(*command):
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


class Pod:
    def __init__(self, index, prefix, bonsai, model, args, log_dir):
        self.name = f"r{index}"
        self.netns = f"{prefix}-{self.name}"
        self.host_link = f"{prefix}{index}h"
        self.address = f"198.18.{76 + index}.2"
        self.gateway = f"198.18.{76 + index}.1"
        self.port = 8080
        self.command = [bonsai, "serve", "-m", model, "--host", "0.0.0.0",
                        "--port", str(self.port)] + list(args)
        self.log_path = os.path.join(log_dir, f"{self.name}.log")
        self.process = None
        self.starts = 0

    def create(self):
        run("ip", "netns", "add", self.netns)
        run("ip", "link", "add", self.host_link, "type", "veth", "peer", "name", "eth0",
            "netns", self.netns)
        run("ip", "addr", "add", f"{self.gateway}/24", "dev", self.host_link)
        run("ip", "link", "set", self.host_link, "up")
        inside = ("ip", "netns", "exec", self.netns)
        run(*inside, "ip", "addr", "add", f"{self.address}/24", "dev", "eth0")
        run(*inside, "ip", "link", "set", "eth0", "up")
        run(*inside, "ip", "link", "set", "lo", "up")

    def destroy(self):
        self.kill()
        for command in (("ip", "netns", "del", self.netns), ("ip", "link", "del", self.host_link)):
            subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def start(self):
        """Starts the server (`ip netns exec` execs it: the pid is bonsai's)."""
        self.starts += 1
        log = open(self.log_path, "a")
        log.write(f"--- start {self.starts}\n")
        log.flush()
        self.process = subprocess.Popen(["ip", "netns", "exec", self.netns] + self.command,
                                        stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()

    def health(self, timeout=1.0):
        try:
            connection = http.client.HTTPConnection(self.address, self.port, timeout=timeout)
            connection.request("GET", "/health")
            status = connection.getresponse().status
            connection.close()
            return status
        except OSError:
            return None

    def wait_ready(self, limit=60.0):
        """Seconds until /health answered 200; raises past `limit`."""
        start = time.monotonic()
        while time.monotonic() - start < limit:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.process.returncode} while "
                                   f"starting (see {self.log_path})")
            if self.health() == 200:
                return time.monotonic() - start
            time.sleep(0.02)
        raise RuntimeError(f"{self.name} was not ready within {limit:.0f} s")

    def signal(self, number):
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(number)

    def wait_exit(self, limit=30.0):
        """(seconds, exit code) of the process's end; raises past `limit`."""
        start = time.monotonic()
        try:
            code = self.process.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"{self.name} did not exit within {limit:.0f} s")
        return time.monotonic() - start, code

    def kill(self):
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()
