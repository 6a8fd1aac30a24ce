"""hash_pack: content digests for every task and for the pack; sealed copies for the jobs.

Reads:  PACK/tasks/<id>/** and PACK/denylist.txt
Writes: per task  results/tasks/<id>/<task_digest>/sealed/   (read-only verified copy)
                  results/tasks/<id>/<task_digest>/sealed.json
        per pack  results/packs/<pack_digest>/PACK_HASH.txt  (sha256sum-style lines)
                  results/packs/<pack_digest>/task_digests.tsv

A task digest is sha256 over the sorted ``relative/path NUL sha256(bytes)`` lines of the task
folder; symlinks and special files are refused. The pack digest covers the task digests and
the denylist. Downstream paths carry these digests, so one changed byte reruns exactly the jobs
of that task plus the pack-level aggregates, and reverting it makes the old outputs current.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..core import paths
from ..core.core import (
    HashCache,
    PackError,
    SealbenchError,
    atomic_write_text,
    denylist_digest,
    digest_entries,
    make_writable,
    pack_digest,
    read_json,
    task_digest,
    tree_entries,
    write_json,
)
from ..pack.packs import Task, load_pack


class DigestMismatch(SealbenchError):
    """The task changed between planning and sealing (someone edited the pack mid-run)."""


@dataclass(frozen=True)
class PackPlan:
    """What the Snakefile needs at parse time: the validated tasks and all digests."""

    pack: Path
    tasks: dict[str, Task]
    task_digests: dict[str, str]
    denylist_digest: str
    pack_digest: str
    #: Writes the stat caches planning filled (``plan_pack(write_caches=False)`` defers it).
    save_caches: Callable[[], None] = field(default=lambda: None, repr=False, compare=False)


def plan_pack(pack: Path, strata: list[str] | None = None, cache_path: Path | None = None,
              write_caches: bool = True) -> PackPlan:
    """Validate the pack and digest every task (with a stat cache so re-planning is cheap).

    ``write_caches=False``: planning writes nothing (``snakemake -n``, ``--lint``); the caches are
    written when the caller calls ``plan.save_caches()`` (the Snakefile does it at ``onstart``)."""
    pack = Path(pack)
    ok_path = Path(cache_path).with_name("meta-schema-ok.json") if cache_path else None
    schema_ok: set[str] = set()
    if ok_path is not None and ok_path.exists():
        try:
            schema_ok = set(json.loads(ok_path.read_text()))
        except (OSError, ValueError, TypeError):
            schema_ok = set()
    known = len(schema_ok)
    tasks = load_pack(pack, strata, schema_ok)
    cache = HashCache(cache_path)
    digests = {t.id: task_digest(t.dir, cache) for t in tasks}

    def save() -> None:
        if ok_path is not None and len(schema_ok) != known:
            ok_path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(ok_path, json.dumps(sorted(schema_ok)))
        cache.save()

    if write_caches:
        save()
    ddig = denylist_digest(pack)
    return PackPlan(pack, {t.id: t for t in tasks}, digests, ddig, pack_digest(digests, ddig), save)


def seal_task(task_dir: Path, expected: str, out_dir: Path, record: Path) -> dict:
    """Copy ``task_dir`` to ``out_dir``, verify the copy's digest equals ``expected``, set its
    files to 0644, and write a record. Later jobs read only this verified copy."""
    task_dir, out_dir = Path(task_dir), Path(out_dir)
    tmp = out_dir.with_name(out_dir.name + ".partial")
    for p in (tmp, out_dir):
        if p.exists():
            make_writable(p)
            shutil.rmtree(p)
    shutil.copytree(task_dir, tmp, symlinks=True)
    entries = tree_entries(tmp)
    got = digest_entries(entries)
    if got != expected:
        make_writable(tmp)
        shutil.rmtree(tmp)
        raise DigestMismatch(
            f"{task_dir}: content digest is {got[:12]}… but the workflow was planned with {expected[:12]}…; "
            "the task changed while the workflow ran. Rerun snakemake to plan with the new content."
        )
    for dirpath, _dirs, files in os.walk(tmp):
        for name in files:
            # read-only to every command (sandboxes mount it read-only; a workspace is an overlay
            # over it), but owner-writable: the overlay copies a file up when the worker opens it
            # for writing, and a copy-up keeps the mode (0444 would refuse the worker's write)
            os.chmod(Path(dirpath, name), 0o644)
    os.replace(tmp, out_dir)
    meta = read_json(out_dir / "meta.json")
    rec = {
        "task_id": meta.get("id", task_dir.name),
        "task_digest": got,
        "files": len(entries),
        "bytes": sum(e.size for e in entries),
    }
    write_json(record, rec)
    return rec


def write_pack_hash(records: list[dict], denylist_dig: str, out_txt: Path, out_tsv: Path) -> str:
    """Aggregate the task records into ``PACK_HASH.txt`` and ``task_digests.tsv``; return the
    pack digest."""
    digests = {r["task_id"]: r["task_digest"] for r in records}
    pdig = pack_digest(digests, denylist_dig)
    lines = [f"{d}  tasks/{tid}" for tid, d in sorted(digests.items())]
    lines.append(f"{denylist_dig}  denylist.txt")
    lines.append(f"{pdig}  PACK")
    atomic_write_text(out_txt, "\n".join(lines) + "\n")
    rows = ["task_id\ttask_digest\tfiles\tbytes"]
    rows += [f"{r['task_id']}\t{r['task_digest']}\t{r['files']}\t{r['bytes']}" for r in sorted(records, key=lambda r: r["task_id"])]
    atomic_write_text(out_tsv, "\n".join(rows) + "\n")
    return pdig


def parser() -> argparse.ArgumentParser:
    """This stage's command line; :mod:`sealbench.stages.steps` writes the argv the workflow passes (``seal``)."""
    ap = argparse.ArgumentParser(prog="sealbench.stages.hash_pack", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("seal", help="copy and verify one task")
    where = s.add_mutually_exclusive_group(required=True)
    where.add_argument("--task", help=f"a task id of the pack named by ${paths.PACK_ENV} (what the workflow passes)")
    where.add_argument("--task-dir", type=Path, help="a task folder")
    s.add_argument("--digest", required=True)
    s.add_argument("--out", required=True, type=Path)
    s.add_argument("--record", required=True, type=Path)
    a = sub.add_parser("aggregate", help="write PACK_HASH.txt and task_digests.tsv")
    a.add_argument("--denylist-digest", required=True)
    a.add_argument("--out-txt", required=True, type=Path)
    a.add_argument("--out-tsv", required=True, type=Path)
    a.add_argument("records", nargs="*", type=Path)
    a.add_argument("--task-list", type=Path, help="the plan's task list (paths.task_list): read each task's sealed record")
    a.add_argument("--batches", nargs="*", type=Path, default=[], help="task_batch done.json files (their sealed records)")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.cmd == "seal":
            task_dir = args.task_dir or paths.pack_root() / "tasks" / args.task
            rec = seal_task(task_dir, args.digest, args.out, args.record)
            print(f"sealed {rec['task_id']} {rec['task_digest'][:12]} ({rec['files']} files)")
        else:
            records = list(args.records) + [Path(r) for b in args.batches for r in read_json(b)["sealed"]]
            if args.task_list and not args.batches:
                records += [Path(paths.sealed_record(t, d)) for t, d in paths.read_task_list(args.task_list)]
            if not records:
                raise SealbenchError("aggregate: no sealed records given")
            pdig = write_pack_hash([read_json(p) for p in records], args.denylist_digest, args.out_txt, args.out_tsv)
            print(f"pack digest {pdig}")
    except (SealbenchError, PackError) as exc:
        print(f"hash_pack: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
