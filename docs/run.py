#!/usr/bin/env python3
"""Re-run the examples of the docs and compare their output with what the pages show.

    python docs/run.py --check [PAGE...]   exit 1 on any difference: page, line and a diff
    python docs/run.py --write [PAGE...]   put the real output in the pages

PAGE is a path or a page's name (``cli``, ``README``); default: README.md and docs/*.md.

What runs, page by page, in page order (a reader following the page has the same state):

- a ```console block: each ``$ `` line is a command for bash (a heredoc's lines and a line
  ending in ``\\`` belong to it); the lines after it, up to the next ``$ `` line, are what it
  printed, stdout and stderr together. Input files are made in the block itself, in plain
  sight: ``$ cat > file <<'EOF'``.
- a ```python block: run by the venv's ``python``; what it prints is the plain ``` block right
  after it (no such block: it prints nothing).
- a console block right after ``<!-- docs: terminal -->`` is a session at a terminal: its one
  ``$ `` command runs in a tmux pane, each line that starts with the shell's prompt (``main=> ``)
  is typed when that prompt shows, and the whole screen is its output.
- a block right after ``<!-- docs: not run: REASON -->`` is left alone. Other blocks (```sh,
  ```json, ```text, plain ```) are text.

One bash process per page runs everything, so variables, ``cd`` and ``$!`` carry over between
blocks. Its folder is /tmp/chronos-docs/<page> (made afresh; HOME is /tmp/chronos-docs/<page>.home,
also fresh), PATH starts with this checkout's venv, and commands read /dev/null unless they
redirect. Output is compared after NORMALIZE (below), and ``--write`` leaves an output as the page
has it when it differs only there, so regenerating a page doesn't churn its ids and times.
"""

from __future__ import annotations

import argparse
import difflib
import fcntl
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRATCH = Path("/tmp/chronos-docs")
TOOLS = ("bash", "jq", "sqlite3", "tmux")  # what the pages' commands (and terminal blocks) run
COMMAND_TIMEOUT = 120.0  # seconds one command may take before the page is given up
MARKER = re.compile(r"^<!-- docs: (not run: .+?|terminal) -->$")
TERMINAL_SIZE = ("120", "50")  # columns, rows of the terminal blocks' tmux pane
# A shell prompt at the start of a terminal block's line: the branch, `=>`, `->` or `=*>`, and
# what was typed after it.
PROMPT = re.compile(r"^(?P<prompt>[A-Za-z0-9][\w.@:-]*(?: [\w.@:-]+)*[=-]\*?>)(?: (?P<typed>.*))?$")

# What differs from run to run, each replaced by a fixed token before comparing. Keep it short:
# anything not listed here must match exactly.
NORMALIZE: list[tuple[re.Pattern[str], str]] = [
    # world ids: random, never reused
    (re.compile(r"\bw[0-9a-f]{16}\b"), "w<id>"),
    # local times as chronos prints them ('2026-11-30 11:57:23', with an optional fraction)
    (re.compile(r"\b\d{4}-\d\d-\d\d[ T]\d\d:\d\d(?::\d\d(?:\.\d+)?)?\b"), "<time>"),
    # Unix times (`created`, history's `time`): seconds since 1970, with a fraction
    (re.compile(r"\b1[0-9]{9}\.\d+\b"), "<unix time>"),
    # a process id, in the busy error's "process 23566 (python3 app.py) holds the write lock"
    (re.compile(r"\bprocess \d+\b"), "process <pid>"),
    # bash's `time`: real 0m35.281s, user 0m0.527s, sys 0m0.146s
    (re.compile(r"\b\d+m\d+\.\d{3}s\b"), "<duration>"),
    # the shell's \timing: `Time: 3.349 ms` (limits and waits, `35,000 ms`, are checked as shown)
    (re.compile(r"\bTime: \d+\.\d+ ms\b"), "Time: <n> ms"),
    # an agent's token: random, shown once
    (re.compile(r"\bca_[0-9a-f]{8}_[A-Za-z0-9_-]{43}"), "ca_<token>"),
    # how long a simulation took: `6 worlds from main in 23 ms, best first`
    (re.compile(r"\bin \d+ ms, best first\b"), "in <n> ms, best first"),
    # how long a backup took: `(main, w1) in 41 ms; checked`
    (re.compile(r"\bin \d+ ms; checked\b"), "in <n> ms; checked"),
    # a safe-mode session's name (its worlds' owner, history's who): random per session
    (re.compile(r"\bsafe:[0-9a-f]{6}\b"), "safe:<session>"),
]
# Names of one thing (a world, a process): where --write puts a run's output in, it shows their
# ids as the rest of the page already does. Times are the run's: they must agree with each other.
IDENTITIES = {"w<id>", "process <pid>", "ca_<token>", "safe:<session>"}


def normalize(text: str) -> str:
    for pattern, token in NORMALIZE:
        text = pattern.sub(token, text)
    return text


# --- reading a page -------------------------------------------------------------------------


@dataclass
class Command:
    line: int  # 1-based line of its `$ ` in the page
    source: list[str]  # the command as the page shows it, `$ ` included
    output: list[str]  # what the page shows after it


@dataclass
class Block:
    kind: str  # "console", "python" or "text" (not run)
    start: int  # 0-based index of the opening fence
    end: int  # 0-based index of the closing fence
    body: list[str]
    commands: list[Command] = field(default_factory=list)
    output: Block | None = None  # a python block's printed output (a plain ``` block)
    skipped: str | None = None  # why it isn't run
    terminal: bool = False  # its one command runs at a terminal (tmux), typed as the page shows


HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")


def parse_console(body: list[str], first_line: int) -> list[Command]:
    """Split a console block into commands with their output (first_line: the body's line)."""
    commands: list[Command] = []
    i = 0
    while i < len(body):
        if not body[i].startswith("$ "):
            if not commands:
                raise ValueError(f"line {first_line + i}: a console block starts with `$ `")
            commands[-1].output.append(body[i])
            i += 1
            continue
        start = i
        source = [body[i]]
        delimiters = [m.group(2) for m in HEREDOC.finditer(body[i]) if "<<<" not in m.group(0)]
        while source[-1].endswith("\\") and i + 1 < len(body):
            i += 1
            source.append(body[i])
            delimiters += [m.group(2) for m in HEREDOC.finditer(body[i])]
        for delimiter in delimiters:  # each heredoc's lines, up to its delimiter
            while i + 1 < len(body):
                i += 1
                source.append(body[i])
                if body[i].strip() == delimiter:
                    break
        commands.append(Command(first_line + start, source, []))
        i += 1
    return commands


def parse_page(lines: list[str]) -> list[Block]:
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        fence = re.match(r"^```(\S*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].rstrip() == "```"), None)
        if end is None:
            raise ValueError(f"line {i + 1}: a block that doesn't end")
        lang = fence.group(1)
        kind = lang if lang in ("console", "python") else "text"
        block = Block(kind, i, end, lines[i + 1 : end])
        marker = _marker(lines, i)
        block.skipped = marker[len("not run: ") :] if marker and marker != "terminal" else None
        block.terminal = marker == "terminal"
        if block.skipped is None and kind == "console":
            block.commands = parse_console(block.body, i + 2)
        if kind == "text" and lang == "" and blocks and _follows(lines, blocks[-1], i):
            blocks[-1].output = block  # a python block's output
        blocks.append(block)
        i = end + 1
    return [b for b in blocks if not any(b is p.output for p in blocks)]


def _marker(lines: list[str], fence: int) -> str | None:
    """The `<!-- docs: ... -->` just above the fence (blank lines apart): `not run: REASON` or
    `terminal`."""
    j = fence - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    m = MARKER.match(lines[j].strip()) if j >= 0 else None
    return m.group(1) if m else None


def _follows(lines: list[str], block: Block, fence: int) -> bool:
    between = lines[block.end + 1 : fence]
    return block.kind == "python" and block.skipped is None and not any(s.strip() for s in between)


# --- running it -----------------------------------------------------------------------------


class Shell:
    """One bash for a page: commands in on a pipe, their output (stdout and stderr) out on
    another, each followed by a marker line so we know where it ends."""

    LOOP = (
        'while IFS= read -r -d "" __docs_cmd; do '
        'eval "$__docs_cmd" </dev/null; printf "\\n%s\\n" "$__DOCS_MARK"; done'
    )

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.mark = f"--docs-{uuid.uuid4().hex}--"
        self.proc = subprocess.Popen(
            ["bash", "--norc", "--noprofile", "-c", self.LOOP],
            cwd=cwd,
            env={**env, "__DOCS_MARK": self.mark},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: background jobs end with it
        )
        self.pending = b""

    def run(self, command: str, timeout: float = COMMAND_TIMEOUT) -> str:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(command.encode() + b"\0")
        self.proc.stdin.flush()
        mark = f"\n{self.mark}\n".encode()
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while mark not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError(f"no end after {timeout:.0f} s")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise RuntimeError("bash exited")
            self.pending += chunk
        out, self.pending = self.pending.split(mark, 1)
        return out.decode(errors="replace")

    def close(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


def environment(home: Path) -> dict[str, str]:
    """This checkout's `chronos` first on PATH, a fresh HOME, and nothing of the caller's
    terminal, locale or chronos settings that would change what commands print."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("XDG_", "CHRONOS_", "LC_"))
        and k not in ("COLUMNS", "LINES", "PAGER", "VIRTUAL_ENV", "PYTHONPATH", "PYTHONSTARTUP")
    }
    venv = ROOT / ".venv" / "bin"
    venv_bin = venv if venv.is_dir() else Path(sys.executable).parent
    env.update(
        HOME=str(home),
        PATH=f"{venv_bin}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}",
        PYTHONPATH=str(ROOT),  # (this checkout's chronos_lite, whatever the venv installed)
        LANG="C.UTF-8",
        LC_ALL="C.UTF-8",
        TERM="dumb",
    )
    return env


@dataclass
class Mismatch:
    page: str
    line: int
    expected: list[str]
    actual: list[str]

    def report(self) -> str:
        diff = difflib.unified_diff(
            normalize("\n".join(self.expected)).splitlines(),
            normalize("\n".join(self.actual)).splitlines(),
            "page",
            "run",
            lineterm="",
        )
        return f"{self.page}:{self.line}: the output differs\n" + "\n".join(diff)


def lines_of(output: str) -> list[str]:
    return output[:-1].split("\n") if output.endswith("\n") else output.split("\n")


def same(expected: list[str], actual: list[str]) -> bool:
    return normalize("\n".join(expected)).rstrip() == normalize("\n".join(actual)).rstrip()


class PageRun:
    def __init__(self, page: Path) -> None:
        self.page = page
        self.name = page.relative_to(ROOT).as_posix()
        self.lines = page.read_text().split("\n")
        self.blocks = parse_page(self.lines)
        self.mismatches: list[Mismatch] = []
        self.new_output: dict[int, list[str]] = {}  # a command's or python block's line -> output
        self.tokens: dict[str, str] = {}  # a run's normalized value -> the page's, for --write

    def run(self) -> None:
        stem = self.page.stem
        with _lock(SCRATCH / f"{stem}.lock"):
            folder, home, scripts = (SCRATCH / f"{stem}{s}" for s in ("", ".home", ".blocks"))
            for path in (folder, home, scripts):
                shutil.rmtree(path, ignore_errors=True)
                path.mkdir(parents=True)
            self.folder, self.env = folder, environment(home)
            shell = Shell(folder, self.env)
            try:
                for block in self.blocks:
                    if block.skipped is None:
                        self._run_block(shell, block, scripts)
            finally:
                shell.close()

    def _run_block(self, shell: Shell, block: Block, scripts: Path) -> None:
        if block.terminal:
            command = block.commands[0]
            screen = Terminal(self.folder, self.env, scripts).run(command)
            self._compare(command.line, command.output, screen)
        elif block.kind == "console":
            for command in block.commands:
                text = "\n".join(command.source)[2:]
                self._compare(command.line, command.output, self._exec(shell, text, command.line))
        elif block.kind == "python":
            script = scripts / f"line{block.start + 1}.py"
            script.write_text("\n".join(block.body) + "\n")
            expected = block.output.body if block.output else []
            actual = self._exec(shell, f"python {script} 2>&1", block.start + 1)
            self._compare(block.start + 1, expected, actual)

    def _exec(self, shell: Shell, command: str, line: int) -> list[str]:
        try:
            return lines_of(shell.run(command))
        except (TimeoutError, RuntimeError) as exc:
            raise PageFailed(f"{self.name}:{line}: {exc}: {command.splitlines()[0]}") from None

    def _compare(self, line: int, expected: list[str], actual: list[str]) -> None:
        if actual == [""]:
            actual = []
        if same(expected, actual):
            self._learn(expected, actual)
        else:
            self.mismatches.append(Mismatch(self.name, line, expected, actual))
            self.new_output[line] = actual

    def _learn(self, expected: list[str], actual: list[str]) -> None:
        """Remember which of the page's ids (and other normalized values) a run's stand for."""
        for pattern, _ in NORMALIZE:
            pairs = zip(pattern.findall("\n".join(actual)), pattern.findall("\n".join(expected)))
            for ran, shown in pairs:
                self.tokens.setdefault(ran, shown)

    def write(self) -> bool:
        """Put the new outputs in the page; True if it changed."""
        if not self.new_output:
            return False
        out: list[str] = []
        i = 0
        for block in self.blocks:
            out += self.lines[i : block.start + 1]
            i = block.start + 1
            if block.kind == "console" and block.skipped is None:
                for command in block.commands:
                    out += command.source
                    out += self._shown(command.line, command.output)
                i = block.end
            elif block.kind == "python" and (block.start + 1) in self.new_output:
                out += self.lines[i : block.end + 1]
                new = self._shown(block.start + 1, [])
                if block.output:
                    out += self.lines[block.end + 1 : block.output.start + 1] + new
                    i = block.output.end
                else:
                    out += ["", "```", *new, "```"] if new else []
                    i = block.end + 1
        out += self.lines[i:]
        self.page.write_text("\n".join(out))
        return True

    def _shown(self, line: int, old: list[str]) -> list[str]:
        if line not in self.new_output:
            return old
        text = "\n".join(self.new_output[line])
        for pattern, token in NORMALIZE:
            if token in IDENTITIES:
                text = pattern.sub(lambda m: self.tokens.get(m.group(0), m.group(0)), text)
        return text.split("\n") if text else []


class PageFailed(Exception):
    """The page can't go on: a command that never ended, or a shell that died."""


class Terminal:
    """A terminal block: its command runs in a tmux pane of its own, each line the page shows
    after a prompt is typed once that prompt is on the screen (a line that starts with `^C`
    is Ctrl-C pressed while the statement typed before it runs), and the screen is the output."""

    WAIT = 30.0  # seconds for a prompt to come back before typing on anyway

    def __init__(self, folder: Path, env: dict[str, str], scratch: Path) -> None:
        self.folder, self.env, self.status = folder, env, scratch / "terminal-status"
        self.base = ["tmux", "-L", f"docs-{uuid.uuid4().hex[:12]}", "-f", "/dev/null"]

    def tmux(self, *args: str) -> str:
        run = subprocess.run(
            [*self.base, *args], env=self.env, capture_output=True, text=True, timeout=30
        )
        return run.stdout

    def screen(self) -> list[str]:
        lines = [s.rstrip() for s in self.tmux("capture-pane", "-p", "-J", "-S", "-").split("\n")]
        while lines and not lines[-1]:
            lines.pop()
        return lines

    def run(self, command: Command) -> list[str]:
        self.status.unlink(missing_ok=True)
        # The pane stays after the shell exits (sleep), so its last screen can be read.
        script = f"{command.source[0][2:]}; echo $? > {self.status}; exec sleep 600"
        columns, rows = TERMINAL_SIZE
        self.tmux(
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            columns,
            "-y",
            rows,
            "-c",
            str(self.folder),
            "bash",
            "--norc",
            "--noprofile",
            "-c",
            script,
        )
        try:
            self._type(command.output)
            return self.screen()
        finally:
            self.tmux("kill-server")

    def _type(self, shown: list[str]) -> None:
        prompts = 0
        for i, line in enumerate(shown):
            m = PROMPT.match(line)
            if not m:
                continue
            prompts += 1
            # The n-th prompt, waiting on the last line: the one before it may look the same.
            self._wait(lambda screen: self._at_prompt(screen, m.group("prompt"), prompts))  # noqa: B023
            typed = m.group("typed")
            if typed is None:  # the page ends on a prompt: nothing typed
                continue
            # tmux reads an argument ending in ';' as the end of its command unless it is '\;'
            keys = typed[:-1] + "\\;" if typed.endswith(";") else typed
            self.tmux("send-keys", "-t", "t", "-l", keys)
            self.tmux("send-keys", "-t", "t", "Enter")
            if i + 1 < len(shown) and shown[i + 1].startswith("^C"):
                time.sleep(1.0)  # the statement is running: stop it
                self.tmux("send-keys", "-t", "t", "C-c")
        if shown and PROMPT.match(shown[-1]) and PROMPT.match(shown[-1]).group("typed"):
            self._wait(lambda s: self.status.exists())  # it typed its way out (\q)

    @staticmethod
    def _at_prompt(screen: list[str], prompt: str, count: int) -> bool:
        # The last prompt line, not the last line: a completion menu may open below it.
        shown = [line for line in screen if PROMPT.match(line)]
        return len(shown) >= count and shown[-1] == prompt

    def _wait(self, ready: Callable[[list[str]], bool]) -> None:
        deadline = time.monotonic() + self.WAIT
        while not ready(self.screen()) and time.monotonic() < deadline:
            time.sleep(0.05)


class _lock:
    """One run of a page at a time on this machine: its scratch folder is fixed."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.file = path.open("w")

    def __enter__(self) -> None:
        fcntl.flock(self.file, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self.file, fcntl.LOCK_UN)
        self.file.close()


# --- the command line -----------------------------------------------------------------------


def pages(names: list[str]) -> Iterator[Path]:
    if not names:
        yield ROOT / "README.md"
        yield from sorted((ROOT / "docs").glob("*.md"))
        return
    for name in names:
        path = Path(name)
        if not path.suffix:
            path = ROOT / ("README.md" if name == "README" else f"docs/{name}.md")
        if not path.exists():
            raise SystemExit(f"no page {name}")
        yield path.resolve()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="report differences, exit 1 if any")
    mode.add_argument("--write", action="store_true", help="put the real output in the pages")
    parser.add_argument(
        "--jobs", type=int, default=4, help="pages run at once (default 4: their waits overlap)"
    )
    parser.add_argument("pages", nargs="*", metavar="PAGE")
    ns = parser.parse_args(argv)
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:  # the pages' commands use them: without them every page would just differ
        print(f"docs/run.py needs {', '.join(missing)}: apt-get install {' '.join(missing)}")
        return 2
    failed = False
    # The longest pages first, so the others fill the time they spend waiting.
    todo = sorted(pages(ns.pages), key=lambda p: -p.stat().st_size)
    with ThreadPoolExecutor(max_workers=max(1, ns.jobs)) as pool:
        for run, took, error in pool.map(run_page, todo):
            failed |= report(run, took, error, ns.write)
    return 1 if failed else 0


def run_page(page: Path) -> tuple[PageRun, float, str | None]:
    started = time.monotonic()
    run = PageRun(page)
    try:
        run.run()
    except PageFailed as exc:
        return run, time.monotonic() - started, str(exc)
    return run, time.monotonic() - started, None


def report(run: PageRun, took: float, error: str | None, write: bool) -> bool:
    """Print how a page went; True if it failed."""
    if error:
        print(f"{error}\n{run.name}: stopped ({took:.1f} s)")
        return True
    if write:
        changed = run.write()
        print(f"{run.name}: {'rewritten' if changed else 'unchanged'} ({took:.1f} s)", flush=True)
        return False
    for mismatch in run.mismatches:
        print(mismatch.report(), end="\n\n")
    state = f"{len(run.mismatches)} differences" if run.mismatches else "ok"
    print(f"{run.name}: {state} ({took:.1f} s)", flush=True)
    return bool(run.mismatches)


if __name__ == "__main__":
    sys.exit(main())
