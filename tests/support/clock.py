"""A clock tests move by hand (``advance``), for the LLM budget gate: waiting on it returns when the
clock has been advanced far enough, never because real time passed."""

from __future__ import annotations

import asyncio


class ManualClock:
    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.value = start
        self._moved = asyncio.Condition()

    def now(self) -> float:
        return self.value

    async def sleep(self, seconds: float) -> None:
        until = self.value + seconds
        async with self._moved:
            await self._moved.wait_for(lambda: self.value >= until)

    async def advance(self, seconds: float) -> None:
        self.value += seconds
        async with self._moved:
            self._moved.notify_all()
        await asyncio.sleep(0)
