"""A local two-node Ray cluster for the sweep tests, started as a user would start one: `ray start --head` and
`ray start --address` (each with one CPU, `--block`, token authentication on), in a short temporary folder. It is
stopped by signalling only the process groups it started (never `ray stop`, which would stop every Ray process on
the machine)."""
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from icml25nb.sweep import SINGLE_THREAD_ENV


@dataclass
class Cluster:
    "The cluster's address, the environment that holds its token, its node ids; or why it could not start."
    address: str | None = None
    env: dict = field(default_factory=dict)
    nodes: list = field(default_factory=list)
    reason: str = ""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_port(port: int, proc: subprocess.Popen, timeout: float) -> bool:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout and proc.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.5)
    return False


_NODES = """import json, sys, time, ray
ray.init(address=sys.argv[1], log_to_driver=False, configure_logging=False)
t0 = time.monotonic()
alive = []
while time.monotonic() - t0 < float(sys.argv[2]):
    alive = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
    if len(alive) >= 2:
        break
    time.sleep(0.5)
print(json.dumps(alive))
"""


def _stop(procs: list) -> None:
    """SIGTERM to each process group started here (`ray start --block` and the raylet, GCS and helpers it spawned),
    then SIGKILL to whatever is left after 5 s; Ray's task workers, in groups of their own, exit with their raylet."""
    for p in procs:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGTERM)
    for p in procs:
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(10)


@contextlib.contextmanager
def two_node_cluster(log_dir: Path, timeout: float = 180.0):
    "Yield a `Cluster` (a head and one worker node, 1 CPU each, token authentication), stopped afterwards."
    cluster, procs = Cluster(), []
    ray_cli = Path(sys.executable).parent / "ray"
    tmp = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))  # Ray's socket paths must stay short
    try:
        if not ray_cli.exists():
            cluster.reason = f"no `ray` command next to {sys.executable}"
        else:
            port = _free_port()
            env = dict(os.environ, **SINGLE_THREAD_ENV, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(16),
                       RAY_USAGE_STATS_ENABLED="0")
            common = ["--num-cpus=1", "--block", "--node-ip-address=127.0.0.1"]
            with open(log_dir / "head.log", "w") as log:
                head = subprocess.Popen([str(ray_cli), "start", "--head", f"--port={port}", f"--temp-dir={tmp}",
                                         "--include-dashboard=false", *common], env=env, start_new_session=True,
                                        stdout=log, stderr=subprocess.STDOUT)
            procs.append(head)
            if not _wait_for_port(port, head, timeout):
                cluster.reason = f"`ray start --head` did not listen within {timeout:.0f} s (see {log_dir / 'head.log'})"
            else:
                with open(log_dir / "worker.log", "w") as log:
                    procs.append(subprocess.Popen([str(ray_cli), "start", f"--address=127.0.0.1:{port}", *common],
                                                  env=env, start_new_session=True, stdout=log, stderr=subprocess.STDOUT))
                out = subprocess.run([sys.executable, "-c", _NODES, f"127.0.0.1:{port}", str(timeout)], env=env,
                                     capture_output=True, text=True, timeout=timeout + 120)
                nodes = json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 and out.stdout.strip() else []
                if len(nodes) != 2:
                    cluster.reason = (f"the worker node did not join within {timeout:.0f} s ({len(nodes)} node(s) alive; "
                                      f"{out.stderr.strip()[-300:]})")
                else:
                    cluster.address, cluster.env, cluster.nodes = f"127.0.0.1:{port}", env, nodes
        yield cluster
    finally:
        _stop(procs)
        shutil.rmtree(tmp, ignore_errors=True)
