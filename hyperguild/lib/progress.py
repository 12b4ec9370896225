"""Progress bars for management commands, written through the command's own `self.stderr`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol, TypeVar

from django.core.management.base import OutputWrapper
from tqdm import tqdm

Item = TypeVar("Item")


class ProgressWrapper(Protocol):
    """What long work shows its progress through (a command's progress bar, or nothing): the items, unchanged."""

    def __call__(self, items: Iterable[Item], /) -> Iterable[Item]: ...


def _plain(text: str) -> str:
    return text


class ProgressFile:
    """The file tqdm draws on: a command's `OutputWrapper`, written with no line ending and no style.

    `OutputWrapper.write` ends every write with a newline and, on a terminal, styles stderr as an
    error (red); a bar redrawn in place with `\\r` needs neither. Writing through the wrapper (not
    around it) keeps whatever stream the caller gave `call_command(stderr=…)`.
    """

    def __init__(self, output: OutputWrapper) -> None:
        self.output = output

    def write(self, text: str) -> None:
        self.output.write(text, style_func=_plain, ending="")

    def flush(self) -> None:
        self.output.flush()

    def isatty(self) -> bool:
        return self.output.isatty()

    @property
    def encoding(self) -> str | None:
        # The wrapped stream's (OutputWrapper passes unknown attributes on): tqdm draws a unicode bar
        # only where the stream can take one.
        return getattr(self.output, "encoding", None)

    def fileno(self) -> int:
        return self.output.fileno()  # tqdm sizes the bar to the terminal; a stream without one raises


def progress_bar(output: OutputWrapper, items: Iterable[Any], *, enabled: bool = True, **options: Any) -> tqdm[Any]:
    """`tqdm(items, **options)` drawn on `output` (a command's `self.stderr`); nothing when not `enabled`."""
    return tqdm(items, file=ProgressFile(output), disable=not enabled, **options)
