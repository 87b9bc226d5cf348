"""A sleep-time consolidation run written, and undone, in one store transaction each.

The proposal (facts citing recall messages, supersessions, block rewrites) is checked whole before
anything is written: a source that is not one of the agent's messages, a superseded id that is not a
current passage, a block that is absent, read-only or would overflow refuses the run. The run's row
holds the diff (what was added, superseded, edited, with the model's reasons); `undo_run` reverts it
exactly, or refuses when something the run wrote has changed since (undo the later change first).
"""

from __future__ import annotations

from memvec.engine.engine import Engine
from memvec.errors import CoreMemoryError, InvalidInputError, NotFoundError, VersionConflictError
from memvec.exchange.consolidation import (
    ConsolidatedBlock,
    ConsolidatedFact,
    ConsolidationProposal,
    ConsolidationRun,
    ProposedBlock,
    ProposedFact,
)
from memvec.types import Citation, CoreBlock, NewRecord, Record, Tier


def apply_run(
    engine: Engine, agent: str, proposal: ConsolidationProposal, *, model: str, through_message: int | None
) -> ConsolidationRun:
    sources = _sources(engine, agent, proposal.facts)
    superseded = _superseded(engine, agent, proposal.facts)
    blocks = _blocks(engine, agent, proposal.blocks)
    started_at = engine.store.clock()
    with engine.store.transaction():
        run_id = engine.store.start_run(agent, model, through_message, started_at)
        facts = _write_facts(engine, agent, proposal.facts, sources, superseded)
        edits = [_edit_block(engine, agent, old, change, run_id) for old, change in blocks]
        run = ConsolidationRun(
            id=run_id,
            agent=agent,
            model=model,
            started_at=started_at,
            through_message=through_message,
            facts=facts,
            blocks=edits,
        )
        engine.store.finish_run(run)
    engine.tier_index(agent, Tier.ARCHIVAL)  # catches up with the committed run
    return run


def _sources(engine: Engine, agent: str, facts: list[ProposedFact]) -> dict[int, Record]:
    wanted = sorted({i for fact in facts for i in fact.sources})
    found = {r.id: r for r in engine.get_many(agent, Tier.RECALL, wanted)}
    missing = [i for i in wanted if i not in found]
    if missing:
        raise InvalidInputError(f"facts cite {missing}, which are not messages of agent {agent!r}")
    return found


def _superseded(engine: Engine, agent: str, facts: list[ProposedFact]) -> dict[int, Record]:
    wanted = [fact.supersedes for fact in facts if fact.supersedes is not None]
    if len(wanted) != len(set(wanted)):
        raise InvalidInputError("two facts supersede the same passage")
    found = {r.id: r for r in engine.get_many(agent, Tier.ARCHIVAL, wanted)}
    stale = [i for i in wanted if i not in found or found[i].superseded_by is not None]
    if stale:
        raise InvalidInputError(f"facts supersede {stale}, which are not current passages of agent {agent!r}")
    return found


def _blocks(engine: Engine, agent: str, changes: list[ProposedBlock]) -> list[tuple[CoreBlock, ProposedBlock]]:
    current = {block.label: block for block in engine.store.blocks(agent)}
    planned = []
    for change in changes:
        old = current.get(change.label)
        if old is None or old.read_only:
            raise CoreMemoryError(f"block {change.label!r} of agent {agent!r} is absent or read-only")
        if len(change.value) > old.limit:
            raise CoreMemoryError(f"block {change.label!r}: {len(change.value)} characters; its limit is {old.limit}")
        if change.value != old.value:
            planned.append((old, change))
    if len({old.label for old, _ in planned}) != len(planned):
        raise InvalidInputError("a block is rewritten twice in one run")
    return planned


def _write_facts(
    engine: Engine, agent: str, facts: list[ProposedFact], sources: dict[int, Record], superseded: dict[int, Record]
) -> list[ConsolidatedFact]:
    records = []
    for fact in facts:
        first = sources[fact.sources[0]]
        citation = Citation(
            session_id=first.citation.session_id,
            turn_id=first.citation.turn_id,
            source_url="memvec:recall/" + ",".join(str(i) for i in fact.sources),
        )
        records.append(
            NewRecord(agent=agent, tier=Tier.ARCHIVAL, text=fact.text, citation=citation, supersedes=fact.supersedes)
        )
    results = engine.insert(records, merge_repeats=False) if records else []
    return [
        ConsolidatedFact(
            id=result.record.id,
            text=fact.text,
            sources=fact.sources,
            supersedes=fact.supersedes,
            previous_valid_to=superseded[fact.supersedes].valid_to if fact.supersedes else None,
            created=result.created,
            reason=fact.reason,
        )
        for fact, result in zip(facts, results, strict=True)
    ]


def _edit_block(engine: Engine, agent: str, old: CoreBlock, change: ProposedBlock, run_id: int) -> ConsolidatedBlock:
    owner = engine.store.block_owner(agent, old.label)  # a shared block's change is in its owner's history
    if not engine.store.compare_and_set_block(
        owner, old.label, old.value, change.value, actor=f"consolidation:{run_id}", op="rewrite"
    ):
        raise CoreMemoryError(f"block {old.label!r} changed while the run was written")
    seq = engine.store.block_history(owner, old.label)[-1].seq
    return ConsolidatedBlock(label=old.label, seq=seq, old=old.value, new=change.value, reason=change.reason)


def undo_run(engine: Engine, agent: str, run_id: int) -> ConsolidationRun:
    """Revert a run whole: its new facts deleted (every index file too), the versions they superseded
    current again, its block rewrites undone. Refuses (nothing changed) when any of it moved on since."""
    run = next((r for r in engine.store.runs(agent) if r.id == run_id), None)
    if run is None:
        raise NotFoundError(f"agent {agent!r} has no consolidation run {run_id}")
    if run.undone_at is not None:
        raise InvalidInputError(f"consolidation run {run_id} was undone already")
    created = [fact for fact in run.facts if fact.created]
    with engine.store.transaction():
        now = {r.id: r for r in engine.store.get(agent, [fact.id for fact in created])}
        if any(fact.id not in now or now[fact.id].superseded_by is not None for fact in created):
            raise VersionConflictError(f"a fact of run {run_id} was updated or deleted since; undo that first")
        engine.store.delete_many(agent, [fact.id for fact in created])
        for fact in created:
            if fact.supersedes is not None:
                engine.store.reopen_version(agent, fact.supersedes, fact.id, fact.previous_valid_to)
        for edit in reversed(run.blocks):
            _undo_block(engine, agent, edit, run_id)
        engine.store.mark_run_undone(run_id)
    engine.tier_index(agent, Tier.ARCHIVAL).save()  # no index file keeps the deleted facts
    return next(r for r in engine.store.runs(agent) if r.id == run_id)


def _undo_block(engine: Engine, agent: str, edit: ConsolidatedBlock, run_id: int) -> None:
    owner = engine.store.block_owner(agent, edit.label)
    pending = [c for c in engine.store.block_history(owner, edit.label) if c.op != "undo" and c.undone_by is None]
    if not pending or pending[-1].seq != edit.seq:
        raise CoreMemoryError(f"block {edit.label!r} was edited after run {run_id}; undo that edit first")
    engine.store.undo_block(owner, edit.label, actor=f"undo:consolidation:{run_id}")
