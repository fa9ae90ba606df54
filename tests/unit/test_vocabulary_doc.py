"""docs/vocabulary.md and docs/records.md are the contract: they must say what the code does.

Each condition and metric row of the vocabulary is compared with its one definition in code,
every field of the record schema must be documented, and the code cites only documents that
are in the repository.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from specexp.record import ErrorInfo, Measurement, Provenance, RunRecord
from specexp.spec.vocabulary import CONDITIONS, METRICS, ROLES

REPO = Path(__file__).resolve().parents[2]
VOCABULARY = REPO / "docs/vocabulary.md"


def _table(section: str, first: str) -> dict[str, list[str]]:
    """The rows of the table in `section` whose header starts with `first`, by their first cell."""
    text = VOCABULARY.read_text(encoding="utf-8").split(f"## {section}", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, list[str]] = {}
    lines = [line for line in text.splitlines() if line.startswith("|")]
    assert lines and lines[0].startswith(f"| {first} |"), (
        f"no table starting with '{first}' in section {section}"
    )
    for line in lines[2:]:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])]
        rows[cells[0].strip("`")] = cells[1:]
    return rows


def test_every_condition_is_documented_as_the_code_defines_it() -> None:
    rows = _table("1. Conditions", "key")
    assert list(rows) == list(CONDITIONS), (
        "docs/vocabulary.md section 1 must list the conditions in code order (scripts/vocabulary-tables)"
    )
    for name, c in CONDITIONS.items():
        expected = [c.type.__name__, c.role, c.meaning]
        assert rows[name] == expected, (
            f"docs/vocabulary.md: write the row as | `{name}` | {' | '.join(expected)} |"
        )
        assert c.role in ROLES


def test_every_metric_is_documented_as_the_code_defines_it() -> None:
    rows = _table("2. Metrics", "metric")
    assert list(rows) == list(METRICS), (
        "docs/vocabulary.md section 2 must list the metrics in code order (scripts/vocabulary-tables)"
    )
    for name, m in METRICS.items():
        expected = [m.unit, m.better or "—", m.definition]
        assert rows[name] == expected, (
            f"docs/vocabulary.md: write the row as | `{name}` | {' | '.join(expected)} |"
        )


def test_the_runtime_table_is_the_registry() -> None:
    from specexp.spec.runtime import RUNTIMES, runtime_table

    text = VOCABULARY.read_text(encoding="utf-8")
    rows = [
        line
        for line in text.splitlines()
        if line.startswith("| `")
        and line.split("`")[1] in RUNTIMES
        and "| " in line[3:]
        and line.count(" | ") == 3
    ]
    assert rows == runtime_table(), (
        "docs/vocabulary.md's runtime table is out of date: run scripts/vocabulary-tables"
    )


@pytest.mark.parametrize("model", [RunRecord, Provenance, Measurement, ErrorInfo])
def test_every_record_field_is_documented(model: type) -> None:
    text = (REPO / "docs/records.md").read_text(encoding="utf-8")
    for name, field in model.model_fields.items():  # type: ignore[attr-defined]
        key = field.alias or name
        assert f"`{key}`" in text or f"`error.{key}`" in text or f"`provenance.{key}`" in text, (
            f"docs/records.md does not describe {model.__name__}.{key}"
        )


CITING = [
    "specexp/**/*.py",
    "conf/**/*.yaml",
    "experiments/**/*.yaml",
    "tests/**/*.py",
    "tests/**/*.md",
    "benchmarks/**/*.py",
    "benchmarks/**/*.md",
    "scripts/*",
    "README.md",
    "pyproject.toml",
    "templates/**/*",
]
OUTPUT_NAMES = {"measurements.md", "simulated-v1.md", "mixed-with-failure-v1.md"}
"""Markdown files specexp writes (a report, the golden reports of tests/golden/):
named in code, not cited."""
CITATION = re.compile(r"(?<![\w.${}-])((?:\.\./)*[\w./-]*[\w-]+\.md)(?![\w.])")


def _citations() -> list[tuple[str, str]]:
    """(where, cited path) for every Markdown file named in code, configs, tests, benchmarks and docs."""
    found = []
    for pattern in CITING:
        for path in REPO.glob(pattern):
            if (
                not path.is_file()
                or "/data/" in str(path.relative_to(REPO))
                or path == Path(__file__)
            ):
                continue
            for n, line in enumerate(
                path.read_text(encoding="utf-8", errors="replace").splitlines(), 1
            ):
                for match in CITATION.finditer(line):
                    cited = match.group(1)
                    if "/" in cited or cited not in OUTPUT_NAMES:
                        found.append((f"{path.relative_to(REPO)}:{n}", cited))
    return found


def _exists(cited: str, where: str) -> bool:
    if cited.startswith("/"):  # where a recorded output was written on the machine that ran it
        return True
    if cited.startswith("../"):
        return False
    here = (REPO / where.split(":")[0]).parent
    return (REPO / cited).is_file() or (here / cited).is_file()


def test_every_cited_document_is_in_the_repository() -> None:
    found = _citations()
    assert any(cited == "docs/engines.md" for _, cited in found), (
        "the scan found no citation at all"
    )
    missing = sorted({f"{where}: {cited}" for where, cited in found if not _exists(cited, where)})
    assert not missing, "these documents are cited but not in the repository:\n" + "\n".join(
        missing
    )


def test_documents_are_cited_by_their_path_in_the_repository() -> None:
    bare = sorted(
        {
            f"{where}: {cited}"
            for where, cited in _citations()
            if cited in {"engines.md", "studies.md", "architecture.md", "vocabulary.md"}
        }
    )
    assert not bare, "cite docs/<name>.md, the path a reader can open:\n" + "\n".join(bare)
