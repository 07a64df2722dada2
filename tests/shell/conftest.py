"""The shell's fixture: a Terminal on the example's database."""

from __future__ import annotations

import pytest
from terminal import Terminal


@pytest.fixture
def term(shop, folder, tmp_path) -> Terminal:
    return Terminal(shop.database, folder, tmp_path / "history")
