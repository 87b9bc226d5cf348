"""`python -m tests.scripted_serve ...` is `memvec ...` with the scripted model registered in litellm
(provider `scripted`, tests/scripted_llm.py): a real server process whose agents with the model
`scripted/echo` reply through litellm without a network. The cluster tests and benchmark run it."""

from __future__ import annotations

import tests.scripted_llm  # noqa: F401  (registers the provider)
from memvec.cli import main

if __name__ == "__main__":
    main()
