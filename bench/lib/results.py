"""Reading `canopy bench run --json` files into the few figures the comparison tables need.

The JSON holds one object per server and step; the key names below are those of crates/bench's
report. Lookups go by name anywhere in the object, so nesting (e.g. {"response": {"p99_ms": ..}})
does not matter, and a missing figure comes back as None rather than stopping the comparison.
"""

import json
import statistics


def _walk(obj, path=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _walk(v, path + (str(k).lower(),))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _walk(v, path + (str(i),))
    else:
        yield path, obj


def _find(obj, *names, within=None):
    """First number whose key is one of `names` (and whose path contains `within`, if given)."""
    for path, v in _walk(obj):
        if not path or not isinstance(v, (int, float)) or isinstance(v, bool):
            continue
        if path[-1] in names and (within is None or any(within in p for p in path[:-1])):
            return float(v)
    return None


def _records(doc):
    """The per-server objects of a JSON document."""
    if isinstance(doc, list):
        return [r for r in doc if isinstance(r, dict)]
    if isinstance(doc, dict):
        for key in ("results", "runs", "servers", "steps"):
            if isinstance(doc.get(key), list):
                return [r for r in doc[key] if isinstance(r, dict)]
        return [doc]
    return []


def _errors(rec):
    """Total errors of a record: a number, or a map result code -> count."""
    for key in ("errors", "errors_by_code", "error_counts"):
        v = rec.get(key)
        if isinstance(v, (int, float)):
            return int(v)
        if isinstance(v, dict):
            return int(sum(x for x in v.values() if isinstance(x, (int, float))))
        if isinstance(v, list):
            total = 0
            for item in v:
                if isinstance(item, dict):
                    total += int(item.get("count", 1))
                else:
                    total += 1
            return total
    return 0


def _get(rec, *path):
    for key in path:
        if not isinstance(rec, dict):
            return None
        rec = rec.get(key)
    return float(rec) if isinstance(rec, (int, float)) and not isinstance(rec, bool) else None


def summary(rec):
    """The figures of one server+step record (crates/bench/src/report.rs, StepResult)."""
    errors = _get(rec, "error_total")
    return {
        "label": rec.get("label") or rec.get("server"),
        "throughput": _get(rec, "throughput")
        if _get(rec, "throughput") is not None else _find(rec, "throughput_per_s", "ops_per_s"),
        "ops": _get(rec, "completed"),
        "p50": _get(rec, "response", "p50_ms") or _find(rec, "p50", "p50_ms", within="response"),
        "p99": _get(rec, "response", "p99_ms") or _find(rec, "p99", "p99_ms", within="response"),
        "connect_p50": _get(rec, "connect", "p50_ms"),
        "processing_p50": _get(rec, "processing", "p50_ms"),
        "server_cpu": _get(rec, "server_cpu_s"),
        "server_cpu_us": _get(rec, "server_cpu_us_per_op"),
        "client_cpu_pct": _get(rec, "client_cpu_pct"),
        "entries_returned": _get(rec, "entries_returned"),
        "bytes_received": _get(rec, "bytes_received"),
        "exhausted_clients": _get(rec, "exhausted_clients"),
        "errors": int(errors) if errors is not None else _errors(rec),
        "error_codes": rec.get("errors") if isinstance(rec.get("errors"), dict) else {},
    }


def load(path):
    with open(path) as f:
        doc = json.load(f)
    return [summary(r) for r in _records(doc)]


def median(values):
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None
