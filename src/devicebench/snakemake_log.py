"""Job start and end times from a Snakemake log (`snakemake ... > log`, or .snakemake/log/*.log).

Snakemake stamps each event with a local time line, `[Mon Nov 23 07:35:14 2026]`, then either a
job (`localrule cell:` / `rule cell:` with its `output:` and `jobid:` lines) or its end
(`Finished jobid: 46 (Rule: cell)` in Snakemake 9, `Finished job 46.` before, or `Error in rule
cell:` with its `jobid:`). The stamps have whole seconds and no time zone: the caller says which
offset from UTC the host's clock had (a record's `provenance.created` carries it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
JOB = re.compile(r"^(?:local)?rule (\w+):$")
ERROR = re.compile(r"^Error in rule (\w+):$")
FINISHED = re.compile(r"^Finished job(?:id)?:? (\d+)")
FIELD = re.compile(r"^\s+(output|jobid): (.+)$")
CELL_OUTPUT = re.compile(r"(?:^|/)cells/(task~\S+?)\.json$")


@dataclass
class Job:
    """One job of the log: its rule, outputs, start and (when the log has it) end, epoch seconds."""

    jobid: int
    rule: str
    outputs: list[str]
    start: float
    end: float | None = None
    failed: bool = False
    log: str = ""

    @property
    def cell_id(self) -> str | None:
        """The cell whose record this job writes (rule cell), else None."""
        for output in self.outputs:
            if match := CELL_OUTPUT.search(output):
                return match.group(1)
        return None


def parse_offset(text: str) -> timezone:
    """'+0000', '+05:30', '-0700' -> that fixed time zone (ValueError naming the text otherwise)."""
    match = re.fullmatch(r"([+-])(\d\d):?(\d\d)", text.strip())
    if not match:
        raise ValueError(f"UTC offset {text!r}: expected +HHMM or -HH:MM")
    sign = -1 if match.group(1) == "-" else 1
    return timezone(sign * timedelta(hours=int(match.group(2)), minutes=int(match.group(3))))


def read_jobs(path: str | Path, offset: timezone = UTC) -> list[Job]:
    """Every job the log started, in order, with its end where the log says it."""
    path = Path(path)
    jobs: dict[int, Job] = {}
    stamp: float | None = None
    pending: Job | None = None  # a job whose jobid line has not come yet
    in_error = False
    for line in path.read_text(errors="replace").splitlines():
        if match := STAMP.match(line):
            when = datetime.strptime(" ".join(match.group(1).split()), "%a %b %d %H:%M:%S %Y")
            stamp, pending, in_error = when.replace(tzinfo=offset).timestamp(), None, False
        elif stamp is None:
            continue
        elif match := JOB.match(line):
            pending, in_error = Job(-1, match.group(1), [], stamp, log=str(path)), False
        elif ERROR.match(line):
            pending, in_error = None, True
        elif match := FINISHED.match(line):
            if (job := jobs.get(int(match.group(1)))) is not None and job.end is None:
                job.end = stamp
        elif match := FIELD.match(line):
            key, value = match.groups()
            if key == "output" and pending is not None:
                pending.outputs = [part.strip() for part in value.split(",")]
            elif key == "jobid" and value.strip().isdigit():
                jobid = int(value)
                if pending is not None:
                    pending.jobid = jobid
                    jobs[jobid] = pending
                    pending = None
                elif in_error and (job := jobs.get(jobid)) is not None and job.end is None:
                    job.end, job.failed = stamp, True
    return sorted(jobs.values(), key=lambda job: (job.start, job.jobid))


def gaps(jobs: list[Job], rule: str = "cell") -> dict[int, float]:
    """For each ended job of `rule`: seconds from its end to the next `rule` job's start."""
    ordered = [job for job in jobs if job.rule == rule]
    found = {}
    for job in ordered:
        if job.end is None:
            continue
        later = [other.start for other in ordered if other.start >= job.end and other is not job]
        if later:
            found[job.jobid] = min(later) - job.end
    return found
