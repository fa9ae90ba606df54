"""docs/check.md against the code: every rule and family is documented, the rules table is
the code's, and the package's public names are sorted and importable."""

from __future__ import annotations

from pathlib import Path

import pytest

from specexp import check
from specexp.check.findings import RULES, SEVERITIES
from specexp.check.relevance import FAMILIES

DOCS = (Path(__file__).resolve().parents[3] / "docs/check.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("rule", list(RULES))
def test_every_rule_is_in_the_docs_as_the_code_has_it(rule: str) -> None:
    r = RULES[rule]
    assert f"| `{r.name}` | {r.severity} | {r.summary} |" in DOCS
    assert r.severity in SEVERITIES and r.recommendation


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_family_is_in_the_docs(family: str) -> None:
    assert f"**{family}**" in DOCS


def test_public_names_are_sorted_and_exist() -> None:
    assert check.__all__ == sorted(
        check.__all__, key=lambda n: (not n.isupper(), not n[0].isupper(), n)
    )
    for name in check.__all__:
        assert hasattr(check, name), name
