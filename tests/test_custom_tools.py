"""Custom tools as Letta has them: a schema read from source without running it, tools through
letta-client (create, upsert, list, attach, rules), a call that goes back to the client by default,
and a call run in a limited subprocess where the home turned that on."""

from __future__ import annotations

import inspect
import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from letta_client import BadRequestError, Letta, NotFoundError, PermissionDeniedError
from letta_client.types.agents.tool_return_param import ToolReturnParam

from memvec.agent.rules import RuleState
from memvec.tools.sandbox import run_tool
from memvec.tools.source_schema import ToolSourceError, function_schema
from memvec.types.tools import ToolRule, builtin_tool_id
from tests.scripted_llm import SCRIPTED, ToolCall, Turn, say
from tests.scripted_llm import call as call_tool
from tests.service_helpers import Server, letta_for, served_in_process

ADMIN, SCOPED = "tools-admin-0001", "tools-scope-0001"


def roll_dice(num_sides: int, bonus: int = 0) -> int:
    """
    Roll a die.

    Args:
        num_sides (int): How many sides the die has;
            at least one.
        bonus: Added to the roll.

    Returns:
        int: the roll.
    """
    import random

    return random.randint(1, num_sides) + bonus


DICE = textwrap.dedent(inspect.getsource(roll_dice))


# -- the schema, read from source ---------------------------------------------------------------
def test_the_schema_comes_from_the_signature_and_the_docstring() -> None:
    schema = function_schema(DICE)
    assert schema["name"] == "roll_dice" and schema["description"] == "Roll a die."
    sides, bonus = schema["parameters"]["properties"]["num_sides"], schema["parameters"]["properties"]["bonus"]
    assert sides == {"type": "integer", "description": "How many sides the die has; at least one."}
    assert bonus == {"type": "integer", "description": "Added to the roll."}
    assert schema["parameters"]["required"] == ["num_sides"]


def test_types_the_schema_reads() -> None:
    source = (
        "def f(a: list[float], b: Optional[str], c: 'dict', d: Literal['x', 'y'], e: bool | None = None):\n"
        "    '''Do f.'''\n"
    )
    props = function_schema(source)["parameters"]["properties"]
    assert props["a"] == {"type": "array", "items": {"type": "number"}} and props["b"] == {"type": "string"}
    assert props["c"] == {"type": "object"} and props["d"] == {"enum": ["x", "y"]}
    assert props["e"] == {"type": "boolean"}


def test_the_last_function_names_the_tool_and_a_model_schema_replaces_the_parameters() -> None:
    source = "def helper():\n    pass\n\ndef plan(steps, why):\n    '''Make a plan.'''\n"
    model = {"properties": {"steps": {"type": "array"}, "why": {"type": "string"}}, "required": ["steps"]}
    schema = function_schema(source, args_json_schema=model)
    assert schema["name"] == "plan" and schema["parameters"]["required"] == ["steps"]


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("def f(:\n", "not valid Python"),
        ("x = 1\n", "defines no function"),
        ("def f(a):\n    return a\n", "no docstring"),
    ],
)
def test_source_that_makes_no_tool_is_refused_with_why(source: str, says: str) -> None:
    with pytest.raises(ToolSourceError, match=says):
        function_schema(source)


def test_reading_the_schema_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    source = f"open({str(marker)!r}, 'w').write('x')\ndef f():\n    '''F.'''\n"
    function_schema(source)
    assert not marker.exists()


# -- tool rules ------------------------------------------------------------------------------------
def rules(*given: dict[str, object]) -> RuleState:
    return RuleState([ToolRule.model_validate(g) for g in given])


def test_rules_pick_the_tools_offered_at_each_step() -> None:
    offered = ["send_message", "a", "b", "c"]
    state = rules(
        {"tool_name": "a", "type": "run_first"}, {"tool_name": "a", "type": "constrain_child_tools", "children": ["b"]}
    )
    assert state.allowed(offered) == ["a"]
    state.record("a", "done")
    assert state.allowed(offered) == ["b"]
    state.record("b", "done")
    assert state.allowed(offered) == offered
    capped = rules({"tool_name": "c", "type": "max_count_per_step", "max_count_limit": 1})
    capped.record("c", "1")
    assert capped.allowed(offered) == ["send_message", "a", "b"]
    parent = rules({"tool_name": "a", "type": "parent_last_tool", "children": ["c"]})
    assert parent.allowed(offered) == ["send_message", "a", "b"]
    required = rules({"tool_name": "b", "type": "required_before_exit"}, {"tool_name": "c", "type": "exit_loop"})
    assert required.allowed(offered) == ["a", "b"]
    required.record("b", "ok")
    assert required.allowed(offered) == offered and required.exits() == {"c"}


def test_a_conditional_rule_follows_the_tools_output() -> None:
    state = rules(
        {"tool_name": "check", "type": "conditional", "child_output_mapping": {"yes": "a"}, "default_child": "b"}
    )
    state.record("check", "yes")
    assert state.allowed(["a", "b", "check"]) == ["a"]
    state.record("check", "maybe")
    assert state.allowed(["a", "b", "check"]) == ["b"]


def test_rules_given_twice_are_kept_once() -> None:
    from memvec.types import AgentSettings

    rule = {"tool_name": "send_message", "type": "exit_loop"}
    assert len(AgentSettings(name="a", tool_rules=[rule, rule, rule]).tool_rules) == 1


# -- the sandbox -------------------------------------------------------------------------------------
def test_a_tool_runs_without_the_servers_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    source = "def env():\n    '''E.'''\n    import os\n    return sorted(os.environ)\n"
    result = run_tool(source, "env", {})
    assert (
        result.ok and "OPENAI_API_KEY" not in result.value and set(result.value) <= {"PATH", "LANG", "PYTHONIOENCODING"}
    )


def test_a_tool_past_its_time_or_memory_is_stopped() -> None:
    assert "ran past its 1 s limit" in str(run_tool("def f():\n    while True: pass\n", "f", {}, timeout_s=1).error)
    assert "MemoryError" in str(run_tool("def f():\n    return bytearray(4 << 30)\n", "f", {}).error)
    assert run_tool("def f(x):\n    raise ValueError(x)\n", "f", {"x": "no"}).error == "ValueError: no"


# -- through letta-client ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(tmp_path_factory.mktemp("tools") / "home", keys=f"{ADMIN},{SCOPED}=scoped-agent").start()
    yield srv
    srv.stop()


@pytest.fixture
def client(server: Server) -> Iterator[Letta]:
    with letta_for(server, ADMIN) as letta:
        yield letta


def test_tools_are_created_upserted_listed_changed_and_deleted(client: Letta) -> None:
    tool = client.tools.create(source_code=DICE, tags=["games"])
    assert tool.id.startswith("tool-") and tool.name == "roll_dice" and tool.tool_type == "custom"
    assert tool.json_schema and tool.json_schema["parameters"]["required"] == ["num_sides"]  # type: ignore[index]
    again = client.tools.upsert(source_code=DICE, description="Roll one die.")
    # Letta's upsert: what is given replaces, what is left out (the tags) stays
    assert again.id == tool.id and again.description == "Roll one die." and again.tags == ["games"]
    assert client.tools.upsert(source_code=DICE, tags=[]).tags == []
    assert [t.id for t in client.tools.list(name="roll_dice")] == [tool.id]
    changed = client.tools.update(tool.id, return_char_limit=10)
    assert changed.return_char_limit == 10 and client.tools.retrieve(tool.id).return_char_limit == 10
    with pytest.raises(Exception, match="exists already"):
        client.tools.create(source_code=DICE)
    client.tools.delete(tool.id)
    assert list(client.tools.list(name="roll_dice")) == []


def test_the_built_in_tools_are_listed_with_fixed_ids_and_cannot_be_deleted(client: Letta) -> None:
    listed = {t.name: t for t in client.tools.list(limit=100)}
    assert (
        listed["send_message"].id == builtin_tool_id("send_message")
        and listed["send_message"].tool_type == "letta_core"
    )
    assert listed["memory_replace"].tool_type == "letta_memory_core"
    with pytest.raises(Exception, match="built in"):
        client.tools.delete(listed["send_message"].id)


def test_an_agent_gets_the_tools_it_names_and_they_attach_and_detach(client: Letta) -> None:
    dice = client.tools.upsert(source_code=DICE)
    send = builtin_tool_id("send_message")
    agent = client.agents.create(name="gamer", tool_ids=[send, dice.id], include_base_tools=False)
    assert [t.name for t in client.agents.tools.list(agent.id)] == ["send_message", "roll_dice"]
    client.agents.tools.detach(dice.id, agent_id=agent.id)
    assert [t.name for t in client.agents.tools.list(agent.id)] == ["send_message"]
    client.agents.tools.attach(dice.id, agent_id=agent.id)
    client.agents.tools.attach(dice.id, agent_id=agent.id)
    assert [t.name for t in client.agents.retrieve(agent.id).tools] == ["send_message", "roll_dice"]
    based = client.agents.create(name="based", tool_ids=[dice.id])
    assert {"send_message", "conversation_search", "roll_dice"} <= {t.name for t in based.tools}
    rules = client.agents.update(agent.id, tool_rules=[{"tool_name": "roll_dice", "type": "exit_loop"}] * 2)
    assert [(r.tool_name, r.type) for r in rules.tool_rules or []] == [("roll_dice", "exit_loop")]


def test_a_scoped_key_may_not_create_tools(server: Server) -> None:
    with Letta(base_url=server.url, api_key=SCOPED) as scoped, pytest.raises(PermissionDeniedError):
        scoped.tools.create(source_code=DICE)


# -- the agent loop ------------------------------------------------------------------------------------
def _dice_agent(letta: Letta) -> str:
    dice = letta.tools.upsert(source_code=DICE)
    agent = letta.agents.create(name="dicer", model="scripted/agent", tool_ids=[dice.id])
    return agent.id


def test_by_default_a_custom_tools_call_goes_back_to_the_client(tmp_path: Path) -> None:
    SCRIPTED.reset()
    SCRIPTED.script = [Turn(content=None, calls=[ToolCall("roll_dice", {"num_sides": 6})])]
    with served_in_process(tmp_path / "home") as url, Letta(base_url=url) as letta:
        response = letta.agents.messages.create(_dice_agent(letta), input="roll a die")
    assert [m.message_type for m in response.messages] == ["approval_request_message"]
    request = response.messages[0]
    assert request.tool_call.name == "roll_dice" and json.loads(request.tool_call.arguments) == {"num_sides": 6}  # type: ignore[union-attr,arg-type]
    assert response.stop_reason.stop_reason == "requires_approval"


def test_with_subprocess_execution_the_tool_runs_and_the_model_reads_its_return(tmp_path: Path) -> None:
    SCRIPTED.reset()
    SCRIPTED.script = [
        Turn(content=None, calls=[ToolCall("roll_dice", {"num_sides": 1, "bonus": 41})]),
        say("You rolled 42."),
    ]
    with served_in_process(tmp_path / "home", tool_execution="subprocess") as url, Letta(base_url=url) as letta:
        response = letta.agents.messages.create(_dice_agent(letta), input="roll a die")
    kinds = [m.message_type for m in response.messages]
    assert kinds == ["tool_call_message", "tool_return_message", "assistant_message"]
    assert response.messages[1].tool_return == "42" and response.messages[1].status == "success"  # type: ignore[union-attr]
    assert SCRIPTED.requests[-1][-1]["content"] == "42"


def test_without_assistant_messages_send_message_shows_as_its_call(tmp_path: Path) -> None:
    SCRIPTED.reset()
    SCRIPTED.script = [say("Hello there.")]
    with served_in_process(tmp_path / "home") as url, Letta(base_url=url) as letta:
        agent = letta.agents.create(name="plain", model="scripted/agent")
        response = letta.agents.messages.create(agent.id, input="hi", use_assistant_message=False)
    assert [m.message_type for m in response.messages] == ["tool_call_message", "tool_return_message"]
    assert json.loads(response.messages[0].tool_call.arguments)["message"] == "Hello there."  # type: ignore[union-attr,arg-type]


def test_an_exit_loop_rule_ends_the_reply_after_its_tool(tmp_path: Path) -> None:
    SCRIPTED.reset()
    SCRIPTED.script = [Turn(content=None, calls=[ToolCall("roll_dice", {"num_sides": 1})]), say("not reached")]
    with served_in_process(tmp_path / "home", tool_execution="subprocess") as url, Letta(base_url=url) as letta:
        agent = _dice_agent(letta)
        letta.agents.update(agent, tool_rules=[{"tool_name": "roll_dice", "type": "exit_loop"}])
        response = letta.agents.messages.create(agent, input="roll a die")
    assert [m.message_type for m in response.messages] == ["tool_call_message", "tool_return_message"]
    assert response.stop_reason.stop_reason == "tool_rule" and SCRIPTED.script  # the second step never ran


def test_run_first_and_child_rules_choose_what_the_model_is_offered(tmp_path: Path) -> None:
    SCRIPTED.reset()
    SCRIPTED.script = [Turn(content=None, calls=[ToolCall("roll_dice", {"num_sides": 1})]), say("Done.")]
    rules = [
        {"tool_name": "roll_dice", "type": "run_first"},
        {"tool_name": "roll_dice", "type": "constrain_child_tools", "children": ["send_message"]},
    ]
    with served_in_process(tmp_path / "home", tool_execution="subprocess") as url, Letta(base_url=url) as letta:
        agent = _dice_agent(letta)
        letta.agents.update(agent, tool_rules=rules)  # type: ignore[arg-type]
        letta.agents.messages.create(agent, input="roll a die")
    assert SCRIPTED.offered == [["roll_dice"], ["send_message"]]


def test_the_client_answers_a_waiting_call_with_its_return_and_the_reply_goes_on(tmp_path: Path) -> None:
    SCRIPTED.reset()
    SCRIPTED.script = [Turn(content=None, calls=[ToolCall("roll_dice", {"num_sides": 6})]), say("You rolled 4.")]
    with served_in_process(tmp_path / "home") as url, Letta(base_url=url) as letta:
        agent = _dice_agent(letta)
        asked = letta.agents.messages.create(agent, input="roll a die").messages[0]
        call_id = str(asked.tool_call.tool_call_id)  # type: ignore[union-attr]
        answer: ToolReturnParam = {"type": "tool", "tool_call_id": call_id, "tool_return": "4", "status": "success"}
        response = letta.agents.messages.create(agent, messages=[{"type": "approval", "approvals": [answer]}])
        with pytest.raises(BadRequestError, match="no tool call"):
            letta.agents.messages.create(agent, messages=[{"type": "approval", "approvals": [answer]}])
    assert [m.message_type for m in response.messages] == ["tool_return_message", "assistant_message"]
    assert response.messages[0].tool_return == "4" and response.messages[1].content == "You rolled 4."  # type: ignore[union-attr]
    read = SCRIPTED.requests[-1]
    assert read[-2]["tool_calls"][0]["id"] == call_id and read[-1] == {
        "role": "tool",
        "tool_call_id": call_id,
        "name": "roll_dice",
        "content": "4",
    }


@pytest.mark.parametrize("approve", [True, False])
def test_a_call_that_needs_approval_runs_only_when_approved(tmp_path: Path, approve: bool) -> None:
    SCRIPTED.reset()
    SCRIPTED.script = [call_tool("archival_memory_insert", content="Ana keeps bees"), say("Done.")]
    rule = {"tool_name": "archival_memory_insert", "type": "requires_approval"}
    with served_in_process(tmp_path / "home") as url, Letta(base_url=url) as letta:
        agent = letta.agents.create(name="careful", model="scripted/agent", tool_rules=[rule])  # type: ignore[list-item]
        asked = letta.agents.messages.create(agent.id, input="remember my bees")
        assert asked.stop_reason.stop_reason == "requires_approval"
        assert letta.agents.passages.list(agent.id) == []  # nothing ran before the answer
        response = letta.agents.messages.create(
            agent.id, messages=[{"type": "approval", "approve": approve, "reason": "not now"}]
        )
        stored = [p.text for p in letta.agents.passages.list(agent.id)]
    assert stored == (["Ana keeps bees"] if approve else [])
    returned = response.messages[0]
    assert returned.message_type == "tool_return_message" and (returned.status == "success") is approve
    assert approve or "denied archival_memory_insert: not now" in returned.tool_return


def test_a_failing_tool_returns_an_error_with_its_traceback_and_printing(tmp_path: Path) -> None:
    source = "def divide():\n    '''Divide by zero.'''\n    print('about to divide')\n    return 5 / 0\n"
    SCRIPTED.reset()
    SCRIPTED.script = [Turn(content=None, calls=[ToolCall("divide", {})]), say("That failed.")]
    with served_in_process(tmp_path / "home", tool_execution="subprocess") as url, Letta(base_url=url) as letta:
        tool = letta.tools.create(source_code=source)
        agent = letta.agents.create(name="divider", model="scripted/agent", tool_ids=[tool.id])
        response = letta.agents.messages.create(agent.id, input="divide")
    returned = next(m for m in response.messages if m.message_type == "tool_return_message")
    assert returned.status == "error"
    assert "Error executing function divide: ZeroDivisionError: division by zero" in returned.tool_return
    assert returned.stdout == ["about to divide\n"] and "division by zero" in (returned.stderr or [""])[0]


def test_a_return_past_the_tools_limit_is_cut_and_says_so(tmp_path: Path) -> None:
    source = 'def shout():\n    """Shout."""\n    return "x" * 100\n'
    SCRIPTED.reset()
    SCRIPTED.script = [Turn(content=None, calls=[ToolCall("shout", {})]), say("Loud.")]
    with served_in_process(tmp_path / "home", tool_execution="subprocess") as url, Letta(base_url=url) as letta:
        tool = letta.tools.create(source_code=source, return_char_limit=10)
        agent = letta.agents.create(name="shouter", model="scripted/agent", tool_ids=[tool.id])
        response = letta.agents.messages.create(agent.id, input="shout")
    returned = next(m for m in response.messages if m.message_type == "tool_return_message")
    assert returned.tool_return == "x" * 10 + "... [function output was truncated at 10 of its 100 characters]"


def test_an_agents_tool_runs_on_request_with_letta_s_argument_names(client: Letta) -> None:
    agent = client.agents.create(name="tool-runner", memory_blocks=[{"label": "human", "value": "Ana"}])
    done = client.agents.tools.run(
        "memory_insert", agent_id=agent.id, args={"label": "human", "new_string": "likes tea"}
    )
    assert done.status == "success" and "likes tea" in client.agents.blocks.retrieve("human", agent_id=agent.id).value
    wrong = client.agents.tools.run("memory_insert", agent_id=agent.id, args={"label": "human", "FAKE_ARG": "x"})
    assert (wrong.status, wrong.func_return) == ("error", None) and "FAKE_ARG" in str(wrong.stderr)
    with pytest.raises(NotFoundError):
        client.agents.tools.run("no_such_tool", agent_id=agent.id, args={})
    dice = client.tools.upsert(source_code=DICE)
    client.agents.tools.attach(dice.id, agent_id=agent.id)
    with pytest.raises(BadRequestError, match="its client runs"):  # this server runs no tool code
        client.agents.tools.run("roll_dice", agent_id=agent.id, args={"num_sides": 6})


def test_a_source_and_a_json_schema_given_together_must_be_of_one_function(client: Letta) -> None:
    tool = client.tools.upsert(source_code=DICE)
    other: dict[str, object] = {"name": "flip_coin", "description": "Flip.", "parameters": {"type": "object"}}
    with pytest.raises(BadRequestError, match="names 'flip_coin', but the source defines 'roll_dice'"):
        client.tools.update(tool.id, source_code=DICE, json_schema=other)
    renamed = client.tools.update(tool.id, json_schema=other)  # a schema alone may rename the tool
    assert renamed.name == "flip_coin"
    client.tools.delete(tool.id)
