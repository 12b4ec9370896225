"""Consensus reviews: several independent reviews, and a finding counts only where at least two agree.

    outcome = agree(root, [ReviewAnswer(number, model, grounding, verdict, summary), ...])

Each review is grounded on its own first (`supervisor.grounding`). Two
grounded findings from different reviews agree when they name the same file,
the same kind of bug (`finding_kind`: its `kind`, else its severity) and
overlapping lines: the lines their quotes really occupy in the file (the
line a model cites may be off by a few; the quote's place is not). Findings
that agree form one group; a group reported by at least `AGREEMENT` reviews
is kept once (its most confident member) with `agreed_by` naming the
reviews. Every finding of a group that only one review reported is dropped
with gate `consensus`. What a single review's grounding dropped stays
dropped, marked with its `review`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from supervisor.grounding import Grounding, finding_kind, quote_span

# How many reviews must report a finding for it to be kept, whatever the number of reviews.
AGREEMENT = 2
GATE_CONSENSUS = "consensus"


@dataclass
class ReviewAnswer:
    number: int  # 1-based, in the order the reviews ran
    model: str
    grounding: Grounding
    verdict: str = "comment"
    summary: str = ""


@dataclass
class Consensus:
    grounding: Grounding
    verdict: str
    summary: str


@dataclass
class _Group:
    file: str
    kind: str
    members: list[tuple[int, dict[str, Any], tuple[int, int]]] = field(default_factory=list)  # (review, finding, span)

    @property
    def reviews(self) -> list[int]:
        return sorted({review for review, _, _ in self.members})

    def overlaps(self, span: tuple[int, int]) -> bool:
        return any(first <= span[1] and span[0] <= last for _, _, (first, last) in self.members)


def _span(root: Path, finding: dict[str, Any], cache: dict[str, list[str]]) -> tuple[int, int]:
    """The lines the finding's quote occupies (the cited line alone when the file cannot be read)."""
    name = finding["file"]
    if name not in cache:
        try:
            cache[name] = (root / name).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            cache[name] = []
    line = int(finding["line"])
    return quote_span(cache[name], line, str(finding.get("quote") or "")) or (line, line)


def agree(root: Path, reviews: list[ReviewAnswer]) -> Consensus:
    cache: dict[str, list[str]] = {}
    groups: list[_Group] = []
    for review in reviews:
        for finding in review.grounding.kept:
            span = _span(root, finding, cache)
            kind = finding_kind(finding)
            group = next((g for g in groups if g.file == finding["file"] and g.kind == kind and g.overlaps(span)), None)
            if group is None:
                group = _Group(finding["file"], kind)
                groups.append(group)
            group.members.append((review.number, finding, span))
    kept, dropped = [], []
    for review in reviews:
        dropped += [{**item, "review": review.number} for item in review.grounding.dropped]
    models = {review.number: review.model for review in reviews}
    for group in groups:
        agreed = group.reviews
        if len(agreed) >= AGREEMENT:
            best = max(group.members, key=lambda member: (_confidence(member[1]), -member[0]))[1]
            kept.append({**best, "agreed_by": agreed})
            continue
        only = agreed[0]
        for number, finding, _span_lines in group.members:
            dropped.append(
                {
                    **finding,
                    "gate": GATE_CONSENSUS,
                    "review": number,
                    "reason": (
                        f"only review {only} ({models.get(only, '')}) reported it; a consensus of {len(reviews)} keeps a "
                        f"finding when at least {AGREEMENT} reviews agree on file, overlapping lines and kind"
                    ),
                }
            )
    return Consensus(Grounding(kept=kept, dropped=dropped), _verdict(reviews, kept), _summary(reviews))


def _confidence(finding: dict[str, Any]) -> float:
    value = finding.get("confidence")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _verdict(reviews: list[ReviewAnswer], kept: list[dict[str, Any]]) -> str:
    """request_changes when an agreed finding stands; else the reviews' most common verdict (comment on a tie)."""
    if kept:
        return "request_changes"
    counts = Counter(review.verdict for review in reviews).most_common()
    if not counts or (len(counts) > 1 and counts[0][1] == counts[1][1]):
        return "comment"
    return counts[0][0]


def _summary(reviews: list[ReviewAnswer]) -> str:
    return " | ".join(f"review {r.number} ({r.model}): {r.summary}" for r in reviews if r.summary)
