"""The MemGPT-style agent loop: a model that pages its own memory in and out with tool calls."""

from memvec.agent.loop import Agent
from memvec.agent.trace import Reply, Trace

__all__ = ["Agent", "Reply", "Trace"]
