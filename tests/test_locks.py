"""locks: the one holder lock, against a real second process and a SIGKILLed holder."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_loopcontract.locks import HolderLock, LockBusy, holder_of

HOLD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from pytest_loopcontract.locks import HolderLock
    lock = HolderLock(Path(sys.argv[1])).acquire({"who": "child"})
    print("held", flush=True)
    time.sleep(60)
    """
)


def test_a_second_holder_is_refused_with_the_first_ones_note(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    child = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline() == b"held\n"
        assert holder_of(path) == {"who": "child"}
        with pytest.raises(LockBusy) as caught:
            HolderLock(path).acquire({"who": "me"})
        assert caught.value.holder == {"who": "child"}
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    assert holder_of(path) is None, "the kernel released a dead holder's lock"
    with HolderLock(path).acquire({"who": "me"}) as lock:
        assert lock.previous == {"who": "child"}, "the dead holder's note is handed over"
        assert json.loads(path.read_text()) == {"who": "me"}
        with pytest.raises(RuntimeError, match="already held"):
            lock.acquire({"who": "me"})
    assert path.read_bytes() == b"" and holder_of(path) is None
