# Two set-up commands on a fresh machine: `make test` and `make bench`.
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: install test test-fast lint check clean mutants bench bench-quick bench-full bench-unseen bench-ablation bench-headroom bench-peers bench-compact bench-cluster bench-chaos bench-transfer bench-periods bench-search-profile bench-documents letta-suite train-ranker fit-relevance screenshots

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# the CPU wheel first: a bare `torch` requirement would pull a multi-GB CUDA build
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev,bench,quality]'
	touch $(STAMP)

install: $(STAMP)

# three workers (pytest-xdist) on two cores: many tests wait on a server, nginx or a PostgreSQL restart,
# and a third worker fills those waits (measured: 9.5 min with two, 7.1 with three, 7.5 with four); one
# thread each for the model and FAISS (MEMVEC_THREADS) so they do not fight over the cores; tests that
# stop PostgreSQL stop a server of their own (tests/private_postgres.py). Whole modules to a free worker,
# the longest first (tests/conftest.py): a module's fixtures are set up once (7:45 here against 7:55
# handing out single tests, 181% of the two cores busy against 171%). On a clean clone at a4b38f2:
# 7:27 for 1,547 tests (732 s of CPU; the bench smoke, the cluster and the fuzz modules are the longest).
test: install
	HF_HUB_OFFLINE=1 MEMVEC_THREADS=1 $(PY) -m pytest -q -n 3 --dist loadfile

# unit and in-process tests only: no real model, no server process, no PostgreSQL, no browser
test-fast: install
	HF_HUB_OFFLINE=1 MEMVEC_THREADS=1 $(PY) -m pytest -q -n 2 -m "not slow and not postgres"

# Plant known bugs one at a time in a scratch copy and show the suite catches each (not part of CI).
mutants: install
	HF_HUB_OFFLINE=1 $(PY) tests/mutants.py

# Three servers on one PostgreSQL behind nginx (`memvec router-config`): SIGKILL one under mixed load, then a
# rolling restart (~1 min): benchmarks/results/cluster.md.
bench-cluster: install
	HF_HUB_OFFLINE=1 $(PY) -m benchmarks.cluster $(BENCH_ARGS)

# The history checker, longer than in `make test` (~6 min): clients drive two servers on one SQLite home,
# `serve --workers 2`, two servers on PostgreSQL and a SIGKILL mid-run; benchmarks/results/chaos.md.
bench-chaos: install
	HF_HUB_OFFLINE=1 $(PY) -m benchmarks.chaos $(BENCH_ARGS)

# The README's screenshots of the memory browser, taken by its tests in Debian's chromium.
screenshots: install
	MEMVEC_SCREENSHOTS=docs/images HF_HUB_OFFLINE=1 $(PY) -m pytest -q tests/test_browser.py

lint: install
	$(VENV)/bin/ruff check memvec tests benchmarks
	$(VENV)/bin/ruff format --check memvec tests benchmarks
	$(VENV)/bin/mypy
	# the layers and the one door (contracts in pyproject.toml [tool.importlinter])
	$(VENV)/bin/lint-imports

# The benchmark (~80 min on 2 cores, 25 of them LongMemEval_S and SciFact, 15 the trust section's
# relevance threshold over held-out memories): writes benchmarks/results/latest.{md,json} and plots.
bench: install
	@command -v wrk >/dev/null 2>&1 || { echo "installing wrk (Debian) for the 'against the ceiling' section"; \
		SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
	HF_HUB_OFFLINE=1 $(PY) -m benchmarks $(BENCH_ARGS)

bench-quick: install
	HF_HUB_OFFLINE=1 $(PY) -m benchmarks --quick --out benchmarks/results/quick $(BENCH_ARGS)

# Scale (~30 min on 2 cores): one tier at 100k and 1M records (benchmarks/results/scale.md), then
# 10,000 agents x 200 records behind one `memvec serve` with a budget of 1,000 indexes (agents.md);
# then every LongMemEval_S question and SciFact training claim in every mode (families-full.md, ~2 h:
# LongMemEval's ~68,000 turns of ~1,000 characters each are embedded; FAMILY_ARGS go to it).
bench-full: install
	HF_HUB_OFFLINE=1 $(PY) -m benchmarks.scale $(BENCH_ARGS)
	HF_HUB_OFFLINE=1 $(PY) -m benchmarks.agents $(BENCH_ARGS)
	HF_HUB_OFFLINE=1 $(PY) -m benchmarks.families --full $(FAMILY_ARGS)

# The 98 LongMemEval_S questions of the dev file that neither `make bench` reports nor the ranker is
# fitted on, every mode (families-unseen.md, ~20 min): a larger held-out check than the bench's 12.
bench-unseen: install
	HF_HUB_OFFLINE=1 $(PY) -m benchmarks.families --unseen $(FAMILY_ARGS)

# Peers side by side (txtai, chromadb) in their own environment, so they never touch memvec's.
PEERS_VENV := .venv-peers
$(PEERS_VENV)/.installed-stamp: pyproject.toml
	test -x $(PEERS_VENV)/bin/python || python3 -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install -q --upgrade pip
	$(PEERS_VENV)/bin/python -m pip install -q torch==2.13.0
	$(PEERS_VENV)/bin/python -m pip install -q -e '.[bench,peers]'
	touch $@

bench-peers: $(PEERS_VENV)/.installed-stamp
	HF_HUB_OFFLINE=1 ANONYMIZED_TELEMETRY=False $(PEERS_VENV)/bin/python -m benchmarks.peers $(BENCH_ARGS)

# float32 vs fp16 vs sq8 vectors, flat and HNSW: bytes per vector, latency, recall@10 vs exact (~6 min at 100k).
bench-compact: install
	HF_HUB_OFFLINE=1 $(PY) -m benchmarks.compact $(BENCH_ARGS)

# Retrieval-quality levers, each alone, on both halves of the LoCoMo dev set (~10 min).
bench-ablation: install
	HF_HUB_OFFLINE=1 $(PY) -m benchmarks.ablation $(BENCH_ARGS)

# Refit the learned rankers (deterministic: the same files again) and report them on LoCoMo leave-one-
# conversation-out: memvec/search/ranker.json (LoCoMo, LongMemEval_S dev questions, SciFact dev folds) and
# benchmarks/results/ranker.{md,json} for the default model, ranker-all-mpnet-base-v2.* (LoCoMo only) for the
# quality profile's (~35 min on a fresh machine, ~5 once benchmarks/ranker_data.py has cached the candidates).
train-ranker: install
	HF_HUB_OFFLINE=1 $(PY) -m benchmarks.train_ranker $(BENCH_ARGS)
	HF_HUB_OFFLINE=1 $(PY) -m benchmarks.train_ranker --model onnx-int8:all-mpnet-base-v2 --families locomo $(BENCH_ARGS)

# Refit each hit's relevance (a logistic over its cosine and BM25 coverage) and the default min_score on the
# dev half, report them on the held half, write memvec/search/relevance.json (~35 min on a fresh machine,
# seconds once benchmarks/relevance_data.py has cached the questions' hits).
fit-relevance: install
	HF_HUB_OFFLINE=1 $(PY) -m benchmarks.relevance --write $(BENCH_ARGS)

# Does the second stage transfer? Fitted on each family, on the others and on all, each held out by group
# (benchmarks/results/transfer.md; shares train-ranker's cached candidates).
bench-transfer: install
	HF_HUB_OFFLINE=1 $(PY) -m benchmarks.transfer $(BENCH_ARGS)

# A period named in the question lifted, ignored or filtered: LongMemEval_S's 15 such questions (~6 min).
bench-periods: install
	HF_HUB_OFFLINE=1 $(PY) -m benchmarks.periods $(BENCH_ARGS)

# Where one search's time goes in process at 1k, 10k and 100k records, per part, default vs fusion alone
# (~10 min; search-parts.md).
bench-search-profile: install
	HF_HUB_OFFLINE=1 $(PY) -m benchmarks.search_profile $(BENCH_ARGS)

# What a document costs before it is embedded, up to the largest accepted (~5 min):
# benchmarks/results/document-costs.md.
bench-documents: install
	HF_HUB_OFFLINE=1 $(PY) -m benchmarks.document_costs $(BENCH_ARGS)

# Upper bounds on LoCoMo (ceiling, deeper k, oracle fusion weight) from the raw per-method scores (~3 min).
bench-headroom: install
	HF_HUB_OFFLINE=1 $(PY) -m benchmarks.headroom $(BENCH_ARGS)

# Letta's own client tests, run as the spec against `memvec serve`: LETTA_REPO=<a clone of letta-ai/letta>
# (its history holds the tests); each letta-client in a venv of its own outside the project, made on
# first use (~10 min each), then ~15 min a client: benchmarks/results/letta_suite.md.
letta-suite: install
	@test -n "$(LETTA_REPO)" || { echo "set LETTA_REPO to a clone of github.com/letta-ai/letta" >&2; exit 2; }
	HF_HUB_OFFLINE=1 $(PY) -m benchmarks.letta_suite --letta-repo $(LETTA_REPO) $(BENCH_ARGS)

check: lint test

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
