"""The one exception type for malformed input in the data layer.

Every reader reports a bad file the same way, ``path:line: what is wrong, what was
expected``, so that an editor or terminal can jump straight to the offending line.
"""

from __future__ import annotations

from pathlib import Path


class DataError(ValueError):
    """Malformed input: ``DataError(path, line, message)`` reads ``"{path}:{line}: {message}"``.

    ``line`` is 1-based and optional (``None`` for problems that concern a whole file, such
    as two parallel files of different lengths); without it the text is ``"{path}: {message}"``.
    ``path`` may also name a non-file source such as a Hugging Face dataset.
    """

    def __init__(self, path: str | Path, line: int | None, message: str) -> None:
        # The raw parts go to ``args`` (not the formatted text) so that the exception
        # survives pickling, which Ray does when a reader fails inside a task.
        super().__init__(str(path), line, message)
        self.path = str(path)
        self.line = line
        self.message = message

    def __str__(self) -> str:
        if self.line is None:
            return f"{self.path}: {self.message}"
        return f"{self.path}:{self.line}: {self.message}"
