"""The shell's vocabulary: which programs wrap, elevate, interpret or search, and their options.

Data only (name sets and option tables), kept apart from the code that reads command lines so
that teaching the normaliser a new wrapper or runner is a one-line change here. Option tables
list the options that *take a value*, so an argument reader can skip ``-u root`` as one unit.
"""

from __future__ import annotations

import re

__all__ = [
    "ASSIGN_WORD_RE",
    "CODE_FLAGS",
    "DOAS_VALUE",
    "ELEVATORS",
    "GIT_VALUE",
    "GLOB_RE",
    "INTERPRETERS",
    "KEYWORDS",
    "PKEXEC_VALUE",
    "PRINTERS",
    "PY_VALUE",
    "RUN0_VALUE",
    "RUNNERS",
    "SEARCHERS",
    "SHELLS",
    "SPECIAL",
    "SSH_VALUE",
    "SUDO_VALUE",
    "SU_VALUE",
    "TOLERANT_SKIP",
    "WATCH_VALUE",
    "WRAPPERS",
    "word_set",
]


def word_set(text: str) -> frozenset[str]:
    """A set of names written as one space-separated string (keeps long tables readable)."""
    return frozenset(text.split())


ASSIGN_WORD_RE = re.compile(r"[A-Za-z_]\w*(?:\[[^\]]*\])?\+?=")
GLOB_RE = re.compile(r"[*?\[]")

SHELLS = word_set("sh bash zsh dash ksh mksh ash fish csh tcsh yash rbash posh")
KEYWORDS = word_set("if then else elif do while until ! { } fi done esac function coproc")
ELEVATORS = word_set("sudo sudoedit doas su pkexec run0")
INTERPRETERS = word_set("python node nodejs perl ruby php deno bun")
PRINTERS = frozenset({"echo", "printf"})
SEARCHERS = word_set("grep egrep fgrep zgrep rg ag ack ack-grep git-grep")
WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    # program: (options that take a value, operands to skip before the command)
    "nohup": (frozenset(), 0),
    "time": (frozenset({"-o", "--output", "-f", "--format"}), 0),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "ionice": (word_set("-c -n -p -P -u --class --classdata"), 0),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
    "stdbuf": (word_set("-i -o -e --input --output --error"), 0),
    "setsid": (frozenset(), 0),
    "exec": (frozenset({"-a"}), 0),
    "builtin": (frozenset(), 0),
    "command": (frozenset(), 0),
    "busybox": (frozenset(), 0),
    "unbuffer": (frozenset(), 0),
    "chronic": (frozenset(), 0),
    "torsocks": (frozenset(), 0),
    "proxychains": (frozenset({"-f"}), 0),
    "proxychains4": (frozenset({"-f"}), 0),
    "caffeinate": (frozenset({"-t", "-w"}), 0),
    "strace": (word_set("-o -e -p -s -u -E"), 0),
    "chroot": (frozenset({"--userspec", "--groups"}), 1),
    "xargs": (
        word_set(
            "-I -n -P -L -s -d -E -a --arg-file --max-args --max-procs --max-lines --max-chars "
            "--delimiter --eof --replace --process-slot-var"
        ),
        0,
    ),
    "npx": (frozenset({"-p", "--package"}), 0),
    "pnpx": (frozenset(), 0),
    "bunx": (frozenset(), 0),
    "uvx": (
        word_set(
            "--from --with -p --python --with-requirements --index --index-url --with-editable"
        ),
        0,
    ),
}
RUNNERS: dict[tuple[str, str], frozenset[str]] = {
    ("uv", "run"): word_set(
        "--with --python -p --project --directory --package --env-file --extra --group --index "
        "--with-requirements --with-editable"
    ),
    ("poetry", "run"): frozenset({"-C", "--directory", "-P", "--project"}),
    ("pdm", "run"): frozenset({"-p", "--project"}),
    ("pipenv", "run"): frozenset(),
    ("hatch", "run"): frozenset(),
    ("rye", "run"): frozenset(),
    ("pipx", "run"): frozenset({"--spec", "--python", "--index-url", "--pip-args"}),
    ("bundle", "exec"): frozenset(),
    ("npm", "exec"): frozenset({"-p", "--package", "-w", "--workspace"}),
    ("pnpm", "exec"): frozenset(),
    ("pnpm", "dlx"): frozenset(),
    ("yarn", "dlx"): frozenset(),
    ("yarn", "exec"): frozenset(),
    ("conda", "run"): frozenset({"-n", "--name", "-p", "--prefix"}),
    ("mamba", "run"): frozenset({"-n", "--name", "-p", "--prefix"}),
    ("micromamba", "run"): frozenset({"-n", "--name", "-p", "--prefix"}),
}
SUDO_VALUE = word_set(
    "-u -g -p -C -D -r -t -U -T -R --user --group --prompt --close-from --chdir --role --type "
    "--other-user --command-timeout --chroot --host"
)
DOAS_VALUE = frozenset({"-u", "-C"})
PKEXEC_VALUE = frozenset({"--user"})
RUN0_VALUE = word_set("-u --user -g --group -D --chdir --setenv --unit")
SU_VALUE = word_set("-s --shell -g --group -G --supp-group -w")
SSH_VALUE = word_set("-b -B -c -D -E -e -F -I -i -J -L -l -m -O -o -p -Q -R -S -W -w")
WATCH_VALUE = frozenset({"-n", "--interval", "-q", "--equexit"})
GIT_VALUE = word_set("-C -c --git-dir --work-tree --namespace --super-prefix --config-env")
PY_VALUE = frozenset({"-W", "-X", "-Q"})
CODE_FLAGS = word_set("-c -e -E -r -p --eval --print")  # interpreter options that take code


# Programs the normaliser has to look at; everything else is a plain command and leaves at once.
SPECIAL = (
    KEYWORDS
    | ELEVATORS
    | SHELLS
    | INTERPRETERS
    | frozenset(WRAPPERS)
    | frozenset(name for name, _ in RUNNERS)
    | word_set("env command python eval source . watch ssh git find uv")
    | word_set("cd pushd popd alias unset export declare typeset local readonly")
)

# Words a tolerant reading of malformed text drops before the program name.
TOLERANT_SKIP = word_set("env command exec nohup time sudo doas eval xargs then do else !")
