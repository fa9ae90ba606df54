"""`specexp.results.load(...)`: measurements as a typed pandas DataFrame.

    import specexp.results
    df = specexp.results.load("multirun/2026-12-02/10-00-00")        # a sweep folder
    df = specexp.results.load("reports/spark_fp8_mtp_dspark/results.jsonl")  # a committed file
    df[df.drafter == "dspark"][["k", "decode_tps", "speedup_vs_baseline"]]

A row per measurement; a column per condition, metric and judgment (docs/vocabulary.md), typed
from the vocabulary: pandas' nullable `Int64`, `Float64`, `boolean` and `string`, so an unknown
value is `<NA>`, never a 0 or an empty string; `acceptance_by_position` holds a list. Folders are
read record by record (the judgments are made as the report makes them); a results.jsonl is read
as written. Needs `pip install 'specexp[results]'` (pandas).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specexp.record import ResultLine, find_records, read_result_lines, results_lines
from specexp.record.table import column_types, flat_rows

DTYPES = {"str": "string", "int": "Int64", "float": "Float64", "bool": "boolean", "list": "object"}
"""pandas' nullable dtype of each column type."""


def lines_of(*sources: str | Path) -> list[ResultLine]:
    """results.jsonl lines of every source: a results.jsonl file as written, a folder's records
    read and judged."""
    from specexp.check.judgments import judgments

    lines: list[ResultLine] = []
    folders = []
    for source in map(Path, sources):
        if source.is_file():
            lines += read_result_lines(source)
        elif source.is_dir():
            folders.append(source)
        else:
            raise FileNotFoundError(
                f"{source}: neither a results.jsonl file nor a folder of records"
            )
    if folders:
        found = find_records(folders)
        lines += results_lines([r for _, r in found], judgments(found))
    return lines


def load(*sources: str | Path) -> Any:
    """A typed pandas DataFrame of the measurements in `sources` (folders or results.jsonl files)."""
    import pandas as pd

    rows = flat_rows(lines_of(*sources))
    types = column_types()
    frame = pd.DataFrame(rows, columns=list(types))
    return frame.astype({name: DTYPES[kind] for name, kind in types.items()})
