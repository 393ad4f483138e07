"""``xlt.engine.ahead``: the same items in order, produced in a thread at most ``depth`` ahead; failures raised in
the consumer; a consumer that stops early stops the producer."""

from __future__ import annotations

import threading
import time

import pytest

from xlt.engine.ahead import ahead


@pytest.mark.parametrize("depth", [0, 1, 3])
def test_the_items_come_in_order_as_plain_iteration_gives_them(depth):
    assert list(ahead(iter(range(50)), depth)) == list(range(50))
    assert list(ahead([], depth)) == []


def test_the_producer_runs_in_its_own_thread_at_most_depth_ahead():
    produced, threads = [], set()

    def items():
        for i in range(20):
            threads.add(threading.current_thread().name)
            produced.append(i)
            yield i

    consumed = 0
    for item in ahead(items(), 2):
        time.sleep(0.01)  # the producer fills the queue meanwhile
        consumed += 1
        # queued: 2; one more may be made and waiting to be put
        assert len(produced) - consumed <= 3
    assert consumed == 20 and threads == {"xlt-input-ahead"}


def test_a_failure_in_the_producer_is_raised_in_the_consumer_after_the_items_before_it():
    def items():
        yield 1
        yield 2
        raise KeyError("row 3")

    got = []
    with pytest.raises(KeyError, match="row 3"):
        for item in ahead(items(), 2):
            got.append(item)
    assert got == [1, 2]


def test_a_consumer_that_stops_early_stops_the_producer():
    def endless():
        i = 0
        while True:
            yield i
            i += 1

    before = threading.active_count()
    prepared = ahead(endless(), 2)
    assert [next(prepared) for _ in range(3)] == [0, 1, 2]
    prepared.close()  # the loop left on an exception, or a generator dropped
    assert threading.active_count() == before
    assert not any(t.name == "xlt-input-ahead" for t in threading.enumerate())
    with pytest.raises(ValueError, match="depth"):
        list(ahead([1], -1))
