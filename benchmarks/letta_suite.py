"""Letta's own client tests, run as the spec against `memvec serve` (`make letta-suite`).

The test files come from a snapshot of github:letta-ai/letta (the last commit that has `tests/`),
exported into a scratch folder and never into this project. Each letta-client version runs in a
venv of its own outside the project (made here on first use: Letta's package for the imports its
tests make, the client, pytest and the plugins Letta's suite uses). Only the plumbing is adapted:
the tests reach memvec through `LETTA_SERVER_URL` (their own switch away from an in-process
server), models come from `LLM_CONFIG_FILE=openai-gpt-4o-mini.json`, and Anthropic handles are
written as `openai/gpt-4o-mini`, which litellm sends to a scripted OpenAI-shaped server
(benchmarks/openai_script.py) that answers after `MODEL_LATENCY_S`, as a hosted model would. No
assertion is changed.

    python -m benchmarks.letta_suite --letta-repo PATH [--client 1.7.12 --client 1.12.1]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks import openai_script
from benchmarks.load import free_port, wait_healthy

COMMIT = "56ba9c255"  # the last commit of letta-ai/letta with tests/ (the next archived the repository)
LETTA_VERSION = "0.16.8"  # Letta's own package at that commit, for the imports its tests make
FILES = (
    "tests/sdk/agents_test.py",
    "tests/sdk/blocks_test.py",
    "tests/test_embedding_optional.py",
    "tests/test_client.py",
    "tests/test_sdk_client.py",
    "tests/test_sources.py",
    "tests/integration_test_send_message.py",
    "tests/integration_test_send_message_v2.py",
)
# pytest and the plugins Letta's suite uses (at the versions of Letta's lock); asyncpg because
# importing letta.server.db makes its engine
SUITE_PACKAGES = ("pytest", "pytest-order", "pytest-asyncio", "pytest-timeout", "flaky", "python-dotenv", "asyncpg")
ANTHROPIC_HANDLE = re.compile(r"anthropic/claude-[\w.-]+")
# a test that calls a method its client does not have (1.12.1 dropped tools.upsert_from_function):
# the issue counts only tests whose client has the methods they call
CLIENT_LACKS = re.compile(r"AttributeError: '\w*Resource' object has no attribute")
RESULTS = Path(__file__).parent / "results"
# A hosted model takes a while to answer, and Letta's tests count on it: their cancellation tests
# cancel 0.5 s into a reply of two model calls. The script answers after this long, as one would.
MODEL_LATENCY_S = 0.3


@dataclass
class FileResult:
    outcomes: Counter[str] = field(default_factory=Counter)
    reasons: Counter[str] = field(default_factory=Counter)


def export_tests(repo: Path, commit: str, into: Path) -> Path:
    """`tests/` of `commit` in `into`, with Anthropic model handles written as the scripted OpenAI one,
    and the plumbing plugin (benchmarks/letta_plumbing.py) beside it."""
    archive = subprocess.run(["git", "-C", str(repo), "archive", commit, "tests"], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    shutil.copy(Path(__file__).with_name("letta_plumbing.py"), into / "memvec_letta_plumbing.py")
    for path in (into / "tests").rglob("*.py"):
        text = path.read_text()
        if ANTHROPIC_HANDLE.search(text):
            path.write_text(ANTHROPIC_HANDLE.sub("openai/gpt-4o-mini", text))
    return into


def locked_versions(repo: Path, commit: str) -> str:
    """Letta's uv.lock at `commit` as pip constraints: the versions its tests ran with (a newer mcp
    or pydantic breaks the imports of Letta's code of that time). Not letta-client: that is chosen."""
    lock = subprocess.run(["git", "-C", str(repo), "show", f"{commit}:uv.lock"], check=True, capture_output=True)
    pairs = re.findall(r'^name = "([^"]+)"\nversion = "([^"]+)"', lock.stdout.decode(), re.M)
    return "".join(f"{name}=={version}\n" for name, version in pairs if name not in ("letta", "letta-client"))


def client_venv(root: Path, version: str, constraints: str) -> Path:
    """A venv with letta-client `version` (made and filled once; reused after)."""
    venv = root / f"letta-client-{version}"
    python = venv / "bin" / "python"
    if not (venv / ".complete").exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        (venv / "constraints.txt").write_text(constraints)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "-U", "pip"], check=True)
        wanted = [f"letta=={LETTA_VERSION}", f"letta-client=={version}", *SUITE_PACKAGES]
        pinned = ["-c", str(venv / "constraints.txt")]
        subprocess.run([str(python), "-m", "pip", "install", "-q", *pinned, *wanted], check=True)
        (venv / ".complete").touch()
    return python


def start_memvec(home: Path, model_base: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {**os.environ, "OPENAI_API_BASE": model_base, "OPENAI_API_KEY": "sk-scripted", "HF_HUB_OFFLINE": "1"}
    env["MEMVEC_TOOL_EXECUTION"] = "subprocess"  # Letta runs tools on the server; its tests expect that
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "memvec", "--home", str(home), "serve", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=out,
        )
    url = f"http://127.0.0.1:{port}"
    wait_healthy(url, process, log)
    return process, url


def ci_jobs(files: list[str] | tuple[str, ...]) -> list[list[str]]:
    """The files as Letta's CI runs them (its core-unit workflow): each top-level test file in a job of
    its own, the files of a folder (`tests/sdk/`) together in one."""
    jobs: dict[str, list[str]] = {}
    for test_file in files:
        folder = str(Path(test_file).parent)
        jobs.setdefault(test_file if folder == "tests" else folder, []).append(test_file)
    return list(jobs.values())


def run_job(python: Path, scratch: Path, model_base: str, arguments: list[str], run: Path) -> dict[str, FileResult]:
    """One CI job's tests against a memvec of its own, as each of Letta's jobs has a server of its own
    (its files clean up after themselves by listing, so one file's cleanup can remove another's agents)."""
    server, url = start_memvec(run.with_name(run.name + "-home"), model_base, run.with_name(run.name + "-serve.log"))
    try:
        run_suite(python, scratch, url, arguments, run.with_name(run.name + "-junit.xml"))
    finally:
        server.terminate()
        server.wait(timeout=60)
    return read_junit(run.with_name(run.name + "-junit.xml"))


def run_suite(python: Path, scratch: Path, url: str, files: list[str], junit: Path) -> None:
    env = {
        **os.environ,
        "LETTA_SERVER_URL": url,
        "LLM_CONFIG_FILE": "openai-gpt-4o-mini.json",
        "PYTHONPATH": str(scratch),
    }
    env.pop("VIRTUAL_ENV", None)
    command = [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "memvec_letta_plumbing"]
    command += ["--timeout", "120"]
    command += ["--continue-on-collection-errors", "-o", "pythonpath=", f"--junitxml={junit}", *files]
    subprocess.run(command, cwd=scratch, env=env, check=False)


def read_junit(junit: Path) -> dict[str, FileResult]:
    results: dict[str, FileResult] = {}
    for case in ET.parse(junit).iter("testcase"):
        name = case.get("classname", "").split(".")
        parts = [part for part in name if part and not part[:1].isupper()]
        module = "/".join(parts) + ".py" if parts else "(files that failed to collect)"
        result = results.setdefault(module, FileResult())
        problem = next((child for child in case if child.tag in ("failure", "error", "skipped")), None)
        outcome = "passed" if problem is None else {"failure": "failed"}.get(problem.tag, problem.tag)
        # the missing method may be behind the error that ended the test (a cleanup that used its result)
        if problem is not None and CLIENT_LACKS.search(f"{problem.get('message', '')}\n{problem.text or ''}"):
            outcome = "lacking"
        result.outcomes[outcome] += 1
        if problem is not None and outcome != "skipped":
            result.reasons[_first_line(problem.get("message", ""))] += 1
    return results


def _first_line(message: str) -> str:
    line = next((part for part in message.splitlines() if part.strip()), "")
    return re.sub(r"[0-9a-f]{8}-[0-9a-f-]{27}", "<uuid>", line)[:160]


def memvec_commit() -> str:
    found = subprocess.run(
        ["git", "-C", str(Path(__file__).parent), "rev-parse", "--short", "HEAD"], capture_output=True
    )
    return found.stdout.decode().strip() or "unknown"


def report(per_client: dict[str, dict[str, FileResult]], commit: str = "unknown") -> str:
    lines = [f"# Letta's own client tests against memvec {commit} (letta-ai/letta {COMMIT})", ""]
    lines += ["| file | " + " | ".join(f"letta-client {v}" for v in per_client) + " |"]
    lines += ["|---|" + "---|" * len(per_client)]
    modules = sorted({m for results in per_client.values() for m in results})
    for module in [*modules, "all"]:
        cells = []
        for results in per_client.values():
            counts = sum((r.outcomes for m, r in results.items() if module in (m, "all")), Counter[str]())
            ran = counts["passed"] + counts["failed"] + counts["error"]
            lacking = f", {counts['lacking']} call what the client lacks" if counts["lacking"] else ""
            cells.append(f"{counts['passed']}/{ran} ({counts['skipped']} skipped{lacking})")
        lines.append(f"| {module} | " + " | ".join(cells) + " |")
    for version, results in per_client.items():
        reasons = sum((r.reasons for r in results.values()), Counter[str]())
        lines += ["", f"## Why tests fail with letta-client {version} (most common first)", ""]
        lines += [f"- {n} x `{reason}`" for reason, n in reasons.most_common(25)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.letta_suite", description=__doc__.split("\n\n")[0])
    parser.add_argument("--letta-repo", type=Path, required=True, help="a clone of letta-ai/letta (its git history)")
    parser.add_argument("--commit", default=COMMIT)
    parser.add_argument("--client", action="append", help="letta-client versions (default: 1.7.12 and 1.12.1)")
    parser.add_argument("--venvs", type=Path, default=Path.home() / ".cache" / "memvec" / "letta-suite")
    parser.add_argument("--file", action="append", help="run only these test files (default: all eight)")
    parser.add_argument("-k", dest="keyword", help="pytest's -k, to run some tests only")
    parser.add_argument("--out", type=Path, default=RESULTS / "letta_suite.md")
    args = parser.parse_args(argv)
    per_client: dict[str, dict[str, FileResult]] = {}
    with (
        tempfile.TemporaryDirectory(prefix="letta-suite-") as tmp,
        openai_script.serving(latency_s=MODEL_LATENCY_S) as model_base,
    ):
        scratch = export_tests(args.letta_repo, args.commit, Path(tmp))
        only = ["-k", args.keyword] if args.keyword else []
        constraints = locked_versions(args.letta_repo, args.commit)
        for version in args.client or ["1.7.12", "1.12.1"]:
            python = client_venv(args.venvs, version, constraints)
            per_client[version] = {}
            for n, job in enumerate(ci_jobs(args.file or FILES)):
                run = scratch / f"{version}-{n}"
                per_client[version] |= run_job(python, scratch, model_base, [*job, *only], run)
    args.out.write_text(report(per_client, memvec_commit()))
    print(args.out.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
