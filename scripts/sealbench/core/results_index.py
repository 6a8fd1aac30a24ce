"""results/index.html and ``sealbench list``: every experiment under ``results/experiments/``,
newest first, one row each; and the ``results/latest`` link, which experiment folder is the
current, finished one (``point_latest``).

Reads:  results/experiments/<id>/{decision,experiment,card}.json (whatever of them exists) and
        results/latest
Writes: results/index.html (atomically; the gate rewrites it after each decision) and
        results/latest (``point_latest``: the gate and a finished run point it, then rewrite the
        index)

A row: the experiment id (marked when ``results/latest`` points at it), when it was decided (the
time decision.json was written, UTC), the card name (config ``card_name``), the candidate and
the baseline each with its version (fingerprint; a client preset's client and version), the
pack's name and digest (and the slice of the pack, when the experiment records one), the
scored split and its task count, and the decision: ``publishable`` with the headline and its
passes over n, or per stratum only with the passes over n of each stratum, or ``refused`` with
the refusal codes; and the comparison with its delta and n. The decision's cell is green when
publishable, grey when publishable but no better than doing nothing on any stratum
(``DUMMY_BEATEN_NOWHERE``), red when refused. Experiments written by older versions
lack some of these: a missing field is shown as "—", an unreadable or missing decision.json is
said so; nothing here raises on a malformed file.

    python -m sealbench.core.results_index [RESULTS]     # rewrite RESULTS/index.html
"""

from __future__ import annotations

import argparse
import datetime as dt
import html
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import paths
from .core import atomic_write_text
from .refusals import decision_tone, note_codes, pooled_withheld_by, stratum_counts

NONE = "—"
COLUMNS = ("experiment", "decided (UTC)", "card", "candidate", "baseline", "pack", "scored", "decision")
NO_EXPERIMENT = ("No experiment under {where} yet: `snakemake --cores 4 gate` runs one "
                 "(`sealbench validate` checks the config first).")


def _read(path: Path) -> tuple[dict | None, str | None]:
    """(the JSON object, None), (None, None) when absent, (None, why) when unreadable."""
    if not path.is_file():
        return None, None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return None, f"unreadable {path.name} ({type(exc).__name__})"
    return (data, None) if isinstance(data, dict) else (None, f"unreadable {path.name} (not an object)")


def _get(obj: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(k)
    return obj


def _first(*values: Any) -> Any:
    return next((v for v in values if v not in (None, "", [], {})), None)


def _text(x: Any) -> str:
    return NONE if x in (None, "") else str(x)


def _decision_text(d: Mapping | None, problem: str | None) -> str:
    if problem:
        return problem
    if d is None:
        return "not decided (no decision.json)"
    reasons = [str(_get(r, "code")) for r in d.get("reasons") or [] if _get(r, "code")]
    counts = stratum_counts(d)   # a number beside every verdict: the candidate's passes per stratum
    if d.get("publishable") is True:
        head, n, passes = d.get("headline"), d.get("n"), d.get("passes")
        of = f" ({passes:g}/{n})" if isinstance(n, int) and isinstance(passes, (int, float)) else ""
        withheld = ", ".join(pooled_withheld_by(d))
        text = (f"publishable: headline {head:.3f}{of}" + (f"; per stratum {counts}" if counts else "")
                if isinstance(head, (int, float)) else
                "publishable per stratum only" + (f" ({withheld})" if withheld else "") + (f": {counts}" if counts
                                                                                            else ""))
        if "DUMMY_BEATEN_NOWHERE" in note_codes(d):
            text += "; no better than doing nothing on any stratum (DUMMY_BEATEN_NOWHERE)"
    elif d.get("publishable") is False:
        text = "refused: " + (", ".join(reasons) or NONE)
    else:
        text = f"publishable: {NONE}"
    summary = d.get("comparison_summary")
    if isinstance(summary, str) and summary:
        comp = d.get("comparison") or {}
        delta = comp.get("delta") if isinstance(comp, Mapping) else None
        text += "; " + summary.split(" (", 1)[0] + (f" (delta {delta:+.3f}, n={comp.get('matched_tasks')})"
                                                   if isinstance(delta, (int, float)) else "")
    return text


def _version(exp: Mapping | None, card: Mapping | None, name: Any) -> str:
    """An agent's version: its fingerprint, and for a client preset the client and its version."""
    if not isinstance(name, str):
        return ""
    fp = _get(exp, "agent_fingerprints", name)
    solver = next((_get(card, k) for k in ("candidate", "baseline") if _get(card, k, "name") == name), None)
    fp = fp or _get(solver, "fingerprint")
    client = _get(solver, "client") or {}
    spec = _get(exp, "config_full", "agents", name) or {}
    cname, cver = _first(_get(client, "name"), _get(spec, "client")), _first(_get(client, "version"),
                                                                              _get(spec, "version"))
    return " ".join(x for x in (str(fp) if fp else "", f"{cname} {cver or '?'}" if cname else "") if x)


def experiment_row(exp_dir: Path, latest: str | None = None) -> dict:
    """One experiment folder as a row (plain strings, "—" for what it does not record)."""
    d, d_problem = _read(exp_dir / "decision.json")
    exp, _ = _read(exp_dir / "experiment.json")
    card, _ = _read(exp_dir / "card.json")
    cfg = _first(_get(exp, "config_full"), _get(exp, "config")) or {}
    comp = _get(d, "comparison") or {}
    stamp_of = exp_dir / "decision.json" if (exp_dir / "decision.json").is_file() else exp_dir
    try:
        mtime = stamp_of.stat().st_mtime
    except OSError:
        mtime = 0.0
    pack = _first(_get(exp, "pack_digest"), _get(d, "digests", "pack"), _get(card, "dataset", "pack_digest"))
    slice_no = _first(_get(d, "slice"), _get(exp, "slice"), _get(card, "dataset", "slice"),
                      _get(card, "dataset", "split", "slice"))
    split = _first(comp.get("split"), _get(cfg, "score_split"), _get(card, "dataset", "score_split"))
    n = _get(d, "n")
    pack_name = _first(_get(exp, "pack"), _get(cfg, "pack"))
    cand, base = _first(comp.get("candidate"), _get(cfg, "candidate")), _first(comp.get("baseline"),
                                                                                _get(cfg, "baseline"))
    return {
        "id": exp_dir.name, "latest": exp_dir.name == latest, "mtime": mtime,
        "date": dt.datetime.fromtimestamp(mtime, dt.UTC).strftime("%Y-%m-%d %H:%M") if mtime else NONE,
        "card": _text(_first(_get(cfg, "card_name"), _get(card, "name"))),
        "candidate": _text(cand), "candidate_version": _version(exp, card, cand),
        "baseline": _text(base), "baseline_version": _version(exp, card, base),
        "pack_name": Path(str(pack_name)).name if pack_name else "",
        "pack_digest": (str(pack)[:12] if pack else NONE) + (f" · slice {slice_no}" if slice_no is not None else ""),
        "pack": (" ".join(x for x in (Path(str(pack_name)).name if pack_name else "", str(pack)[:12] if pack else "")
                          if x) or NONE) + (f" · slice {slice_no}" if slice_no is not None else ""),
        "scored": _text(split) + (f", n={n}" if isinstance(n, int) else ""),
        "publishable": _get(d, "publishable") if isinstance(_get(d, "publishable"), bool) else None,
        "tone": decision_tone(d) if isinstance(d, Mapping) and isinstance(d.get("publishable"), bool) else "",
        "decision": _decision_text(d, d_problem),
        "links": [(name, f"experiments/{exp_dir.name}/{name}") for name in ("report.html", "report.md",
                                                                             "decision.json")
                  if (exp_dir / name).is_file()],
    }


def experiment_rows(results: Path) -> list[dict]:
    """Every folder under ``results/experiments/``, newest decision first (then by id)."""
    base = Path(results) / "experiments"
    latest_link = Path(paths.latest(str(results)))
    latest = Path(os.readlink(latest_link)).name if latest_link.is_symlink() else None
    dirs = sorted(p for p in base.iterdir() if p.is_dir()) if base.is_dir() else []
    rows = [experiment_row(p, latest) for p in dirs]
    return sorted(rows, key=lambda r: (-r["mtime"], r["id"]))


def _agent(r: Mapping, role: str) -> str:
    return r[role] + (f" ({r[role + '_version']})" if r.get(role + "_version") else "")


def _cells(r: Mapping) -> list[str]:
    return [r["id"] + (" (latest)" if r["latest"] else ""), r["date"], r["card"], _agent(r, "candidate"),
            _agent(r, "baseline"), r["pack"], r["scored"], r["decision"]]


def list_text(results: Path) -> str:
    """``sealbench list``: the index as aligned text, with the report of each experiment."""
    rows = experiment_rows(results)
    if not rows:
        return NO_EXPERIMENT.format(where=f"{results}/experiments/")
    table = [list(COLUMNS)] + [_cells(r) for r in rows]
    widths = [max(len(row[k]) for row in table) for k in range(len(COLUMNS) - 1)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  " + row[-1] for row in table]
    lines.append(f"{len(rows)} experiment{'s' if len(rows) != 1 else ''}; reports: "
                 f"{results}/experiments/<id>/report.html; index: {results}/index.html")
    return "\n".join(lines)


CSS = """body{margin:0 auto;max-width:1200px;padding:16px 24px 48px;color:#1d1d1f;
 font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',Arial,sans-serif}
h1{font-size:22px}table{border-collapse:collapse;width:100%;font-size:13px}
th,td{border:1px solid #d6d6d6;padding:4px 6px;text-align:left;vertical-align:top}th{background:#f0f3f7}
.mono{font-family:ui-monospace,'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:12px}
.ok{background:#e3f4e6}.no{background:#fbe5e3}.neutral{background:#f1f1f1}.sub{color:#555;font-size:13px}a{margin-right:8px}
td:nth-child(2){white-space:nowrap}.mono.sub{font-size:11px;white-space:nowrap}td:nth-child(8){min-width:200px}td a{white-space:nowrap}.latest{font-size:11px;background:#1f5fa8;color:#fff;border-radius:3px;padding:0 4px;margin-left:4px}"""


def render_index(results: Path) -> str:
    """results/index.html: self-contained (inline CSS, no script, relative links only)."""
    rows = experiment_rows(results)
    e = html.escape
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>sealbench results — {len(rows)} experiment{'s' if len(rows) != 1 else ''}</title>",
           f"<style>{CSS}</style></head><body>", "<h1>sealbench results</h1>"]
    if not rows:
        out.append(f"<p>{e(NO_EXPERIMENT.format(where='results/experiments/'))}</p>")
    else:
        out.append('<p class="sub">Every experiment under experiments/, newest decision first (decided: when its '
                   "decision.json was written); each agent with its version (fingerprint, a client's version). "
                   "The decision: publishable with the headline and its passes over n, or per stratum only with "
                   "each stratum's passes over n, or refused with the refusal codes; then the comparison with its "
                   "delta and n. Green: publishable; grey: publishable but no better than doing nothing on any "
                   "stratum; red: refused. “—”: not recorded by the version that wrote it. "
                   "<code>sealbench list</code> prints the same; <code>sealbench show experiments/&lt;id&gt;</code> "
                   "one decision. Open a report from here (its links into tasks/ resolve from its own folder, "
                   "not through latest/).</p>")
        out.append("<table><tr>" + "".join(f"<th>{e(c)}</th>" for c in COLUMNS) + "<th>files</th></tr>")
        for r in rows:
            cls = f' class="{r["tone"]}"' if r["tone"] else ""
            first = f'<span class="mono">{e(r["id"])}</span>' + (' <span class="latest">latest</span>'
                                                                  if r["latest"] else "")
            cells = [first] + [e(c) for c in _cells(r)[1:]]
            for k, role in ((3, "candidate"), (4, "baseline")):  # the agent, its version beneath
                cells[k] = e(r[role]) + (f'<div class="mono sub">{e(r[role + "_version"])}</div>'
                                         if r.get(role + "_version") else "")
            if r["pack_name"]:  # the pack's name, its digest beneath
                cells[5] = e(r["pack_name"]) + f'<div class="mono sub">{e(r["pack_digest"])}</div>'
            links = " ".join(f'<a href="{e(href)}">{e(name)}</a>' for name, href in r["links"]) or NONE
            out.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells[:-1]) + f"<td{cls}>{cells[-1]}</td>"
                       + f"<td>{links}</td></tr>")
        out.append("</table>")
    out.append("</body></html>\n")
    return "\n".join(out)


def point_latest(latest: Path, exp_dir: Path) -> None:
    """Atomically point ``results/latest`` at the experiment folder (relative symlink)."""
    latest = Path(latest)
    target = os.path.relpath(exp_dir, latest.parent)
    tmp = latest.with_name(".latest.tmp")
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    os.symlink(target, tmp)
    os.replace(tmp, latest)


def write_index(results: Path) -> Path:
    """Write (atomically) and return results/index.html."""
    out = Path(results) / "index.html"
    atomic_write_text(out, render_index(Path(results)))
    return out


def cmd_list(args: argparse.Namespace) -> int:
    print(list_text(args.results))
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """``sealbench list [RESULTS]``."""
    p = sub.add_parser("list", help="every experiment under results/, newest first (as results/index.html)")
    p.add_argument("results", type=Path, nargs="?", default=Path(paths.RESULTS))
    p.set_defaults(func=cmd_list)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="sealbench.core.results_index", description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path, nargs="?", default=Path(paths.RESULTS))
    args = ap.parse_args(argv)
    print(f"results_index: wrote {write_index(args.results)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
