# SPDX-License-Identifier: Apache-2.0
"""The experiments' records, read into one shape whatever the format they
were written in.

Format 2's records and their fields are declared once, in
bench/lab/records.def; every experiment prints that as JSON (`--schema`),
which `schema` reads and `problems` checks a record against.

Format 1 (before) had a sample count, no axis, no direction, and a ratio
"value / ratio_to's value" whose direction depended on the metric.  Those
records are kept as they are (format 1): a reader asks `speedup()` and gets
None where the record does not say which way is faster.

The normalised measurement (what `Database.measurements` returns too):
  experiment, series, params, metric, unit, stat, value, min, median, max,
  samples (the count), sample_values (list or None), process_samples (list
  or None), axis ({"name", "unit"} or None), better ("lower", "higher" or
  None), baseline ({"series", "params"} or None), ratio_to (text naming the
  baseline), ratios (list or None), ratio, ratio_min, ratio_max, format,
  contract (text or None).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Optional

from memkit.errors import MemkitError

FORMAT = 2
VERDICT_KINDS = ("loss", "fastest", "note")
# What format 1 records held that format 2's schema no longer declares.
FORMAT1_FIELDS = ("ratio_to",)


def schema(program: Path) -> dict:
    """The records' schema, as an experiment prints it (`--schema`, from
    bench/lab/records.def): {"format", "objects": {name: {"line", "meaning",
    "fields": {key: {"type", "of", "presence", "meaning"}}}}}."""
    try:
        p = subprocess.run([str(program), "--schema"], capture_output=True, text=True, timeout=30)
        return json.loads(p.stdout)
    except (OSError, subprocess.TimeoutExpired, ValueError) as e:
        raise MemkitError(f"cannot read the records' schema from {program}: {e}")


_JSON_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
               "object": (dict,), "array": (list,)}


def _value_problems(v, type_: str, of: Optional[str], objects: dict, where: str) -> list[str]:
    """What is wrong with v as a value of that type; a number may be null
    (the lab writes a value that is not finite as null)."""
    if v is None and type_ == "number":
        return []
    # bool is an int to Python: only a boolean field takes one
    if not isinstance(v, _JSON_TYPES[type_]) or (isinstance(v, bool) and type_ != "boolean"):
        return [f"{where}: {json.dumps(v)[:40]} is no {type_}"]
    if type_ == "object" and of != "any":
        return _object_problems(v, of, objects, where)
    if type_ == "array" and of is not None:   # an array's arrays: [first, last], unchecked inside
        out = []
        for i, x in enumerate(v):
            if of in objects:
                out += _object_problems(x, of, objects, f"{where}[{i}]") if isinstance(x, dict) \
                    else [f"{where}[{i}]: not an object"]
            else:
                out += _value_problems(x, of, None, objects, f"{where}[{i}]")
        return out
    return []


def _object_problems(rec: dict, name: str, objects: dict, where: str) -> list[str]:
    fields = objects[name]["fields"]
    out = [f"{where}: {key} is no field of {name} (bench/lab/records.def)" for key in rec if key not in fields]
    for key, f in fields.items():
        if key not in rec:
            if f["presence"] != "optional":
                out.append(f"{where}: {name} without {key}")
        elif rec[key] is None and f["presence"] == "nullable":
            continue
        else:
            out += _value_problems(rec[key], f["type"], f["of"], objects, f"{where}.{key}")
    return out


def problems(rec: dict, schema: dict) -> list[str]:
    """What in a record (a JSON line) the schema does not allow: a type it
    does not declare, a field it lacks, a required field missing, a value
    of the wrong type; [] for a record that holds to it."""
    objects = schema["objects"]
    kind = rec.get("type")
    if not (isinstance(kind, str) and objects.get(kind, {}).get("line")):
        return [f"a record of no known type: {json.dumps(kind)}"]
    return _object_problems(rec, kind, objects, kind)


def _floats(v) -> Optional[list]:
    if not isinstance(v, list):
        return None
    out = [float(x) for x in v if isinstance(x, (int, float)) and not isinstance(x, bool)]
    return out or None


def baseline_text(baseline: Optional[dict], own: Optional[dict] = None) -> Optional[str]:
    """How the baseline is named where one line must do: its series where
    that is not the measurement's own, and the parameters where it differs
    from the measurement ("glibc"; "value=90" for the same series filling
    90s; "glibc size=4096" when nothing is known of the measurement)."""
    if not baseline:
        return None
    params = baseline.get("params") or {}
    series = str(baseline.get("series", "?"))
    if own is None:
        return " ".join([series] + [f"{k}={v}" for k, v in sorted(params.items())])
    own_params = own.get("params") or {}
    parts = [] if series == own.get("series") else [series]
    parts += [f"{k}={v}" for k, v in sorted(params.items()) if own_params.get(k) != v]
    return " ".join(parts) or series


def measurement(rec: dict, fmt: int = 1) -> dict:
    """A measurement record (JSON line, format `fmt` per its fingerprint) in
    the normalised shape.  A record carrying format 2's fields is read as
    format 2 whatever the fingerprint said."""
    if "better" in rec or "baseline" in rec or isinstance(rec.get("samples"), list):
        fmt = max(fmt, 2)
    samples = rec.get("samples")
    values = _floats(samples) if fmt >= 2 else None
    count = len(samples) if isinstance(samples, list) else samples
    axis = rec.get("axis") if isinstance(rec.get("axis"), dict) else None
    better = rec.get("better") if rec.get("better") in ("lower", "higher") else None
    baseline = rec.get("baseline") if isinstance(rec.get("baseline"), dict) else None
    if baseline is not None:
        baseline = {"series": str(baseline.get("series", "")), "params": baseline.get("params") or {}}
    return {
        "experiment": rec.get("experiment"),
        "series": rec.get("series"),
        "params": rec.get("params") or {},
        "metric": rec.get("metric"),
        "unit": rec.get("unit"),
        "stat": rec.get("stat"),
        "value": rec.get("value"),
        "min": rec.get("min"),
        "median": rec.get("median"),
        "max": rec.get("max"),
        "samples": count if isinstance(count, int) else None,
        "sample_values": values,
        "process_samples": _floats(rec.get("process_samples")) if fmt >= 2 else None,
        "axis": axis,
        "better": better,
        "baseline": baseline,
        "ratio_to": rec.get("ratio_to") if fmt < 2 else baseline_text(baseline, rec),
        "ratios": _floats(rec.get("ratios")) if fmt >= 2 else None,
        "process_ratios": _floats(rec.get("process_ratios")) if fmt >= 2 else None,
        "contract": rec.get("contract") if isinstance(rec.get("contract"), str) else None,
        # under glibc_tunables=: the speed-ups over glibc tuned (records.def's tuned)
        "tuned": rec.get("tuned") if isinstance(rec.get("tuned"), dict) else None,
        "ratio": rec.get("ratio"),
        "ratio_min": rec.get("ratio_min"),
        "ratio_max": rec.get("ratio_max"),
        "format": fmt,
    }


def normalized(m: dict) -> dict:
    """m in the normalised shape (as it is when it already has a format)."""
    return m if "format" in m else measurement(m)


def verdict(rec) -> dict:
    """{"text", "kind", "data"} from a verdict record (or a bare text); data:
    the facts the verdict states (a "fastest" verdict's ranking), or None."""
    if isinstance(rec, str):
        return {"text": rec, "kind": None, "data": None}
    kind = rec.get("kind")
    data = rec.get("data")
    return {"text": rec.get("text", ""), "kind": kind if kind in VERDICT_KINDS else None,
            "data": data if isinstance(data, dict) else None}


def speedup(m: dict) -> Optional[float]:
    """The measurement's ratio as a speed-up over its baseline (> 1: this
    series is faster), or None where the record does not say (format 1)."""
    if m.get("ratio") is None or (m.get("format") or 1) < 2:
        return None
    return m["ratio"]


def better_direction(m: dict) -> Optional[str]:
    """"lower" or "higher": the record's own field; for format 1 records the
    unit decides (the only thing those records offer)."""
    if m.get("better") in ("lower", "higher"):
        return m["better"]
    unit = (m.get("unit") or "").strip()
    text = f"{m.get('metric') or ''} {unit}".lower()
    if "/s" in text or "per_s" in text or "per_cpu" in text or "throughput" in text or "improvement" in text \
            or "speedup" in text:
        return "higher"
    if unit in ("ns", "us", "µs", "ms", "s", "cycles", "cycles/byte", "µs/MB", "us/MB", "ns/call") or \
            unit.startswith(("ns", "us", "µs", "ms", "cycles")):
        return "lower"
    return None


def dumps(v) -> Optional[str]:
    return None if v is None else json.dumps(v, sort_keys=True, separators=(",", ":"))


def loads(v):
    return None if v is None else json.loads(v)
