"""The shell driven as a person drives it: prompt_toolkit's pipe input (keys typed as a person
types them, Enter is "\\r") into the real prompt, in process; what tests of the shell share."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from io import StringIO
from pathlib import Path

from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.output import DummyOutput

import chronos_lite
from chronos_lite.shell import repl
from chronos_lite.shell.config import Settings
from chronos_lite.shell.repl import ShellCompleter
from chronos_lite.shell.session import Shell

ENTER = "\r"
STEP = 20.0  # seconds a step may take before the test gives up (never asserted on)
# Statements that run far longer than the tests wait before pressing Ctrl-C.
LONG_INSERT = (
    "insert into users(name) with recursive c(x) as "
    "(select 1 union all select x+1 from c where x < 100000000) select 'x' || x from c;"
)
LONG_READ = (
    "with recursive c(x) as (select 1 union all select x+1 from c where x < 1000000000) "
    "select count(*) from c;"
)
ADA = " name\n------\n Ada\n(1 row)\n"


def typed(*inputs: str) -> str:
    """Each input typed and Enter pressed after it."""
    return "".join(text + ENTER for text in inputs)


def wait_until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + STEP
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.01)


class Terminal:
    """An interactive shell at a prompt_toolkit prompt whose keyboard is a pipe."""

    def __init__(
        self,
        db: chronos_lite.Chronos,
        folder: Path,
        history: Path,
        settings: Settings | None = None,
        branch: str = "main",
    ) -> None:
        self.folder, self.history = folder, history
        self.out, self.err = StringIO(), StringIO()
        self.shell = Shell(
            db, branch, out=self.out, err=self.err, settings=settings, interactive=True
        )
        self.prompts: list[str] = []  # each prompt as it was shown (repeats left out)
        prompt = self.shell.prompt

        def recording() -> str:
            text = prompt()
            if not self.prompts or self.prompts[-1] != text:
                self.prompts.append(text)
            return text

        self.shell.prompt = recording  # type: ignore[method-assign]

    def run(
        self,
        keys: str = "",
        driver: Callable[[PipeInput], None] | None = None,
        startup: tuple[str, ...] = (),
    ) -> int:
        """Type ``keys``, then let ``driver`` type more from another thread (it may wait for
        output first); the prompt loop runs here, in the main thread, as in `chronos`."""
        failure: list[BaseException] = []
        with create_pipe_input() as inp:
            inp.send_text(keys)

            def drive() -> None:
                try:
                    if driver is not None:
                        driver(inp)
                except BaseException as exc:  # reported by the test's thread
                    failure.append(exc)
                    inp.close()  # the end of the input: the prompt loop ends

            helper = threading.Thread(target=drive, daemon=True)
            helper.start()
            hung = threading.Event()

            def hang_up() -> None:  # a session that doesn't end fails instead of hanging
                hung.set()
                inp.close()

            watchdog = threading.Timer(6 * STEP, hang_up)
            watchdog.start()
            try:
                code = repl.run(
                    self.shell,
                    str(self.folder),
                    self.history,
                    list(startup),
                    input=inp,
                    output=DummyOutput(),
                )
            finally:
                watchdog.cancel()
            helper.join(STEP)
        if failure:
            raise failure[0]
        assert not hung.is_set(), "the session didn't end"
        return code

    def wait_for(self, text: str) -> str:
        wait_until(lambda: text in self.out.getvalue(), repr(text))
        return self.out.getvalue()


def names(db: chronos_lite.Chronos, branch: str = "main") -> list[str]:
    return [r["name"] for r in db.query("select name from users order by id", branch=branch)]


def completer(shell: Shell) -> Callable[[str], list[str]]:
    """What Tab offers after a text (one completer per shell, as the prompt has)."""
    completions = ShellCompleter(shell)

    def complete(text: str) -> list[str]:
        return [c.text for c in completions.get_completions(Document(text), CompleteEvent())]

    return complete
