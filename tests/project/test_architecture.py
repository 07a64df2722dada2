"""The house: imports point down the layers of docs/architecture.md (front ends → operations →
engine → apsw), no module imports one above it, and there are no import circles."""

from __future__ import annotations

import ast
from pathlib import Path

from helpers import ROOT

PACKAGE = ROOT / "chronos_lite"

# A module's layer by its place in the tree (the longest prefix wins); higher may import lower.
LAYERS = {
    "chronos_lite": 9,  # the package's face
    "chronos_lite.cli": 8,
    "chronos_lite.shell": 7,
    "chronos_lite.mcp": 7,
    "chronos_lite.web": 7,
    "chronos_lite.api": 7,
    "chronos_lite.cliargs": 6,
    "chronos_lite.opening": 6,  # the composition root: every front end opens its folder there
    "chronos_lite.operations": 5,
    "chronos_lite.statements": 4,
    "chronos_lite.vtab": 3,
    "chronos_lite.merge": 2,
    "chronos_lite.search": 2,
    "chronos_lite.copies": 2,
    "chronos_lite.history": 1,
    "chronos_lite.storage": 0,
    # used by every layer: the error type, psql-style tables and row formats, reading SQL text,
    # the names' rule
    "chronos_lite.errors": -1,
    "chronos_lite.render": -1,
    "chronos_lite.rowformats": -1,
    "chronos_lite.progress": -1,
    "chronos_lite.hints": -1,
    "chronos_lite.sqltext": -1,
    "chronos_lite.names": -1,
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> int:
    best = max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len)
    return LAYERS[best]


def imports() -> dict[str, set[str]]:
    """Each module's imports of chronos_lite modules (at module level or in functions)."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    out: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    source = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    source = node.module or ""
                for alias in node.names:
                    target = f"{source}.{alias.name}"
                    found.add(target if target in modules else source)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
        out[name] = {m for m in found if m in modules and m != name}
    return out


def test_no_module_imports_one_above_it():
    upward = [
        f"{module} ({layer(module)}) imports {target} ({layer(target)})"
        for module, targets in imports().items()
        for target in sorted(targets)
        if layer(target) > layer(module) and not module.startswith(target + ".")
    ]
    assert upward == []


def test_no_import_circles():
    graph = imports()
    # (a package's face importing its own modules isn't a circle of the code)
    graph = {m: {t for t in ts if not t.startswith(m + ".")} for m, ts in graph.items()}
    circles, state = [], {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for target in sorted(graph.get(module, ())):
            if state.get(target) == "open":
                circles.append(" -> ".join([*path[path.index(target) :], target]))
            elif target not in state:
                visit(target, [*path, target])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert circles == []


def test_modules_keep_to_about_500_lines():
    long = {
        module_name(p): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 550
    }
    assert long == {}


# What each of storage's wings may import from the rest of chronos_lite (its own modules aside).
SHARED = {"chronos_lite.errors", "chronos_lite.sqltext", "chronos_lite.names"}
WINGS = {
    "chronos_lite.storage.schema": {"chronos_lite.storage.fetch", *SHARED},
    "chronos_lite.storage.governance": {"chronos_lite.storage.fetch", *SHARED},
    "chronos_lite.storage.world": {
        "chronos_lite.storage.fetch",
        "chronos_lite.storage.shadow",
        "chronos_lite.storage.events",
        "chronos_lite.storage.worlds",
        "chronos_lite.storage.guard",
        "chronos_lite.storage.schema",
        *SHARED,
    },
}


def test_each_wing_imports_only_what_its_init_allows():
    strays = [
        f"{module} imports {target}"
        for module, targets in imports().items()
        for wing, allowed in WINGS.items()
        if module.startswith(wing + ".")
        for target in sorted(targets)
        if not target.startswith(wing + ".")
        and not any(target == a or target.startswith(a + ".") for a in allowed)
    ]
    assert strays == []


def test_storage_drawn_by_rooms_has_no_circle_and_at_most_20_rooms():
    """A sub-package of storage is one room: no room imports one that imports it back."""

    def room(module: str) -> str:
        parts = module.split(".")
        return ".".join(parts[:3]) if module.startswith("chronos_lite.storage.") else module

    storage = {m: ts for m, ts in imports().items() if m.startswith("chronos_lite.storage.")}
    edges = {(room(m), room(t)) for m, ts in storage.items() for t in ts if t in storage}
    edges = {(a, b) for a, b in edges if a != b}
    rooms = {room(m) for m in storage}
    reach = {r: {b for a, b in edges if a == r} for r in rooms}
    for _ in rooms:  # transitive closure, small enough to do plainly
        reach = {r: seen | {c for b in seen for c in reach[b]} for r, seen in reach.items()}
    assert sorted(r for r in rooms if r in reach[r]) == []
    assert len(rooms) <= 20, sorted(rooms)


def test_only_the_composition_root_opens_a_database():
    """Every front end opens its folder through ``opening.open_folder`` (its connections'
    system tables, pruning): no other module makes a ``Database`` itself."""
    makers = sorted(
        module_name(path)
        for path in PACKAGE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call)
        and getattr(node.func, "id", getattr(node.func, "attr", None)) == "Database"
    )
    assert makers == ["chronos_lite.opening"]


def test_the_database_keeps_no_state_of_the_call_running():
    """Who acts, and what an agent's call recorded, are the call's (a context variable), not
    attributes of the shared Database."""
    source = (PACKAGE / "storage" / "db.py").read_text()
    assert not any(
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
        and node.attr in {"caller_name", "caller_run", "agent_calls", "recorded"}
        for node in ast.walk(ast.parse(source))
    )
