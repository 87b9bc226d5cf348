"""A reply as Server-Sent Events, in the shapes letta-client parses.

Each Letta message is one `data:` event as it happens (reasoning, tool call, tool return, assistant;
with `stream_tokens` also chunks of the model's text that share an id); then the stop reason, the
usage, and `data: [DONE]`. A failure after the stream began is an `event: error` whose data is
memvec's error body, which letta-client raises as an API error.

The reply runs in a task of its own that holds the agent's slot (and, inside, its store lease)
until the reply is done: a client that goes away mid-stream stops receiving, not the reply, so what
the agent did is stored once and whole, and the slot is released when it ends.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import StreamingResponse

from memvec.errors import MemvecError, ModelCallError
from memvec.service.deps import ServiceState, error_kind
from memvec.service.schemas import LettaResponseOut

log = logging.getLogger("memvec.service")
DONE = b"data: [DONE]\n\n"
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}  # nginx: pass each event on at once
Emit = Callable[[dict[str, Any]], None]
Reply = Callable[[Emit], LettaResponseOut]  # runs in a worker thread, telling each message as it happens
_RUNNING: set[asyncio.Task[None]] = set()  # replies whose client may be gone: kept until they end


def sse(payload: dict[str, Any], *, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return (head + "data: " + json.dumps(payload, default=str) + "\n\n").encode()


def error_payload(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, ModelCallError):
        return {"error": "model_error", "detail": exc.public}
    if isinstance(exc, MemvecError):  # the words the same error has in a plain response
        return {"error": error_kind(exc), "detail": str(exc)}
    return {"error": "internal_error", "detail": "the reply failed (details in the server's log)"}


async def stream_reply(
    service: ServiceState, agent: str, reply: Reply, *, request: Request | None = None
) -> StreamingResponse | None:
    """Take the agent's slot (a busy agent is a 409 before anything is streamed), then stream `reply`;
    None, having run nothing, when the client of `request` left while the slot was awaited."""
    slot = AsyncExitStack()
    await slot.enter_async_context(service.agent_slot(agent))
    if request is not None and await request.is_disconnected():
        await slot.aclose()
        return None
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    def emit(message: dict[str, Any]) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, ("message", message))

    async def run() -> None:
        try:
            queue.put_nowait(("done", await run_in_threadpool(reply, emit)))
        except Exception as exc:  # told to the client as an error event; never a dropped connection
            if not isinstance(exc, MemvecError) or isinstance(exc, ModelCallError):
                log.warning("streamed reply of %s failed: %s", agent, exc, exc_info=not isinstance(exc, MemvecError))
            queue.put_nowait(("error", exc))
        finally:
            await slot.aclose()

    task = asyncio.create_task(run())
    _RUNNING.add(task)
    task.add_done_callback(_RUNNING.discard)
    return StreamingResponse(_events(queue), media_type="text/event-stream", headers=SSE_HEADERS)


async def _events(queue: asyncio.Queue[tuple[str, Any]]) -> AsyncIterator[bytes]:
    while True:
        kind, item = await queue.get()
        if kind == "message":
            yield sse(item)
        elif kind == "done":
            yield sse(item.stop_reason)
            yield sse(item.usage)
            yield DONE
            return
        else:
            yield sse(error_payload(item), event="error")
            return
