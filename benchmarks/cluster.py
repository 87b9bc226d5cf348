"""Several `memvec serve` on one PostgreSQL behind a real nginx, under mixed load: a server killed
with SIGKILL, and a rolling restart (`make bench-cluster` writes benchmarks/results/cluster.md; the
tests in tests/test_cluster.py run the same scenarios smaller).

The nginx configuration is `memvec router-config`'s, the one docs/deployment.md shows. Load: client
threads through the router, each on its own agent, inserting passages (unique texts), searching and
sending the agent messages (its model is litellm's scripted provider, `tests/scripted_serve.py`).
Every request is logged with its agent, start, end and status; afterwards every acknowledged insert
is looked up through the router and every passage is counted, so a lost write or a write applied
twice shows.
"""

from __future__ import annotations

import argparse
import functools
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from benchmarks.cluster_load import Call, Load, audit, setup_agents, summary
from benchmarks.load import free_port, wait_healthy
from benchmarks.metrics import percentile
from benchmarks.report import write_report
from benchmarks.stores import DEFAULT_PG, pg_schema
from memvec.service.nginx import FAIL_TIMEOUT_S, nginx_config

ROOT = Path(__file__).resolve().parents[1]
NGINX_MAIN = """daemon off;
{user}pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {dir}/body; proxy_temp_path {dir}/proxy; fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi; scgi_temp_path {dir}/scgi;
    include {dir}/memvec.conf;
}}
"""


@dataclass
class Member:
    home: Path
    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@dataclass
class Cluster:
    root: Path
    store: str
    size: int = 3
    drain_s: float = 1.0
    members: list[Member] = field(default_factory=list)
    nginx: subprocess.Popen[bytes] | None = None
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Cluster:
        self.members = [Member(self.root / f"server-{n}", free_port()) for n in range(self.size)]
        for member in self.members:
            self.start_member(member)
        self.port = free_port()
        config = self.root / "nginx"
        config.mkdir(parents=True, exist_ok=True)
        (config / "memvec.conf").write_text(
            nginx_config([f"127.0.0.1:{m.port}" for m in self.members], listen=f"127.0.0.1:{self.port}")
        )
        # as root, nginx's workers would run as nobody, who cannot enter this private temporary folder
        user = "user root;\n" if os.geteuid() == 0 else ""
        (config / "nginx.conf").write_text(NGINX_MAIN.format(dir=config, user=user))
        with open(config / "stderr.log", "wb") as log:  # the child keeps its own copy of the descriptor
            self.nginx = subprocess.Popen(
                ["nginx", "-p", str(config), "-c", str(config / "nginx.conf")], stdout=subprocess.DEVNULL, stderr=log
            )
        wait_healthy(self.url, self.nginx, config / "stderr.log")
        return self

    def start_member(self, member: Member) -> None:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "MEMVEC_API_KEYS": ""}
        member.home.mkdir(parents=True, exist_ok=True)
        with open(member.home.parent / f"{member.home.name}.log", "ab") as log:
            member.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tests.scripted_serve",
                    "--home",
                    str(member.home),
                    "--model",
                    "hash:64",
                    "--store",
                    self.store,
                    "serve",
                    "--port",
                    str(member.port),
                    "--drain-seconds",
                    str(self.drain_s),
                ],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        wait_healthy(member.url, member.process, member.home.parent / f"{member.home.name}.log")

    def stop(self) -> None:
        for member in self.members:
            if member.process is not None and member.process.poll() is None:
                member.process.send_signal(signal.SIGINT)  # twice: no drain when tearing down
                member.process.send_signal(signal.SIGINT)
                member.process.wait(timeout=60)
        if self.nginx is not None:
            self.nginx.send_signal(signal.SIGQUIT)
            self.nginx.wait(timeout=30)

    def owner(self, agent: str) -> Member:
        """The member that serves `agent` through the router: the one whose loaded indexes grow
        when the agent is searched through the router (asked one agent at a time)."""
        before = [_loaded(m) for m in self.members]
        _http().get(
            f"{self.url}/v1/agents/{agent}/recall-memory/search", params={"query": "which server"}, timeout=30
        ).raise_for_status()
        grown = [m for m, b in zip(self.members, before, strict=True) if _loaded(m) > b]
        assert len(grown) == 1, f"{agent} loaded on {len(grown)} servers"
        return grown[0]


@functools.cache
def _http() -> httpx.Client:
    """One client for the checker's own requests: making one parses the CA bundle (~20 ms of CPU), which
    a client per poll would spend thousands of times in a run."""
    return httpx.Client()


def _loaded(member: Member) -> int:
    loaded: int = _http().get(f"{member.url}/v1/health", timeout=10).json()["indexes_loaded"]
    return loaded


@contextmanager
def running_cluster(pg_url: str, size: int = 3, drain_s: float = 1.0) -> Iterator[Cluster]:
    with pg_schema(pg_url) as store, tempfile.TemporaryDirectory() as tmp:
        cluster = Cluster(Path(tmp), store, size=size, drain_s=drain_s)
        try:
            yield cluster.start()
        finally:
            cluster.stop()


def server_loss(
    pg_url: str = DEFAULT_PG, agents: int = 9, seconds: float = 6.0, servers: int = 3, pause_s: float = 0.0
) -> dict[str, Any]:
    """SIGKILL the server that serves the most agents a third of the way into the load (each client
    `pause_s` between requests)."""
    with running_cluster(pg_url, size=servers) as cluster:
        names = setup_agents(cluster.url, agents)
        owners = {a: cluster.owner(a) for a in names}
        victim = max(cluster.members, key=lambda m: sum(1 for o in owners.values() if o is m))
        moved = [a for a, o in owners.items() if o is victim]
        with Load(cluster.url, names, pause_s=pause_s) as load:
            time.sleep(seconds / 3)
            assert victim.process is not None
            killed_at = time.monotonic()
            victim.process.send_signal(signal.SIGKILL)
            victim.process.wait(timeout=30)
            time.sleep(seconds * 2 / 3)
        calls = sorted(load.calls, key=lambda c: c.started)
        return {
            "servers": cluster.size,
            "agents": agents,
            "moved_agents": len(moved),
            "seconds": seconds,
            **summary(calls),
            **audit(cluster.url, calls),
            **_recovery(calls, moved, killed_at),
        }


def _recovery(calls: list[Call], moved: list[str], killed_at: float) -> dict[str, Any]:
    """How long the moved agents took to answer again, and their first search's latency after the
    kill against their searches before it."""
    answered, first_search, before = [], [], []
    for agent in moved:
        mine = [c for c in calls if c.agent == agent]
        after = [c for c in mine if c.started >= killed_at and c.status in (200, 201)]
        if after:
            answered.append(after[0].ended - killed_at)
        searches = [c for c in after if c.kind == "search"]
        if searches:
            first_search.append(1000 * (searches[0].ended - searches[0].started))
        before += [1000 * (c.ended - c.started) for c in mine if c.kind == "search" and c.ended < killed_at]
    return {
        "moved_answered": len(answered),
        "recovery_s_max": max(answered, default=float("nan")),
        "recovery_s_median": percentile(answered, 50) if answered else float("nan"),
        "first_search_after_move_ms_median": percentile(first_search, 50) if first_search else float("nan"),
        "search_before_ms_median": percentile(before, 50) if before else float("nan"),
    }


def rolling_restart(
    pg_url: str = DEFAULT_PG, agents: int = 9, drain_s: float = 1.0, servers: int = 3, pause_s: float = 0.0
) -> dict[str, Any]:
    """SIGTERM each server in turn under load, wait for it to exit, start it again and, once nginx
    routes requests to it again, the next (with two servers, stopping the other one while nginx still
    counts this one as down leaves none)."""
    drained = []
    with running_cluster(pg_url, size=servers, drain_s=drain_s) as cluster:
        names = setup_agents(cluster.url, agents)
        started = time.monotonic()
        with Load(cluster.url, names, pause_s=pause_s) as load:
            time.sleep(1.0)
            for member in cluster.members:
                drained.append(_restart(cluster, member))
                drained[-1]["routed_again_s"] = wait_routed(cluster, member)
        calls = [c for c in load.calls if c.started >= started]
        return {
            "servers": cluster.size,
            "agents": agents,
            "drain_s": drain_s,
            "health_503_while_draining": all(d["health_503"] for d in drained),
            "exit_s_median": percentile([d["exit_s"] for d in drained], 50),
            "routed_again_s_max": max(d["routed_again_s"] for d in drained),
            "nginx_failed_attempts": len(_nginx_failures(cluster, None)),
            **summary(calls),
            **audit(cluster.url, calls),
        }


def _restart(cluster: Cluster, member: Member) -> dict[str, Any]:
    assert member.process is not None
    stopping = time.monotonic()
    member.process.send_signal(signal.SIGTERM)
    health = _http().get(f"{member.url}/v1/health", timeout=10)
    member.process.wait(timeout=60)
    exited = time.monotonic() - stopping
    cluster.start_member(member)
    return {"health_503": health.status_code == 503 and health.json()["status"] == "draining", "exit_s": exited}


def wait_routed(cluster: Cluster, member: Member, timeout: float = 120) -> float:
    """Seconds until nginx counts `member` as up again after its restart: nginx logged no failed attempt
    at it during a short window in which it answered requests through the router, or in which nginx's
    last failure of it was more than fail_timeout ago (a server that owns no agent is sent nothing).
    A fixed wait of fail_timeout after health is not enough: under load nginx can count it down again."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        failures, served = _nginx_failures(cluster, member), _routed_requests(member)
        time.sleep(0.5)
        later = _nginx_failures(cluster, member)
        quiet = not later or time.time() - later[-1] > FAIL_TIMEOUT_S + 1  # the log's clock has whole seconds
        if later == failures and (quiet or _routed_requests(member) > served):
            return time.monotonic() - began
    raise TimeoutError(f"nginx still counts {member.url} as down {timeout:g} s after its restart")


def _routed_requests(member: Member) -> float:
    """Requests `member` answered other than health and metrics (which only this checker asks it)."""
    families = text_string_to_metric_families(_http().get(f"{member.url}/metrics", timeout=10).text)
    return sum(
        sample.value
        for family in families
        for sample in family.samples
        if sample.name == "memvec_http_requests_total" and sample.labels["route"] not in ("/v1/health", "/metrics")
    )


def _nginx_failures(cluster: Cluster, member: Member | None) -> list[float]:
    """When nginx logged a failed attempt at `member` (at any member when None), as epoch seconds."""
    log = cluster.root / "nginx" / "error.log"
    named = f'upstream: "http://127.0.0.1:{member.port}/' if member is not None else 'upstream: "http://'
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    return [time.mktime(time.strptime(line[:19], "%Y/%m/%d %H:%M:%S")) for line in lines if named in line]


def markdown(results: dict[str, Any]) -> str:
    loss, rolling = results["server loss"], results["rolling restart"]
    rows = [
        ("requests through the router", loss["requests"], rolling["requests"]),
        ("failed requests", f"{loss['failed']} {loss['failed_by_status']}", rolling["failed"]),
        ("failed with a status a client cannot retry", loss["failed_not_retryable"], rolling["failed_not_retryable"]),
        (
            "acknowledged inserts / lost",
            f"{loss['acknowledged_inserts']} / {loss['lost']}",
            f"{rolling['acknowledged_inserts']} / {rolling['lost']}",
        ),
        ("passages stored twice", loss["stored_twice"], rolling["stored_twice"]),
    ]
    lines = [
        "# memvec cluster: a server's loss and a rolling restart",
        "",
        f"{results['date']} · {results['servers']} `memvec serve` (hash:64 model) on one PostgreSQL behind nginx "
        "(`memvec router-config`), client threads through the router, one agent each, mixing inserts, "
        "searches and agent messages (litellm scripted provider).",
        "",
        "| measure | SIGKILL one server | rolling restart (SIGTERM each in turn) |",
        "| --- | --- | --- |",
    ]
    lines += [f"| {name} | {a} | {b} |" for name, a, b in rows]
    lines += [
        "",
        f"Server loss: {loss['moved_agents']} of {loss['agents']} agents were on the killed server; all "
        f"answered again, the last {loss['recovery_s_max']:.2f} s after the kill (median "
        f"{loss['recovery_s_median']:.2f} s). Their first search on the new server took "
        f"{loss['first_search_after_move_ms_median']:.1f} ms (median; it loads the agent's index from the store) "
        f"against {loss['search_before_ms_median']:.1f} ms before the kill.",
        "",
        f"Rolling restart: each server drained {rolling['drain_s']:g} s (health 503 while draining: "
        f"{rolling['health_503_while_draining']}), exited a median {rolling['exit_s_median']:.2f} s after "
        "SIGTERM, and was started again before the next one.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pg", default=DEFAULT_PG)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args(argv)
    results: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"),
        "servers": 3,
        "server loss": server_loss(args.pg, agents=12, seconds=12.0),
        "rolling restart": rolling_restart(args.pg, agents=12),
    }
    write_report(args.out, "cluster", results, markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
