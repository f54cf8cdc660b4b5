"""Issue 33's whole path, end to end: an analysis that needs review → an alert in the real Alertmanager
→ the webhook receiver gets it with the console link → the person opens that link in the browser
(Debian's chromium, Playwright), approves → a WorkflowExecution created as them → the alert resolves;
the same with reject (the operator records it on the analysis, and the alert resolves). The operator
is the real process, the LLM the scripted Messages API server, the console runs with the person's
kubeconfig (here the control plane's admin)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from playwright.sync_api import BrowserContext, expect

from tests.browser import test_console
from tests.browser.test_console import Console
from tests.e2e import test_notifications
from tests.e2e.conftest import ROOT, get, wait_for, wait_terminal
from tests.e2e.test_notifications import INCIDENT, delivered, review_env
from tests.e2e.test_operator_scripted import apply_incident
from tests.support import alertmanager as am
from tests.support import messages_server as ms
from tests.support import programs

# The fixtures of the notifications test and the console's browser test.
alertmanager, llm_server, receiver = (
    test_notifications.alertmanager,
    test_notifications.llm_server,
    test_notifications.receiver,
)
browser = test_console.browser


def whoami(cluster: Any) -> str:
    review = cluster.kubectl("auth", "whoami", "-o", "json").stdout
    return str(json.loads(review)["status"]["userInfo"]["username"])


def test_from_the_notification_to_a_decision_in_the_browser_and_the_alert_resolves(
    cluster: Any,
    namespace: str,
    example_catalog: Any,
    start_operator: Any,
    llm_server: ms.MessagesServer,
    receiver: am.Receiver,
    alertmanager: am.Alertmanager,
    browser: BrowserContext,
    tmp_path: Path,
) -> None:
    port = programs.free_port()
    operator = start_operator(**review_env(llm_server, alertmanager, console_url=f"http://127.0.0.1:{port}"))
    apply_incident(cluster, namespace, INCIDENT, as_name="to-approve")
    # another workload: a newer analysis of the same target would supersede the first one's alert
    other = yaml.safe_load((ROOT / "examples" / "incidents" / f"{INCIDENT}.yaml").read_text())
    other["metadata"]["name"] = "to-reject"
    other["spec"]["resource"]["name"] = "payment-worker"
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(other))
    wait_terminal(cluster, namespace, 2, logs=operator.logs)

    def both_firing() -> dict[str, dict[str, Any]] | None:
        found = {a["labels"]["aianalysis"]: a for a in delivered(receiver, "firing")}
        return found if {"to-approve", "to-reject"} <= set(found) else None

    firing = wait_for(both_firing, what="two firing notifications", logs=operator.logs)
    me = whoami(cluster)
    console = Console(cluster, None, namespace, port=port)
    try:
        page = browser.new_page()
        page.goto(console.url)  # signed in once, as the console's printed URL does
        # the link the notification carried opens the analysis it is about
        page.goto(firing["to-approve"]["annotations"]["console_url"])
        expect(page.locator("h1")).to_have_text("aianalysis/to-approve")
        expect(page.locator("#review-reason")).to_have_text("low_confidence")
        digest = page.locator("#digest").inner_text()
        page.check("input[name=confirm_override]")
        page.click("#approve button")
        expect(page.locator("#flash")).to_contain_text("workflowexecution/to-approve-exec-1 created")
        execution = get(cluster, "wfe", "to-approve-exec-1", namespace)
        assert execution is not None
        assert execution["spec"]["approval"]["approvedBy"] == me
        assert execution["spec"]["approval"]["selectionDigest"] == digest

        page.goto(firing["to-reject"]["annotations"]["console_url"])
        page.fill("textarea[name=reason]", "the limit is not the problem; the leak is")
        page.click("#reject button")
        expect(page.locator("#flash")).to_contain_text("workflowrejection/to-reject-rejected-")

        def recorded() -> dict[str, Any] | None:
            found = get(cluster, "aianalyses", "to-reject", namespace) or {}
            return (found.get("status") or {}).get("rejection")

        assert (
            wait_for(recorded, what="the rejection on the analysis", logs=operator.logs)["rejectedBy"] == me
        )

        def both_resolved() -> set[str] | None:
            names = {a["labels"]["aianalysis"] for a in delivered(receiver, "resolved")}
            return names if {"to-approve", "to-reject"} <= names else None

        wait_for(both_resolved, what="both notifications resolved", logs=operator.logs)
        assert len(delivered(receiver, "firing")) == 2
    finally:
        console.stop()
