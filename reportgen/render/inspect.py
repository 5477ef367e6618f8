"""`reportgen inspect`: what reportgen recognises in a campaign folder, without a plan.

The JSON form is the `reportgen.inspect/1` contract (SPEC.md); the terminal form is a few
readable tables built from that same dictionary.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, timezone, tzinfo

from reportgen.analysis import Survey
from reportgen.analysis.runs import chain_order, continuations
from reportgen.model import MessageKind
from reportgen.numbers import plural
from reportgen.plan.schema import RESUME_PARTS
from reportgen.render.report import (
    evidence,
    inputs_json,
    iso,
    machine_json,
    unlinked_json,
    zone_name,
)

SCHEMA = "reportgen.inspect/1"


def logs_zone(campaign) -> tzinfo:
    """The time zone the logs themselves write most often (no plan names the campaign's here); UTC
    when no time carries an offset of its own."""
    offsets = Counter(at.utcoffset() for run in campaign.runs.values()
                      for at in (run.started_at, run.ended_at, run.last_seen_at) if at is not None and at.tzinfo)
    if not offsets:
        return UTC
    offset = min(offsets.items(), key=lambda item: (-item[1], item[0]))[0]  # the most common; ties: the smallest
    return timezone(offset) if offset else UTC


def build_inspect(found: Survey) -> dict:
    campaign, windows = found.campaign, found.non_finite
    tz = logs_zone(campaign)
    metrics = campaign.metrics_by_run()
    runs = []
    for run_id in chain_order(campaign, continuations(campaign)):  # as the site lists them
        run = campaign.runs[run_id]
        status = found.statuses[run_id]
        runs.append({
            "id": run_id,
            "kind": run.kind,
            "status": status.status,
            "status_reason": status.reason,
            "status_evidence": evidence(status.evidence),
            "formats": run.formats,
            "sources": sorted(run.sources),
            "first_step": run.first_step,
            "last_step": run.last_step,
            "started_at": iso(run.started_at, tz),
            "ended_at": iso(run.ended_at, tz),
            "last_seen_at": iso(run.last_seen_at, tz) if run.ended_at is None else None,
            "machine": machine_json(found.machines[run_id]),
            "config_id": run.config_id,
            "resumes": run.resumes,
            "resumed_at_step": run.resumed_at_step,
            "evaluates": run.evaluates,
            "identity": [d.to_json() for d in run.identity],
            "best": next((f.best for f in run.facts if f.best), None),
            "metrics": metrics.get(run_id, []),
            "non_finite": [
                {"metric": w.metric, "step": w.step, "last_step": w.last_step, "count": w.count,
                 "note": w.note, "evidence": evidence(w.evidence)}
                for w in windows.get(run_id, [])
            ],
            "messages": [
                {"kind": m.kind, "message": m.message, "step": m.step, "evidence": evidence([m.evidence])}
                for m in campaign.of_run("messages").get(run_id, []) if m.kind != MessageKind.NON_FINITE
            ],
        })
    checkpoints = [
        {"run": c.run, "step": c.step, "path": c.path, "format": c.format, "final": c.final,
         "resume_state": {part: c.resume_state.get(part) for part in RESUME_PARTS},
         "resume_basis": {part: c.resume_basis.get(part) for part in RESUME_PARTS}, "parts": c.parts}
        for c in sorted(campaign.checkpoints, key=lambda c: (c.run, c.step is None, c.step or 0, c.final, c.path))
    ]
    problems = [
        {"path": info.path, "line": p.line, "message": p.message}
        for info in campaign.inputs for p in info.problems
    ]
    problems += [{"path": p.path, "line": p.line, "message": p.message} for p in campaign.problems]
    return {
        "schema": SCHEMA,
        "root": campaign.root,
        "time_zone": zone_name(tz),
        "inputs": inputs_json(campaign),
        "runs": runs,
        "unlinked_sources": unlinked_json(found.unlinked),
        "checkpoints": checkpoints,
        "problems": problems,
    }


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return out


def _text(value) -> str:
    return "-" if value is None else str(value)


def _when(value: str | None) -> str:
    return "-" if value is None else value.replace("T", " ")


def render_text(data: dict) -> str:
    """The terminal form: formats, runs, non-finite values, checkpoints, problems."""
    out: list[str] = []
    counts: dict[str, int] = {}
    for info in data["inputs"]:
        counts[info["format"] or "not recognised"] = counts.get(info["format"] or "not recognised", 0) + 1
    kinds = ", ".join(f"{n} {fmt}" for fmt, n in sorted(counts.items()))
    out.append(f"{plural(len(data['inputs']), 'file')} in {data['root']}" + (f": {kinds}" if kinds else ""))
    out.append("")
    training = [r for r in data["runs"] if r["kind"] == "training"]
    evaluations = [r for r in data["runs"] if r["kind"] == "evaluation"]
    if not data["runs"]:
        out.append("No run was found in these files.")
    else:
        out.append(f"Runs ({len(training)} training" + (f", {len(evaluations)} evaluation" if evaluations else "")
                   + f"; in the order they started, times in {data['time_zone']}, the zone the logs write)")
    out += [] if not data["runs"] else _table(
        ["run", "kind", "status", "steps", "started", "ended", "formats", "metrics"],
        [[r["id"], r["kind"], r["status"], f"{_text(r['first_step'])}–{_text(r['last_step'])}", _when(r["started_at"]),
          _when(r["ended_at"]) if r["ended_at"] else (f"last seen {_when(r['last_seen_at'])}" if r["last_seen_at"] else "-"),
          ",".join(r["formats"]), str(len(r["metrics"]))] for r in data["runs"]],
    )
    for run in data["runs"]:
        link = (f" (resumes {run['resumes']})" if run["resumes"] else "") + (
            f" (evaluates {run['evaluates']})" if run["evaluates"] else "")
        out.append(f"  {run['id']}: {run['status']} — {run['status_reason']}{link}")
        for decision in run["identity"]:
            if decision["rule"] != "run-folder":
                out.append(f"      {decision['decision']} [{decision['rule']}]: {decision['text']}")
    if data["unlinked_sources"]:
        out.append("")
        out.append(f"Sources that are not runs ({len(data['unlinked_sources'])})")
        for item in data["unlinked_sources"]:
            where = item["path"] + (f" lines {item['lines'][0]}–{item['lines'][1]}" if item["lines"] else "")
            said = "; ".join(f"{m['kind']} at line {m['evidence'][0]['line']}" for m in item["messages"][:3])
            out.append(f"  {where}: {item['reason']}" + (f" (it says: {said})" if said else ""))
    windows = [(r["id"], w) for r in data["runs"] for w in r["non_finite"]]
    if windows:
        out.append("")
        out.append(f"Non-finite values ({len(windows)})")
        out += _table(
            ["run", "metric", "steps", "rows", "evidence"],
            [[run, w["metric"], f"{_text(w['step'])}–{_text(w['last_step'])}", str(w["count"]),
              ", ".join(f"{e['path']}:{e['line']}" if e["line"] else e["path"] for e in w["evidence"])]
             for run, w in windows],
        )
    if data["checkpoints"]:
        out.append("")
        out.append(f"Checkpoints ({len(data['checkpoints'])}); resume state: + saved, - missing, ? unknown")
        out += _table(
            ["run", "step", *RESUME_PARTS, "path"],
            [[c["run"], _text(c["step"]),
              *("+" if c["resume_state"][p] else "?" if c["resume_state"][p] is None else "-" for p in RESUME_PARTS),
              c["path"]] for c in data["checkpoints"]],
        )
    out.append("")
    if data["problems"]:
        out.append(f"Problems ({len(data['problems'])})")
        out += [f"  {p['path']}{':' + str(p['line']) if p['line'] else ''}: {p['message']}" for p in data["problems"]]
    else:
        out.append("No problems found.")
    return "\n".join(out) + "\n"
