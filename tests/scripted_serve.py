"""`python -m tests.scripted_serve ...` is `memvec ...` with the scripted model registered in litellm
(provider `scripted`, tests/scripted_llm.py): a real server process whose agents with the model
`scripted/echo` reply through litellm without a network. The cluster tests and benchmark run it."""

from __future__ import annotations

import os
import time
from typing import Any

from memvec.cli import main
from tests.scripted_llm import SCRIPTED

# MEMVEC_TEST_MODEL_DELAY_S: every model call takes this long (a slow provider, for the fairness tests)
DELAY_S = float(os.environ.get("MEMVEC_TEST_MODEL_DELAY_S", "0"))
if DELAY_S:
    answer = SCRIPTED.completion

    def slow_completion(*args: Any, **kwargs: Any) -> Any:
        time.sleep(DELAY_S)
        return answer(*args, **kwargs)

    SCRIPTED.completion = slow_completion  # type: ignore[method-assign]

# MEMVEC_TEST_STREAM_PAUSE_S: a streamed reply pauses this long before each piece (benchmarks/streaming.py)
SCRIPTED.stream_pause_s = float(os.environ.get("MEMVEC_TEST_STREAM_PAUSE_S", "0"))

if __name__ == "__main__":
    main()
