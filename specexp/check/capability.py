"""What a cited figure's runtime can run: a drafter its engine lacks, at its stated version.

A figure that names a runtime and a drafter is judged against what specexp knows of that engine
(specexp.spec.runtime: each runtime's drafters, and the first version that drafts at all). A
drafter the engine has at no version, or not at the figure's `runtime_version`, is an error; a
drafter only some versions have, on a figure that states none, is a warning asking for it.
"""

from __future__ import annotations

from collections.abc import Iterable

from specexp.check.figures import Figure
from specexp.check.findings import Finding, finding
from specexp.spec.runtime import RUNTIMES
from specexp.spec.vocabulary import C


def capability_findings(figures: Iterable[Figure]) -> list[Finding]:
    """A finding for each figure whose runtime cannot have run its drafter."""
    return [x for f in figures if (x := _judged(f)) is not None]


def _judged(fig: Figure) -> Finding | None:
    runtime, drafter = fig.conditions.get(C.runtime), fig.conditions.get(C.drafter)
    if not isinstance(runtime, str) or not isinstance(drafter, str) or drafter == "none":
        return None
    spec = RUNTIMES.get(runtime)
    if spec is None:
        return None
    if spec.drafters is not None and drafter not in spec.drafters:
        return finding(
            "runtime_lacks_drafter",
            (fig.id,),
            f"runtime={runtime} drafts with {', '.join(sorted(spec.drafters))}",
            f"drafter={drafter}",
        )
    version = fig.conditions.get(C.runtime_version)
    if spec.drafts_from is None:
        return None
    if isinstance(version, str):
        refusal = spec.version_refusal(drafter, version)
        if refusal is None:
            return None
        return finding("runtime_lacks_drafter", (fig.id,), refusal, f"runtime_version={version}")
    since = ".".join(str(n) for n in spec.drafts_from)
    return finding(
        "runtime_version_decides",
        (fig.id,),
        f"runtime_version stated: runtime={runtime} drafts only from {since}",
        "runtime_version unknown",
    )
