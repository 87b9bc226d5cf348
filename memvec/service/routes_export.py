"""Export and import routes: an agent as memvec's lossless export or Letta's agent file, and either
read back in."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import Query, Request
from starlette.concurrency import run_in_threadpool

from memvec.errors import InvalidInputError
from memvec.exchange.agentfile import (
    AgentFileReport,
    ImportPlan,
    import_document,
    is_agent_file,
    parse_document,
    read_document,
)
from memvec.exchange.export import AgentExport
from memvec.memory import Memory
from memvec.memory.names import validate_display_name
from memvec.service.deps import Caller, ScopedAgent, Service, api_router, may_import, visible_agent
from memvec.service.letta_agent_file import letta_agent_file
from memvec.types import AGENT_PATTERN

router = api_router()


IMPORT_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": {"type": "object", "description": "a Letta agent file or a memvec export"}},
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file"],
                    "properties": {
                        "file": {"type": "string", "format": "binary"},
                        "name": {"type": "string", "description": "the imported agent's name (an agent file's)"},
                        "override_name": {"type": "string", "description": "Letta's older word for `name`"},
                        "append_copy_suffix": {
                            "type": "boolean",
                            "default": True,
                            "description": "an agent file's agents are named as in the file with `_copy` added",
                        },
                    },
                }
            },
        },
    }
}


@dataclass(frozen=True)
class ImportForm:
    """What an upload's form says besides the file (Letta's import form; what memvec uses of it)."""

    name: str | None = None
    copy_suffix: bool = True
    uploaded: bool = False


def _truthy(value: object, default: bool) -> bool:
    return default if value is None else str(value).strip().lower() in ("true", "1", "yes", "on")


async def _import_document(request: Request) -> tuple[Any, ImportForm]:
    """The uploaded or posted document, parsed, and what the form says."""
    if request.headers.get("content-type", "").startswith("multipart/form-data"):
        form = await request.form()
        upload, name = form.get("file"), form.get("name") or form.get("override_name")
        if upload is None or isinstance(upload, str):
            raise InvalidInputError("upload the agent file as the multipart field `file`")
        raw = await upload.read()
        parsed = await run_in_threadpool(parse_document, raw, what="the uploaded file")  # off the event loop
        suffix = _truthy(form.get("append_copy_suffix"), True)
        return parsed, ImportForm(name=str(name) if name else None, copy_suffix=suffix, uploaded=True)
    return await run_in_threadpool(parse_document, await request.body()), ImportForm()


def _as_new_agents(memory: Memory, plan: ImportPlan, form: ImportForm) -> tuple[ImportPlan, list[str]]:
    """Letta's import of an uploaded agent file: every agent is a new one, whatever agents exist (its
    name is a display name, `_copy` appended unless the form says not to; its handle the name where
    that is free, else a new id), as `POST /v1/agents` makes them. Nothing is claimed before the
    import commits: a refused import leaves no trace. Returns the plan and the display names."""
    shown = [form.name or (n + "_copy" if form.copy_suffix else n) for n in plan.display_names]
    for name in shown:
        validate_display_name(name)
    return plan.with_targets([memory.free_handle(name) for name in shown]), shown


@router.get("/v1/agents/{agent_id}/export", response_model=AgentExport | dict[str, Any], tags=["export"])
def export(
    agent_id: ScopedAgent,
    principal: Caller,
    service: Service,
    embeddings: bool = True,
    export_format: Annotated[
        Literal["memvec", "letta"] | None,
        Query(
            alias="format",
            description="memvec (the default): lossless, passages and embeddings included; "
            "letta: Letta's agent file (`.af`), which has no passages",
        ),
    ] = None,
    use_legacy_format: Annotated[
        bool | None, Query(description="Letta's switch: false is format=letta; Letta's legacy format is not served")
    ] = None,
    scrub_messages: Annotated[bool, Query(description="letta format: leave the conversation out")] = False,
) -> AgentExport | dict[str, Any]:
    """The agent, its blocks and ALL its passages and messages with citations (and embeddings); or,
    with `format=letta` (what letta-client's `export_file` asks for), Letta's agent file."""
    if use_legacy_format:
        raise InvalidInputError("Letta's legacy single-agent export format is not served: use format=letta")
    visible_agent(agent_id, principal, service)
    if export_format == "letta" or (export_format is None and use_legacy_format is False):
        return letta_agent_file(service.memory, agent_id, scrub_messages=scrub_messages)
    return service.memory.export_agent(agent_id, with_embeddings=embeddings)


@router.post(
    "/v1/agents/import", response_model=AgentFileReport, status_code=201, tags=["export"], openapi_extra=IMPORT_BODY
)
async def import_(
    request: Request,
    principal: Caller,
    service: Service,
    name: Annotated[str | None, Query(pattern=AGENT_PATTERN)] = None,
) -> AgentFileReport:
    """Import a Letta Agent File (`.af`) or a memvec export: uploaded as multipart `file` (what
    letta-client's `import_file` sends) or as the JSON body. Skipped parts are listed."""
    data, form = await _import_document(request)
    letta_upload = form.uploaded and is_agent_file(data) and principal.agents is None
    given = name or (None if letta_upload else form.name)
    plan = await run_in_threadpool(read_document, data, name=given)  # a big file: off the loop
    await run_in_threadpool(may_import, principal, service.memory, plan)
    shown: list[str] = []
    if letta_upload and name is None:
        plan, shown = await run_in_threadpool(_as_new_agents, service.memory, plan, form)
    report = await run_in_threadpool(import_document, service.memory, plan)
    for handle, display in zip(plan.targets, shown, strict=False):
        await run_in_threadpool(service.memory.rename_agent, handle, display)
    return report.model_copy(update={"agent_ids": [service.memory.agent_identity(t).id for t in plan.targets]})
