"""The real server: Debian's nginx in the server namespace, with its own configuration,
pid file, logs and temp paths in the run's work directory (nothing under /etc or /var),
serving one body per response size of the scenario."""

from __future__ import annotations

import shutil
from pathlib import Path

from shortflow.host import sockets
from shortflow.host.daemon import DEVNULL
from shortflow.testbed import names as N
from shortflow.testbed.system import TestbedError, in_ns
from shortflow.testbed.topology import Topology

CONFIG = """\
daemon off;
master_process on;
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    server_tokens off;
    default_type application/octet-stream;
    client_body_temp_path {dir}/tmp/body;
    proxy_temp_path {dir}/tmp/proxy;
    fastcgi_temp_path {dir}/tmp/fastcgi;
    uwsgi_temp_path {dir}/tmp/uwsgi;
    scgi_temp_path {dir}/tmp/scgi;
    sendfile on;
    # Headers and body leave in full segments (TCP_CORK), as the simulator's one write:
    # without it the headers go alone and a response that fits the initial window by the
    # scenario's count needs one segment more than it has.
    tcp_nopush on;
    # One request per connection, as in the scenario's workload; the server closes.
    keepalive_timeout 0;
    # Scenarios' requests go up to tens of kB, padded in one header line: nginx's default
    # 8 kB header buffers would answer them with an error page instead of the body.
    large_client_header_buffers 4 64k;
    server {{
        listen {ip}:{port} backlog=256;
        root {dir}/www;
    }}
}}
"""


def body_path(size: int) -> str:
    """URL path of the body of `size` bytes."""
    return f"/body-{size}"


class Nginx:
    def __init__(self, topo: Topology, sizes: list[int], port: int = N.HTTP_PORT) -> None:
        self.topo, self.sizes, self.port = topo, sizes, port
        self.dir = topo.workdir / "nginx"

    def start(self) -> None:
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        if not Path(binary).exists():
            raise TestbedError("nginx not found: install Debian's nginx-light (`make deps`)")
        www = self.dir / "www"
        for d in (www, self.dir / "tmp"):
            d.mkdir(parents=True, exist_ok=True)
        for p in (self.dir, www):
            p.chmod(0o755)
        for size in self.sizes:
            f = www / body_path(size).lstrip("/")
            # A sparse file of the exact size: nothing built in memory nor written to disk,
            # whatever the response size (nginx sends its zeros like any other bytes).
            with f.open("wb") as body:
                body.truncate(size)
            f.chmod(0o644)
        conf = self.dir / "nginx.conf"
        conf.write_text(CONFIG.format(dir=self.dir, ip=N.SERVER_IP, port=self.port))
        # -e: the error log before the configuration is read (else /var/log/nginx).
        args = [binary, "-p", str(self.dir), "-e", str(self.dir / "error.log"), "-c", str(conf)]
        in_ns(self.topo.names.ns("server"), *args, "-t")
        self.daemon = self.topo.daemon("nginx", "server", args, stdout=DEVNULL)
        ns = self.topo.names.ns("server")
        self.daemon.ready_when(lambda: sockets.listening(self.port, ns), f"listen on {N.SERVER_IP}:{self.port}")
