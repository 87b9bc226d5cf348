"""Sleep-time consolidation: the agent's own model (through litellm) reads the messages since the last
run and proposes facts for archival memory (citing message ids, superseding facts they contradict) and
core-block rewrites; `Memory.apply_consolidation` writes them as one reviewable, undoable run.

A model that fails, times out, answers something that is not the JSON asked for, cites a message it
was not shown or supersedes a fact it was not shown changes nothing (ModelCallError).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError

from memvec.agent import llm
from memvec.agent.prompts import CONSOLIDATION_INSTRUCTIONS
from memvec.errors import InvalidInputError, ModelCallError
from memvec.exchange.consolidation import ConsolidationProposal, ConsolidationRun
from memvec.memory import Memory
from memvec.types import Record, describe_validation_error

MAX_MESSAGES = 200  # read per run; the rest wait for the next one
RELATED_PER_MESSAGE = 3
MAX_RELATED = 40
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")


def consolidate(
    memory: Memory,
    agent: str,
    *,
    model: str | None = None,
    max_messages: int = MAX_MESSAGES,
    timeout: float | None = None,
) -> ConsolidationRun | None:
    """One run over the messages since the last run not undone (None: there were none), holding the
    agent's lease: two servers (or a reply) never read the same messages into two runs."""
    with memory.agent_lease(agent):
        return _consolidate(
            memory,
            agent,
            model=model,
            max_messages=max_messages,
            timeout=memory.config.llm_timeout_s if timeout is None else timeout,
        )


def _consolidate(
    memory: Memory, agent: str, *, model: str | None, max_messages: int, timeout: float
) -> ConsolidationRun | None:
    settings, _ = memory.get_agent(agent)
    model = model or settings.model
    if not model:
        raise InvalidInputError(f"agent {agent!r} has no model: pass one (--model) to consolidate with")
    messages = memory.recall(agent).list(limit=max_messages, after=last_read(memory, agent))
    if not messages:
        return None
    related = _related_facts(memory, agent, messages)
    prompt = [
        {"role": "system", "content": CONSOLIDATION_INSTRUCTIONS},
        {"role": "user", "content": _material(memory, agent, messages, related)},
    ]
    answer = llm.complete(model, prompt, timeout=timeout)
    proposal = parse_proposal(str(answer.content or ""), shown={m.id for m in messages}, related=set(related))
    return memory.apply_consolidation(agent, proposal, model=model, through_message=max(m.id for m in messages))


def last_read(memory: Memory, agent: str) -> int | None:
    """The last message a run read, among runs not undone (an undone run's messages are read again)."""
    read = [
        run.through_message
        for run in memory.consolidation_runs(agent)
        if run.undone_at is None and run.through_message is not None
    ]
    return max(read, default=None)


def _related_facts(memory: Memory, agent: str, messages: list[Record]) -> dict[int, str]:
    """Current archival facts near the messages (what a fact may repeat or supersede), by id."""
    archival = memory.archival(agent)
    related: dict[int, str] = {}
    for message in messages:
        for hit in archival.search(message.text[:2_000], k=RELATED_PER_MESSAGE):
            related.setdefault(hit.id, hit.text)
        if len(related) >= MAX_RELATED:
            break
    return related


def _material(memory: Memory, agent: str, messages: list[Record], related: dict[int, str]) -> str:
    blocks = [
        {"label": b.label, "value": b.value, "limit": b.limit, "read_only": b.read_only}
        for b in memory.core(agent).blocks()
    ]
    shown = [
        {
            "id": m.id,
            "role": m.role,
            "text": m.text,
            "session": m.citation.session_id,
            "at": m.created_at.isoformat(timespec="seconds"),
        }
        for m in messages
    ]
    facts = [{"id": record_id, "text": text} for record_id, text in related.items()]
    return json.dumps({"core_blocks": blocks, "archival_facts": facts, "messages": shown}, ensure_ascii=False)


def parse_proposal(content: str, *, shown: set[int], related: set[int]) -> ConsolidationProposal:
    """The model's answer as a proposal; ModelCallError when it is not one (nothing is written)."""
    try:
        data: Any = json.loads(_FENCE.sub("", content.strip()))
        proposal = ConsolidationProposal.model_validate(data)
    except json.JSONDecodeError as exc:
        raise ModelCallError(f"the consolidation model did not answer JSON: {exc}") from exc
    except ValidationError as exc:
        raise ModelCallError(
            f"the consolidation model's JSON is not a proposal: {describe_validation_error(exc)}"
        ) from exc
    for fact in proposal.facts:
        if not set(fact.sources) <= shown:
            raise ModelCallError(f"the consolidation model cites messages it was not shown: {fact.sources}")
        if fact.supersedes is not None and fact.supersedes not in related:
            raise ModelCallError(f"the consolidation model supersedes a fact it was not shown: {fact.supersedes}")
    return proposal
