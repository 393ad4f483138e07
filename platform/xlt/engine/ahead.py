"""The step's inputs prepared ahead of it, in a thread of their own: a GPU is not left waiting while the next
batch is read, tokenised and pinned (on 2 CPU cores it costs nothing measurable: ``benchmarks/step_vs_hf_trainer.md``).

``ahead(items, depth)`` iterates ``items`` in a producer thread, at most ``depth`` items ahead of the consumer,
and yields them in their order: the same items as plain iteration, so whatever the producer computes (reading
rows, Ray's local shuffle, a workload's batcher with its own seeded generator) comes out the same. What it must
not do is draw from torch's global generator (the step's dropout draws from it) or share a tokenizer with the
step's thread (a fast tokenizer refuses a second thread while one uses it): a workload says whether its batcher
prepares the whole input (``Workload.prepares_input``), and only then does the loop run it ahead.

A failure in the producer is raised in the consumer, with its own traceback; a consumer that stops early (an
exception in the step, a closed generator) stops the producer, which exits at its next item.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

class _Failed:
    def __init__(self, error: BaseException) -> None:
        self.error = error


def ahead(items: Iterable[T], depth: int) -> Iterator[T]:
    """``items`` in order, produced in a thread at most ``depth`` ahead (``depth`` 0: in the caller's thread)."""
    if depth < 0:
        raise ValueError(f"depth must be >= 0, got {depth}")
    if depth == 0:
        yield from items
        return
    ready: queue.Queue[Any] = queue.Queue(maxsize=depth)
    stop, done = threading.Event(), object()  # done: the producer's last item

    def put(item: Any) -> bool:
        """Whether ``item`` was queued before the consumer stopped."""
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put(item):
                    return
            put(done)
        except BaseException as error:  # handed to the consumer, raised there
            put(_Failed(error))

    producer = threading.Thread(target=produce, name="xlt-input-ahead", daemon=True)
    producer.start()
    try:
        while True:
            item = ready.get()
            if item is done:
                return
            if isinstance(item, _Failed):
                raise item.error
            yield item
    finally:
        stop.set()
        producer.join()
