"""The README's two installs agree (issue 35.2): ``pip install -e '.[test]'`` after ``pip install -e .``
changes no distribution the first installed. pip keeps what is installed unless a new requirement
excludes it, so the test extra must not cap a distribution of the first install tighter than that
install's own requirements do. (mini-swe-agent in the test extra once did: litellm → boto3 →
botocore capped python-dateutil below 3, so the second install downgraded it from 4.0.0 and the
toolchain, then covering it, moved.) The requirements as pyproject.toml states them; what they pull in
as installed in this environment."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import InvalidVersion, Version

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements(dist: metadata.Distribution, extra: str = "") -> list[Requirement]:
    """``dist``'s requirements for this platform: without extras, or only those of ``extra``."""
    out = []
    for text in dist.requires or []:
        r = Requirement(text)
        plain = r.marker is None or r.marker.evaluate({"extra": ""})
        if (not extra and plain) or (extra and not plain and r.marker.evaluate({"extra": extra})):
            out.append(r)
    return out


def closure(roots: list[Requirement]) -> dict[str, metadata.Distribution]:
    """The installed distributions ``roots`` need, transitively (by normalised name)."""
    seen: dict[str, metadata.Distribution] = {}
    todo = [r.name for r in roots]
    while todo:
        n = _norm(todo.pop())
        if n in seen:
            continue
        try:
            seen[n] = metadata.distribution(n)
        except metadata.PackageNotFoundError:
            continue
        todo += [r.name for r in requirements(seen[n])]
    return seen


def cap(req: Requirement) -> Version | None:
    """The tightest upper bound of a requirement (``<X``, ``<=X``, ``==X``, ``~=X.Y``), or None."""
    bounds = []
    for s in req.specifier:
        try:
            v = Version(s.version.rstrip(".*"))
        except InvalidVersion:
            continue
        if s.operator in ("<", "<=", "==", "==="):
            bounds.append(v)
        elif s.operator == "~=":
            parts = list(v.release[:-1]) or [v.major]
            parts[-1] += 1
            bounds.append(Version(".".join(map(str, parts))))
    return min(bounds) if bounds else None


def tighter_caps(base_reqs: list[Requirement], base: dict, extra_reqs: list[Requirement], extra: dict) -> list[str]:
    """Requirements of the extra (its own, and those of what only it installs) that cap a
    distribution of the base install below every cap the base's own requirements put on it."""
    base_caps: dict[str, list[Version | None]] = {}
    for r in base_reqs + [r for d in base.values() for r in requirements(d)]:
        base_caps.setdefault(_norm(r.name), []).append(cap(r))
    out = []
    by = [("sealbench[test]", r) for r in extra_reqs] + [(n, r) for n, d in extra.items() if n not in base
                                                         for r in requirements(d)]
    for who, r in by:
        n, c = _norm(r.name), cap(r)
        if n not in base or c is None:
            continue
        theirs = [b for b in base_caps.get(n, []) if b is not None]
        if not theirs or min(theirs) > c:
            out.append(f"{who} requires {r} (the first install allows {n} up to "
                       f"{min(theirs) if theirs else 'any version'}; installed {base[n].version})")
    return out


def test_the_test_extra_caps_nothing_the_first_install_installed_tighter_than_it_does() -> None:
    # the two installs' requirements as pyproject.toml states them now (an editable install's
    # metadata is what pyproject.toml said when it was installed); what they pull in, as installed
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    env = {"extra": ""}
    base_reqs = [r for r in map(Requirement, project["dependencies"]) if r.marker is None or r.marker.evaluate(env)]
    extra_reqs = [r for r in map(Requirement, project["optional-dependencies"]["test"])
                  if r.marker is None or r.marker.evaluate(env)]
    assert extra_reqs, "the test extra lists nothing"
    base = closure(base_reqs)
    extra = closure(extra_reqs)
    assert tighter_caps(base_reqs, base, extra_reqs, extra) == [], (
        "the second install would move what the first installed: pin the base dependency in pyproject.toml "
        "(and environment.yml) as the test extra needs it, or drop what brings the cap")


def test_a_cap_below_the_first_install_is_caught() -> None:
    """botocore's ``python-dateutil<3`` under a base that allows any dateutil is caught; the same
    cap as the base's own (snakemake's ``<2.0`` on its interface) is not."""
    base_reqs = [Requirement("pandas>=2")]

    class Dist:
        def __init__(self, name, version, requires):
            self.version, self.requires, self.metadata = version, requires, {"Name": name}

    base = {"pandas": Dist("pandas", "2.3", ["python-dateutil>=2.8.2"]),
            "python-dateutil": Dist("python-dateutil", "4.0.0", [])}
    extra = {"botocore": Dist("botocore", "1.0", ["python-dateutil<3.0.0,>=2.1"])}
    found = tighter_caps(base_reqs, base, [Requirement("botocore")], extra)
    assert len(found) == 1 and "botocore requires python-dateutil" in found[0] and "4.0.0" in found[0]
    base["pandas"].requires.append("python-dateutil<3.0")
    assert tighter_caps(base_reqs, base, [Requirement("botocore")], extra) == []
    assert cap(Requirement("x~=1.4.2")) == Version("1.5") and cap(Requirement("x>=1")) is None
