"""Leader election against the real kube-apiserver: expiry is observed on the local monotonic clock
(a standby whose wall clock disagrees cannot steal a live lease), and a leader whose renewals hang
stops acting within its renew deadline, before the lease can expire for anyone else."""

from __future__ import annotations

import asyncio
import datetime
import socket
import time
from collections.abc import Iterator

import pytest
from kubernetes import client

from aianalysis import kube
from aianalysis.controller import leadership
from aianalysis_dev import devcluster
from tests.support import typed

pytestmark = pytest.mark.cluster


def lease_held_by(api: kube.ApiClient, namespace: str, *, holder: str, renewed: datetime.datetime) -> None:
    body = client.V1Lease(
        metadata=client.V1ObjectMeta(name="aianalysis-operator", namespace=namespace),
        spec=client.V1LeaseSpec(
            holder_identity=holder, lease_duration_seconds=2, acquire_time=renewed, renew_time=renewed
        ),
    )
    client.CoordinationV1Api(typed.client()).create_namespaced_lease(namespace, body)


def renew(api: kube.ApiClient, namespace: str, when: datetime.datetime) -> None:
    coordination = client.CoordinationV1Api(typed.client())
    lease = coordination.read_namespaced_lease("aianalysis-operator", namespace)
    lease.spec.renew_time = when
    coordination.replace_namespaced_lease("aianalysis-operator", namespace, lease)


async def test_a_standby_with_a_skewed_clock_does_not_steal_a_live_lease(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    """The holder's renewTime is an hour behind the standby's wall clock (reproduced skew): before,
    the standby took the lease at once. Now it waits until the lease stops changing for its duration."""
    api = kube.api_client(str(cluster.kubeconfig))
    hour_ago = datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=1)
    lease_held_by(api, namespace, holder="live-leader", renewed=hour_ago)
    standby = leadership.LeaderElection(
        api=api, namespace=namespace, name="aianalysis-operator", identity="standby",
        duration_seconds=2, renew_seconds=0.5, renew_deadline_seconds=1.0, retry_seconds=0.1,
    )  # fmt: skip
    deadline = time.monotonic() + 4  # twice the lease duration, the holder renewing all along
    tries = 0
    while time.monotonic() < deadline:
        assert not await standby._try(), "a live lease was stolen"
        tries += 1
        renew(api, namespace, hour_ago + datetime.timedelta(seconds=tries))  # still an hour behind
        await asyncio.sleep(0.3)
    stopped = time.monotonic()
    await asyncio.wait_for(standby.acquire(), timeout=10)  # the holder stopped renewing: taken over
    waited = time.monotonic() - stopped
    assert standby.leading and 2.0 <= waited < 6.0, waited
    held = client.CoordinationV1Api(typed.client()).read_namespaced_lease("aianalysis-operator", namespace)
    assert held.spec.holder_identity == "standby"
    api.close()


@pytest.fixture
def black_hole() -> Iterator[int]:
    """A TCP port that accepts connections and never answers (a hung API server connection)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


async def test_a_leader_whose_renewals_hang_stops_within_its_renew_deadline(black_hole: int) -> None:
    configuration = client.Configuration()
    configuration.host = f"http://127.0.0.1:{black_hole}"
    api = client.ApiClient(configuration)
    leader = leadership.LeaderElection(
        api=api, namespace="x", name="aianalysis-operator", identity="me",
        duration_seconds=4, renew_seconds=0.2, renew_deadline_seconds=1.5,
    )  # fmt: skip
    leader.leading = True
    lost = asyncio.Event()
    started = time.monotonic()
    await asyncio.wait_for(leader.hold(lost.set), timeout=10)
    took = time.monotonic() - started
    assert lost.is_set() and not leader.leading
    assert took < leader.duration_seconds, f"acted {took:.1f}s without a lease (duration 4s)"
    api.close()


def test_observation_restarts_on_any_change_and_ignores_wall_clocks() -> None:
    since, seen = leadership.observe_lease(None, 0.0, ("a", "t1"), now=100.0)
    assert (since, seen.expired(15)) == (100.0, False)
    since, seen = leadership.observe_lease(("a", "t1"), since, ("a", "t1"), now=116.0)
    assert seen.expired(15)
    since, seen = leadership.observe_lease(("a", "t1"), since, ("a", "t2"), now=116.0)
    assert not seen.expired(15) and since == 116.0


def test_the_renew_deadline_must_be_below_the_lease_duration() -> None:
    with pytest.raises(ValueError, match="renew_deadline_seconds"):
        leadership.LeaderElection(
            api=None, namespace="x", name="y", identity="z", duration_seconds=5, renew_deadline_seconds=5
        )  # type: ignore[arg-type]  # never called


async def test_the_chart_s_empty_lease_is_taken_and_keeps_helm_s_labels_and_annotations(
    cluster: devcluster.Cluster, namespace: str
) -> None:
    """The chart makes the Lease (so ``helm uninstall`` removes it, and no Role needs create): a
    Lease without a holder is free, and the leader's replaces keep what made it — without Helm's
    ownership annotations ``helm upgrade`` would refuse the object."""
    api = kube.api_client(str(cluster.kubeconfig))
    labels = {"app.kubernetes.io/managed-by": "Helm"}
    annotations = {"meta.helm.sh/release-name": "aianalysis-operator"}
    body = client.V1Lease(
        metadata=client.V1ObjectMeta(
            name="aianalysis-operator", namespace=namespace, labels=labels, annotations=annotations
        )
    )
    coordination = client.CoordinationV1Api(typed.client())
    coordination.create_namespaced_lease(namespace, body)
    leader = leadership.LeaderElection(
        api=api, namespace=namespace, name="aianalysis-operator", identity="first",
        duration_seconds=2, renew_seconds=0.5, renew_deadline_seconds=1.0, retry_seconds=0.1,
    )  # fmt: skip
    await asyncio.wait_for(leader.acquire(), timeout=5)
    await leader.release()
    held = coordination.read_namespaced_lease("aianalysis-operator", namespace)
    assert (held.metadata.labels, held.metadata.annotations) == (labels, annotations)
    assert held.spec.holder_identity is None and held.spec.lease_transitions == 1
    api.close()
