"""HAProxy in front of the pods, configured by deploy/haproxy.cfg (the
recipe of docs/deploy.md), and its runtime API (drain, ready, state and
sessions per server)."""
import os
import re
import socket
import subprocess
import time

RECIPE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy",
                      "haproxy.cfg")


def config_from_recipe(recipe, socket_path, port, parallel, servers):
    """deploy/haproxy.cfg with this run's socket, port, maxconn and replicas,
    and a header naming the replica that answered (the test's bookkeeping)."""
    text = re.sub(r"stats socket \S+", f"stats socket {socket_path}", recipe)
    text = re.sub(r"\n    bind \S+", f"\n    bind 127.0.0.1:{port}", text)
    text = re.sub(r"(default-server .*) maxconn \d+", rf"\1 maxconn {parallel}", text)
    text = re.sub(r"\n    server .*", "", text)
    text = text.replace("    balance leastconn\n",
                        "    balance leastconn\n    http-response set-header X-Served-By %s\n")
    return text.rstrip("\n") + "\n" + servers + "\n"


class Balancer:
    def __init__(self, pods, parallel, port, work_dir):
        self.port = port
        self.socket_path = os.path.join(work_dir, "haproxy.sock")
        self.config_path = os.path.join(work_dir, "haproxy.cfg")
        self.log_path = os.path.join(work_dir, "haproxy.log")
        servers = "\n".join(f"    server {pod.name} {pod.address}:{pod.port} check" for pod in pods)
        with open(RECIPE) as recipe:
            text = config_from_recipe(recipe.read(), self.socket_path, port, parallel, servers)
        with open(self.config_path, "w") as out:
            out.write(text)
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
