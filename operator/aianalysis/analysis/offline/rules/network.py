"""The network: traffic a NetworkPolicy blocks, and certificates that are not issued.

Neither falls back to the alert's workflows (``alert_remedies=False``): restarting or rolling back
a workload does not open a policy or issue a certificate.
"""

from __future__ import annotations

import re

from aianalysis import resources
from aianalysis.analysis.offline import evidence, rule

_PROBE_UNREACHED = re.compile(
    r"readiness probe failed:.*(timed out|timeout|connection refused|could not resolve|unreachable|"
    r"no route to host|deadline exceeded)",
    re.IGNORECASE,
)


def network_isolated(seen: evidence.Evidence) -> rule.Match | None:
    """Pods run but are not Ready because their readiness probe cannot reach what it checks
    (timed out, refused, unresolved, unreachable), while a NetworkPolicy of the namespace selects
    every Pod and allows no ingress or no egress.

    Needs: the Pods, their events and, with a listing tool, the namespace's NetworkPolicies (read
    when Pods run unready). Selects FixNetworkPolicy on that policy with POLICY_NAME (and
    NETWORK_POLICY_NAME)."""
    unready = [p for p in seen.pods if p.phase == "Running" and not p.healthy and not p.failing]
    blocking = [n for n in seen.network_policies if n.selects_all and (n.denies_ingress or n.denies_egress)]
    said = next((e.message for e in seen.events if _PROBE_UNREACHED.search(e.message)), None)
    if not unready or not blocking or said is None:
        return None
    policy = blocking[0]
    denied = " and ".join(
        d for d, on in (("ingress", policy.denies_ingress), ("egress", policy.denies_egress)) if on
    )
    return rule.Match(
        facts=(
            f"{len(unready)} Pod(s) run but are not Ready",
            f"their readiness probe cannot reach its peer: {rule.shorten(said)}",
            f"NetworkPolicy {policy.name} selects every Pod of the namespace and allows no {denied}",
        ),
        target=resources.ResourceRef(
            kind="NetworkPolicy", name=policy.name, namespace=seen.incident.namespace
        ),
        values={"POLICY_NAME": policy.name, "NETWORK_POLICY_NAME": policy.name},
        detail={"policy": policy.name, "denied": denied},
    )


NETWORK_POLICY_ISOLATION = rule.Rule(
    name="network-policy-isolation",
    signal_type="NetworkPolicyBlocked",
    action_type="FixNetworkPolicy",
    query="NetworkPolicy deny all blocks traffic readiness fix network policy",
    explanation=(
        "The Pods of {workload} are not Ready because their probes cannot reach their peers: "
        "NetworkPolicy {policy} denies all {denied} to every Pod of the namespace; fixing or removing "
        "that policy restores the traffic."
    ),
    match=network_isolated,
    alert_remedies=False,
)


def certificate_not_ready(seen: evidence.Evidence) -> rule.Match | None:
    """A cert-manager Certificate whose Secret the workload mounts is not Ready; its issuer's Ready
    condition says why.

    Needs: a listing tool (the namespace's Certificates), each Certificate and its Issuer or
    ClusterIssuer (the Secrets are never read). Selects FixCertificate on the Certificate with
    ISSUER_NAME and ISSUER_KIND."""
    failing = [c for c in seen.certificates if c.ready is False]
    if not failing:
        return None
    cert = failing[0]
    facts = [f"Certificate {cert.name} is not Ready: {rule.shorten(cert.message or 'no reason given')}"]
    if cert.issuer_ready is False:
        facts.append(
            f"its {cert.issuer_kind} {cert.issuer_name} is not Ready: {rule.shorten(cert.issuer_message)}"
        )
    facts.append(f"{rule.ref_text(seen.workload or seen.incident)} mounts the Certificate's Secret")
    values = {"ISSUER_NAME": cert.issuer_name, "ISSUER_KIND": cert.issuer_kind} if cert.issuer_name else {}
    return rule.Match(
        facts=tuple(facts),
        target=resources.ResourceRef(kind="Certificate", name=cert.name, namespace=seen.incident.namespace),
        values=values,
        detail={"certificate": cert.name, "issuer": f"{cert.issuer_kind} {cert.issuer_name}".strip()},
    )


CERTIFICATE_NOT_READY = rule.Rule(
    name="certificate-not-ready",
    signal_type="CertificateNotReady",
    action_type="FixCertificate",
    query="Certificate not ready issuer cert-manager fix certificate CA",
    explanation=(
        "Certificate {certificate}, whose Secret {workload} mounts, is not Ready and will not be renewed "
        "while its issuer ({issuer}) fails; fixing the issuer or the Certificate restores it."
    ),
    match=certificate_not_ready,
    alert_remedies=False,
)
