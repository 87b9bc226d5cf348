"""One completion with an agent's model and nothing else: no memory read, nothing stored (Letta's
`POST /v1/agents/{id}/generate`)."""

from __future__ import annotations

from dataclasses import dataclass

from memvec.agent.llm import complete


@dataclass(frozen=True)
class Generated:
    content: str
    model: str
    prompt_tokens: int
    completion_tokens: int


def generate(model: str, prompt: str, *, system_prompt: str | None = None) -> Generated:
    """The model's answer to `prompt` (after `system_prompt`), with the tokens the provider counted."""
    messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    counted: list[tuple[int, int]] = []
    message = complete(
        model,
        [*messages, {"role": "user", "content": prompt}],
        on_usage=lambda prompt_tokens, completion_tokens: counted.append((prompt_tokens, completion_tokens)),
    )
    prompt_tokens, completion_tokens = counted[0] if counted else (0, 0)
    return Generated(str(message.content or ""), model, prompt_tokens, completion_tokens)
