"""Images a container cannot pull: a reference the registry does not have, credentials it
refuses, or a new image that cannot be pulled at all while the previous one runs.
"""

from __future__ import annotations

import re

from aianalysis.analysis.offline import evidence, rule

_AUTH_PULL = re.compile(
    r"unauthorized|authentication required|no basic auth|access denied|denied|forbidden|credentials",
    re.IGNORECASE,
)
_MISSING_IMAGE = re.compile(r"not found|manifest unknown|does not exist|no such", re.IGNORECASE)


def image_tag_missing(seen: evidence.Evidence) -> rule.Match | None:
    """A container cannot pull its image because the registry does not have that name or tag (not
    found, manifest unknown, an invalid name), and nothing says the credentials were refused.

    Needs: the Pods' waiting states and messages and the pull events. Selects RollbackDeployment on
    the workload with CONTAINER_NAME: the image reference is wrong, and the previous image ran."""
    pulling = [(p, c) for p, c in seen.containers if c.waiting in evidence.PULL_WAITING]
    if not pulling:
        return None
    texts = [c.waiting_message for _, c in pulling] + seen.event_messages("Failed", "ErrImagePull")
    invalid = any(c.waiting == "InvalidImageName" for _, c in pulling)
    if not invalid and (
        not any(_MISSING_IMAGE.search(t) for t in texts) or any(_AUTH_PULL.search(t) for t in texts)
    ):
        return None
    _, container = pulling[0]
    facts = [f"container {container.name} cannot pull image {container.image}: {container.waiting}"]
    facts += [t for t in texts if _MISSING_IMAGE.search(t)][:1]
    if seen.rollout and seen.rollout.failing_since_last_change:
        facts.append(f"the image changed in revision {seen.rollout.revision}; the previous one ran")
    return rule.Match(
        facts=tuple(facts),
        target=seen.workload,
        values={"CONTAINER_NAME": container.name},
        detail={"image": container.image},
    )


IMAGE_TAG_MISSING = rule.Rule(
    name="image-tag-missing",
    signal_type="ImagePullBackOff",
    action_type="RollbackDeployment",
    query="ImagePullBackOff image tag not found rollback previous image",
    explanation=(
        "{workload} cannot pull {image}: the registry does not have it, so the image reference is wrong; "
        "going back to the previous image restores the workload."
    ),
    match=image_tag_missing,
)


def image_pull_denied(seen: evidence.Evidence) -> rule.Match | None:
    """The registry refuses the pull: unauthorized, denied, forbidden, bad credentials.

    Needs: the Pods' waiting states and messages, the pull events and the Pod's imagePullSecrets
    (their names; Secrets are never read). Selects RefreshImagePullSecret on the workload, with
    PULL_SECRET_NAME when the Pod names one."""
    pulling = [(p, c) for p, c in seen.containers if c.waiting in ("ErrImagePull", "ImagePullBackOff")]
    if not pulling:
        return None
    texts = [c.waiting_message for _, c in pulling] + seen.event_messages("Failed", "ErrImagePull")
    denied = [t for t in texts if _AUTH_PULL.search(t)]
    if not denied:
        return None
    pod, container = pulling[0]
    facts = [f"container {container.name} cannot pull image {container.image}", denied[0]]
    values = {}
    if pod.pull_secrets:
        facts.append(f"the Pod pulls with the image pull secret {pod.pull_secrets[0]}")
        values["PULL_SECRET_NAME"] = pod.pull_secrets[0]
    return rule.Match(
        facts=tuple(facts), target=seen.workload, values=values, detail={"image": container.image}
    )


IMAGE_PULL_DENIED = rule.Rule(
    name="image-pull-denied",
    signal_type="ImagePullBackOff",
    action_type="RefreshImagePullSecret",
    query="ImagePullBackOff pull secret credentials registry",
    explanation=(
        "{workload} cannot pull {image}: the registry refuses the credentials, so the image pull secret "
        "must be fixed."
    ),
    match=image_pull_denied,
)


def image_unpullable_after_rollout(seen: evidence.Evidence) -> rule.Match | None:
    """A container cannot pull the image the Deployment's newest revision introduced, for a reason
    other than refused credentials — the registry does not answer (connection refused, a timeout,
    a name that does not resolve), a tag not pushed yet — while Pods of an older revision run.

    Needs: the Pods' waiting states and messages, the pull events, and the rollout (which revisions
    fail and which are healthy, what changed in the newest template). Selects RollbackDeployment
    on the workload with CONTAINER_NAME: the previous image is on the nodes and ran, so going back
    restores the workload whatever keeps the new one from being pulled; the release can be retried
    once the image is there. It comes after ``image-tag-missing`` and ``image-pull-denied``."""
    pulling = [(p, c) for p, c in seen.containers if c.waiting in evidence.PULL_WAITING]
    rollout = seen.rollout
    if not pulling or rollout is None or not rollout.failing_since_last_change:
        return None
    _, container = pulling[0]
    if not rollout.healthy_revisions or f"image of {container.name}" not in rollout.changed:
        return None
    texts = [c.waiting_message for _, c in pulling] + seen.event_messages("Failed", "ErrImagePull")
    if any(_AUTH_PULL.search(t) for t in texts):
        return None
    said = next((t for t in texts if "pull" in t.lower() and ":" in t), None)
    older = ", ".join(str(r) for r in sorted(rollout.healthy_revisions))
    facts = [
        f"container {container.name} cannot pull image {container.image}: {container.waiting}",
        *([rule.shorten(said)] if said else []),
        f"the image changed in revision {rollout.revision}; Pods of revision {older} run the previous one",
    ]
    return rule.Match(
        facts=tuple(facts),
        target=seen.workload,
        values={"CONTAINER_NAME": container.name},
        detail={"image": container.image, "revision": str(rollout.revision)},
    )


IMAGE_UNPULLABLE_AFTER_ROLLOUT = rule.Rule(
    name="image-unpullable-after-rollout",
    signal_type="ImagePullBackOff",
    action_type="RollbackDeployment",
    query="ImagePullBackOff image cannot be pulled rollback previous image",
    explanation=(
        "{workload} cannot pull {image}, the image revision {revision} introduced, while the previous "
        "image runs: going back to it restores the workload; the release can be retried once the new "
        "image can be pulled."
    ),
    match=image_unpullable_after_rollout,
)
