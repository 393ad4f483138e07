"""The mailbox between a driver and a run's workers (``xlt.mailbox``): what each side sees, and a process
that holds one imports nothing heavy."""

from __future__ import annotations

import asyncio
import subprocess
import sys

from xlt.mailbox import FitRequest, FitRequests


def test_the_mailbox_hands_each_worker_the_pending_fit_once():
    async def scenario():
        box = FitRequests()
        await box.post(FitRequest(0, {}, []))
        assert (await box.next(-1)).index == 0  # a (re)started worker takes the pending fit
        waiting = asyncio.ensure_future(box.next(0))  # a worker done with fit 0 waits for the next
        assert await box.finished(0, timeout=0.01) is None
        await box.finish(0, "fit0-epoch002")
        assert await box.finished(0, timeout=0.01) == "fit0-epoch002"
        await asyncio.sleep(0.01)
        assert not waiting.done()
        await box.post(FitRequest(1, {}, []))
        assert (await waiting).index == 1
        await box.close()
        assert await box.next(1) is None

    asyncio.run(scenario())


def test_a_mailbox_process_imports_no_torch():
    """The actor's process imports the mailbox's module and a request's class, nothing more of xlt."""
    code = ("import pickle, sys; from xlt.mailbox import FitRequest, FitRequests; "
            "pickle.loads(pickle.dumps(FitRequest(0, {}, []))); "
            "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith(('xlt.', 'ray'))))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "['xlt.mailbox']", loaded
