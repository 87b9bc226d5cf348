"""The memory browser in a real headless Chromium (Debian's `chromium`, driven by Playwright; no
browser download) against a real `memvec serve` with the real model and API keys.

Without Chromium these tests skip with how to install it; under CI=true they fail instead.
Set MEMVEC_SCREENSHOTS=DIR to keep the pages' screenshots (the README's come from here).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import unavailable
from tests.service_helpers import Server

ADMIN, SCOPED = "browser-admin-key-01", "browser-bob-key-0001"
CHROMIUM_FLAGS = [
    "--headless=new",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
]
XSS = "<script>alert(1)</script> Gardening notes <img src=x onerror=alert(2)> tomatoes need sun"
PASSAGES = [
    {
        "text": "Caroline moved to Lisbon in 2023 to study marine biology.",
        "tags": ["moves"],
        "citation": {"session_id": "session-7", "turn_id": "turn-42", "source_url": "https://example.com/chat/7"},
    },
    {
        "text": "Melanie paints landscapes on weekends and sells them at the market.",
        "tags": ["hobbies"],
        "citation": {"session_id": "session-3"},
    },
    {
        "text": "The quarterly budget report for the lighthouse project is due on Friday.",
        "tags": ["work"],
        "citation": {"session_id": "session-5"},
    },
    {
        "text": "Caroline's sister lives in Porto and visits every summer.",
        "tags": ["family"],
        "citation": {"session_id": "session-7"},
    },
    {"text": XSS, "tags": ["garden"], "citation": {"session_id": "session-9"}},
]  # facts taken from conversations (each cites its session), like those the shipped ranker was fitted on


def chromium_path() -> str:
    found = os.environ.get("MEMVEC_CHROMIUM") or shutil.which("chromium")
    if found:
        return found
    message = (
        "Debian's chromium is not installed: `apt-get install -y chromium` (the browser tests drive it "
        "with Playwright; no browser is downloaded)"
    )
    unavailable(message)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("browser") / "home"
    server = Server(home, keys=f"{ADMIN},{SCOPED}=bob", model="all-MiniLM-L6-v2").start()
    try:
        with api(server) as admin:
            for name in ("alice", "bob"):
                assert admin.post("/v1/agents", json={"name": name}).status_code == 201
            assert admin.post("/v1/agents/alice/archival-memory", json={"passages": PASSAGES}).status_code == 201
            assert (
                admin.post(
                    "/v1/agents/bob/archival-memory", json={"text": "Bob keeps bees behind the barn."}
                ).status_code
                == 201
            )
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def browser(served: Server) -> Iterator[Any]:
    executable = chromium_path()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        try:
            yield launched
        finally:
            launched.close()


def signed_in(browser: Any, served: Server, key: str) -> Any:
    page = browser.new_context(base_url=served.url).new_page()
    page.goto("/ui/agents")
    assert "/ui/login" in page.url  # no session yet: the browser is sent to sign in
    page.fill("input[name=api_key]", key)
    page.click("button[type=submit]")
    page.wait_for_url("**/ui/agents")
    return page


def screenshot(page: Any, name: str, tmp_path: Path) -> None:
    target = Path(os.environ.get("MEMVEC_SCREENSHOTS") or tmp_path)
    target.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(target / f"{name}.png"), full_page=True)
    assert (target / f"{name}.png").stat().st_size > 10_000


def api(served: Server, key: str = ADMIN) -> httpx.Client:
    return httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {key}"}, timeout=60)


def api_get(served: Server, path: str) -> httpx.Response:
    with api(served) as client:
        return client.get(path)


def test_sign_in_find_an_agent_and_search_with_citation_and_score_parts(
    browser: Any, served: Server, tmp_path: Path
) -> None:
    page = signed_in(browser, served, ADMIN)
    assert page.locator("#agents").get_by_role("link", name="alice", exact=True).is_visible()
    screenshot(page, "ui-agents", tmp_path)
    page.locator("#agents").get_by_role("link", name="alice", exact=True).click()
    page.get_by_role("navigation", name="agent").get_by_role("link", name="Search").click()
    page.fill("input[name=q]", "Which city did Caroline move to for her studies?")
    page.click("form[role=search] button[type=submit]")
    first = page.locator("#hits > li").first
    assert "Caroline moved to Lisbon" in first.locator(".text").inner_text()
    citation = first.locator("dl.citation").inner_text()
    assert "session-7" in citation and "turn-42" in citation
    assert first.locator("dl.citation a").get_attribute("href") == "https://example.com/chat/7"
    parts = first.locator("table.bars th").all_inner_texts()
    # facts from conversations on the real model rank with the shipped learned ranker: its bar is there
    # beside the fusion's parts
    assert {"vector", "BM25", "fused", "ranker"} <= set(parts), parts
    assert first.locator("table.bars meter").count() == len(parts)
    screenshot(page, "ui-search", tmp_path)


def test_editing_a_block_is_read_back_through_the_api(browser: Any, served: Server, tmp_path: Path) -> None:
    page = signed_in(browser, served, ADMIN)
    page.goto("/ui/agents/alice")
    new_value = "I am Alice's memory.\nI keep notes about Caroline & Melanie <carefully>."
    page.fill("#block-persona textarea[name=value]", new_value)
    page.get_by_role("button", name="Save persona").click()
    page.wait_for_url("**/ui/agents/alice#block-persona")
    assert page.locator("#block-persona textarea").input_value() == new_value
    assert api_get(served, "/v1/agents/alice/core-memory/blocks/persona").json()["value"] == new_value
    screenshot(page, "ui-agent", tmp_path)
    page.get_by_role("link", name="history").first.click()
    assert "http:" in page.locator("article.change").first.inner_text()  # who: the signed-in key's id


def test_deleting_a_passage_after_confirming_removes_it_from_search(browser: Any, served: Server) -> None:
    page = signed_in(browser, served, ADMIN)
    query = "/ui/agents/alice/search?q=" + "quarterly budget report lighthouse"
    page.goto(query)
    first = page.locator("#hits > li").first
    assert "quarterly budget report" in first.inner_text()
    passage_id = first.get_attribute("id").removeprefix("hit-")
    page.goto(f"/ui/agents/alice/archival/{passage_id}")
    page.get_by_role("link", name="delete…").click()
    assert "cannot be undone" in page.content()
    page.get_by_role("button", name="Delete").click()
    page.wait_for_url("**/ui/agents/alice/archival")
    page.goto(query)
    assert "quarterly budget report" not in page.locator("#hits").inner_text()
    assert api_get(served, f"/v1/agents/alice/archival-memory/{passage_id}/history").status_code == 404


def test_a_scoped_key_sees_only_its_agents(browser: Any, served: Server) -> None:
    page = signed_in(browser, served, SCOPED)
    listed = page.locator("#agents tbody a").all_inner_texts()
    assert "bob" in listed and "alice" not in listed
    for path in (
        "/ui/agents/alice",
        "/ui/agents/alice/search?q=Lisbon",
        "/ui/agents/alice/archival",
        "/ui/agents/alice/export",
    ):
        response = page.goto(path)
        assert response.status == 404, path
        assert "Lisbon" not in page.content()
    page.goto("/ui/health")
    assert "alice" not in page.locator("#tiers").inner_text() and "bob" in page.locator("#tiers").inner_text()
    health = page.locator("#health").inner_text()
    assert "reachable" in health and "all-MiniLM-L6-v2" in health and "onnx" in health


def test_a_form_without_its_csrf_token_is_refused_and_changes_nothing(browser: Any, served: Server) -> None:
    page = signed_in(browser, served, ADMIN)
    before = api_get(served, "/v1/agents/alice/core-memory/blocks/human").json()["value"]
    page.goto("/ui/agents/alice")
    token = page.locator("#block-human input[name=csrf_token]").get_attribute("value")
    request = page.context.request  # the signed-in browser's cookies go with it, as with a forged form
    for form in ({"value": "pwned"}, {"value": "pwned", "csrf_token": "x" * len(token)}):
        refused = request.post(f"{served.url}/ui/agents/alice/blocks/human", form=form, max_redirects=0)
        assert refused.status == 403
        assert "nothing was changed" in refused.text()
    assert request.post(f"{served.url}/ui/agents/alice/archival/1/delete", form={}, max_redirects=0).status == 403
    assert api_get(served, "/v1/agents/alice/core-memory/blocks/human").json()["value"] == before
    assert api_get(served, "/v1/agents/alice/archival-memory/1/history").status_code == 200
    accepted = request.post(
        f"{served.url}/ui/agents/alice/blocks/human", form={"value": "ok", "csrf_token": token}, max_redirects=0
    )
    assert accepted.status == 303  # the same form with its token goes through: the refusal was the token
    assert api_get(served, "/v1/agents/alice/core-memory/blocks/human").json()["value"] == "ok"


def test_markup_in_memory_renders_as_text_and_runs_nothing(browser: Any, served: Server, tmp_path: Path) -> None:
    page = signed_in(browser, served, ADMIN)
    dialogs: list[str] = []
    requests: list[str] = []

    def dismissed(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", dismissed)
    page.on("request", lambda request: requests.append(request.url))
    for path in ("/ui/agents/alice/archival?tag=garden", "/ui/agents/alice/search?q=gardening+tomatoes"):
        page.goto(path)
        page.wait_for_load_state("networkidle")
        shown = page.locator("ol .text").first.inner_text()
        assert "<script>alert(1)</script>" in shown and "<img src=x onerror=alert(2)>" in shown
        assert page.locator("main script, main img").count() == 0
    assert dialogs == []
    others = [u for u in requests if not re.match(re.escape(served.url) + r"/ui/(agents/alice/|static/ui\.css)", u)]
    assert others == [], others  # nothing fetched but the pages and the stylesheet (no /x from the image)
    screenshot(page, "ui-untrusted-text", tmp_path)


@pytest.mark.parametrize(("path", "rendered"), [("/docs", ".opblock"), ("/redoc", "[data-section-id]")])
def test_the_api_docs_render_from_this_server_alone(browser: Any, served: Server, path: str, rendered: str) -> None:
    """Swagger UI and ReDoc come from files in a package, under a CSP that allows nothing else: the
    page renders the API's operations and gets nothing from another host (ReDoc asks for its logo
    on a CDN; the policy stops that request)."""
    page = browser.new_context(base_url=served.url).new_page()
    fetched: list[str] = []
    page.on("requestfinished", lambda request: fetched.append(request.url))
    response = page.goto(path)
    assert response is not None and "default-src 'none'" in response.headers["content-security-policy"]
    page.wait_for_selector(rendered, timeout=30_000)
    assert page.locator(rendered).count() > 10  # every route of the API, rendered
    assert [u for u in fetched if not u.startswith(served.url) and not u.startswith(("data:", "blob:"))] == []
    assert f"{served.url}/docs/static/" in " ".join(fetched)


def test_a_page_of_another_site_cannot_change_a_keyless_server(browser: Any, tmp_path: Path) -> None:
    """A keyless server (the local setup) and a page served from another origin that posts to it, by
    form and by fetch, as a malicious site would: Chromium sends the requests, the server refuses
    them (its Origin is not the server's), and nothing is created."""
    import http.server
    import threading

    from benchmarks.load import free_port

    keyless = Server(tmp_path / "home").start()
    with httpx.Client(base_url=keyless.url) as local:
        assert local.post("/v1/agents", json={"name": "ana"}).status_code == 201
        edited = local.patch("/v1/agents/ana/core-memory/blocks/human", json={"value": "Ana, keep this"})
        assert edited.status_code == 200
    site_port = free_port()
    undo = f"{keyless.url}/v1/agents/ana/core-memory/blocks/human/undo"  # takes no body: no CSRF token to miss
    attack = f"""<html><body>
<form id=f method=post action="{keyless.url}/ui/agents"><input name=name value=planted1></form>
<script>
fetch("{undo}", {{method: "POST", mode: "no-cors"}})
  .finally(() => document.getElementById("f").submit());
</script></body></html>"""
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "index.html").write_text(attack)
    handler = lambda *a: http.server.SimpleHTTPRequestHandler(*a, directory=str(tmp_path / "site"))  # noqa: E731
    site = http.server.ThreadingHTTPServer(("127.0.0.1", site_port), handler)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    try:
        page = browser.new_context().new_page()
        answers: list[tuple[str, int]] = []
        page.on("response", lambda r: answers.append((r.url, r.status)) if r.url.startswith(keyless.url) else None)
        page.goto(f"http://127.0.0.1:{site_port}/index.html")
        page.wait_for_url(f"{keyless.url}/**", timeout=15_000)  # the form was submitted
        page.wait_for_load_state("networkidle")
        changes = [(url, status) for url, status in answers if not url.endswith("/ui/static/ui.css")]
        assert len(changes) == 2 and all(status == 403 for _, status in changes), answers
        with httpx.Client(base_url=keyless.url) as local:
            assert [a["name"] for a in local.get("/v1/agents").json()] == ["ana"]
            assert local.get("/v1/agents/ana/core-memory/blocks/human").json()["value"] == "Ana, keep this"
    finally:
        site.shutdown()
        site.server_close()
        keyless.stop()
