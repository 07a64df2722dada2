"""Every world test runs twice: with a changed table copied whole on the world's connection
(tables up to ``config whole_rows`` rows, the default for the small tables tests make), and read
apart, main's rows and the world's (what a bigger table does). The state machines draw which."""

from __future__ import annotations

import pytest

from chronos_lite.storage.world import state as worldstate


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "copies" in metafunc.fixturenames:  # (not a unittest case: those draw it)
        metafunc.parametrize("copies", ["whole", "apart"], indirect=True)


@pytest.fixture(autouse=True)
def copies(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    mode = getattr(request, "param", "whole")
    if mode == "apart":
        monkeypatch.setattr(worldstate, "WHOLE_ROWS", 0)
    return mode
