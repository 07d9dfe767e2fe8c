"""Block-device matchers: writing raw bytes to a disk, making or wiping a filesystem.

``dd of=/dev/sdX``, a redirection or ``tee``/``cp``/``shred`` to a disk device, ``mkfs*``,
``mke2fs``, ``mkswap``, ``wipefs -a``, partition-table writers (``sfdisk``, ``sgdisk --zap``,
``parted … mklabel|rm``) and ``blkdiscard`` destroy a disk's content. The pseudo-devices a
command line writes every day (``/dev/null``, ``/dev/stdout``, ``/dev/stderr``, ``/dev/tty``,
``/dev/fd/N``) are not disks; ``wipefs`` without ``-a`` only lists, ``mkfs --version`` only
prints. Pure.
"""

from __future__ import annotations

import re

from pytest_loopcontract.checkpoints.model import Command, Hit, ScanContext, single_hit
from pytest_loopcontract.checkpoints.shell.vocabulary import word_set

__all__ = ["DEVICE_HINTS", "block_device"]

DEVICE_HINTS = ("/dev/", "mkfs", "mke2fs", "mkswap", "wipefs", "sfdisk", "sgdisk", "parted")

_PSEUDO_RE = re.compile(
    r"/dev/(?:null|zero|full|u?random|stdout|stderr|stdin|tty\w*|pts/\d+|fd/\d+|console|ptmx"
    r"|shm(?:/.*)?|mqueue(?:/.*)?)"
)
_MAKERS_RE = re.compile(r"mkfs(?:\.\w+)?|mke2fs|mkswap|mkntfs|mkdosfs|mkexfatfs|newfs(?:_\w+)?")
_PRINT_ONLY = word_set("-V --version -h --help")
_WRITERS = word_set("tee cp shred blkdiscard pv cat")
_PARTED_WRITES = word_set("mklabel mktable mkpart rm resizepart")


def _is_disk(path: str) -> bool:
    """A path under /dev/ that is not one of the everyday pseudo-devices."""
    return path.startswith("/dev/") and len(path) > 5 and not _PSEUDO_RE.fullmatch(path)


def _maker(cmd: Command) -> str | None:
    """Why a filesystem or partition tool writes a disk, or None when it only reads."""
    name, args = cmd.program, cmd.argv[1:]
    if _MAKERS_RE.fullmatch(name):
        return None if args and all(a in _PRINT_ONLY for a in args) else f"{name} formats"
    if name == "wipefs":
        erase = any(a in ("-a", "--all", "-o", "--offset") or a.startswith("--all") for a in args)
        return "wipefs erases signatures" if erase and "-n" not in args else None
    if name == "sfdisk":
        reads = ("-l", "--list", "-d", "--dump", "-V", "--verify", "-s", "--show-size", "-J")
        return None if any(a in reads for a in args) else "sfdisk writes a partition table"
    if name == "sgdisk":
        zaps = ("-Z", "--zap-all", "-z", "--zap", "-o", "--clear", "-d", "--delete", "-n")
        return "sgdisk rewrites the partition table" if any(a in zaps for a in args) else None
    if name == "parted" and any(a in _PARTED_WRITES for a in args):
        return "parted changes the partition table"
    return None


def block_device(cmd: Command, ctx: ScanContext) -> tuple[Hit, ...]:
    """A command that writes a disk device, formats one, or wipes its signatures."""
    why = _maker(cmd)
    if why is not None:
        return single_hit(cmd.text, why, always=True)
    disks: list[str] = []
    if cmd.program == "dd":
        disks += [a[3:] for a in cmd.argv[1:] if a.startswith("of=") and _is_disk(a[3:])]
    elif cmd.program in _WRITERS:
        ops = [a for a in cmd.argv[1:] if not a.startswith("-")]
        if cmd.program == "cp":
            ops = ops[-1:]
        if cmd.program != "cat":
            disks += [a for a in ops if _is_disk(a)]
    disks += [t for op, t in cmd.redirects if op in (">", ">>", ">|", "<>", "&>") and _is_disk(t)]
    if not disks:
        return ()
    return single_hit(cmd.text, "writes " + ", ".join(dict.fromkeys(disks)), always=True)
