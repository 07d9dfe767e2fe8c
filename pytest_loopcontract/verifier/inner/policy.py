"""The run's capability policy: a PEP 578 audit hook that sees what cheating needs.

Twins prove a forged outcome after the fact; this layer raises the cost of forging one. The
hook is installed when ``-p`` imports the inner package, before any conftest or project module
loads, and cannot be removed. It governs a few capabilities that grading one's own homework
needs and honest library code rarely uses (see :data:`KINDS`), and attributes each use:

- to the *candidate* when the first frame outward from the event that is not the standard
  library's is a file the candidate added or changed (a direct use; for frame access, the
  innermost frame itself, so ``namedtuple`` or ``logging`` reading a frame on the candidate's
  behalf is not the candidate's doing, while ``inspect.currentframe()`` is);
- to nobody otherwise: the tests are pinned, and what pytest, coverage.py or a library does
  is the baseline's business.

A use the baseline run's profile already holds for that file and capability (recorded the same
way, with every file of the tree counted) is no finding: attrs reading a frame at baseline
reads one now. Tamper-level uses are denied (the operation raises ``PermissionError``) after
they are recorded; evidence is recorded for a person. The records travel on the tests'
reports (xdist workers too) and in the signed results.

What an in-process hook cannot see: CPython 3.11 raises no event for writes to class or module
attributes, to ``sys.modules``, to ``__closure__`` or ``__globals__``; a signal handler or a
thread whose target is a builtin runs with no frame of the candidate's on its stack. Twins and
the namespace check cover outcomes those reach. Standard library only.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import types
from collections.abc import Iterable, Iterator
from typing import Any

__all__ = ["KINDS", "Policy"]

TAMPER = "tamper"
EVIDENCE = "evidence"
# kind: (severity, attributed to the innermost frame only, what it means)
KINDS: dict[str, tuple[str, bool, str]] = {
    "code_swap": (TAMPER, False, "replaces a function's __code__"),
    "tracing": (TAMPER, False, "installs a trace or profile function"),
    "audit_hook": (TAMPER, False, "installs an audit hook"),
    "process_memory": (TAMPER, False, "opens a process's memory or environment in /proc"),
    "referee_write": (TAMPER, False, "opens a test's source file for writing"),
    "referee_read": (EVIDENCE, False, "opens a test's source file"),
    "class_swap": (EVIDENCE, False, "assigns an object's __class__"),
    "code_new": (EVIDENCE, False, "builds a function or code object at run time"),
    "frames": (EVIDENCE, True, "reaches for call frames"),
    "gc": (EVIDENCE, False, "scans the garbage collector's objects"),
    "native": (EVIDENCE, False, "loads or addresses native code (ctypes)"),
    "exec_text": (EVIDENCE, True, "compiles source text at run time"),
}
_FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
_SWAPS = frozenset({"__code__", "__class__"})
_SIMPLE = {
    "sys.settrace": "tracing",
    "sys.setprofile": "tracing",
    "sys.addaudithook": "audit_hook",
    "function.__new__": "code_new",
    "code.__new__": "code_new",
    "sys._getframe": "frames",
    "sys._current_frames": "frames",
    "gc.get_objects": "gc",
    "gc.get_referrers": "gc",
    "gc.get_referents": "gc",
}
_PROCESS_FILES = ("/environ", "/mem")
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
# what the baseline profiles as a test's source (the referee is not known before its run)
_TESTISH = re.compile(r"(^|/)(tests?|testing)/|(^|/)(test_[^/]*|[^/]*_test|conftest)\.py$")
_STDLIB = os.path.dirname(os.path.realpath(os.__file__)) + os.sep
_TRANSPARENT = (os.sep + "inspect.py",)  # frame helpers that act for their caller
_DEPTH = 64


def classify(event: str, args: tuple[Any, ...]) -> tuple[str, str] | None:
    """``(kind, detail)`` for a governed event, else None (pure: no frames, no files)."""
    kind = _SIMPLE.get(event)
    if kind is not None:
        return kind, event
    if event == "object.__setattr__" and len(args) >= 2:
        if args[1] == "__code__":
            return "code_swap", f"{_label(args[0])}.__code__ = ..."
        if args[1] == "__class__":
            return "class_swap", f"{type(args[0]).__name__}.__class__ = ..."
    elif event == "object.__getattr__" and len(args) >= 2 and args[1] in _FRAME_ATTRIBUTES:
        return "frames", f"reads .{args[1]}"
    elif event == "open" and args:
        return ("referee_read", "open") if args[0] is not None else None  # refined by path
    elif event.startswith("ctypes."):
        return "native", event
    elif event == "compile" and len(args) >= 2 and isinstance(args[0], str | bytes):
        return "exec_text", f"compile(..., {str(args[1])[:80]!r})"
    return None


def _label(value: Any) -> str:
    return str(getattr(value, "__qualname__", type(value).__name__))


def _stdlib(filename: str) -> bool:
    if filename.startswith("<"):  # frozen importlib, exec'd text: acting for the caller
        return True
    return filename.startswith(_STDLIB) and "-packages" + os.sep not in filename


class Policy:
    """The audit hook and what it saw (see the module notes)."""

    def __init__(self, aliases: Iterable[str] = ()) -> None:
        self.configured = False
        self.off = False
        self.record = False  # the baseline's run: profile every file of the tree, deny nothing
        self.root = os.path.realpath(os.getcwd()) + os.sep
        # where else the run sees the tree (the sandbox binds it at the repository's path too)
        self.roots = (self.root, *(a.rstrip(os.sep) + os.sep for a in aliases if a))
        self.candidate: frozenset[str] = frozenset()  # relative paths of changed .py files
        # the referee's test sources by (device, inode): a symlink, a hard link or a path
        # spelled another way opens the same file
        self.referee: dict[tuple[int, int], str] = {}
        self.profile: frozenset[tuple[str, str]] = frozenset()
        self.seen: list[dict[str, Any]] = []  # uses attributed, not yet moved to a report
        self._keys: set[tuple[Any, ...]] = set()
        self._early: list[tuple[str, str, list[tuple[str, int]]]] = []
        self._inside = threading.local()
        self._relatives: dict[str, str | None] = {}

    def configure(self, settings: dict[str, Any]) -> None:
        """Take the launcher's policy settings, then judge what the hook saw before them."""
        self.record = bool(settings.get("record"))
        self.candidate = frozenset(str(p) for p in settings.get("candidate") or ())
        self.referee = _identities(self.root, [str(p) for p in settings.get("referee") or ()])
        self.profile = frozenset((str(a), str(b)) for a, b in settings.get("profile") or ())
        self.configured = True
        early, self._early = self._early, []
        for kind, detail, stack in early:
            self._judge(kind, detail, iter(stack), deny=False)

    def disable(self) -> None:
        """No settings came: the run governs nothing (and keeps nothing it saw early)."""
        self.off, self._early = True, []

    # -- the hook ------------------------------------------------------------------------

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        if self.off:
            return
        # the fast path: most events (import, compile, exec, marshal, reads of __code__ or
        # f_code, the hook's own among them) end on the name alone
        if event not in _SIMPLE:
            if event == "object.__getattr__":
                if args[1] not in _FRAME_ATTRIBUTES:
                    return
            elif event == "object.__setattr__":
                if args[1] not in _SWAPS:
                    return
            elif event == "compile":
                if not isinstance(args[0], str | bytes):
                    return  # a code object or an AST: compiled from text already seen
            elif event != "open" and not event.startswith("ctypes."):
                return
        if getattr(self._inside, "active", False):
            return  # the hook's own work raises events too
        self._inside.active = True
        try:
            self._handle(event, args)
        finally:
            self._inside.active = False

    def _handle(self, event: str, args: tuple[Any, ...]) -> None:
        found = classify(event, args)
        if found is None:
            return
        kind, detail = found
        if kind == "referee_read":
            kind, detail = self._opened(args[0])
            if not kind:
                return
            if kind == "referee_read" and _writes(args):
                kind = "referee_write"
        frames = _frames(sys._getframe(2))
        if not self.configured:
            self._early.append((kind, detail, list(frames)))
            return
        self._judge(kind, detail, frames, deny=True)

    def _opened(self, target: Any) -> tuple[str, str]:
        """``(kind, detail)`` when ``target`` is a process's memory or environment, or one of
        the referee's test sources (at baseline: any file named like a test); else ''."""
        if isinstance(target, int):
            return "", ""
        try:
            path = os.fsdecode(os.fspath(target))
        except TypeError:
            return "", ""
        if "proc" in path:
            real = os.path.realpath(path)
            if real.startswith("/proc/") and real.endswith(_PROCESS_FILES):
                return "process_memory", f"opens {path}"
        if self.record:
            rel = self._relative(os.path.abspath(path))
            testish = rel is not None and _TESTISH.search(rel) is not None
            return ("referee_read", f"opens {rel}") if testish else ("", "")
        if not self.referee:
            return "", ""
        try:
            info = os.stat(path)
        except (OSError, ValueError):
            return "", ""
        rel = self.referee.get((info.st_dev, info.st_ino))
        return ("referee_read", f"opens {rel}") if rel else ("", "")

    def _judge(
        self, kind: str, detail: str, frames: Iterator[tuple[str, int]], *, deny: bool
    ) -> None:
        severity, direct, meaning = KINDS[kind]
        culprit = self._culprit(frames, direct)
        if culprit is None:
            return
        rel, line = culprit
        if self.record:
            self._keep(("profile", rel, kind), {"profile": [rel, kind]})
            return
        if (rel, kind) in self.profile:
            return
        use = {"kind": kind, "severity": severity, "path": rel, "line": line}
        self._keep((kind, rel, line, detail), {**use, "detail": f"{meaning}: {detail}"})
        if deny and severity == TAMPER:
            raise PermissionError(f"loop-contract: denied to code under test: {meaning}")

    def _keep(self, key: tuple[Any, ...], entry: dict[str, Any]) -> None:
        if key not in self._keys:
            self._keys.add(key)
            self.seen.append(entry)

    def _culprit(self, frames: Iterator[tuple[str, int]], direct: bool) -> tuple[str, int] | None:
        """``(relative path, line)`` of the frame the use is attributed to, or None."""
        for filename, line in frames:
            if direct and filename.endswith(_TRANSPARENT):
                continue
            if not direct and _stdlib(filename):
                continue
            rel = self._relative(filename)
            if rel is not None and (self.record or rel in self.candidate):
                return rel, line
            return None
        return None

    def _relative(self, filename: str) -> str | None:
        """``filename`` relative to the tree (under any of its roots), or None; remembered
        per file name, since the same few files raise most events."""
        if filename in self._relatives:
            return self._relatives[filename]
        found = None
        if not filename.startswith("<"):
            for candidate in (filename, os.path.realpath(filename)):
                root = next((r for r in self.roots if candidate.startswith(r)), None)
                if root is not None:
                    rel = candidate[len(root) :]
                    found = None if "-packages" + os.sep in rel else rel.replace(os.sep, "/")
                    break
        self._relatives[filename] = found
        return found

    def take(self) -> list[dict[str, Any]]:
        taken, self.seen = self.seen, []
        return taken


def _writes(args: tuple[Any, ...]) -> bool:
    """Whether an ``open`` event's mode or flags ask for writing."""
    mode = args[1] if len(args) > 1 else None
    flags = args[2] if len(args) > 2 else 0
    if isinstance(mode, str) and any(c in mode for c in "wax+"):
        return True
    return isinstance(flags, int) and bool(flags & _WRITE_FLAGS)


def _identities(root: str, paths: Iterable[str]) -> dict[tuple[int, int], str]:
    found = {}
    for rel in paths:
        try:
            info = os.stat(os.path.join(root, rel))
        except OSError:
            continue
        found[(info.st_dev, info.st_ino)] = rel
    return found


def _frames(frame: types.FrameType | None) -> Iterator[tuple[str, int]]:
    """The stack outward from ``frame``, lazily: attribution usually stops at the first."""
    depth = 0
    while frame is not None and depth < _DEPTH:
        yield frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back
        depth += 1


def install(policy: Policy) -> None:
    sys.addaudithook(policy.hook)
