"""The README's table of axes and docs/options.md list exactly what conf/ ships, each option with
its own line: a file added, removed or re-described without `scripts/option-tables` fails here."""

from __future__ import annotations

from pathlib import Path

from specexp.spec import option_tables
from specexp.spec.options import GROUPS

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_table_is_the_one_conf_writes() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert option_tables.with_readme_table(readme) == readme, "run scripts/option-tables"


def test_docs_options_is_the_one_conf_writes() -> None:
    written = (ROOT / "docs/options.md").read_text(encoding="utf-8")
    assert written == option_tables.options_doc(), "run scripts/option-tables"


def test_every_shipped_option_is_listed_with_a_line_of_its_own() -> None:
    assert set(option_tables.AXES) == set(GROUPS)
    doc = option_tables.options_doc()
    for group in option_tables.AXES:
        for name in option_tables.names(group):
            line = next(x for x in doc.splitlines() if x.startswith(f"| `{name}`"))
            assert len(line.split(" | ", 1)[1].strip(" |")) > 10, line
    table = option_tables.readme_table()
    for name in ("eagle", "suffix", "tiny-hf", "tiny-hf-draft-copy", "qwen3-8b-2layer"):
        assert f"`{name}`" in table


def test_a_new_option_file_changes_the_tables(tmp_path: Path, monkeypatch) -> None:
    conf = tmp_path / "conf"
    for group in option_tables.AXES:
        (conf / group).mkdir(parents=True)
    (conf / "config.yaml").write_text("defaults:\n  - drafter: none\n")
    (conf / "drafter" / "none.yaml").write_text('name: none\ndescription: "No drafter"\n')
    (conf / "drafter" / "lookahead.yaml").write_text('name: lookahead\ndescription: "Jacobi"\n')
    monkeypatch.setattr(option_tables.paths, "conf_dir", lambda: conf)
    assert "| `drafter` | `lookahead`, `none` (default) |" in option_tables.readme_table()
    assert "| `lookahead` | Jacobi |" in option_tables.options_doc()
