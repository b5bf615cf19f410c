"""Each device's best sweep cell of one model, chosen from the sweep records' probes.

The confirm step (plan.confirm, scripts/confirm_serve.py) spends its minutes of confirming runs on
one configuration per (task, model, device); this module says which. A candidate is a sweep record
whose status is ok and whose search found a VALID probe rate (`serving.slo.probe_qps`, status
probed). The rank is that rate per dollar-hour where the price file prices every candidate (a CPU
cell is priced as the vCPUs it rents: a 4-thread cell may beat a 16-thread one per dollar), else
the rate alone; ties go to the higher rate, then the lower price, then the smaller cell id, so
one set of records always gives one choice. Without a candidate the choice says why (no rate met
the bound, or no sweep record is ok), never a made-up rate.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

BY_COST = "probe_qps per USD/hour"
BY_RATE = "probe_qps"


@dataclass(frozen=True)
class Candidate:
    """One sweep record as the choice sees it."""

    cell_id: str
    status: str
    slo_status: str | None
    probe_qps: float | None
    p99_bound_ms: float | None
    price_per_hour: float | None
    message: str = ""

    @property
    def eligible(self) -> bool:
        """An ok record whose probes found a VALID rate."""
        return self.status == "ok" and self.probe_qps is not None and self.probe_qps > 0


@dataclass(frozen=True)
class Choice:
    """What the confirm step confirms, and why; `chosen` is None when nothing can be."""

    status: str  # chosen, no_rate, no_candidate
    message: str
    ranked_by: str
    chosen: Candidate | None
    candidates: tuple[Candidate, ...]

    def section(self) -> dict[str, Any]:
        """The confirm record's `confirm` section."""
        return {
            "status": self.status,
            "message": self.message,
            "ranked_by": self.ranked_by,
            "chosen_cell": self.chosen.cell_id if self.chosen else None,
            "chosen_probe_qps": self.chosen.probe_qps if self.chosen else None,
            "candidates": [asdict(c) for c in self.candidates],
        }


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def candidate(
    cell_id: str, record: Mapping[str, Any] | None, prices: Mapping[str, Any] | None = None
) -> Candidate:
    """A sweep record (None: missing or unreadable) as a candidate, priced where `prices` can."""
    if not isinstance(record, Mapping):
        return Candidate(cell_id, "missing", None, None, None, None, "no readable record")
    serving = record.get("serving") if isinstance(record.get("serving"), Mapping) else {}
    found = serving.get("slo") if isinstance(serving.get("slo"), Mapping) else {}
    status = str(record.get("status"))
    return Candidate(
        cell_id=cell_id,
        status=status,
        slo_status=found.get("status"),
        probe_qps=_number(found.get("probe_qps")) if status == "ok" else None,
        p99_bound_ms=_number(found.get("p99_bound_ms")),
        price_per_hour=_price(record, prices),
        message=str(found.get("message") or record.get("message") or ""),
    )


def _price(record: Mapping[str, Any], prices: Mapping[str, Any] | None) -> float | None:
    if not prices:
        return None
    from devicebench.aggregate.pricing import price_per_hour

    axes = record.get("axes") or {}
    environment = record.get("environment") or {}
    try:
        price = price_per_hour(
            axes.get("device"), axes.get("threads"), environment.get("gpu_name"),
            dict(prices), axes.get("copies", 1),
        )  # fmt: skip
    except (TypeError, ValueError):  # threads not a number: unpriced
        return None
    return price if math.isfinite(price) and price > 0 else None


def choose(candidates: Iterable[Candidate]) -> Choice:
    """The best candidate by rate per dollar (all priced) or by rate; a reason without one."""
    every = tuple(sorted(candidates, key=lambda c: c.cell_id))
    eligible = [c for c in every if c.eligible]
    bound = next((c.p99_bound_ms for c in every if c.p99_bound_ms), None)
    at = f"p99 <= {bound:g} ms" if bound else "the bound"
    if not eligible:
        return Choice(*_none(every, at), BY_RATE, None, every)
    by = BY_COST if all(c.price_per_hour for c in eligible) else BY_RATE

    def rank(c: Candidate) -> tuple[float, float, float, str]:
        return (-score(c, by), -c.probe_qps, c.price_per_hour or math.inf, c.cell_id)

    best = min(eligible, key=rank)
    message = (
        f"{best.cell_id}: the highest {by} of {len(eligible)} sweep cell(s) with a VALID probe "
        f"rate at {at} ({best.probe_qps:.4g} QPS)"
    )
    return Choice("chosen", message, by, best, every)


def score(candidate: Candidate, ranked_by: str) -> float:
    """An eligible candidate's rank value: its probe rate per dollar-hour (BY_COST), else its
    probe rate (aggregate.stale_confirm compares confirmed cells by it too)."""
    rate = float(candidate.probe_qps or 0.0)
    return rate / float(candidate.price_per_hour or 1.0) if ranked_by == BY_COST else rate


def _none(every: tuple[Candidate, ...], at: str) -> tuple[str, str]:
    """(status, message) when no sweep cell can be confirmed."""
    if not every:
        return "no_candidate", "no sweep cell to choose from"
    ok = [c for c in every if c.status == "ok"]
    if ok and all(c.slo_status == "no_rate" for c in ok):
        return "no_rate", f"no rate meets {at} in any of {len(ok)} sweep cell(s)"
    counts: dict[str, int] = {}
    for c in every:
        said = c.status if c.status != "ok" else f"ok, search {c.slo_status}"
        counts[said] = counts.get(said, 0) + 1
    listed = ", ".join(f"{said} {n}" for said, n in sorted(counts.items()))
    return "no_candidate", f"no sweep cell has a VALID probe rate at {at} ({listed})"
