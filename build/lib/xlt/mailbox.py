"""The mailbox between a driver and the workers of a run that serves its requests (``engine.fits``: a
co-training learner's fits): the pending request, and the name of each finished one's last checkpoint.

A room of its own, importing nothing of xlt or torch: the mailbox is a Ray actor, and its process
imports the module that defines it (and, on the first request, the request's class). Under the
engine, whose package imports torch, that was a second of a core per mailbox before it could
answer.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FitRequest:
    """A fit to serve: its number, ``asdict`` of its config, and ``[ObjectRef]`` to its rows (a list, so
    that Ray hands the reference on instead of the rows)."""

    index: int
    config: dict[str, Any]
    rows: list[Any]


class FitRequests:
    """The mailbox between the driver and the workers (a Ray actor of no CPU, asyncio: waiting
    calls do not block the others)."""

    def __init__(self) -> None:
        self._pending: FitRequest | None = None
        self._finished: dict[int, str] = {}
        self._closed = False
        self._changed = asyncio.Condition()

    async def post(self, request: FitRequest) -> None:
        async with self._changed:
            self._pending = request
            self._changed.notify_all()

    async def next(self, after: int) -> FitRequest | None:
        """The pending request numbered above ``after`` once there is one; ``None`` once closed."""
        async with self._changed:
            await self._changed.wait_for(
                lambda: self._closed or (self._pending is not None and self._pending.index > after))
            return None if self._closed else self._pending

    async def finish(self, index: int, checkpoint: str) -> None:
        async with self._changed:
            self._finished[index] = checkpoint
            if self._pending is not None and self._pending.index == index:
                self._pending = None
            self._changed.notify_all()

    async def finished(self, index: int, timeout: float) -> str | None:
        """The name of fit ``index``'s last checkpoint, or ``None`` if it is not done within ``timeout`` s."""
        async with self._changed:
            try:
                await asyncio.wait_for(self._changed.wait_for(lambda: index in self._finished), timeout)
            except TimeoutError:
                return None
            return self._finished[index]

    async def close(self) -> None:
        async with self._changed:
            self._closed = True
            self._changed.notify_all()
