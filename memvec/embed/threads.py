"""How many threads the model and FAISS may use (``MEMVEC_THREADS``; default: the CPUs this process
may run on).

Every stage of a request runs one after another (embed the query, search FAISS, score BM25), so
the model may use every core: ONNX Runtime's intra-op pool and torch get this count, one
inter-op thread, and ONNX Runtime's workers keep its default short spin (on 2 cores a query
embeds in 1.8 ms with it, 2.4 ms without). FAISS gets the same count; a one-query search runs
on the calling thread anyway. OpenBLAS is kept off the hot path instead (``memvec.index.sessions``).
"""

from __future__ import annotations

import os


def thread_count() -> int:
    configured = os.environ.get("MEMVEC_THREADS", "").strip()
    if configured:
        try:
            value = int(configured)
        except ValueError:
            raise ValueError(f"MEMVEC_THREADS must be a positive integer, not {configured!r}") from None
        if value < 1:
            raise ValueError(f"MEMVEC_THREADS must be a positive integer, not {configured!r}")
        return value
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
