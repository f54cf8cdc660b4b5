"""A one-line text progress bar on stderr: redrawn in place on a terminal, one line per finished
run otherwise (CI logs keep every line)."""

from __future__ import annotations

from typing import TextIO

from aianalysis.evaluation import scoring

WIDTH = 28


class Progress:
    def __init__(self, total: int, *, stream: TextIO, width: int = WIDTH) -> None:
        self.total = total
        self.done = 0
        self.correct = 0
        self._stream = stream
        self._width = width
        self._tty = stream.isatty()

    def __call__(self, result: scoring.RunResult) -> None:
        """Called once per finished run."""
        self.done += 1
        self.correct += result.correct
        line = self.line(result)
        if self._tty:
            self._stream.write("\r\033[K" + line)
            if self.done == self.total:
                self._stream.write("\n")
        else:
            self._stream.write(line + "\n")
        self._stream.flush()

    def line(self, result: scoring.RunResult) -> str:
        filled = self._width * self.done // max(self.total, 1)
        bar = "#" * filled + "-" * (self._width - filled)
        outcome = "error" if result.error else ("ok" if result.correct else "wrong")
        return (
            f"[{bar}] {self.done}/{self.total} correct {self.correct} | {result.scenario} "
            f"#{result.run}: {outcome} ({result.latency_seconds:.2f}s)"
        )
