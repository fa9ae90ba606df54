"""Deterministic prompt material: the edit-heavy source file and unique filler prose.

The source file is the same text for everyone (45 dataclasses); its length in a model's own
tokens is measured by the server at run time. Filler prose is seeded by its marker, so every
request gets its own text and no prefix cache can serve it.
"""

from __future__ import annotations

import hashlib
import random

N_CLASSES = 45
_NOUNS = (
    "Account",
    "Invoice",
    "Shipment",
    "Sensor",
    "Reading",
    "Ticket",
    "Order",
    "Customer",
    "Device",
    "Session",
    "Payment",
    "Route",
    "Warehouse",
    "Pallet",
    "Carrier",
    "Policy",
    "Claim",
    "Patient",
    "Visit",
    "Booking",
    "Room",
    "Flight",
    "Seat",
    "Course",
    "Lesson",
    "Student",
    "Grade",
    "Budget",
    "Ledger",
    "Entry",
    "Project",
    "Milestone",
    "Task",
    "Commit",
    "Release",
    "Artifact",
    "Job",
    "Queue",
    "Worker",
    "Metric",
    "Alert",
    "Incident",
    "Review",
    "Dataset",
    "Feature",
)
_FIELDS = (
    ("identifier", "str", '""'),
    ("created_at", "float", "0.0"),
    ("updated_at", "float", "0.0"),
    ("name", "str", '""'),
    ("description", "str", '""'),
    ("owner", "str", '""'),
    ("count", "int", "0"),
    ("amount", "float", "0.0"),
    ("currency", "str", '"EUR"'),
    ("active", "bool", "True"),
    ("tags", "list[str]", "field(default_factory=list)"),
    ("priority", "int", "0"),
    ("status", "str", '"new"'),
    ("weight_kg", "float", "0.0"),
    ("parent_id", "str | None", "None"),
    ("notes", "list[str]", "field(default_factory=list)"),
    ("version", "int", "1"),
    ("score", "float", "0.0"),
    ("region", "str", '"eu-west"'),
    ("retries", "int", "0"),
)
_WORDS = (
    "the",
    "engine",
    "schedules",
    "every",
    "request",
    "into",
    "a",
    "batch",
    "while",
    "memory",
    "bandwidth",
    "bounds",
    "decode",
    "and",
    "compute",
    "bounds",
    "prefill",
    "so",
    "drafts",
    "verify",
    "tokens",
    "cache",
    "blocks",
    "hold",
    "keys",
    "values",
    "for",
    "each",
    "layer",
    "of",
    "model",
    "weights",
    "move",
    "from",
    "device",
    "to",
    "cores",
    "per",
    "step",
    "with",
    "some",
    "overhead",
    "river",
    "mountain",
    "orchard",
    "lantern",
    "harbor",
    "meadow",
    "copper",
    "violet",
    "signal",
    "quiet",
    "rapid",
    "ancient",
    "northern",
    "hollow",
    "bright",
    "measured",
    "careful",
    "distant",
)


def source_file() -> str:
    """The edit-heavy source file: 45 dataclasses, the same text on every machine."""
    rng = random.Random(20260601)
    parts = [
        '"""Domain records of an order-management service."""',
        "",
        "from __future__ import annotations",
        "",
        "from dataclasses import dataclass, field",
        "",
    ]
    for i in range(N_CLASSES):
        name = _NOUNS[i]
        fields = rng.sample(_FIELDS, k=rng.randint(5, 8))
        article = "An" if name[0] in "AEIOU" else "A"
        parts += [
            "",
            "@dataclass",
            f"class {name}:",
            f'    """{article} {name.lower()} as the service stores it, with its audit fields."""',
            "",
        ]
        for fname, ftype, default in fields:
            parts.append(f"    {fname}: {ftype} = {default}")
        first, numeric = fields[0][0], [f for f, t, _ in fields if t in ("int", "float")]
        parts += [
            "",
            "    def is_valid(self) -> bool:",
            f'        """Whether this {name.lower()} can be saved."""',
            f"        return self.{first} is not None"
            + (f" and self.{numeric[0]} >= 0" if numeric else ""),
            "",
            "    def summary(self) -> str:",
            f'        """One line describing this {name.lower()} for logs."""',
            f'        return f"{name}({", ".join(f"{f}={{self.{f}!r}}" for f, _, _ in fields[:3])})"',
            "",
        ]
    return "\n".join(parts) + "\n"


def filler(marker: str, words: int) -> str:
    """`words` words of prose seeded by `marker`: different text for every marker."""
    seed = int.from_bytes(hashlib.sha256(marker.encode()).digest()[:8], "big")
    rng = random.Random(seed)
    out, sentence = [], []
    for _ in range(words):
        sentence.append(rng.choice(_WORDS))
        if len(sentence) >= rng.randint(8, 16):
            out.append(" ".join(sentence).capitalize() + ".")
            sentence = []
    if sentence:
        out.append(" ".join(sentence).capitalize() + ".")
    return " ".join(out)
