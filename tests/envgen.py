"""Offline wheels for the environment tests: a tiny package written as a wheel, and the
harness's pytest (and what it requires) re-packed from the installed distributions, so an
environment builds with ``PIP_NO_INDEX``/``UV_NO_INDEX`` and a find-links folder — no network."""

from __future__ import annotations

import base64
import hashlib
import re
import zipfile
from importlib import metadata
from pathlib import Path

#: what every environment installs besides its requirements (the harness's pytest and its needs)
PYTEST_CLOSURE = ("pytest", "pluggy", "iniconfig", "packaging", "pygments")


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def write_wheel(out: Path, name: str, version: str, files: dict[str, bytes], metadata_text: str | None = None) -> Path:
    """A pure-Python wheel of ``files`` (path in site-packages -> bytes)."""
    out.mkdir(parents=True, exist_ok=True)
    norm = re.sub(r"[-_.]+", "_", name)
    info = f"{norm}-{version}.dist-info"
    meta = metadata_text or f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    entries = dict(files)
    entries[f"{info}/METADATA"] = meta.encode()
    entries[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: sealbench-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = [_record_line(k, v) for k, v in entries.items()] + [f"{info}/RECORD,,"]
    path = out / f"{norm}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for k, v in entries.items():
            z.writestr(k, v)
        z.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return path


def repack(dist_name: str, out: Path) -> Path:
    """A wheel of an installed pure-Python distribution (its files in site-packages)."""
    dist = metadata.distribution(dist_name)
    files: dict[str, bytes] = {}
    for f in dist.files or []:
        s = str(f)
        if s.startswith("..") or ".dist-info/" in s or s.endswith((".pyc",)) or "__pycache__" in s:
            continue
        p = Path(dist.locate_file(f))
        if p.is_file():
            files[s] = p.read_bytes()
    entry = dist.read_text("entry_points.txt")
    info = f"{re.sub(r'[-_.]+', '_', dist.metadata['Name'])}-{dist.version}.dist-info"
    if entry:
        files[f"{info}/entry_points.txt"] = entry.encode()
    return write_wheel(out, dist.metadata["Name"], dist.version, files, dist.read_text("METADATA"))


def offline_index(folder: Path, extra: dict[str, dict[str, str]] | None = None) -> Path:
    """A find-links folder: the pytest closure re-packed, plus ``extra`` tiny packages
    (``{"tinypkg==1.0": {"tinypkg/__init__.py": "..."}}``)."""
    for name in PYTEST_CLOSURE:
        try:
            repack(name, folder)
        except metadata.PackageNotFoundError:
            continue
    for spec, files in (extra or {}).items():
        name, version = spec.split("==")
        write_wheel(folder, name, version, {k: v.encode() for k, v in files.items()})
    return folder


def offline_env_vars(folder: Path) -> dict[str, str]:
    """Installer variables that install only from ``folder``."""
    return {"PIP_FIND_LINKS": str(folder), "PIP_NO_INDEX": "1", "UV_FIND_LINKS": str(folder), "UV_NO_INDEX": "1",
            "UV_OFFLINE": "1"}
