"""kit.workers: an object that leaves a filtered watch is released — its task runs on unless the
object was deleted, and nothing of it is kept once the task has ended."""

from __future__ import annotations

import asyncio

from aianalysis.kit import workers as workers_mod


async def test_a_released_object_that_still_exists_keeps_its_task_and_leaves_no_record() -> None:
    workers, proceed, asked = workers_mod.Workers(), asyncio.Event(), []

    async def still_there() -> bool:
        asked.append(1)
        return False

    workers.ensure("uid-1", version="7", start=proceed.wait)
    task = workers._tasks["uid-1"]
    workers.release("uid-1", deleted=still_there, grace_seconds=0.01)
    await asyncio.gather(*workers._checks)  # the grace passed, the question was asked

    assert asked == [1]
    assert not task.done(), "not cancelled: the object exists"
    proceed.set()
    await task
    assert len(workers) == 0 and "uid-1" not in workers._finished_at


async def test_a_released_object_that_was_deleted_has_its_task_cancelled() -> None:
    workers, never = workers_mod.Workers(), asyncio.Event()

    async def gone() -> bool:
        return True

    workers.ensure("uid-2", version="3", start=never.wait)
    task = workers._tasks["uid-2"]
    workers.release("uid-2", deleted=gone, grace_seconds=0.01)

    await asyncio.wait({task}, timeout=30)
    assert task.cancelled()
    assert len(workers) == 0 and "uid-2" not in workers._finished_at


async def test_a_task_that_ends_within_the_grace_is_not_asked_about() -> None:
    workers, asked = workers_mod.Workers(), []

    async def deleted() -> bool:
        asked.append(1)
        return True

    async def quick() -> None:
        return None

    workers.ensure("uid-3", version="1", start=quick)
    task = workers._tasks["uid-3"]
    workers.release("uid-3", deleted=deleted, grace_seconds=30)
    await task
    await asyncio.gather(*workers._checks)

    assert asked == [] and "uid-3" not in workers._finished_at


async def test_a_finished_object_is_not_started_again_at_its_version_until_released() -> None:
    workers, runs = workers_mod.Workers(), []

    async def run() -> None:
        runs.append(1)

    async def deleted() -> bool:
        return False

    workers.ensure("uid-4", version="5", start=run)
    await workers._tasks["uid-4"]
    again = workers.ensure("uid-4", version="5", start=run)
    workers.release("uid-4", deleted=deleted, grace_seconds=0.01)

    assert again is False and runs == [1]
    assert "uid-4" not in workers._finished_at, "released: the record is dropped"
