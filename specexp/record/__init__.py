"""Run records: the typed schema (`schema`) and how records are stored and read (`store`)."""

from specexp.record.result_line import Judgments, LineError, ResultLine, read_result_lines
from specexp.record.schema import (
    SCHEMA,
    SCHEMA_VERSION,
    ClientLoad,
    Conditions,
    ErrorInfo,
    Measurement,
    Metrics,
    Provenance,
    RunRecord,
)
from specexp.record.store import (
    RESULT,
    RESULTS_JSONL,
    RecordError,
    atomic_write,
    complete_result,
    completed_runs,
    find_records,
    read_record,
    results_lines,
    write_record,
    write_results_jsonl,
)

__all__ = [
    "SCHEMA",
    "SCHEMA_VERSION",
    "ClientLoad",
    "Conditions",
    "ErrorInfo",
    "Judgments",
    "LineError",
    "Measurement",
    "Metrics",
    "Provenance",
    "ResultLine",
    "RunRecord",
    "RESULT",
    "RESULTS_JSONL",
    "RecordError",
    "atomic_write",
    "complete_result",
    "completed_runs",
    "find_records",
    "read_record",
    "read_result_lines",
    "results_lines",
    "write_record",
    "write_results_jsonl",
]
