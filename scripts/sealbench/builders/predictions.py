"""SWE-bench predictions in and out: score a predictions file on a pack; export a solver's patches.

A SWE-bench predictions file is JSON Lines, one object per line::

    {"instance_id": "<task id>", "model_patch": "<unified diff>", "model_name_or_path": "<solver>"}

(a ``.json`` file holding a list of such objects is read too).

:func:`import_predictions` validates every row and scores each valid patch on a verified,
sealed copy of the pack's task (``hash_pack.seal_task`` into a temporary folder; the pack
itself is hidden from the scoring sandbox) with ``scoring.score_patch``, exactly as
``hidden_score`` scores an agent's patch: against decoy tests made for the task first
(``run_dummy.task_decoys``, ``decoys_per_task`` of them), so a forged patch passes a decoy and is
``tamper``; each record says how many decoys its task carried, ``summary.json`` the coverage. One record per row is written into the output
folder (``<instance_id>.json``, or ``error-line-<N>.json`` for a row that could not be
scored) plus ``summary.json``. A bad row never stops the others.

Row statuses: ``pass`` / ``fail`` / ``tamper`` / ``infra_fail`` as in ``hidden_score``;
``error`` for a malformed row (invalid JSON, a missing or non-string field, an
``instance_id`` that is no task of the pack, a repeated ``instance_id``, a patch that is not
a unified diff), with the line number and the field in the message. An empty (or
whitespace-only, or ``null``) ``model_patch`` is ``fail`` with reason ``empty patch`` and
``empty_patch: true``; it is not run (SWE-bench counts it as an empty patch too).

A predictions file carries no clock: every record has ``clock_verified: false``,
``clock: "unverified"``, ``time_to_green_s: null`` and ``wall_s: null``, so no time claim can
be made from it.

:func:`export_predictions` writes the epoch-1 patches of one solver of a finished run as such a
file (controls ``oracle``, ``stub``, ``empty_diff`` from the task's ``controls/`` folder).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from ..core.core import (
    CONTROLS,
    SealbenchError,
    read_json,
    task_digest,
    write_json,
)
from ..core.untrusted import remove_tree
from ..isolation.sandbox import MODES as SANDBOX_MODES
from ..pack.packs import load_pack

FIELDS = ("instance_id", "model_patch", "model_name_or_path")
SUMMARY = "summary.json"


class PredictionsError(SealbenchError):
    """The predictions file (or the results folder) as a whole cannot be used."""


# --------------------------------------------------------------------------------------------
# Reading and validating rows


def read_rows(path: Path) -> list[tuple[int, object, str | None]]:
    """``(line number, parsed object or None, error or None)`` for every non-blank line of a
    JSONL file, or every item of a JSON list file (numbered from 1). Raises
    :class:`PredictionsError` only when the file itself cannot be read."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise PredictionsError(f"{path}: cannot read the predictions file ({exc.strerror or exc})") from exc
    if raw.lstrip()[:1] == b"[":
        try:
            items = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            items = None                      # not a JSON list after all: read it line by line
        if isinstance(items, list):
            return [(i, item, None) for i, item in enumerate(items, start=1)]
    rows: list[tuple[int, object, str | None]] = []
    for lineno, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            rows.append((lineno, None, f"line {lineno}: not UTF-8 text ({exc.reason} at byte {exc.start})"))
            continue
        try:
            rows.append((lineno, json.loads(text), None))
        except json.JSONDecodeError as exc:
            rows.append((lineno, None, f"line {lineno}: invalid JSON (column {exc.colno}: {exc.msg})"))
    return rows


def validate_row(lineno: int, obj: object, task_ids: set[str], solver: str | None) -> tuple[str | None, str | None]:
    """``(field, message)`` of the first problem of one parsed row, or ``(None, None)``."""
    if not isinstance(obj, dict):
        return None, f"line {lineno}: expected a JSON object, got {type(obj).__name__}"
    for name in FIELDS:
        if name == "model_name_or_path" and solver is not None and name not in obj:
            continue                         # --solver names the solver
        if name not in obj:
            return name, f"line {lineno}: field '{name}' is missing"
        val = obj[name]
        if name == "model_patch" and val is None:
            continue                         # null patch: an empty patch, as in SWE-bench
        if not isinstance(val, str):
            return name, f"line {lineno}: field '{name}' must be a string, got {type(val).__name__}"
    iid = obj["instance_id"]
    if iid not in task_ids:
        hint = sorted(task_ids)
        shown = ", ".join(hint[:5]) + (", …" if len(hint) > 5 else "")
        return "instance_id", f"line {lineno}: field 'instance_id': {iid!r} is not a task of the pack ({shown})"
    if not (solver or obj["model_name_or_path"].strip()):
        return "model_name_or_path", f"line {lineno}: field 'model_name_or_path' is empty"
    patch = obj["model_patch"] or ""
    if patch.strip():
        from ..pack.patches import split_patch

        try:
            split_patch(patch.encode("utf-8", "surrogateescape"))
        except ValueError as exc:
            why = str(exc).removeprefix("not a unified diff: ")
            return "model_patch", f"line {lineno}: field 'model_patch' is not a unified diff ({why})"
    return None, None


# --------------------------------------------------------------------------------------------
# Import (score)


def _unverified_clock() -> dict:
    return {"clock_verified": False, "clock": "unverified", "time_to_green_s": None, "wall_s": None}


def _error_record(lineno: int, message: str, field: str | None, obj: object, solver: str | None,
                  source: dict) -> dict:
    o = obj if isinstance(obj, dict) else {}
    iid = o.get("instance_id") if isinstance(o.get("instance_id"), str) else None
    name = solver or (o.get("model_name_or_path") if isinstance(o.get("model_name_or_path"), str) else None)
    return {"line": lineno, "instance_id": iid, "task_id": None, "solver": name, "status": "error",
            "reason": message, "error": message, "field": field, "empty_patch": None,
            "visible_pass": None, "hidden_pass": None, "tamper_paths": [], "patch_applied": False,
            "gold_similarity": None, "gold_like": None, **_unverified_clock(), "source": source}


def _record_name(rec: dict) -> str:
    if rec["status"] == "error":
        return f"error-line-{rec['line']:05d}.json"
    return f"{rec['instance_id']}.json"


def _clear_previous(out_dir: Path) -> None:
    """Remove the records a previous import wrote into ``out_dir`` (listed in its summary)."""
    prev = out_dir / SUMMARY
    if not prev.is_file():
        return
    try:
        names = read_json(prev).get("files", [])
    except (SealbenchError, ValueError, OSError, AttributeError):
        return
    for name in names:
        if isinstance(name, str) and "/" not in name and name.endswith(".json"):
            (out_dir / name).unlink(missing_ok=True)
    prev.unlink(missing_ok=True)


def import_predictions(jsonl: Path, pack: Path, out_dir: Path, solver: str | None = None,
                       sandbox_mode: str = "auto", timeout_s: float = 300, decoys_per_task: int = 2) -> list[dict]:
    """Validate and score every row of a predictions file on ``pack`` (see module docstring);
    write one record per row into ``out_dir`` plus ``summary.json``; return the records in
    file order. Raises :class:`PredictionsError` only when the file cannot be read (and
    :class:`~sealbench.core.core.PackError` when the pack is invalid)."""
    from ..isolation.sandbox import make_sandbox, resolve_level
    from ..pack.workspace import scratch_dir
    from ..scoring.scoring import score_patch
    from ..scoring.verdict import Evidence, decide
    from ..stages.hash_pack import seal_task
    from ..stages.run_dummy import task_decoys

    jsonl, out_dir = Path(jsonl), Path(out_dir).absolute()
    rows = read_rows(jsonl)
    tasks = {t.id: t for t in load_pack(pack)}
    source = {"file": str(jsonl), "sha256": hashlib.sha256(jsonl.read_bytes()).hexdigest(), "format": "swe-bench"}
    out_dir.mkdir(parents=True, exist_ok=True)
    _clear_previous(out_dir)
    level = resolve_level(sandbox_mode)
    first_line: dict[str, int] = {}
    sealed: dict[str, tuple[Path, str]] = {}
    decoyed: dict = {}          # task id -> (decoys.Suite, how it was made)
    records: list[dict] = []
    tmp = scratch_dir("predictions")          # the sealed copies: hidden from the scoring sandbox too
    try:
        box = make_sandbox(level, hide=[Path(pack).absolute(), tmp])
        for lineno, obj, err in rows:
            field = None
            if err is None:
                field, err = validate_row(lineno, obj, set(tasks), solver)
            if err is None and obj["instance_id"] in first_line:
                field, err = "instance_id", (f"line {lineno}: field 'instance_id': {obj['instance_id']!r} repeats "
                                             f"line {first_line[obj['instance_id']]} (one prediction per instance)")
            if err is not None:
                records.append(_error_record(lineno, err, field, obj, solver, source))
                continue
            iid = obj["instance_id"]
            first_line[iid] = lineno
            name = solver or obj["model_name_or_path"]
            patch_text = obj["model_patch"] or ""
            rec = {"line": lineno, "instance_id": iid, "task_id": iid, "solver": name,
                   "model_name_or_path": obj.get("model_name_or_path"), "status": None, "reason": None,
                   "error": None, "field": None, "empty_patch": not patch_text.strip(),
                   "patch_sha256": hashlib.sha256(patch_text.encode("utf-8", "surrogateescape")).hexdigest(),
                   **_unverified_clock(), "source": source}
            if rec["empty_patch"]:
                empty = decide(Evidence(empty_patch="model_patch is null" if obj["model_patch"] is None else ""))
                rec.update(status=empty.status, reason=empty.reason,
                           visible_pass=None, hidden_pass=None, tamper_paths=[], patch_applied=False,
                           gold_similarity=None, gold_like=None, task_digest=None)
                records.append(rec)
                continue
            try:
                if iid not in sealed:
                    digest = task_digest(tasks[iid].dir)
                    dest = tmp / iid
                    dest.mkdir()
                    seal_task(tasks[iid].dir, digest, dest / "sealed", dest / "sealed.json")
                    sealed[iid] = (dest / "sealed", digest)
                sdir, digest = sealed[iid]
                meta = read_json(sdir / "meta.json")
                if iid not in decoyed:      # the task's decoys, made once (what hidden_score scores against)
                    decoyed[iid] = task_decoys(sdir, meta, tmp / iid / "decoys", decoys_per_task, timeout_s, box)
                suite, made = decoyed[iid]
                rec.update(decoys=len(suite.spec), decoys_why_none=made.get("why_none"))
                oracle_file = sdir / "oracle.patch"
                res = score_patch(sdir, meta, patch_text.encode("utf-8", "surrogateescape"),
                                  out_dir / "logs" / f"line-{lineno:05d}-{iid}", timeout_s,
                                  oracle=oracle_file.read_bytes() if oracle_file.exists() else None, sandbox=box,
                                  hidden_tests=suite.tests, decoys=suite.spec, hidden_command=suite.command)
                rec.update(status=res.status, reason=res.reason, visible_pass=res.visible_pass,
                           hidden_pass=res.hidden_pass, tamper_paths=res.tamper_paths,
                           patch_applied=res.patch_applied, gold_similarity=res.gold_similarity,
                           gold_like=res.gold_like, task_digest=digest, scoring_isolation=level,
                           score=res.to_dict())
            except Exception as exc:  # noqa: BLE001 - one row must never stop the others
                raised = decide(Evidence(scoring_error=f"scoring raised {type(exc).__name__}: {exc}"))
                rec.update(status=raised.status, reason=raised.reason,
                           visible_pass=None, hidden_pass=None, tamper_paths=[], patch_applied=False,
                           gold_similarity=None, gold_like=None, task_digest=None)
            records.append(rec)
    finally:
        remove_tree(tmp)   # sealed (read-only) copies: permission given back as it goes
    files = []
    for rec in records:
        name = _record_name(rec)
        write_json(out_dir / name, rec)
        files.append(name)
    counts: dict[str, int] = {}
    for rec in records:
        counts[rec["status"]] = counts.get(rec["status"], 0) + 1
    covered = sorted(i for i, (suite, _m) in decoyed.items() if suite.spec)
    write_json(out_dir / SUMMARY, {"source": source, "pack": str(pack), "solver": solver, "rows": len(records),
                                   "counts": dict(sorted(counts.items())), "clock_verified": False,
                                   "decoys": {"per_task": decoys_per_task, "tasks_scored": len(decoyed),
                                              "tasks_covered": len(covered),
                                              "uncovered": sorted(set(decoyed) - set(covered))},
                                   "files": files,
                                   "records": [{k: r[k] for k in ("line", "instance_id", "solver", "status", "reason")}
                                               for r in records]})
    return records


# --------------------------------------------------------------------------------------------
# Export


def _experiment_of(path: Path) -> tuple[Path, dict | None]:
    """``(results root, experiment.json or None)`` for a results folder or an experiment."""
    path = Path(path)
    if (path / "experiment.json").is_file():
        return path.resolve().parent.parent, read_json(path / "experiment.json")
    if (path / "latest" / "experiment.json").is_file():
        return path, read_json(path / "latest" / "experiment.json")
    if (path / "tasks").is_dir():
        return path, None
    raise PredictionsError(f"{path}: neither a results folder (with tasks/) nor an experiment (with experiment.json)")


def _patch_files(root: Path, exp: dict | None, solver: str) -> dict[str, Path]:
    """task id → the solver's epoch-1 patch file."""
    tasks_dir = root / "tasks"
    control = solver in CONTROLS
    out: dict[str, Path] = {}
    if exp is not None:
        fp = None
        if not control:
            fp = exp.get("agent_fingerprints", {}).get(solver)
            if fp is None:
                known = sorted(exp.get("agent_fingerprints", {})) + list(CONTROLS)
                raise PredictionsError(f"solver {solver!r} is not in experiment {exp.get('exp_id')} "
                                       f"(solvers: {', '.join(known)})")
        for tid, digest in sorted(exp.get("task_digests", {}).items()):
            base = tasks_dir / tid / digest
            f = base / "controls" / f"{solver}.patch" if control else base / "runs" / solver / fp / "1" / "patch.diff"
            if f.is_file():
                out[tid] = f
        return out
    if not tasks_dir.is_dir():
        return out
    for tdir in sorted(p for p in tasks_dir.iterdir() if p.is_dir()):
        pattern = f"*/controls/{solver}.patch" if control else f"*/runs/{solver}/*/1/patch.diff"
        found = sorted(tdir.glob(pattern))
        if len(found) > 1:
            raise PredictionsError(
                f"{tdir}: {len(found)} epoch-1 patches of {solver!r} (several task versions or agent fingerprints); "
                "give an experiment folder (results/experiments/<id>) to choose one")
        if found:
            out[tdir.name] = found[0]
    return out


def export_predictions(results_dir_or_experiment: Path, solver: str, out: Path) -> list[dict]:
    """Write ``solver``'s epoch-1 patches as a SWE-bench predictions JSONL file, sorted by
    ``instance_id``; return the rows. ``results_dir_or_experiment`` is an experiment folder
    (its task digests and agent fingerprint choose the patches), or a results folder (its
    ``latest`` experiment, else the only patch of each task)."""
    root, exp = _experiment_of(Path(results_dir_or_experiment))
    files = _patch_files(root, exp, solver)
    if not files:
        raise PredictionsError(f"{results_dir_or_experiment}: no epoch-1 patch of solver {solver!r} found")
    rows = []
    for tid in sorted(files):
        data = files[tid].read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            print(f"predictions: WARNING {files[tid]}: not UTF-8; undecodable bytes replaced", file=sys.stderr)
            text = data.decode("utf-8", "replace")
        rows.append({"instance_id": tid, "model_patch": text, "model_name_or_path": solver})
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    from ..core.core import atomic_write_text

    atomic_write_text(out, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return rows


# --------------------------------------------------------------------------------------------
# CLI (also reached as `sealbench predictions …`)


def format_table(records: list[dict]) -> str:
    """A plain table: line, instance, status, reason."""
    head = ("line", "instance", "status", "reason")
    body = [(str(r["line"]), str(r["instance_id"] or "—"), r["status"], (r["reason"] or "").replace("\n", " ")[:160])
            for r in records]
    widths = [max(len(x[i]) for x in [head, *body]) for i in range(3)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(head[:3], widths)) + "  " + head[3]]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row[:3], widths)) + "  " + row[3] for row in body]
    return "\n".join(lines)


def cmd_import(args: argparse.Namespace) -> int:
    out = args.out or Path("results") / "predictions" / Path(args.file).stem
    recs = import_predictions(args.file, args.pack, out, args.solver, args.sandbox, args.timeout, args.decoys)
    print(format_table(recs))
    counts: dict[str, int] = {}
    for r in recs:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    print(f"{len(recs)} rows: " + ", ".join(f"{k}={v}" for k, v in sorted(counts.items()))
          + f"; records in {out}. No clock: time claims are refused for these rows.")
    d = read_json(Path(out) / SUMMARY).get("decoys") or {}
    if d.get("tasks_scored"):
        print(f"decoys: {d['tasks_covered']} of {d['tasks_scored']} tasks scored carry decoy tests"
              + (f"; none for {', '.join(d['uncovered'][:8])} (a forged patch there is not caught)"
                 if d.get("uncovered") else ""))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    rows = export_predictions(args.results, args.solver, args.out)
    print(f"wrote {len(rows)} predictions of {args.solver} to {args.out}")
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """``predictions import`` and ``predictions export`` under a ``sealbench`` sub-parser."""
    sp = sub.add_parser("predictions", help="SWE-bench predictions files: score one on a pack, or export a solver")
    psub = sp.add_subparsers(dest="predictions_cmd", required=True)
    p = psub.add_parser("import", help="score every row of a predictions JSONL file on a pack")
    p.add_argument("file", type=Path)
    p.add_argument("--pack", type=Path, required=True)
    p.add_argument("--out", type=Path, default=None, help="records folder (default results/predictions/<file stem>)")
    p.add_argument("--solver", default=None, help="solver name for every row (default: model_name_or_path)")
    p.add_argument("--timeout", type=float, default=300, help="clock of each scoring command, seconds")
    p.add_argument("--sandbox", default="auto", choices=SANDBOX_MODES)
    p.add_argument("--decoys", type=int, default=2, help="decoy tests made per task (each must fail; default 2)")
    p.set_defaults(func=cmd_import)
    p = psub.add_parser("export", help="write a solver's epoch-1 patches as a predictions JSONL file")
    p.add_argument("--results", type=Path, default=Path("results"), help="results folder or an experiment folder")
    p.add_argument("--solver", required=True)
    p.add_argument("--out", type=Path, required=True)
    p.set_defaults(func=cmd_export)
