"""Results of induct studies as pandas DataFrames, their events as they happen, and studies
run from Python. The tables are those `induct export` writes (docs/store.md, "Export"), read
with pandas.read_csv; nothing here re-implements the store's queries."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterator, Optional, Sequence

import pandas as pd

__version__ = "0.1.4"

# The files `induct export` may write, each one kind of observation (docs/store.md).
TABLES = ("trials", "histories", "per_length", "nstar", "kappa", "lengthgen", "probe",
          "probe_convs")
# The events schema this package reads (docs/store.md, "Events").
EVENTS_SCHEMA = 1


class InductError(RuntimeError):
    """The binary failed, or a folder is not an induct output folder."""


def find_binary(binary: Optional[str] = None) -> str:
    """The induct binary: `binary`, $INDUCT_BINARY, `induct` on the PATH, or build/bin/induct
    of the repository this package sits in."""
    for candidate in (binary, os.environ.get("INDUCT_BINARY"), shutil.which("induct"),
                      str(Path(__file__).resolve().parents[2] / "build" / "bin" / "induct")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise InductError("no induct binary: pass binary=, set INDUCT_BINARY, put induct on the "
                      "PATH, or build it (scripts/setup.sh)")


@dataclass
class Results:
    """Every table of one output folder; a table the store has no rows for is empty."""
    folder: Path
    tables: Dict[str, pd.DataFrame] = field(default_factory=dict)

    def __getattr__(self, name: str) -> pd.DataFrame:
        if name in TABLES:
            return self.tables.get(name, pd.DataFrame())
        raise AttributeError(name)

    def __repr__(self) -> str:
        sizes = ", ".join(f"{name} {len(frame)}" for name, frame in self.tables.items())
        return f"Results({str(self.folder)!r}: {sizes or 'no rows'})"


def load(folder, binary: Optional[str] = None) -> Results:
    """The tables of `folder` (an `induct run --out` folder): `induct export` into a temporary
    folder, each CSV read with pandas.read_csv (numbers as numbers, NaN where empty, each
    float the stored double exactly)."""
    folder = Path(folder)
    if not (folder / "results.sqlite").exists():
        raise InductError(f"{folder}: no results.sqlite here (is it the --out folder of "
                          "`induct run`?)")
    with tempfile.TemporaryDirectory(prefix="induct-load-") as out:
        done = subprocess.run([find_binary(binary), "export", str(folder), "--to", out],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise InductError(f"induct export {folder} failed: {done.stderr.strip()}")
        tables = {}
        for name in TABLES:
            path = Path(out) / f"{name}.csv"
            if path.exists():
                # round_trip: pandas' default parser can be one unit in the last place off
                # the shortest text the exporter wrote; this reads back the stored double.
                tables[name] = pd.read_csv(path, float_precision="round_trip")
    return Results(folder, tables)


def _run_alive(folder: Path) -> Optional[bool]:
    """Whether an `induct run` holds folder/run.lock now (None: no lock file)."""
    try:
        fd = os.open(folder / "run.lock", os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def events(folder, follow: bool = False, latest_run: bool = False,
           poll_seconds: float = 0.5) -> Iterator[dict]:
    """The events of folder/events.jsonl as dicts, in order. `latest_run`: from the latest
    run_started only. `follow`: then the ones that come, until a run_ended event or until the
    run's process is gone (its lock released). A cut last line (a full disk, a kill) is
    skipped with a warning once the run is over; a newer schema raises InductError."""
    path = Path(folder) / "events.jsonl"
    if not path.exists():
        raise InductError(f"{path}: no such file (a run of induct 0.1.4 + writes it)")
    offset = 0
    if latest_run:
        text = path.read_bytes()
        start = text.rfind(b'\n{"event": "run_started"')
        offset = start + 1 if start >= 0 else 0
    while True:
        alive = _run_alive(Path(folder)) if follow else False
        with open(path, "rb") as f:
            f.seek(offset)
            chunk = f.read()
        complete = chunk.rfind(b"\n") + 1
        for line in chunk[:complete].splitlines():
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                warnings.warn(f"{path}: a line that is not an event, skipped")
                continue
            if event.get("event") == "run_started" and event.get("schema", 0) > EVENTS_SCHEMA:
                raise InductError(f"{path}: events of schema {event['schema']}; this package "
                                  f"reads schema {EVENTS_SCHEMA}")
            yield event
            if follow and event.get("event") == "run_ended":
                return
        offset += complete
        if not follow or alive is not True:
            if complete < len(chunk):
                warnings.warn(f"{path}: its last line is cut ({len(chunk) - complete} bytes), "
                              "skipped")
            return
        time.sleep(poll_seconds)


def events_frame(folder, latest_run: bool = False) -> pd.DataFrame:
    """Every event of the folder as one DataFrame (a column per field; NaN where an event
    has no such field)."""
    return pd.DataFrame(list(events(folder, latest_run=latest_run)))


def run(study, out=None, sets: Sequence[str] = (), binary: Optional[str] = None,
        check: bool = True, extra: Sequence[str] = ()) -> Results:
    """`induct run STUDY [--out OUT] [--set KEY=VALUE]...`, then load() of the folder it wrote
    (OUT, or the one its first line names: runs/NAME). Its output goes on to this process's
    stdout and stderr. With check, a non-zero exit raises InductError."""
    command = [find_binary(binary), "run", str(study)]
    if out is not None:
        command += ["--out", str(out)]
    for s in sets:
        command += ["--set", s]
    command += list(extra)
    folder = out
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True) as process:
        for line in process.stderr:
            sys.stderr.write(line)
            # The first line: "STUDY: KIND study 'NAME', ... -> FOLDER[ (removed ...)]".
            if folder is None and " -> " in line:
                folder = line.rstrip("\n").split(" -> ", 1)[1].split(" (removed ", 1)[0]
        code = process.wait()
    if check and code != 0:
        raise InductError(f"{' '.join(command)}: exit status {code}")
    if folder is None:
        raise InductError(f"{' '.join(command)}: it named no output folder")
    return load(folder, binary=binary)


__all__ = ["Results", "InductError", "TABLES", "find_binary", "load", "events", "events_frame",
           "run"]
