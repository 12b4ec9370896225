"""Every package is pinned once across requirements*.txt, with `==`: two pins of one package drift apart
unnoticed (issue 49 found mcp, pydantic, pydantic-core and annotated-types pinned twice), and a range pin
installs a different version on the next machine."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENT = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*(?P<rest>.*)$")


def normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()  # PEP 503: pydantic_core and pydantic-core are one package


def pins(files: list[Path]) -> tuple[dict[str, list[str]], list[str]]:
    """({package: ["file:line", …]}, [lines that are not `name==version`]) of the given requirement files."""
    where: dict[str, list[str]] = defaultdict(list)
    bad = []
    for path in files:
        for number, raw in enumerate(path.read_text().splitlines(), start=1):
            line = raw.split("#", 1)[0].strip()
            if not line or line.startswith(("-r ", "--requirement", "-c ")):
                continue
            # requirements-models.txt pins by hash as well (`--hash=sha256:…`, pip's hash-checking mode)
            line = re.sub(r"\s+--hash=sha256:[0-9a-f]{64}", "", line)
            match = REQUIREMENT.match(line)
            place = f"{path.name}:{number}"
            if not match or not re.fullmatch(r"==\s*[A-Za-z0-9.+!-]+", match["rest"].split(";", 1)[0].strip()):
                bad.append(f"{place}: {raw.strip()}")
                continue
            where[normalised(match["name"])].append(place)
    return where, bad


def requirement_files() -> list[Path]:
    return sorted(ROOT.glob("requirements*.txt"))


def test_no_package_is_pinned_twice_across_the_requirement_files():
    where, _ = pins(requirement_files())
    twice = {name: places for name, places in where.items() if len(places) > 1}
    assert not twice, f"pinned more than once (keep one pin, in the file that needs it): {twice}"


def test_every_pin_is_exact():
    _, bad = pins(requirement_files())
    assert not bad, f"pin with == (name==version): {bad}"


def test_the_check_sees_a_double_pin_and_a_range(tmp_path):
    runtime = tmp_path / "requirements.txt"
    runtime.write_text("Django==5.2.19\npydantic_core==2.50.5  # comment\npsycopg[binary]==3.3.9\n")
    dev = tmp_path / "requirements-dev.txt"
    dev.write_text("-r requirements.txt\npydantic-core==2.50.5\nruff>=0.17\nmypy\n")
    where, bad = pins([runtime, dev])
    assert where["pydantic-core"] == ["requirements.txt:2", "requirements-dev.txt:2"]
    assert where["psycopg"] == ["requirements.txt:3"]
    assert bad == ["requirements-dev.txt:3: ruff>=0.17", "requirements-dev.txt:4: mypy"]
