"""An engine is named in its own places only: its folder under specexp/runtimes/ and its settings
model (specexp/spec/runtime.py, with conf/runtime/ beside it). Everywhere else in the package an
engine is reached through the registry (RUNTIMES, settings_for, real_engines), so adding one touches
no list elsewhere."""

from __future__ import annotations

import ast
from pathlib import Path

from specexp.spec.runtime import real_engines

PACKAGE = Path(__file__).resolve().parents[2] / "specexp"
REGISTRY = PACKAGE / "spec" / "runtime.py"


def _literals(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }


def test_every_engine_is_a_folder_of_its_name_with_its_driver() -> None:
    for engine in real_engines():
        assert (PACKAGE / "runtimes" / engine / "driver.py").is_file(), engine


def test_no_engine_name_is_a_literal_outside_its_folder_and_its_settings() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == REGISTRY:
            continue
        rel = path.relative_to(PACKAGE)
        literals = _literals(path)
        for engine in real_engines():  # an engine's folder is runtimes/<its name>/
            if engine in literals and not (
                rel.parts[0] == "runtimes" and len(rel.parts) > 2 and rel.parts[1] == engine
            ):
                found.append(f"{rel}: {engine!r}")
    assert not found, "engine names written out of place:\n" + "\n".join(found)
