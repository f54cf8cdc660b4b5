"""The console in a real browser: Debian's chromium driven by Playwright, against the real control plane
with the chart's RBAC and approval policies. alice opens ``aianalysis console`` with her own
kubeconfig, approves one analysis that needs review and rejects another; the cluster records her as
the one who did (the policies admit nothing else). Also: the session, CSRF, Origin and Host checks,
escaping of untrusted text, and mallory, who may not decide, is refused by the API server.

Screenshots go to ``$AIANALYSIS_SCREENSHOT_DIR`` (docs/img/ holds a few, for the docs) or the test's
temporary directory.
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from playwright.sync_api import BrowserContext, Page, expect, sync_playwright

from aianalysis_dev import devcluster
from tests.e2e import test_executor as executor_e2e
from tests.e2e.conftest import ROOT, get
from tests.e2e.test_decisions import proposal
from tests.e2e.test_executor import ALICE, MALLORY, analysed, items, patch_status, workflow

jobs_cluster = executor_e2e.jobs_cluster
ns = executor_e2e.ns

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
EVIL = '<script>document.title="owned"</script><img src=x onerror=alert(1)>'


class Console:
    """``aianalysis console`` as ``user`` runs it on their machine; ``url`` is the login URL it prints."""

    def __init__(
        self, cluster: devcluster.Cluster, user: str | None, namespace: str, *, port: int = 0
    ) -> None:
        """As ``user`` (None: the cluster's admin kubeconfig)."""
        kubeconfig = cluster.kubeconfig_for(user) if user is not None else cluster.kubeconfig
        env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "aianalysis", "console", "-n", namespace, "--port", str(port)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT,
        )  # fmt: skip
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(
            target=lambda: [self.lines.put(line) for line in self.proc.stdout or []], daemon=True
        ).start()
        self.seen = ""
        while "open http" not in self.seen:
            try:
                self.seen += self.lines.get(timeout=60)
            except queue.Empty:
                raise AssertionError(f"the console printed no URL in 60 s:\n{self.seen}") from None
        self.url = self.seen.split("open ", 1)[1].split()[0]
        self.origin = self.url.split("/login")[0]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        while not self.lines.empty():
            self.seen += self.lines.get()
        print(self.seen)  # shown by pytest when the test failed


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[BrowserContext]:
    subprocess.run([str(ROOT / "hack" / "install-chromium.sh")], check=True, capture_output=True)
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=str(CHROMIUM), headless=True, args=FLAGS,
            viewport={"width": 1280, "height": 900},
        )  # fmt: skip
        try:
            yield context
        finally:
            context.close()


def shots(tmp_path: Path) -> Path:
    where = Path(os.environ.get("AIANALYSIS_SCREENSHOT_DIR") or tmp_path)
    where.mkdir(parents=True, exist_ok=True)
    return where


def needs_review(cluster: devcluster.DevCluster, namespace: str, name: str, wf: dict[str, Any]) -> None:
    analysed(cluster, namespace, wf, name=name)
    patch_status(
        cluster, "aianalysis", name, namespace,
        {"needsHumanReview": True, "humanReviewReason": "low_confidence",
         "warnings": [f"confidence below the floor; {EVIL}"],
         "alternativeWorkflows": [{"workflowId": "restart-pods", "version": "1.0.0", "confidence": 0.4,
                                   "rationale": "restarts hide the leak"}]},
    )  # fmt: skip


def test_alice_approves_and_rejects_in_the_browser_as_herself(
    jobs_cluster: devcluster.DevCluster, ns: str, browser: BrowserContext, tmp_path: Path
) -> None:
    cluster, out = jobs_cluster, shots(tmp_path)
    wf = workflow(cluster)
    needs_review(cluster, ns, "api-oom", wf)
    needs_review(cluster, ns, "db-oom", wf)
    seen = proposal(cluster, ns, "api-oom")
    console = Console(cluster, ALICE, ns)
    try:
        page = browser.new_page()
        page.goto(console.url)
        expect(page.locator("h1")).to_have_text(f"Incidents in {ns}")
        expect(page.locator("#incidents")).to_contain_text("low_confidence")
        page.screenshot(path=str(out / "console-incidents.png"), full_page=True)

        page.click("text=api-oom")
        assert page.url == f"{console.origin}/ns/{ns}/aia/api-oom"
        expect(page.locator("#uid")).to_have_text(seen.uid)
        expect(page.locator("#digest")).to_have_text(seen.digest)
        expect(page.locator("#selection")).to_contain_text("MEMORY_LIMIT_NEW=1Gi")
        # the LLM's (untrusted) text is shown as text, never run as markup
        expect(page.locator("main")).to_contain_text(EVIL)
        assert page.title() != "owned" and page.locator("main img").count() == 0
        page.screenshot(path=str(out / "console-analysis.png"), full_page=True)

        # approving what needs review asks to confirm the override; then it runs, as alice
        page.click("#approve button")
        expect(page.locator("#flash")).to_contain_text("tick the box")
        assert items(cluster, "wfe", ns) == []
        page.check("input[name=confirm_override]")
        page.click("#approve button")
        expect(page.locator("#flash")).to_contain_text("workflowexecution/api-oom-exec-1 created")
        execution = get(cluster, "wfe", "api-oom-exec-1", ns)
        assert execution is not None
        approval = execution["spec"]["approval"]
        assert approval["approvedBy"] == ALICE and approval["selectionDigest"] == seen.digest
        assert approval["overriddenReason"] == "low_confidence"
        expect(page.locator("#executions")).to_contain_text(ALICE)
        expect(page.locator("#approve")).to_have_count(0)  # decided: no second approval from this page
        page.screenshot(path=str(out / "console-approved.png"), full_page=True)

        # reject the other one, with a reason that tries to be markup
        page.goto(f"{console.origin}/ns/{ns}/aia/db-oom")
        page.fill("textarea[name=reason]", f"64Gi hides the leak {EVIL}")
        page.click("#reject button")
        expect(page.locator("#flash")).to_contain_text("workflowrejection/db-oom-rejected-")
        [record] = items(cluster, "wfr", ns)
        assert record["spec"]["rejectedBy"] == ALICE
        assert record["spec"]["reason"] == f"64Gi hides the leak {EVIL}"
        expect(page.locator("#rejection")).to_contain_text(f"Rejected by {ALICE}: 64Gi hides the leak {EVIL}")
        assert page.title() != "owned" and page.locator("main img").count() == 0
        expect(page.locator("#reject")).to_have_count(0)
        page.screenshot(path=str(out / "console-rejected.png"), full_page=True)
        assert [e["metadata"]["name"] for e in items(cluster, "wfe", ns)] == ["api-oom-exec-1"]
    finally:
        console.stop()


def test_the_console_answers_only_its_own_session_origin_and_host(
    jobs_cluster: devcluster.DevCluster, ns: str, browser: BrowserContext
) -> None:
    cluster = jobs_cluster
    wf = workflow(cluster)
    needs_review(cluster, ns, "api-oom", wf)
    seen = proposal(cluster, ns, "api-oom")
    console = Console(cluster, ALICE, ns)
    try:
        page: Page = browser.new_page()
        page.goto(console.url)
        cookie = next(c for c in browser.cookies() if c["name"] == "aianalysis_console")
        assert cookie["httpOnly"] and cookie["sameSite"] == "Lax"
        page.goto(f"{console.origin}/ns/{ns}/aia/api-oom")
        csrf = page.locator("#approve input[name=csrf]").get_attribute("value")
        assert csrf
        form = {"csrf": csrf, "uid": seen.uid, "digest": seen.digest, "override_review": "low_confidence",
                "confirm_override": "yes"}  # fmt: skip
        action = f"{console.origin}/ns/{ns}/aia/api-oom/approve"
        with httpx.Client(follow_redirects=False, timeout=30) as anonymous:
            assert anonymous.get(f"{console.origin}/ns/{ns}").status_code == 401  # no session
        jar = {"aianalysis_console": cookie["value"]}
        with httpx.Client(follow_redirects=False, timeout=30, cookies=jar) as http:
            assert http.get(f"{console.origin}/login?token=guess").status_code == 401
            # another page posting the form (the browser says where it comes from)
            assert http.post(action, data=form, headers={"Origin": "http://evil.example"}).status_code == 403
            assert http.post(action, data=form).status_code == 403  # no Origin at all
            wrong = {**form, "csrf": "x" * len(csrf)}
            assert http.post(action, data=wrong, headers={"Origin": console.origin}).status_code == 403
            # a DNS-rebinding page reaches 127.0.0.1 under its own name
            rebound = http.get(f"{console.origin}/ns/{ns}", headers={"Host": "evil.example"})
            assert rebound.status_code == 421
            page_headers = http.get(f"{console.origin}/ns/{ns}").headers
            assert "frame-ancestors 'none'" in page_headers["content-security-policy"]
            assert page_headers["cache-control"] == "no-store"
            assert items(cluster, "wfe", ns) == []
            # the same form from the page's own origin, with its token: it goes through
            done = http.post(action, data=form, headers={"Origin": console.origin})
            assert done.status_code == 303, done.text
        assert items(cluster, "wfe", ns)[0]["spec"]["approval"]["approvedBy"] == ALICE
        # no credential of the kubeconfig reaches a page
        users = yaml.safe_load(cluster.kubeconfig_for(ALICE).read_text())["users"]
        credentials = [
            str(value)
            for entry in users
            for key, value in entry["user"].items()
            if key in ("token", "client-key-data", "client-certificate-data", "password")
        ]
        assert credentials, users
        for page_path in (f"/ns/{ns}", f"/ns/{ns}/aia/api-oom"):
            page.goto(console.origin + page_path)
            html = page.content()
            assert not [c for c in credentials if c in html]
    finally:
        console.stop()


def test_mallory_may_open_the_console_but_the_api_server_refuses_her_decisions(
    jobs_cluster: devcluster.DevCluster, ns: str, browser: BrowserContext
) -> None:
    cluster = jobs_cluster
    needs_review(cluster, ns, "api-oom", workflow(cluster))
    console = Console(cluster, MALLORY, ns)
    try:
        page = browser.new_page()
        page.goto(console.url)
        page.goto(f"{console.origin}/ns/{ns}/aia/api-oom")
        page.check("input[name=confirm_override]")
        page.click("#approve button")
        expect(page.locator("#flash")).to_contain_text("refused")
        page.fill("textarea[name=reason]", "no")
        page.click("#reject button")
        expect(page.locator("#flash")).to_contain_text("refused")
        assert items(cluster, "wfe", ns) == [] and items(cluster, "wfr", ns) == []
    finally:
        console.stop()
