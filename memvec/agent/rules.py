"""Letta's tool rules over one reply: which of the agent's tools the model is offered at each step,
and which calls end or continue the turn. Pure: the loop tells it what was called and returned.

- run_first: the first step offers only these tools.
- constrain_child_tools: after the tool, only its children; conditional: after the tool, the child its
  output maps to (else its default child).
- parent_last_tool: its children only once the tool was called in this turn.
- max_count_per_step: the tool at most that many times in a turn.
- required_before_exit: the tools that end a turn are held back until these were called.
- exit_loop ends the turn after the tool; continue_loop goes on after it; requires_approval sends the
  call back to the client for a person's approval.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from memvec.types.tools import ToolRule

ENDS_TURN = "send_message"


@dataclass
class RuleState:
    rules: Sequence[ToolRule]
    calls: list[tuple[str, str]] = field(default_factory=list)  # (tool, what it returned), this turn

    def _of(self, kind: str) -> list[ToolRule]:
        return [r for r in self.rules if r.type == kind]

    def record(self, name: str, returned: str) -> None:
        self.calls.append((name, returned))

    def allowed(self, offered: Sequence[str]) -> list[str]:
        """The tools offered at the next step, in the agent's order (all of them when no rule applies)."""
        names = list(offered)
        if not self.calls and (first := {r.tool_name for r in self._of("run_first")} & set(names)):
            return [n for n in names if n in first]
        if self.calls and (after := self._children_of_last()) is not None:
            names = [n for n in names if n in after]
        called = Counter(name for name, _ in self.calls)
        for rule in self._of("parent_last_tool"):
            if not called[rule.tool_name]:
                names = [n for n in names if n not in (rule.children or [])]
        for rule in self._of("max_count_per_step"):
            if called[rule.tool_name] >= (rule.max_count_limit or 0):
                names = [n for n in names if n != rule.tool_name]
        if [r for r in self._of("required_before_exit") if not called[r.tool_name]]:
            held = self.exits() | {ENDS_TURN}
            names = [n for n in names if n not in held] or names  # never leave the model nothing to call
        return names

    def _children_of_last(self) -> set[str] | None:
        last, returned = self.calls[-1]
        for rule in self.rules:
            if rule.tool_name != last:
                continue
            if rule.type == "constrain_child_tools":
                return set(rule.children or [])
            if rule.type == "conditional":
                return _conditional_child(rule, returned)
        return None

    def exits(self) -> set[str]:
        return {r.tool_name for r in self._of("exit_loop")}

    def continues(self) -> set[str]:
        return {r.tool_name for r in self._of("continue_loop")}

    def needs_approval(self) -> frozenset[str]:
        return frozenset(r.tool_name for r in self._of("requires_approval"))


def _conditional_child(rule: ToolRule, returned: str) -> set[str] | None:
    extra = rule.model_extra or {}
    mapping = extra.get("child_output_mapping") or {}
    child = mapping.get(returned.strip()) if isinstance(mapping, dict) else None
    child = child or extra.get("default_child")
    return {str(child)} if child else None
