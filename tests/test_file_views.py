"""What an agent sees of its folders' files (Letta's file blocks) and the file tools that read them."""

from __future__ import annotations

import json
import time

import pytest

from memvec import Memory
from memvec.agent.directories import directories
from memvec.documents.lines import TRUNCATED, cut_to, file_lines, line_window
from memvec.errors import InvalidInputError
from memvec.tools import TOOLS, ToolContext
from memvec.tools.catalogue import BUILTIN_TOOLS, FILE_TOOL_IDS, agent_tools
from memvec.types import AgentSettings

HUNDRED = "\n".join(f"x{n} = {n}" for n in range(1, 101)).encode()


@pytest.fixture
def shelf(memory: Memory) -> tuple[Memory, str]:
    """An agent `ana` with the folder `docs` attached; returns the memory and the folder's id."""
    memory.create_agent(AgentSettings(name="ana", max_files_open=2))
    folder = memory.folders().create("docs")
    memory.folders().attach(folder.id, "ana")
    return memory, folder.id


def _run(memory: Memory, tool: str, **arguments: object) -> str:
    spec = TOOLS[tool]
    return spec.run(ToolContext(memory=memory, agent="ana"), spec.arguments.model_validate(arguments))


def test_lines_are_numbered_and_a_window_says_which_part_it_shows() -> None:
    lines = file_lines("a.txt", "  first  \n\n\tsecond\n")
    assert lines == ["first", "second"]
    assert file_lines("a.py", "def f():\n    return 1   \n") == ["def f():", "    return 1"]  # code keeps indentation
    assert line_window("a.txt", lines) == "[Viewing file start (out of 2 lines)]\n1: first\n2: second"
    assert line_window("a.txt", lines, 1, 5) == "[Viewing lines 2 to 2 (out of 2 lines)]\n2: second"
    assert line_window("a.txt", lines, 1) == "[Viewing lines 2 to end (out of 2 lines)]\n2: second"
    with pytest.raises(ValueError, match="has only 2 lines"):
        line_window("a.txt", lines, 2, 3)
    cut = cut_to("x" * 500, 300)
    assert len(cut) == 300 and TRUNCATED in cut and cut.startswith("x")
    assert cut_to("short", 300) == "short"


def test_an_uploaded_file_is_open_at_its_start_for_the_agents_it_is_attached_to(shelf: tuple[Memory, str]) -> None:
    memory, folder_id = shelf
    memory.folders().upload(folder_id, "test.txt", b"test\n")
    [view] = memory.open_files("ana").list()
    assert (view.label, view.is_open) == ("docs/test.txt", True)
    assert view.value == "[Viewing file start (out of 1 lines)]\n1: test" and len(view.value) == 45
    memory.create_agent(AgentSettings(name="bo"))
    assert memory.open_files("bo").list() == []  # not attached to bo


def test_opening_lines_of_a_file_shows_those_lines_only(shelf: tuple[Memory, str]) -> None:
    memory, folder_id = shelf
    document = memory.folders().upload(folder_id, "1_to_100.py", HUNDRED).document
    files = memory.open_files("ana")
    assert files.open(document.id, offset=49, length=5) == []
    assert files.get(document.id).value == "\n".join(
        ["[Viewing lines 50 to 54 (out of 100 lines)]", *(f"{n}: x{n} = {n}" for n in range(50, 55))]
    )
    with pytest.raises(InvalidInputError, match="has only 100 lines"):
        files.open(document.id, offset=100, length=1)
    with pytest.raises(InvalidInputError, match="at least 1"):
        files.open(document.id, offset=0, length=0)
    assert files.get(document.id).start_line == 49  # a refused open changes nothing


def test_at_most_max_files_open_are_open_and_opening_another_closes_the_least_recent(
    shelf: tuple[Memory, str],
) -> None:
    memory, folder_id = shelf
    ids = [memory.folders().upload(folder_id, f"{n}.txt", f"file {n}".encode()).document.id for n in range(3)]
    files = memory.open_files("ana")
    assert [v.is_open for v in files.list()] == [False, True, True]  # the two newest of three
    time.sleep(0.002)
    assert files.open(ids[0]) == ["docs/1.txt"]
    assert [v.is_open for v in files.list()] == [True, False, True]
    files.close(ids[2])
    assert [v.label for v in files.list() if v.is_open] == ["docs/0.txt"]
    assert files.close_all() == ["docs/0.txt"] and not any(v.value for v in files.list())


def test_views_go_with_the_file_the_attachment_and_the_agent(shelf: tuple[Memory, str]) -> None:
    memory, folder_id = shelf
    folders, files = memory.folders(), memory.open_files("ana")
    first = folders.upload(folder_id, "a.txt", b"original").document
    files.close(first.id)
    changed = folders.upload(folder_id, "a.txt", b"replacement", duplicate_handling="replace").document
    [view] = files.list()  # the new version is open, alone
    assert view.document_id == changed.id and "replacement" in view.value and view.is_open
    files.close(changed.id)
    folders.detach(folder_id, "ana")
    assert memory._store.file_views("ana") == {}
    folders.attach(folder_id, "ana")
    assert [v.is_open for v in files.list()] == [True]  # open again, as a new attachment's files are
    files.close(changed.id)
    folders.delete_file(folder_id, changed.id)
    assert files.list() == [] and memory._store.file_views("ana") == {}
    folders.upload(folder_id, "b.txt", b"b")
    files.close_all()
    memory.delete_agent("ana")
    assert memory._store.file_views("ana") == {}


def test_the_system_prompt_lists_folders_and_shows_open_files(shelf: tuple[Memory, str]) -> None:
    memory, folder_id = shelf
    memory.folders().upload(folder_id, "test.txt", b"test\n")
    memory.folders().upload(folder_id, "b.txt", b"bee\n")
    files = memory.open_files("ana")
    files.close(files.list()[1].document_id)
    text = directories(files.folders(), files.list(), files.max_open)
    assert text == "\n".join(
        [
            "<directories>",
            "<file_limits>\n- current_files_open=1\n- max_files_open=2\n</file_limits>",
            '<directory name="docs">',
            '<file status="open" name="docs/test.txt">',
            f"<metadata>\n- read_only=true\n- chars_current=45\n- chars_limit={files.char_limit}\n</metadata>",
            "<value>\n[Viewing file start (out of 1 lines)]\n1: test\n</value>",
            "</file>",
            '<file status="closed" name="docs/b.txt">',
            f"<metadata>\n- read_only=true\n- chars_current=0\n- chars_limit={files.char_limit}\n</metadata>",
            "</file>",
            "</directory>",
            "</directories>",
        ]
    )
    assert directories([], [], 2) == ""


def test_file_limits_follow_the_context_window_unless_set() -> None:
    assert AgentSettings(name="a").file_limits() == (3, 3640)
    assert AgentSettings(name="a", context_window=128_000).file_limits() == (10, 17066)
    assert AgentSettings(name="a", max_files_open=4, per_file_view_window_char_limit=500).file_limits() == (4, 500)


def test_file_tools_come_with_a_folder(shelf: tuple[Memory, str]) -> None:
    memory, folder_id = shelf
    names = {t.name: t.kind for t in agent_tools(memory, memory.get_agent("ana")[0])}
    assert {n for n, kind in names.items() if kind == "letta_files_core"} == {
        "open_files",
        "grep_files",
        "semantic_search_files",
    }
    memory.folders().detach(folder_id, "ana")
    assert not set(FILE_TOOL_IDS) & {t.id for t in agent_tools(memory, memory.get_agent("ana")[0])}
    schema = BUILTIN_TOOLS["open_files"].schema["function"]["parameters"]["properties"]
    assert schema["file_requests"]["items"]["properties"]["offset"]["type"] == "integer"


def test_the_open_files_tool_opens_ranges_and_says_what_it_closed(shelf: tuple[Memory, str]) -> None:
    memory, folder_id = shelf
    for name in ("a.txt", "b.txt"):
        memory.folders().upload(folder_id, name, b"one\ntwo\nthree\n")
    memory.folders().upload(folder_id, "c.py", HUNDRED)
    said = _run(memory, "open_files", file_requests=[{"file_name": "docs/a.txt", "offset": 1, "length": 1}])
    assert said == (
        "* Opened docs/a.txt (lines 2-2)\nNote: Closed 1 least recently used file(s) due to open file limit: docs/b.txt"
    )
    assert memory.open_files("ana").named("docs/a.txt").value == "[Viewing lines 2 to 2 (out of 3 lines)]\n2: two"
    said = _run(memory, "open_files", file_requests=[{"file_name": "c.py"}], close_all_others=True)
    assert said == "* Opened docs/c.py\nNote: Closed 1 file(s) due to close_all_others=True: docs/a.txt"
    with pytest.raises(InvalidInputError, match=r"no file named 'docs/none.txt' is attached"):
        _run(memory, "open_files", file_requests=[{"file_name": "docs/none.txt"}])


def test_grep_files_shows_each_match_with_its_context_and_pages(shelf: tuple[Memory, str]) -> None:
    memory, folder_id = shelf
    memory.folders().upload(folder_id, "c.py", HUNDRED)
    memory.folders().upload(folder_id, "notes.md", b"# Notes\n\nx5 is not code here\n")
    said = _run(memory, "grep_files", pattern="x50 = ")
    assert said.startswith("Found 1 total matches across 1 files (showing matches 1-1 of 1)")
    assert "=== docs/c.py:50 ===\n  49: x49 = 49\n> 50: x50 = 50\n  51: x51 = 51" in said
    assert said.endswith("No more matches to show.")
    paged = _run(memory, "grep_files", pattern=r"^x\d+ = ", offset=20, context_lines=0)
    assert "(showing matches 21-40 of 100)" in paged and "> 21: x21 = 21" in paged
    assert 'call: grep_files(pattern="^x\\d+ = ", offset=40)' in paged
    only_md = _run(memory, "grep_files", pattern="x5", include="*.md")
    assert "docs/notes.md: 1 matches" in only_md and "c.py" not in only_md
    with pytest.raises(ValueError, match="not a regular expression"):
        _run(memory, "grep_files", pattern="(")


def test_a_pattern_that_backtracks_without_end_is_stopped(shelf: tuple[Memory, str]) -> None:
    memory, folder_id = shelf
    memory.folders().upload(folder_id, "a.txt", b"a" * 60)
    started = time.monotonic()
    with pytest.raises(ValueError, match="took too long"):
        _run(memory, "grep_files", pattern="(?:a|aa)+c")  # exponential even for the regex module
    assert time.monotonic() - started < 30


def test_semantic_search_files_finds_passages_of_attached_files_only(shelf: tuple[Memory, str]) -> None:
    memory, folder_id = shelf
    memory.archival("ana").insert("the pump is primed on mondays, says my own note")
    memory.folders().upload(folder_id, "pump.md", b"# Pump\n\nThe pump is primed on Mondays.\n")
    said = _run(memory, "semantic_search_files", query="when is the pump primed", limit=3)
    assert said.count("=== docs/pump.md (passage #") == 1 and "own note" not in said
    memory.folders().detach(folder_id, "ana")
    assert _run(memory, "semantic_search_files", query="pump") == "No files are currently attached to search"
    assert json.dumps(said)  # plain text
