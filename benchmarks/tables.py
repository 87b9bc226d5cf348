"""Markdown tables for the benchmark reports."""

from __future__ import annotations

from typing import Any


def markdown_table(header: list[str], rows: list[list[Any]]) -> str:
    """A pipe table; floats to three decimals, anything else as its str."""

    def cell(value: Any) -> str:
        return f"{value:.3f}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)
