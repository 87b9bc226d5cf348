"""How many threads the model and FAISS may use (``MEMVEC_THREADS``; default: the CPUs this process
may run on).

Every stage of a request runs one after another (embed the query, search FAISS, score BM25), so
the model may use every core: ONNX Runtime's intra-op pool and torch get this count and one
inter-op thread. No pool may spin once its stage is done, or it steals the core the next stage
(or a concurrent request) needs: ONNX Runtime's workers are told not to spin (a lone query embeds
in ~2.4 ms instead of ~1.8, but `memvec serve` at 8 clients used ~10 instead of ~13 ms of CPU per
search for the same throughput). FAISS gets this count for index builds, but a one-query search
runs on its calling thread (``memvec.index.vector``): OpenMP workers woken for it, then left
spinning, doubled vector search with the query embedding on 2 cores. OpenBLAS is kept off the hot
path (``memvec.index.sessions``).
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
