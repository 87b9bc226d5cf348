"""memvec as a RAG app installs it: a wheel built from this checkout, installed into a new venv
(its dependencies taken from the test venv's site-packages, since the wheel is what is under test),
runs the README's example offline and serves its memory browser and docs from packaged files."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SERVED = """
import json
from fastapi.testclient import TestClient
import memvec
from memvec import Memory
from memvec.search.rerank import shipped_rankers
from memvec.service.app import create_app
with Memory.open("served", model="hash:64") as mem, TestClient(create_app(mem)) as client:
    paths = ("/ui/", "/ui/static/ui.css", "/docs", "/openapi.json")
    print(json.dumps({"file": memvec.__file__, "statuses": [client.get(p, headers={"host": "localhost"}).status_code
                                                            for p in paths],
                      "compiled": [ranker.compiled is not None for ranker in shipped_rankers()]}))
"""


def built_wheel(out: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    [wheel] = out.glob("memvec-*.whl")
    return wheel


def installed(wheel: Path, target: Path) -> Path:
    venv.create(target, with_pip=False)
    python = target / "bin" / "python"
    lib = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(lib), str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    # the dependencies, read after the wheel; .pth files there (the checkout's editable memvec) are not run
    (lib / "test-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


@pytest.mark.slow
def test_the_wheel_runs_the_readme_example_offline_and_serves_its_pages(tmp_path: Path) -> None:
    python = installed(built_wheel(tmp_path / "dist"), tmp_path / "app-venv")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("MEMVEC_")}, "HF_HUB_OFFLINE": "1"}
    example = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)[0]
    ran = subprocess.run(
        [str(python), "-c", example], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300
    )
    assert ran.returncode == 0, ran.stderr
    assert "Hold the red button" in ran.stdout and "file_name='manual.md'" in ran.stdout
    served = subprocess.run(
        [str(python), "-c", SERVED], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300
    )
    assert served.returncode == 0, served.stderr
    seen = json.loads(served.stdout)
    assert seen["file"].startswith(str(tmp_path / "app-venv")), f"memvec came from {seen['file']}, not the wheel"
    assert seen["statuses"] == [200, 200, 200, 200], seen
    assert seen["compiled"] == [True, True], "the wheel ships each ranker file's compiled trees"
