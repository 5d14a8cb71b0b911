#!/usr/bin/env python
"""Resolve the GPU requirement sets with pip's own resolver, offline, from a metadata snapshot.

Why: resolving the CUDA set against an index downloads every wheel whose metadata the index does not
serve separately (PEP 658); for vLLM + torch + the NVIDIA libraries that is several GB. The snapshot
(``envs/metadata/index.json``: name, version, Requires-Dist, Requires-Python of every candidate) was
captured from pip's resolver report against PyPI (``capture``) plus the installed CPU venv. ``resolve``
turns it into metadata-only stub wheels and runs ``pip install --dry-run --no-index --report`` on them:
the real resolver over the real metadata, in seconds, with no download.

    python scripts/stack_metadata.py capture --report r.json [--report ...] [--installed NAME ...]
    python scripts/stack_metadata.py resolve -r envs/requirements-cuda.txt --report out.json
    python scripts/stack_metadata.py resolve -r envs/requirements-vllm-cpu.txt \
        --snapshot envs/metadata/vllm-cpu.json --report out.json
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import importlib.metadata as md
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

SNAPSHOT = Path(__file__).resolve().parents[1] / "envs" / "metadata" / "index.json"


def _norm(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def capture(reports: list[Path], installed: list[str], out: Path) -> int:
    entries: dict[str, dict] = json.loads(out.read_text()) if out.is_file() else {}
    for report in reports:
        for item in json.loads(report.read_text())["install"]:
            meta = item["metadata"]
            key = f"{_norm(meta['name'])}=={meta['version']}"
            entries[key] = {
                "name": meta["name"],
                "version": meta["version"],
                "requires_dist": meta.get("requires_dist") or [],
                "requires_python": meta.get("requires_python"),
            }
    for name in installed:  # a distribution of this Python's environment and its dependencies' closure
        todo, seen = [name], set()
        while todo:
            dist = md.distribution(todo.pop())
            norm = _norm(dist.metadata["Name"])
            if norm in seen:
                continue
            seen.add(norm)
            key = f"{norm}=={dist.version}"
            entries[key] = {
                "name": dist.metadata["Name"],
                "version": dist.version,
                "requires_dist": list(dist.requires or []),
                "requires_python": dist.metadata.get("Requires-Python"),
            }
            from packaging.requirements import Requirement

            for raw in dist.requires or []:
                req = Requirement(raw)
                if req.marker is None or req.marker.evaluate({"extra": ""}):
                    try:
                        md.distribution(req.name)
                        todo.append(req.name)
                    except md.PackageNotFoundError:
                        pass
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(dict(sorted(entries.items())), indent=1, sort_keys=True) + "\n")
    print(f"{len(entries)} distributions -> {out}")
    return 0


def _stub(folder: Path, entry: dict) -> None:
    name = entry["name"].replace("-", "_").replace(".", "_")
    dist_info = f"{name}-{entry['version']}.dist-info"
    lines = ["Metadata-Version: 2.1", f"Name: {entry['name']}", f"Version: {entry['version']}"]
    if entry.get("requires_python"):
        lines.append(f"Requires-Python: {entry['requires_python']}")
    extras = sorted(
        {r.split("extra ==")[1].strip().strip("'\"") for r in entry["requires_dist"] if "extra ==" in r}
    )
    lines += [f"Provides-Extra: {e}" for e in extras]
    lines += [f"Requires-Dist: {r}" for r in entry["requires_dist"]]
    files = {
        f"{dist_info}/METADATA": "\n".join(lines) + "\n",
        f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: stack_metadata\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    record.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = "\n".join(record) + "\n"
    with zipfile.ZipFile(folder / f"{name}-{entry['version']}-py3-none-any.whl", "w") as wheel:
        for path, text in files.items():
            wheel.writestr(path, text)


def resolve(
    requirements: list[str], report: Path, snapshot: Path = SNAPSHOT, extra: list[str] | None = None
) -> int:
    """pip's resolver over the snapshot's stub wheels; returns pip's exit status (report written on success)."""
    entries = json.loads(snapshot.read_text())
    with tempfile.TemporaryDirectory(prefix="stack-index-") as tmp:
        for entry in entries.values():
            _stub(Path(tmp), entry)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
        env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
        args = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",
            "--no-index",
            "--find-links",
            tmp,
            "--quiet",
            "--report",
            str(report),
        ]
        for r in requirements:
            args += ["-r", r]
        args += extra or []
        return subprocess.run(args, env=env).returncode


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("capture")
    p.add_argument("--report", action="append", type=Path, default=[])
    p.add_argument("--installed", action="append", default=[])
    p.add_argument("--out", type=Path, default=SNAPSHOT)
    p = sub.add_parser("resolve")
    p.add_argument("-r", dest="requirements", action="append", required=True)
    p.add_argument("--report", type=Path, required=True)
    p.add_argument(
        "--snapshot", type=Path, default=SNAPSHOT, help="metadata snapshot (default: the CUDA one)"
    )
    p.add_argument("extra", nargs="*", help="more requirement specifiers")
    args = parser.parse_args()
    if args.command == "capture":
        return capture(args.report, args.installed, args.out)
    return resolve(args.requirements, args.report, args.snapshot, extra=args.extra)


if __name__ == "__main__":
    sys.exit(main())
