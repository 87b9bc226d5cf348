"""Plant known bugs, one at a time, in a scratch copy of the project and show the test suite fails
for each (`make mutants`; not part of `make test`).

Each mutant is a (file, original, replacement) edit of one headline behaviour. The suite runs with
`-x`, the tests most likely to catch the mutant first, so a caught mutant costs seconds and a
surviving one the whole suite. Exit status 1 when any mutant survives.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MUTANTS: list[tuple[str, str, str, str, str]] = [
    # (name, file, original, replacement, tests to run first)
    ("hybrid drops BM25-only candidates", "memvec/search/hybrid.py",
     "np.union1d(vector_ids, bm25_ids)", "np.unique(vector_ids)", "tests/test_headline.py"),
    ("hybrid drops vector-only candidates", "memvec/search/hybrid.py",
     "np.union1d(vector_ids, bm25_ids)", "np.unique(bm25_ids)", "tests/test_headline.py"),
    ("guard flags only two or more signals", "memvec/guard.py",
     "return bool(poisoning_signals(text))", "return len(poisoning_signals(text)) >= 2", "tests/test_headline.py"),
    ("no poisoning re-check on read", "memvec/guard.py",
     "if not r.untrusted and looks_untrusted(r.text) else r", "if False else r", "tests/test_headline.py"),
    ("micro-batcher hands every caller the first row", "memvec/embed/queries.py",
     "future.set_result(vectors[row].copy())", "future.set_result(vectors[0].copy())", "tests/test_queries.py"),
    ("int8 queries batched across callers", "memvec/embed/queries.py",
     "        if not batch_invariant(self.inner):  # a search", "        if False:  # a search",
     "tests/test_queries.py"),
    ("int8 queries embedded in one batch call", "memvec/embed/onnx.py",
     "        if self.batch_invariant:\n            return self._embed(texts, \"query\")",
     "        if True:\n            return self._embed(texts, \"query\")", "tests/test_queries.py"),
    ("query cache ignores the model", "memvec/embed/queries.py",
     "key = (self.inner.model_id, text)", 'key = ("", text)', "tests/test_queries.py"),
    ("ONNX pooling ignores the attention mask", "memvec/embed/onnx.py",
     "parts.append((hidden * weights).sum(axis=1) / counts)", "parts.append(hidden.mean(axis=1))",
     "tests/test_onnx.py"),
    ("MCP over HTTP ignores key scopes", "memvec/mcp_server/server.py",
     "if not principal.may_see(agent):", "if False:", "tests/test_mcp.py"),
    ("an evicted index is dropped unsaved", "memvec/engine/engine.py",
     "                old.save()", "                pass", "tests/test_index_budget.py"),
    ("an unavailable store answers 500, not 503", "memvec/service/app.py",
     '    StoreUnavailableError: (503, "store_unavailable"),\n', "", "tests/test_postgres_faults.py"),
    ("refusals invite letta-client to retry", "memvec/service/app.py",
     'headers = {"x-should-retry": "false"} if status in NO_RETRY else None', "headers = None",
     "tests/test_letta_client.py"),
    ("agent-file import drops read-only flags", "memvec/agentfile.py",
     '"read_only": bool(b.read_only)', '"read_only": False', "tests/test_agent_files.py"),
    ("RRF ranks records BM25 did not find", "memvec/search/hybrid.py",
     "in_bm25=np.isin(union, bm25_ids) & _matched(bm25))", "in_bm25=None)", "tests/test_fuse.py"),
    # hardening (issue 20): each hole it closed, reopened
    ("a key with an empty scope is unscoped", "memvec/service/auth.py",
     "principal = Principal(_scope(where, scope) if scoped else None,",
     "principal = Principal(_scope(where, scope) if scope.strip() else None,", "tests/test_hardening.py"),
    ("scope names keep their spaces", "memvec/service/auth.py",
     'agents = frozenset(a.strip() for a in scope.split("|") if a.strip())',
     'agents = frozenset(a for a in scope.split("|") if a.strip())', "tests/test_hardening.py"),
    ("the body limit trusts Content-Length only", "memvec/service/front.py",
     "        if size > limit:\n", "        if False:\n", "tests/test_hardening.py"),
    ("the key is checked after the body is read", "memvec/service/front.py",
     "        if isinstance(decision, Refusal):\n            await send_refusal(send, decision)\n            return\n",
     "", "tests/test_hardening.py"),
    ("JSON bodies are not bounded in depth", "memvec/service/front.py",
     "if refusal is None and body and _is_json(scope):", "if False:", "tests/test_hardening.py"),
    ("metadata depth is not bounded", "memvec/types.py",
     "if json_depth_exceeds(value, MAX_METADATA_DEPTH):", "if False:", "tests/test_hardening.py"),
    ("an import writes blocks before validating records", "memvec/engine/transfer.py",
     "    ready = [_ready(engine, model_id, doc, name) for doc, name in docs]\n",
     "    for doc, name in docs:\n        [engine.store.put_block(name, b) for b in doc.blocks]\n"
     "    ready = [_ready(engine, model_id, doc, name) for doc, name in docs]\n", "tests/test_hardening.py"),
    ("given vectors are not checked for NaN", "memvec/embed/base.py",
     "    if bad.any():\n", "    if False:\n", "tests/test_hardening.py"),
    ("given vectors are not re-normalized", "memvec/embed/base.py",
     "    return l2_normalize(array / scale[:, None])",
     "    return np.asarray(vectors, dtype=np.float32)", "tests/test_hardening.py"),
    ("a cursor takes any Unicode digit", "memvec/service/deps.py",
     'if not re.fullmatch(r"[0-9]{1,18}", value):', "if not value.isdigit() or len(value) > 18:",
     "tests/test_hardening.py"),
    ("fenced text can close its fence", "memvec/guard.py",
     "{neutralize_fence_tags(text)}", "{text}", "tests/test_hardening.py"),
    ("the fence tag alone is not flagged", "memvec/guard.py",
     '    "fence-break": FENCE_TAG,\n', "", "tests/test_hardening.py"),
    ("MCP over HTTP stops without saving", "memvec/cli_common.py",
     "            await asyncio.to_thread(memory.close)\n", "            pass\n", "tests/test_hardening.py"),
    ("an unusable home is an internal error", "memvec/memory.py",
     "        self.home = prepare_home(config.home)",
     "        self.home = config.home\n        self.home.mkdir(parents=True, exist_ok=True)",
     "tests/test_hardening.py"),
    # ranking (issue 21)
    ("the trees send a row on a threshold right", "memvec/search/trees.py",
     "(rows[:, np.maximum(self.feature, 0)] <= self.threshold)",
     "(rows[:, np.maximum(self.feature, 0)] < self.threshold)",
     "tests/test_ranker.py"),
    ("the trees read exact zeros as LightGBM does not", "memvec/search/trees.py",
     "        rows = np.where(np.abs(rows) <= _ZERO, 0.0, rows)\n", "", "tests/test_ranker.py"),
    ("a question mark anywhere ends a question", "memvec/search/rerank.py",
     '"ends_question": np.array([t.rstrip().endswith("?")', '"ends_question": np.array(["?" in t',
     "tests/test_ranker.py"),
    ("the query's time question is not read", "memvec/search/rerank.py",
     '"asks_time": np.full(len(texts), float(bool(_ASKS_TIME.search(query))))',
     '"asks_time": np.zeros(len(texts))', "tests/test_ranker.py"),
    ("the previous turn is read from another session", "memvec/search/hybrid.py",
     "            previous[same] = near[same]", "            previous = near", "tests/test_ranker.py"),
    ("every model gets the first shipped ranker", "memvec/search/rerank.py",
     "return next((ranker for ranker in shipped_rankers() if model_id in ranker.models), None)",
     "return next(iter(shipped_rankers()), None)", "tests/test_quality_profile.py"),
    ("an unsafe zip member is unpacked", "memvec/embed/split_package.py",
     'if relative.is_absolute() or ".." in relative.parts:', "if False:", "tests/test_quality_profile.py"),
    ("the zip's Windows folder settings are unpacked", "memvec/embed/split_package.py",
     "if member.is_dir() or relative.name in _SKIPPED:", "if member.is_dir():", "tests/test_quality_profile.py"),
    ("the ranker's session weight is ignored", "memvec/search/hybrid.py",
     "settings.session_weight, ranker.session_weight if ranker else None)", "settings.session_weight, None)",
     "tests/test_ranker.py"),
    ("the ranker re-orders queries that share no word", "memvec/search/hybrid.py",
     "    if not (len(union) and bm25.max() > 0):\n        ranker = None\n", "",
     "tests/test_ranker.py"),
    ("the ranker is fitted without monotone scores", "benchmarks/train_ranker.py",
     '"monotone_constraints": [MONOTONE.get(name, 0) for name in features]', '"monotone_constraints": []',
     "tests/test_ranker.py"),
    # one way in (issue 22)
    ("verify counts changes the next open replays as missing records", "memvec/engine/tier.py",
     "mismatch = id_disagreement(store.ids(agent, tier), vector, lexical, pending)",
     "mismatch = id_disagreement(store.ids(agent, tier), vector, lexical)", "tests/test_persistence.py"),
    ("verify trusts every indexed vector", "memvec/engine/tier.py",
     "        wrong += int((np.abs(indexed - batch.vectors[keep]).max(axis=1) > tolerance).sum())",
     "        wrong += 0", "tests/test_real_model.py"),
    ("an agent known only by its records does not exist", "memvec/store/sql.py",
     '"SELECT 1 FROM records WHERE agent = ? LIMIT 1", (name, name, name))',
     '"SELECT 1 FROM records WHERE 0 = 1 AND agent = ? LIMIT 1", (name, name, name))', "tests/test_memory.py"),
    # lifecycle (issue 23)
    ("undo leaves the block as the edit left it", "memvec/store/blocks.py",
     "            _apply(self._run, db, agent, label, before)\n", "", "tests/test_block_history.py"),
    ("an edit is not recorded in the block's history", "memvec/store/blocks.py",
     "            _record(self._run, db, agent, label, actor, op, old, new)\n", "", "tests/test_block_history.py"),
    ("forget ignores the ids it was given", "memvec/engine/engine.py",
     "            if ids:  # an id names a passage: every version of it is forgotten\n",
     "            if False:\n", "tests/test_forget.py"),
    ("forget and expiry leave the index files as they were", "memvec/engine/engine.py",
     "        self.store.checkpoint()\n        self.tier_index(agent, tier).save()\n",
     "        self.store.checkpoint()\n", "tests/test_forget.py"),
    ("an expired record is still listed", "memvec/engine/engine.py",
     "        self.sweep(agent, tier)\n        return checked_on_read(self.store.list_records(",
     "        return checked_on_read(self.store.list_records(", "tests/test_expiry.py"),
    ("a search returns an expired record", "memvec/engine/engine.py",
     "        self.sweep(request.agent, request.tier)\n", "", "tests/test_expiry.py"),
    ("a tier's retention is ignored", "memvec/engine/engine.py",
     "        keep = self.retention.get(tier)\n", "        keep = None\n", "tests/test_expiry.py"),
    ("search returns a superseded version", "memvec/engine/engine.py",
     "            return Scope(excluded=closed if len(closed) else None)", "            return Scope()",
     "tests/test_versions.py"),
    ("a cached closed set outlives a valid_to", "memvec/engine/engine.py",
     "if cached is not None and cached[0] == index.applied and now < cached[2]:",
     "if cached is not None and cached[0] == index.applied:", "tests/test_versions.py"),
    ("as_of ignores valid_to", "memvec/store/rows.py",
     'return f"{VALID_FROM} <= ? AND (valid_to IS NULL OR valid_to > ?)", [at, at]',
     'return f"{VALID_FROM} <= ?", [at]', "tests/test_versions.py"),
    ("a listing shows superseded versions", "memvec/store/sql.py",
     "        where, params = filter_sql(filters, now=datetime.now(UTC))\n        order",
     "        where, params = filter_sql(filters)\n        order", "tests/test_versions.py"),
    ("an update leaves the old version's text as the current copy", "memvec/store/sql.py",
     '"UPDATE records SET valid_to = ?, dedup_key = dedup_key || ? WHERE id = ?"',
     '"UPDATE records SET valid_to = ?, dedup_key = dedup_key || substr(?, 1, 0) WHERE id = ?"',
     "tests/test_versions.py"),
    ("forget by id leaves the older versions", "memvec/engine/engine.py",
     "        chains = [r.id for record_id in ids for r in self.store.versions(agent, int(record_id))]",
     "        chains = [int(record_id) for record_id in ids]", "tests/test_versions.py"),
    ("a number does not keep near-duplicates apart", "memvec/index/duplicates.py",
     'return word in NEGATIONS or word.endswith("n\'t") or any(c.isdigit() for c in word)',
     'return word in NEGATIONS or word.endswith("n\'t")', "tests/test_near_duplicates.py"),
    ("word order does not keep near-duplicates apart", "memvec/index/duplicates.py",
     "    return [w for w in (w.strip(\"'\") for w in found) if w and w not in IGNORED]",
     "    return sorted(w for w in (w.strip(\"'\") for w in found) if w and w not in IGNORED)",
     "tests/test_near_duplicates.py"),
    ("a repeat's tags are not merged", "memvec/store/sql.py",
     "            added = [tag for tag in tags if tag not in known]", "            added: list[str] = []",
     "tests/test_near_duplicates.py"),
    ("a superseded version absorbs a repeat", "memvec/engine/repeats.py",
     "index.vector.search_many(batch, 3, excluded=closed if len(closed) else None)",
     "index.vector.search_many(batch, 3)", "tests/test_near_duplicates.py"),
    ("a superseded version absorbs a repeat of its exact words", "memvec/store/sql.py",
     'f"AND near_key IN ({marks(len(chunk))}) AND {CURRENT} GROUP BY near_key",',
     'f"AND near_key IN ({marks(len(chunk))}) AND ? IS NOT NULL GROUP BY near_key",',
     "tests/test_near_duplicates.py"),
    ("repeats within one batch are all stored", "memvec/engine/repeats.py",
     "    for earlier in np.flatnonzero(cosines >= threshold).tolist():",
     "    for earlier in np.flatnonzero(cosines > 2).tolist():", "tests/test_near_duplicates.py"),
    ("recall messages merge as near-duplicates", "memvec/engine/engine.py",
     "        if tier is not Tier.ARCHIVAL or self.dedup.near_cosine is None or not rows:",
     "        if self.dedup.near_cosine is None or not rows:", "tests/test_near_duplicates.py"),
    ("a consolidation undo leaves one block edit behind", "memvec/engine/consolidation.py",
     "        for edit in reversed(run.blocks):", "        for edit in reversed(run.blocks[1:]):",
     "tests/test_consolidation.py"),
    ("a consolidation undo leaves the superseded fact closed", "memvec/engine/consolidation.py",
     "                engine.store.reopen_version(agent, fact.supersedes, fact.id, fact.previous_valid_to)",
     "                pass", "tests/test_consolidation.py"),
    ("a consolidation undo keeps the facts it added", "memvec/engine/consolidation.py",
     "        engine.store.delete_many(agent, [fact.id for fact in created])",
     "        engine.store.delete_many(agent, [fact.id for fact in created][1:])", "tests/test_consolidation.py"),
    ("a consolidation may cite messages it was not shown", "memvec/agent/consolidate.py",
     "        if not set(fact.sources) <= shown:", "        if False:", "tests/test_consolidation.py"),
    ("a consolidation run reads every message again", "memvec/agent/consolidate.py",
     "after=last_read(memory, agent))", "after=None)", "tests/test_consolidation.py"),
    ("an agent's replies on two servers interleave (the lease is never refused)", "memvec/engine/lease.py",
     "    while not store.acquire_lease(agent, holder, datetime.now(UTC), ttl_s):",
     "    while not (store.acquire_lease(agent, holder, datetime.now(UTC), ttl_s) or True):",
     "tests/test_lease.py"),
    ("a reply starts from the state it read before the lease", "memvec/agent/loop.py",
     "            _, self.state = self.memory.get_agent(self.settings.name)\n", "", "tests/test_lease.py"),
    ("an expired lease is never taken over", "memvec/store/runs.py",
     'if row["holder"] != holder and row["expires_at"] > format_time(now):', 'if row["holder"] != holder:',
     "tests/test_lease.py"),
    ("a tier view serves another tier's record", "memvec/engine/engine.py",
     "[r for r in self.store.get(agent, record_ids) if r.tier is tier]", "self.store.get(agent, record_ids)",
     "tests/test_memory.py"),
    # the memory browser (tests/test_ui.py in-process; tests/test_browser.py in Debian's chromium)
    ("the browser's pages do not escape memory text", "memvec/service/ui/render.py",
     'autoescape=select_autoescape(["html"], default=True)', "autoescape=False", "tests/test_ui.py"),
    ("a browser form is accepted without its CSRF token", "memvec/service/ui/session.py",
     "    if not presented or not hmac.compare_digest(viewer.csrf_token, presented):\n        raise CsrfRefused()",
     "    return", "tests/test_ui.py"),
    ("the browser lists agents a scoped key may not see", "memvec/service/ui/pages_agents.py",
     "names = [n for n in service.memory.agents() if viewer.principal.may_see(n)]",
     "names = list(service.memory.agents())", "tests/test_ui.py"),
    ("a session cookie's signature is not checked", "memvec/service/ui/session.py",
     "if not hmac.compare_digest(_sign(secret, f\"{version}.{nonce}.{expires}.{owner}\"), signature):",
     "if False:", "tests/test_ui.py"),
    ("a session cookie never expires", "memvec/service/ui/session.py",
     "int(expires) < (now or time.time())", "int(expires) < 0", "tests/test_ui.py"),
    ("the session cookie is readable by scripts and sent cross-site", "memvec/service/ui/session.py",
     'httponly=True, samesite="strict",\n', 'httponly=False, samesite="lax",\n', "tests/test_ui.py"),
    ("sign-in redirects to another site", "memvec/service/ui/pages_session.py",
     'return "/ui/agents"\n    return target', "return target\n    return target", "tests/test_ui.py"),
    ("the search page hides the ranker's part", "memvec/service/ui/pages_search.py",
     '("ranker", "ranker", True),', "", "tests/test_ui.py"),
    # scale-out (tests/test_cluster.py: real servers, PostgreSQL and nginx)
    ("health stays ok while a server drains", "memvec/service/app.py",
     'if service.draining.is_set():\n            out.status = "draining"',
     'if False:\n            out.status = "draining"',
     "tests/test_cluster.py::test_sigterm_with_drain_reports_draining_keeps_serving_then_saves_and_exits"),
    ("SIGTERM stops at once despite --drain-seconds", "memvec/cli_common.py",
     "if drain_s <= 0 or draining is None or draining.is_set():", "if True:",
     "tests/test_cluster.py::test_sigterm_with_drain_reports_draining_keeps_serving_then_saves_and_exits"),
    ("a draining server closes without first refusing new connections", "memvec/cli_common.py",
     "if stop_admitting(sock for server in self.servers for sock in server.sockets):", "if False:",
     "tests/test_cluster.py::test_a_draining_server_closes_without_cutting_a_request_it_let_in"),
    ("no socket filter is attached", "memvec/service/listener.py",
     "            listener.setsockopt(socket.SOL_SOCKET, _SO_ATTACH_FILTER, program)", "            pass",
     "tests/test_cluster.py::test_a_draining_server_closes_without_cutting_a_request_it_let_in"),
    ("a worker that dies is not started again", "memvec/cli_serve.py",
     "                running[n].start()\n                started[n]", "                started[n]",
     "tests/test_cluster.py::test_workers_share_one_port_and_one_home_and_stop_together"),
    ("record-only messages hand out turn ids without the lease", "memvec/service/routes_messages.py",
     "    with service.memory.agent_lease(agent):\n        settings, state = visible_agent",
     "    if True:\n        settings, state = visible_agent", "tests/test_lease.py"),
    ("a repeated message says it was created", "memvec/service/routes_messages.py",
     "PassageOut.of(r.record, created=r.created,", "PassageOut.of(r.record, created=True,", "tests/test_lease.py"),
    ("the in-process wait for a busy agent has no bound", "memvec/service/deps.py",
     "await asyncio.wait_for(lock.acquire(), self.wait_s)", "await lock.acquire()", "tests/test_lease.py"),
    ("consolidation runs without the agent's lease", "memvec/agent/consolidate.py",
     "    with memory.agent_lease(agent):\n        return _consolidate(", "    if True:\n        return _consolidate(",
     "tests/test_consolidation.py"),
    ("forget leaves the text in SQLite's WAL", "memvec/engine/engine.py",
     "            self.store.forget_in_runs(agent, ids)\n        self.store.checkpoint()",
     "            self.store.forget_in_runs(agent, ids)", "tests/test_trust.py"),
    ("SIGTERM saves the indexes but never closes the store", "memvec/cli_common.py",
     "await asyncio.to_thread(memory.close)", "await asyncio.to_thread(memory.save)", "tests/test_trust.py"),
    ("bodyless routes read whatever body comes", "memvec/service/app.py",
     "return (keys.open and foreign_request(scope, allowed_hosts)) or NO_BODY",
     "return (keys.open and foreign_request(scope, allowed_hosts)) or ADMITTED", "tests/test_trust.py"),
    ("a keyless server obeys any origin", "memvec/service/origin.py",
     "    if origin is None or scope.get(\"method\", \"GET\") in SAFE_METHODS:", "    if True:",
     "tests/test_trust.py"),
    ("a keyless server answers any Host", "memvec/service/origin.py",
     "    if name not in LOOPBACK_NAMES and name not in", "    if False and name not in", "tests/test_trust.py"),
    ("one key may take every worker", "memvec/service/fairness.py",
     "        if self.in_flight[tenant] >= self.limit:", "        if False:", "tests/test_trust.py"),
    ("headers may take forever", "memvec/service/protocol.py",
     "        if waiting_for_headers and not self.transport.is_closing():", "        if False:",
     "tests/test_trust.py"),
    ("a body may take forever", "memvec/service/front.py",
     "        with anyio.move_on_after(self.body_timeout_s):", "        with anyio.move_on_after(None):",
     "tests/test_trust.py"),
    ("health shows the store to anyone", "memvec/service/app.py",
     "        if service.keys.principal_of_header(request.headers.get(\"authorization\")) is not None:",
     "        if True:", "tests/test_trust.py"),
    ("NUL reaches the store", "memvec/types.py",
     "    if \"\\x00\" in value:\n        raise ValueError(\"text contains a NUL character\")\n    try:", "    try:",
     "tests/test_nul.py"),
    ("a new version drops its deadline", "memvec/store/sql.py",
     "            expires_at = expires_at or inherited", "            expires_at = expires_at",
     "tests/test_versions.py"),
    ("a new version may begin before the old one", "memvec/store/sql.py",
     "        if valid_from < old_from:", "        if False:", "tests/test_versions.py"),
    ("an insert forgotten before its read-back is a 500", "memvec/engine/engine.py",
     "        if gone := sorted(set(key_to_id.values()) - set(stored)):", "        if gone := []:",
     "tests/test_forget.py"),
    ("listing messages forgets the key's scope", "memvec/service/routes_messages.py",
     "        visible_agent(agent_id, principal, service)\n        records = service.memory.recall(agent_id).list(",
     "        records = service.memory.recall(agent_id).list(", "tests/test_scopes.py"),
    ("the browser's forms take any origin", "memvec/service/app.py",
     "            refusal = foreign_origin(scope)\n", "            refusal = None\n", "tests/test_trust.py"),
    ("verify calls a partition it never loaded broken", "memvec/memory.py",
     "            if not (directory / MANIFEST_FILE).exists() and not any(directory.glob(\"*.npz\")):",
     "            if False:",
     "tests/test_cluster.py::test_verify_on_a_member_that_never_served_an_agent_says_not_loaded"),
    ("a reply the model never answered keeps the message", "memvec/agent/loop.py",
     "                self._unremember()  #", "                pass  #", "tests/test_service.py"),
    ("forgetting a block's history leaves it in the WAL", "memvec/tiers/core.py",
     "        deleted = self._store.forget_block_history(self.agent, label)\n        self._store.checkpoint()",
     "        deleted = self._store.forget_block_history(self.agent, label)", "tests/test_block_history.py"),
    ("the docs load Swagger UI from a CDN", "memvec/service/docs_pages.py",
     "            swagger_js_url=f\"{STATIC_PREFIX}/swagger-ui-bundle.js\",",
     "            swagger_js_url=\"https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/swagger-ui-bundle.js\",",
     "tests/test_browser.py"),
    ("signing out leaves the session valid", "memvec/service/ui/session.py",
     "    if found is not None and not revoked(found.nonce):", "    if found is not None:", "tests/test_ui.py"),
    ("an import drops the links between versions", "memvec/engine/transfer.py",
     "        if row.supersedes is not None and row.supersedes in new_ids:", "        if False:",
     "tests/test_versions.py"),
    ("an import keeps the runs' old ids", "memvec/engine/transfer.py",
     "store.restore_run(ready.name, _remapped_run(run, passage_map, id_map, seqs))",
     "store.restore_run(ready.name, run)", "tests/test_consolidation.py"),
    ("an import drops the blocks' history", "memvec/engine/transfer.py",
     "    for block in [] if ready.doc.block_history else ready.doc.blocks:",
     "    for block in ready.doc.blocks:",
     "tests/test_postgres.py"),
    ("an int8 graph is served whatever it computes", "memvec/embed/onnx_export.py",
     "    if cosine < _INT8_CHECK:", "    if False:", "tests/test_onnx.py"),
    ("a refused int8 export is fatal, not fp32", "memvec/embed/__init__.py",
     "        except QuantizationRefusedError as exc:", "        except KeyError as exc:", "tests/test_onnx.py"),
    ("an imported fact cites the old message ids", "memvec/engine/transfer.py",
     "[_cites_new_ids(row, id_map) for row in ready.passages]", "ready.passages", "tests/test_consolidation.py"),
]


def scratch_copy(target: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split()
    for name in files:
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def _pytest(work: Path, target: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", target],
                          cwd=work, capture_output=True, text=True)


def run_mutant(work: Path, name: str, path: str, original: str, replacement: str, first: str) -> bool:
    """True when the suite fails with the mutant planted (it is caught)."""
    file = work / path
    text = file.read_text()
    if text.count(original) != 1:
        raise SystemExit(f"mutant {name!r}: {original!r} is not exactly once in {path}")
    file.write_text(text.replace(original, replacement))
    started = time.perf_counter()
    try:
        result = _pytest(work, first)
        if result.returncode == 0:  # not caught where expected: the whole suite gets its chance
            result = _pytest(work, "tests")
    finally:
        file.write_text(text)
    caught = result.returncode != 0
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else result.stderr[-200:]
    print(f"{'CAUGHT ' if caught else 'SURVIVED'} {name} ({time.perf_counter() - started:.0f}s): {summary}",
          flush=True)
    return caught


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / ROOT.name
        (Path(tmp) / "shared").symlink_to(ROOT.parent / "shared")  # the tests read ../shared/data
        scratch_copy(work)
        baseline = _pytest(work, " ".join(m[4] for m in MUTANTS[:1]))
        if baseline.returncode != 0:
            raise SystemExit(f"the unmutated copy fails already:\n{baseline.stdout[-2000:]}")
        only = sys.argv[1] if len(sys.argv) > 1 else ""  # `tests/mutants.py WORD`: mutants whose name or test has it
        caught = [run_mutant(work, *mutant) for mutant in MUTANTS if only in mutant[0] or only in mutant[4]]
    print(f"{sum(caught)} of {len(caught)} mutants caught")
    return 0 if all(caught) else 1


if __name__ == "__main__":
    sys.exit(main())
