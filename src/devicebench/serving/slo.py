"""The serving verdict at a latency bound: the highest Poisson arrival rate (MLPerf LoadGen's
Server scenario) whose p99 latency stays under the model's bound, searched then confirmed.

Search: short probes of `probe_s` (and at least `min_queries`: by default the 459 queries
LoadGen's early-stopping estimate needs) from `start_qps` (the closed-loop pool's rate unless
set): doubling while VALID, halving while INVALID (or `backoff` under the rate completed, if
the server fell behind), until a VALID rate lies below an INVALID one; then bisection until the
bracket is within `tolerance` of its low end or `max_probes` are spent. A probe counts as VALID
only when LoadGen says VALID and no request failed (a fast error would flatter the p99).

Confirm: `confirm_runs` runs of `confirm_s` at the bracket's low end, each with at least
`min_queries`. All VALID: `max_valid_qps` is the median of the rates LoadGen scheduled in them.
One INVALID: the attempt stops there (it can no longer be all VALID) and the next starts
`backoff` lower, while `confirm_attempts` last; when the server fell behind the schedule in
that run (it completed fewer requests/s than LoadGen offered, by more than `tolerance`), the
next starts `backoff` under the rate it completed: offered more than it completes, a server's
queue grows without end, and a short probe above that rate can still pass.

Fewer queries: a generate server at a few requests/s needs minutes for 459 queries, so a study
may set `min_queries` lower. LoadGen then says INVALID on its early-stopping estimate alone;
such a run counts VALID when LoadGen's latency check (the p99 of the queries it ran) passed,
its `judged_on` says so, and the section's `early_stopping_met` stays false.

Sweep: `confirm: best` (or confirm_runs 0) makes a replica or thread sweep cell run the probes
alone; the confirm step (serving.sweep_choice, scripts/confirm_serve.py) confirms each device's
best sweep cell per model from its probe rate (its own settings never reach a sweep cell).

Never a made-up rate: the section's `status` says what happened: ok; probed (a sweep cell: its
probes' rate in `probe_qps`, no verdict); no_rate (INVALID down to `min_qps`); not_confirmed
(every attempt had an INVALID run); over_budget (the next run would pass `budget_s`, the cell's
share of its time limit; the message names the confirming runs missed and met); loadgen_failed
(LoadGen raised or wrote no verdict). Every run, probes included, stays in the section: the
chart of p99 against offered rate is drawn from them.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from devicebench.serving import loadgen
from devicebench.serving.bounds import bound_ms

SCHEDULE_SEED = 20261128  # the first run's arrival schedule; run n draws with this + n
CONFIRM_MODES = ("each", "best")
STATUSES = ("ok", "probed", "no_rate", "not_confirmed", "over_budget", "loadgen_failed")


@dataclass(frozen=True)
class SloSettings:
    """How the search runs (the config's `serve.slo`, the bound resolved per model)."""

    p99_bound_ms: float
    probe_s: float = 10.0
    confirm_runs: int = 3
    confirm_s: float = 60.0
    start_qps: float | None = None  # None: the closed-loop pool's requests/s
    min_qps: float = 1.0
    max_qps: float = 100_000.0
    tolerance: float = 0.05
    max_probes: int = 12  # 0: no probes, the confirming runs at start_qps (a sweep's rate)
    # a run's queries at least; fewer than the default only for generate.serving's token runs
    min_queries: int = loadgen.SERVER_EARLY_STOPPING_QUERIES
    confirm_attempts: int = 2
    backoff: float = 0.9
    budget_s: float = 1800.0
    connections: int = 256  # LoadGen's HTTP connections at most (never the bottleneck)
    confirm: str = "each"  # each: every cell confirms; best: probes only, the confirm step confirms

    def __post_init__(self) -> None:
        queries = self.min_queries
        if isinstance(queries, bool) or not isinstance(queries, int) or queries < 1:
            raise ValueError(f"min_queries must be a whole number >= 1, not {queries!r}")

    @classmethod
    def from_config(cls, task: str, model: str, given: dict[str, Any]) -> SloSettings:
        """From the config's `serve.slo` mapping; unknown keys are an error naming them."""
        given = dict(given)
        overrides = given.pop("p99_bounds_ms", None) or {}
        known = {f.name for f in fields(cls)} - {"p99_bound_ms"}
        unknown = sorted(set(given) - known)
        if unknown:
            raise ValueError(f"unknown serve.slo setting(s) {unknown}; known: {sorted(known)}")
        if given.get("confirm", "each") not in CONFIRM_MODES:
            raise ValueError(f"serve.slo.confirm: {given['confirm']!r}; known: {CONFIRM_MODES}")
        settings = cls(p99_bound_ms=bound_ms(task, model, overrides), **given)
        floor = loadgen.SERVER_EARLY_STOPPING_QUERIES  # run_scenario issues as many at least
        if settings.min_queries < floor:
            raise ValueError(
                f"serve.slo.min_queries must be a whole number >= {floor} (LoadGen's "
                f"early-stopping estimate; fewer is for generate.serving), not "
                f"{settings.min_queries!r}"
            )
        return settings


# a run: (target QPS, minimum seconds, minimum queries, its number) -> LoadGen's summary
Runner = Callable[[float, float, int, int], dict[str, Any]]


def loadgen_runner(
    url: str, payloads, log_dir: Path, bound: float, connections: int, content_type: str
) -> Runner:
    """Server runs of MLPerf LoadGen against the real HTTP server at `url`."""

    def run(qps: float, seconds: float, queries: int, number: int) -> dict[str, Any]:
        return loadgen.run_scenario(
            url, payloads, "Server", log_dir / f"run-{number}", min_duration_s=seconds,
            min_queries=queries, target_qps=qps, target_latency_ms=bound,
            max_connections=connections, content_type=content_type,
            schedule_seed=SCHEDULE_SEED + number,  # each run its own Poisson draw
        )  # fmt: skip

    return run


class _Budget(Exception):
    """The next run would pass the time budget."""


class _Failed(Exception):
    """LoadGen raised or gave no verdict."""


class Search:
    """One latency-bound search; `run()` gives the record's `serving.slo` section."""

    def __init__(self, settings: SloSettings, runner: Runner, clock=time.monotonic) -> None:
        self.s, self.runner, self.clock = settings, runner, clock
        self.started = clock()
        self.probes: list[dict[str, Any]] = []
        self.confirms: list[dict[str, Any]] = []
        self.cut: str | None = None  # why probing stopped early to leave the confirming runs time

    @property
    def confirms_here(self) -> bool:
        """Whether this search confirms (a sweep cell leaves that to the confirm step)."""
        return self.s.confirm_runs > 0 and self.s.confirm != "best"

    def run(self, start_qps: float) -> dict[str, Any]:
        start = self.s.start_qps or start_qps
        try:
            if not start or not start > 0 or not math.isfinite(start):
                raise _Failed(f"no start rate: {start_qps!r} (the pool answered nothing)")
            if self.s.max_probes == 0 and self.confirms_here:  # the confirm step of a sweep:
                return self._confirm(start, None)  # its probes found the rate already
            low, high = self._bracket(min(max(start, self.s.min_qps), self.s.max_qps))
            if low is None:
                return self._section("no_rate", self._no_rate())
            low, high = self._bisect(low, high)
            return self._confirm(low, high)
        except _Budget as why:
            ran = [  # what the time went to: the confirming runs, missed and met
                (word, [f"{r['target_qps']:.4g}" for r in self.confirms if run_valid(r) == valid])
                for valid, word in ((False, "INVALID"), (True, "VALID"))
            ]
            said = "; ".join(f"{word} at {', '.join(rates)} QPS" for word, rates in ran if rates)
            before = f"confirming run(s) ({self.bound_text()}): {said}; then " if said else ""
            return self._section("over_budget", before + str(why))
        except _Failed as why:
            return self._section("loadgen_failed", str(why))

    def _no_rate(self) -> str:
        tried = ", ".join(f"{p['target_qps']:.4g}" for p in self.probes)
        errors = sum(p.get("http_errors") or 0 for p in self.probes)
        said = (
            f"no rate meets {self.bound_text()}: INVALID at {tried} QPS "
            f"(down to min_qps {self.s.min_qps:g}, or max_probes {self.s.max_probes})"
        )
        return said + (f"; {errors} request(s) failed" if errors else "")

    def _bracket(self, qps: float) -> tuple[float | None, float | None]:
        """A VALID rate below an INVALID one (high None: VALID at max_qps; low None: no rate)."""
        low = high = None
        while len(self.probes) < self.s.max_probes:
            if (valid := self._probe_or_stop(qps, low)) is None:
                break
            if valid:
                low = qps
                if high is not None or qps >= self.s.max_qps:
                    break
                qps = min(qps * 2, self.s.max_qps)
            else:
                high = qps
                if low is not None or qps / 2 < self.s.min_qps:
                    break
                qps = max(_under(self.probes[-1], qps, self.s, 0.5), self.s.min_qps)
        return low, high

    def _bisect(self, low: float, high: float | None) -> tuple[float, float | None]:
        while high is not None and (high - low) > self.s.tolerance * low:
            if len(self.probes) >= self.s.max_probes:
                break
            middle = (low + high) / 2
            if (valid := self._probe_or_stop(middle, low)) is None:
                break
            if valid:
                low = middle
            else:
                high = middle
        return low, high

    def _confirm(self, low: float, high: float | None) -> dict[str, Any]:
        if not self.confirms_here:  # a sweep cell: the probes' rate, never a verdict
            why = "confirm: best" if self.s.confirm == "best" else "confirm_runs 0"
            note = f"probes only ({why}): {self._found(low, high, low)}"
            return self._section("probed", note, probe_qps=low)
        qps, runs, tried = low, [], []  # each attempt's rate
        while len(tried) < self.s.confirm_attempts:
            tried.append(qps)
            runs = []
            for _ in range(self.s.confirm_runs):  # one INVALID run fails the attempt: back off
                runs.append(self._run(qps, self.s.confirm_s, "confirm"))
                if not run_valid(runs[-1]):
                    break
            if len(runs) == self.s.confirm_runs and all(run_valid(run) for run in runs):
                values = [run["scheduled_qps"] or run["target_qps"] for run in runs]
                return self._section(
                    "ok", self._found(low, high, qps), max_valid_qps=statistics.median(values),
                    confirmed_at_qps=qps, probe_qps=low, run_qps=values, confirm_runs=runs,
                )  # fmt: skip
            lower = _under(runs[-1], qps, self.s, self.s.backoff)
            if lower < self.s.min_qps:
                break
            qps = lower
        return self._section(
            "not_confirmed",
            f"a confirming run INVALID ({self.bound_text()}) in each of {len(tried)} attempt(s): "
            f"at {', '.join(f'{rate:.4g}' for rate in tried)} QPS",
            confirm_runs=runs,
        )

    def _found(self, low: float, high: float | None, confirmed: float) -> str:
        note = self._found_where(low, high, confirmed)
        if all(_loadgen_judged(run) for run in self.confirms):
            return note
        fewest = min(run.get("queries") or 0 for run in self.confirms)
        return note + (
            f"; runs of {self.s.min_queries} queries at least (fewest {fewest}), under the "
            f"{loadgen.SERVER_EARLY_STOPPING_QUERIES} that LoadGen's early-stopping estimate "
            "needs: such a run is judged on the p99 of its own queries"
        )

    def _found_where(self, low: float, high: float | None, confirmed: float) -> str:
        if not self.probes:
            note = f"no probes (max_probes 0): confirming the given start rate {low:.4g} QPS"
        elif high is None and self.cut is None and low >= self.s.max_qps:
            note = f"VALID at max_qps {self.s.max_qps:g}: the cap, not the server, set the rate"
        elif high is None:
            note = f"VALID up to {low:.4g} QPS, no INVALID rate found above it"
        else:
            note = f"bracket {low:.4g}-{high:.4g} QPS"
            if (high - low) / low > self.s.tolerance:
                note += f" (wider than tolerance {self.s.tolerance:g})"
        if self.cut:
            note += f"; probing stopped: {self.cut}"
        if confirmed < low:
            note += f"; confirmed at {confirmed:.4g} QPS, below it (a run at the bracket failed)"
        return note

    def _probe_or_stop(self, qps: float, low: float | None) -> bool | None:
        """Whether a probe at `qps` is VALID; None when it would leave the confirming runs at
        the VALID rate `low` too little of the budget (without a VALID rate: over_budget)."""
        try:
            return run_valid(self._run(qps, self.s.probe_s, "probe", reserve_at=low or qps))
        except _Budget as why:
            if low is None:
                raise
            self.cut = str(why)
            return None

    def _lasts(self, qps: float, seconds: float) -> tuple[int, float]:
        queries = max(self.s.min_queries, math.ceil(qps * seconds))
        return queries, max(seconds, queries / qps)

    def _run(
        self, qps: float, seconds: float, phase: str, reserve_at: float | None = None
    ) -> dict[str, Any]:
        """One LoadGen run; a probe also keeps the confirming runs' time (at `reserve_at`)."""
        queries, lasts = self._lasts(qps, seconds)
        reserve = 0.0
        if reserve_at and self.confirms_here:
            reserve = self.s.confirm_runs * self._lasts(reserve_at, self.s.confirm_s)[1]
        spent = self.clock() - self.started
        if spent + lasts + reserve > self.s.budget_s:
            kept = f" and {reserve:.0f} s kept for the confirming runs" if reserve else ""
            raise _Budget(
                f"a {phase} at {qps:.4g} QPS ({queries} queries, {lasts:.0f} s{kept}) would "
                f"pass the search's budget_s {self.s.budget_s:g} ({spent:.0f} s spent)"
            )
        try:
            run = self.runner(qps, seconds, queries, len(self.probes) + len(self.confirms))
        except Exception as error:  # LoadGen or its SUT: the record says so
            said = f"LoadGen failed at {qps:.4g} QPS: {type(error).__name__}: {error}"
            raise _Failed(said) from error
        if run.get("validity") is None:
            raise _Failed(f"LoadGen gave no verdict at {qps:.4g} QPS (log: {run.get('log_dir')})")
        run = run | {"phase": phase, "target_qps": qps, "duration_s": seconds}
        (self.probes if phase == "probe" else self.confirms).append(run)
        said = "VALID" if run_valid(run) else f"INVALID ({run.get('http_errors') or 0} errors)"
        print(
            f"[devicebench] latency-bound search: {phase} at {qps:.4g} QPS, {said}, "
            f"{self.latency_text(run)}",
            flush=True,
        )  # long work shows progress
        return run

    # Hooks for a search over other latencies (generation.serving: LoadGen's token latencies)
    def bound_text(self) -> str:
        """The bound a VALID run meets, for the section's messages."""
        return f"p99 <= {self.s.p99_bound_ms:g} ms"

    def latency_text(self, run: dict[str, Any]) -> str:
        """A run's latency, for its progress line."""
        p99 = (run.get("latency_ms") or {}).get("p99")
        return f"p99 {p99 if p99 is None else round(p99, 1)} ms"

    def brief(self, run: dict[str, Any]) -> dict[str, Any]:
        """One run as the section keeps it."""
        return _brief(run)

    def _section(self, status: str, message: str, **found: Any) -> dict[str, Any]:
        confirm = found.pop("confirm_runs", [])
        return {
            "status": status,
            "message": message,
            "p99_bound_ms": self.s.p99_bound_ms,
            "max_valid_qps": found.get("max_valid_qps"),
            "run_qps": found.get("run_qps"),  # each confirming run's scheduled rate
            "confirmed_at_qps": found.get("confirmed_at_qps"),
            "probe_qps": found.get("probe_qps"),  # the highest VALID probe
            "runs": len(confirm),
            "duration_s": self.s.confirm_s,
            "queries": [run.get("queries") for run in confirm],
            "early_stopping_met": bool(confirm)
            and all(r.get("early_stopping_met") for r in confirm),
            "probes": [self.brief(run) for run in self.probes],
            "confirms": [self.brief(run) for run in self.confirms],
            "search_s": self.clock() - self.started,
            "settings": {f.name: getattr(self.s, f.name) for f in fields(self.s)},
        }


def run_valid(run: dict[str, Any]) -> bool:
    """Whether a run meets the bound: LoadGen's verdict, or, for a run under the queries of
    its early-stopping estimate, LoadGen's latency check of the queries it ran; no failed
    request either way."""
    if run.get("http_errors"):
        return False
    if _loadgen_judged(run):
        return bool(run.get("valid"))
    return bool(run.get("latency_met"))  # INVALID on the early-stopping estimate alone


def _loadgen_judged(run: dict[str, Any]) -> bool:
    """Whether LoadGen's verdict judges the run: it had the early-stopping estimate's queries."""
    return (run.get("queries") or 0) >= loadgen.SERVER_EARLY_STOPPING_QUERIES


def _under(run: dict[str, Any], qps: float, s: SloSettings, factor: float) -> float:
    """The rate after an INVALID run at `qps`: `factor` times it, and `backoff` under the rate
    the server completed when it fell behind (far over capacity, halving would take probe after
    probe, each draining a queue that grew for the whole probe)."""
    lower = qps * factor
    done, offered = run.get("completed_qps"), run.get("scheduled_qps") or qps
    if done and done < offered * (1 - s.tolerance):
        lower = min(lower, done * s.backoff)
    return lower


def _brief(run: dict[str, Any]) -> dict[str, Any]:
    """One run as the record keeps it: what was offered, what came back, LoadGen's verdict."""
    latency = run.get("latency_ms") or {}
    keys = ("phase", "target_qps", "scheduled_qps", "completed_qps", "duration_s", "queries")
    return {key: run.get(key) for key in (*keys, "validity")} | {
        "valid": run_valid(run),
        "judged_on": "loadgen" if _loadgen_judged(run) else "p99 of its queries",
        "latency_met": run.get("latency_met"),
        "early_stopping_met": run.get("early_stopping_met"),
        "p99_ms": latency.get("p99"),
        "p50_ms": latency.get("p50"),
        "http_errors": run.get("http_errors"),
        "log_dir": run.get("log_dir"),
    }


def search(
    url: str, payloads, log_dir: Path, settings: SloSettings, start_qps: float, content_type: str
) -> dict[str, Any]:
    """The latency-bound search against the server at `url`; the `serving.slo` section."""
    runner = loadgen_runner(
        url, payloads, log_dir, settings.p99_bound_ms, settings.connections, content_type
    )
    return Search(settings, runner).run(start_qps)
