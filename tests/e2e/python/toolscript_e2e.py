"""What several end-to-end modules use: the binary under test, a script that reports progress, and a
log of the progress a call reports."""

import os
import shutil

import pytest


def binary() -> str:
    """The toolscript binary under test: $TOOLSCRIPT_BIN, or toolscript on the PATH."""
    path = os.environ.get("TOOLSCRIPT_BIN") or shutil.which("toolscript")
    if not path:
        pytest.fail("set TOOLSCRIPT_BIN to a toolscript binary")
    return path


def progress_script(n: int) -> str:
    """A script that reports progress n times, a millisecond of work apart, and returns "done"."""
    return f"""
        for i = 1, {n} do
            local t = os.clock()
            while os.clock() - t < 0.001 do end
            progress(i, {n}, "row " .. i)
        end
        return "done"
    """


class ProgressLog:
    """The progress notifications of one call, in order: pass it as the call's progress_callback."""

    def __init__(self):
        self.seen = []

    async def __call__(self, progress, total, message):
        self.seen.append((progress, total, message))

    def check_increasing(self):
        """The notifications came, and their progress values only increase."""
        assert self.seen, "no progress notification"
        assert [p for p, _, _ in self.seen] == sorted({p for p, _, _ in self.seen}), self.seen
