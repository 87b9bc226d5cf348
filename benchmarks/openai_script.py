"""An OpenAI-shaped chat-completions server that follows the instructions of Letta's test messages,
for running Letta's own suite against `memvec serve` without a network (benchmarks/letta_suite.py).

litellm calls it as it would call OpenAI (`OPENAI_API_BASE` points here), streamed or not. It is a
script, not a model: a request naming a tool ("Call the roll_dice tool with 16 sides") gets that
call, "Use ONLY the open_files tool to open the file named F with offset 0 and length 5" (or to
search for `P`, or for words) gets that tool with those arguments, "num_sides=6, num_sides=12" one
call each in one answer, a request quoting a message ("... send_message tool with the message 'X'",
"Reply with the message 'X'") gets X said, a tool result gets a sentence telling it, and anything
else a short greeting; said through send_message when the request offers it, as plain text when not.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

QUOTED = re.compile(r"(?:send_message tool with|Reply with) (?:exactly this message|the message)[:]? '(.+)'", re.S)
NAMED_TOOL = re.compile(r"[Cc]all the (\w+) (?:tool|function)(?: with (\d+) sides)?")
SIDES = re.compile(r"num_sides=(\d+)")
ONLY_TOOL = re.compile(r"Use (?:ONLY )?the (\w+) tool to (.+)", re.S)  # Letta's file-tool tests
FILE_NAMED = re.compile(r"file named (\S+)")
LINES = re.compile(r"offset (\d+) and length (\d+)")
BACKTICKED = re.compile(r"`([^`]+)`")
SEARCH_FOR = re.compile(r"search for (?:'([^']+)'.*|(.+?)\.?)$", re.S)
GREETING = "Hello! How can I help you today?"


def reply_to(request: dict[str, Any]) -> tuple[str | None, list[tuple[str, dict[str, Any]]]]:
    """(text, [(tool, arguments)]) for one chat-completions request."""
    messages = request.get("messages") or []
    offered = {t["function"]["name"] for t in request.get("tools") or [] if t.get("type") == "function"}
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        told = f"The tool answered: {_text(last.get('content'))[:200]}"
        return _say(told, offered)
    user = next((_text(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
    if quoted := QUOTED.search(user):
        return _say(quoted.group(1), offered)
    only = ONLY_TOOL.search(user)
    if only and only.group(1) in offered:
        return None, [(only.group(1), _arguments(only.group(2), _parameters(request, only.group(1))))]
    named = NAMED_TOOL.search(user)
    if named and named.group(1) in offered and named.group(1) != "send_message":
        if sides := SIDES.findall(user):  # "num_sides=6, num_sides=12": one call each, in one answer
            return None, [(named.group(1), {"num_sides": int(n)}) for n in sides]
        arguments = {"num_sides": int(named.group(2))} if named.group(2) else {}
        return None, [(named.group(1), arguments)]
    shape = request.get("response_format") or {}
    if shape.get("type") == "json_schema":  # a structured answer: an object the schema asks for
        return _say(json.dumps(_instance(shape["json_schema"].get("schema", {}), user)), offered)
    return _say(GREETING, offered)


def _instance(schema: dict[str, Any], asked: str) -> Any:
    """A value of `schema`: each string says what it is about, from its description and the question."""
    kind = schema.get("type")
    if kind == "object":
        return {name: _instance(part, asked) for name, part in schema.get("properties", {}).items()}
    if kind == "array":
        return [_instance(schema.get("items", {}), asked)]
    if kind in ("integer", "number"):
        return 1
    if kind == "boolean":
        return True
    return f"{schema.get('description', 'an answer')}: {asked[:80]}"


def _parameters(request: dict[str, Any], tool: str) -> set[str]:
    for offered in request.get("tools") or []:
        if offered.get("function", {}).get("name") == tool:
            return set(offered["function"].get("parameters", {}).get("properties", {}))
    return set()


def _arguments(instruction: str, parameters: set[str]) -> dict[str, Any]:
    """A tool's arguments as an instruction words them: a file named X (with an offset and length of
    lines), a `backticked` pattern, or what to search for."""
    arguments: dict[str, Any] = {}
    if "file_requests" in parameters and (named := FILE_NAMED.search(instruction)):
        request: dict[str, Any] = {"file_name": named.group(1)}
        if lines := LINES.search(instruction):
            request |= {"offset": int(lines.group(1)), "length": int(lines.group(2))}
        arguments["file_requests"] = [request]
    if "pattern" in parameters and (quoted := BACKTICKED.search(instruction)):
        arguments["pattern"] = quoted.group(1)
    if "query" in parameters and (wanted := SEARCH_FOR.search(instruction.strip())):
        arguments["query"] = wanted.group(1) or wanted.group(2)
    return arguments


def _say(text: str, offered: set[str]) -> tuple[str | None, list[tuple[str, dict[str, Any]]]]:
    return (None, [("send_message", {"message": text})]) if "send_message" in offered else (text, [])


def _text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def completion(request: dict[str, Any]) -> dict[str, Any]:
    text, calls = reply_to(request)
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [_tool_call(name, arguments) for name, arguments in calls]
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "scripted"),
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": _usage(request, message),
    }


def _usage(request: dict[str, Any], message: dict[str, Any]) -> dict[str, int]:
    """Tokens as a word count (a script has no tokenizer): more prompt, more tokens, as with a model."""
    prompt = sum(len(_text(m.get("content")).split()) for m in request.get("messages") or []) + 1
    completion = len(str(message.get("content") or "").split()) + 8 * len(message.get("tool_calls") or []) + 1
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _tool_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"call_{uuid.uuid4().hex[:24]}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def chunks(request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The same reply as stream chunks: the text a few words at a time, a call's arguments in two parts."""
    whole = completion(request)
    base = {k: whole[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    message = whole["choices"][0]["message"]
    for word in re.findall(r"\S+\s*", message["content"] or ""):
        yield base | {"choices": [{"index": 0, "delta": {"role": "assistant", "content": word}}]}
    for index, call in enumerate(message.get("tool_calls") or []):
        arguments = call["function"]["arguments"]
        half = len(arguments) // 2
        for n, part in enumerate((arguments[:half], arguments[half:])):
            function = {"name": call["function"]["name"], "arguments": part} if n == 0 else {"arguments": part}
            delta = {"index": index, "function": function} | ({"id": call["id"], "type": "function"} if n == 0 else {})
            yield base | {"choices": [{"index": 0, "delta": {"tool_calls": [delta]}}]}
    finish = whole["choices"][0]["finish_reason"]
    yield base | {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": whole["usage"]}


class _Handler(BaseHTTPRequestHandler):
    latency_s = 0.0  # before an answer's first byte (set per server by `serving`)

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no {self.path} here", "type": "not_found"}})
            return
        time.sleep(self.latency_s)
        if request.get("stream"):
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            for chunk in chunks(request):
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
        else:
            self._send(200, completion(request))

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serving(port: int = 0, *, latency_s: float = 0.0) -> Iterator[str]:
    """The server on 127.0.0.1 (`port` 0: any free one) while the block runs; yields its /v1 base URL.
    `latency_s`: how long each answer takes to start, as a hosted model's does."""
    handler = type("_TimedHandler", (_Handler,), {"latency_s": latency_s})
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
