"""Running a custom tool's Python source, only where the home turned it on (`memvec serve
--tool-execution subprocess`, MEMVEC_TOOL_EXECUTION=subprocess).

Threat model (docs/reference.md, "Custom tools"): whoever may create tools may run code as the server's user.
This bounds what one call costs and what it is handed, it is not a jail: a separate Python process
(isolated mode: no PYTHON* variables, no user site, no current directory on the path) in a fresh
empty directory, an environment of PATH and locale only (no API keys, no database URL), its own
session (the whole group is killed at the deadline), caps on CPU seconds, address space, file size
and open files, and output read back up to a fixed size. It can still read what the server's user
can read and reach the network; run the server as a user that has nothing else when that matters.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TIMEOUT_S = 30.0
MEMORY_BYTES = 1 << 30
OUTPUT_BYTES = 1 << 20  # what the tool may write (result, printing) before it is stopped
KEPT_OUTPUT_BYTES = 64_000  # of its printing, what comes back
_ENVIRONMENT = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONIOENCODING": "utf-8"}

# Runs in the child: defines the tool, calls it with the JSON arguments on stdin, writes one JSON
# line to the result file (stdout is the tool's own printing, kept apart).
_RUNNER = """
import json, resource, sys, traceback
source, name, result_path = sys.argv[1], sys.argv[2], sys.argv[3]
for limit, value in json.loads(sys.argv[4]):  # before any of the tool's code runs
    resource.setrlimit(getattr(resource, limit), (value, value))
namespace = {"__name__": "__tool__"}
def answer(payload):
    with open(result_path, "w", encoding="utf-8") as out:
        out.write(json.dumps(payload, default=repr))
try:
    exec(compile(open(source, encoding="utf-8").read(), "<tool>", "exec"), namespace)
    value = namespace[name](**json.loads(sys.stdin.read() or "{}"))
    plain = isinstance(value, (str, int, float, bool, type(None), list, dict))
    answer({"ok": True, "value": value if plain else repr(value)})
except BaseException as exc:
    answer({"ok": False, "error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc(limit=5)})
"""


@dataclass(frozen=True)
class ToolRun:
    ok: bool
    value: Any = None
    error: str | None = None
    stdout: str = ""
    stderr: str = ""


def _limits(cpu_s: int) -> str:
    """The child's resource limits, which the runner sets on itself first (not a preexec_fn: the
    server has threads, and a fork of a threaded process may run nothing but exec safely)."""
    return json.dumps(
        [
            ("RLIMIT_CPU", cpu_s),
            ("RLIMIT_AS", MEMORY_BYTES),
            ("RLIMIT_FSIZE", OUTPUT_BYTES),
            ("RLIMIT_NOFILE", 64),
            ("RLIMIT_CORE", 0),
        ]
    )


def run_tool(source_code: str, name: str, arguments: dict[str, Any], *, timeout_s: float = TIMEOUT_S) -> ToolRun:
    """Call function `name` of `source_code` with `arguments` in a limited child process."""
    with tempfile.TemporaryDirectory(prefix="memvec-tool-") as work:
        folder = Path(work)
        (folder / "tool.py").write_text(source_code, encoding="utf-8")
        (folder / "runner.py").write_text(_RUNNER, encoding="utf-8")
        result, limits = folder / "result.json", _limits(int(timeout_s) + 1)
        with open(folder / "stdout", "w+b") as out, open(folder / "stderr", "w+b") as err:
            child = subprocess.Popen(
                [sys.executable, "-I", str(folder / "runner.py"), str(folder / "tool.py"), name, str(result), limits],
                stdin=subprocess.PIPE,
                stdout=out,
                stderr=err,
                cwd=folder,
                env=_ENVIRONMENT,
                start_new_session=True,
            )
            timed_out = _wait(child, json.dumps(arguments), timeout_s)
            stdout, stderr = _read(out), _read(err)
        if timed_out:
            return ToolRun(ok=False, error=f"{name} ran past its {timeout_s:g} s limit and was stopped", stdout=stdout)
        return _outcome(result, name, child.returncode, stdout, stderr)


def _wait(child: subprocess.Popen[bytes], stdin: str, timeout_s: float) -> bool:
    try:
        child.communicate(stdin.encode(), timeout=timeout_s)
        return False
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        return True


def _read(stream: Any) -> str:
    stream.seek(0)
    return str(stream.read(KEPT_OUTPUT_BYTES).decode("utf-8", "replace"))


def _outcome(result: Path, name: str, returncode: int, stdout: str, stderr: str) -> ToolRun:
    try:
        payload = json.loads(result.read_text(encoding="utf-8")[:OUTPUT_BYTES])
    except (OSError, ValueError):
        why = "ran out of memory or output space" if returncode else "gave no result"
        return ToolRun(ok=False, error=f"{name} {why} (exit {returncode})", stdout=stdout, stderr=stderr[-2000:])
    if payload.get("ok"):
        return ToolRun(ok=True, value=payload.get("value"), stdout=stdout, stderr=stderr)
    return ToolRun(ok=False, error=str(payload.get("error")), stdout=stdout, stderr=str(payload.get("trace", "")))
