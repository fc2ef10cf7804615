"""HAProxy in front of the pods, as docs/deploy.md's recipe has it (least
connections, maxconn = --parallel per replica so that the balancer holds
the queue, /health checks, retries on 503 and on refused connections), and
its runtime API (drain, ready, state and sessions per server)."""
import os
import socket
import subprocess
import time

CONFIG = """global
    maxconn 2000
    stats socket {socket} mode 600 level admin
    log stdout format raw local0 info

defaults
    mode http
    log global
    option httplog
    option dontlog-normal
    timeout connect 1s
    timeout client 60s
    timeout server 60s
    timeout queue 30s
    # A request the replica refused (503 while stopping) or never answered
    # (the connection refused or dropped) goes to another replica, if one has
    # room; a stream that has started is never replayed.
    retries 3
    option redispatch 1
    # Retries replay the request: HAProxy must hold all of it first.
    option http-buffer-request
    retry-on conn-failure empty-response junk-response 503

frontend bonsai_in
    bind 127.0.0.1:{port}
    default_backend bonsai

backend bonsai
    balance leastconn
    option httpchk
    http-check send meth GET uri /health ver HTTP/1.1 hdr Host localhost
    http-check expect status 200
    # Which replica answered, for the test's bookkeeping.
    http-response set-header X-Served-By %s
    # A 503 or a dropped connection takes a replica out at once, before its
    # next health check.
    default-server inter 200ms fall 2 rise 2 maxconn {parallel} observe layer7 error-limit 1 on-error mark-down
{servers}
"""


class Balancer:
    def __init__(self, pods, parallel, port, work_dir):
        self.port = port
        self.socket_path = os.path.join(work_dir, "haproxy.sock")
        self.config_path = os.path.join(work_dir, "haproxy.cfg")
        self.log_path = os.path.join(work_dir, "haproxy.log")
        servers = "\n".join(f"    server {pod.name} {pod.address}:{pod.port} check" for pod in pods)
        with open(self.config_path, "w") as out:
            out.write(CONFIG.format(socket=self.socket_path, port=port, parallel=parallel,
                                    servers=servers))
        self.process = None

    def start(self):
        subprocess.run(["haproxy", "-c", "-q", "-f", self.config_path], check=True)
        log = open(self.log_path, "w")
        self.process = subprocess.Popen(["haproxy", "-db", "-f", self.config_path],
                                        stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + 10
        while not os.path.exists(self.socket_path):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError(f"haproxy did not start (see {self.log_path})")
            time.sleep(0.05)

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait()

    def command(self, line):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(self.socket_path)
            s.sendall((line + "\n").encode())
            chunks = []
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
        return b"".join(chunks).decode()

    def servers(self):
        """{name: {"status": ..., "scur": ..., "qcur": ...}} from `show stat`."""
        lines = self.command("show stat").splitlines()
        fields = lines[0].lstrip("# ").split(",")
        table = {}
        for line in lines[1:]:
            row = dict(zip(fields, line.split(",")))
            if row.get("pxname") == "bonsai" and row.get("svname") not in ("FRONTEND", "BACKEND"):
                table[row["svname"]] = row
            if row.get("pxname") == "bonsai" and row.get("svname") == "BACKEND":
                table["BACKEND"] = row
        return table

    def set_state(self, server, state):
        self.command(f"set server bonsai/{server} state {state}")

    def wait_for(self, server, predicate, limit=30.0, step=0.01):
        """Seconds until predicate(row of `server`) holds; raises past `limit`."""
        start = time.monotonic()
        while time.monotonic() - start < limit:
            if predicate(self.servers()[server]):
                return time.monotonic() - start
            time.sleep(step)
        raise RuntimeError(f"haproxy: {server} did not reach the state within {limit:.0f} s: "
                           f"{self.servers()[server].get('status')}")
