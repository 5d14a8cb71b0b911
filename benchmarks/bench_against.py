"""The surrogate's episodes per CPU second against an older tree of this repository, side by side.

Run: ``python benchmarks/bench_against.py c3dfafb [--runs 3] [--rounds 2] [--ours="--prompts-per-step 8
--eval-tasks 32"]`` (the tree issue #24 measured).
The older tree is checked out into a temporary git worktree and its optional C helpers are built in place.
Each round then runs both trees' own ``benchmarks/bench_surrogate.py`` at the same time, one per core (the
cores swap between rounds), so the two meet the same machine at the same moment. A shape change between the
trees changes the episodes per run, so episodes per CPU second are compared; ``--ours`` passes arguments to
this tree's benchmark only (with the two above, this tree plays the older tree's run shape: the same
episodes per run), and the CPU seconds per run are compared too.
The script prints each benchmark's line and then the ratio per round. It needs the git history (a full
clone) and two free cores; with one core the trees run one after the other.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RATE = re.compile(r"\((\d+) episodes per CPU second\)")
PER_RUN = re.compile(r"(\d+\.\d+) CPU s per run")
EPISODES = re.compile(r"(\d+) episodes\)")


def rate_of(output: str, tree: str) -> tuple[int, float, int, str]:
    """The episodes per CPU second, CPU seconds per run and episodes per run that ``bench_surrogate.py``
    printed, and the line that says them."""
    for line in output.splitlines():
        found, per_run, episodes = RATE.search(line), PER_RUN.search(line), EPISODES.search(line)
        if found is not None and per_run is not None and episodes is not None:
            return int(found.group(1)), float(per_run.group(1)), int(episodes.group(1)), line
    raise SystemExit(
        f"bench_against: {tree}'s bench_surrogate.py printed no episodes per CPU second:\n{output}"
    )


def build_in_place(tree: Path) -> None:
    """The tree's optional C helpers (skipped, like an install without a compiler, when they fail)."""
    if (tree / "setup.py").exists():
        subprocess.run(
            [sys.executable, "setup.py", "build_ext", "--inplace"],
            cwd=tree,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )


def start(tree: Path, core: int | None, runs: int, extra: list[str]) -> subprocess.Popen:
    command = [sys.executable, "benchmarks/bench_surrogate.py", "--runs", str(runs), *extra]
    if core is not None:
        command = ["taskset", "-c", str(core), *command]
    env = {**os.environ, "PYTHONPATH": str(tree / "workflow_src"), "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(
        command, cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def finish(process: subprocess.Popen, tree: str) -> str:
    output, _ = process.communicate()
    if process.returncode != 0:
        raise SystemExit(
            f"bench_against: {tree}'s bench_surrogate.py failed ({process.returncode}):\n{output}"
        )
    return output


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ref", help="the older tree: a commit, tag or branch of this repository")
    parser.add_argument("--runs", type=int, default=3, help="runs per benchmark (one process each)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds, the cores swapped between them")
    parser.add_argument(
        "--ours",
        default="",
        help='arguments for this tree\'s benchmark only, e.g. --ours="--prompts-per-step 8 --eval-tasks 32"',
    )
    args = parser.parse_args()
    ours_extra = shlex.split(args.ours)
    cores = sorted(os.sched_getaffinity(0))
    side_by_side = len(cores) >= 2
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "old"
        added = subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", str(old), args.ref],
            capture_output=True,
            text=True,
            check=False,
        )
        if added.returncode != 0:
            raise SystemExit(
                f"bench_against: cannot check out {args.ref!r} of {REPO} (a commit of this repository, in a "
                f"full clone): {added.stderr.strip().splitlines()[-1] if added.stderr.strip() else 'git failed'}"
            )
        try:
            build_in_place(old)
            for round_ in range(args.rounds):
                if side_by_side:  # the cores swap between rounds
                    ours_core, old_core = cores[round_ % 2], cores[(round_ + 1) % 2]
                    now = start(REPO, ours_core, args.runs, ours_extra)
                    then = start(old, old_core, args.runs, [])
                    ours = finish(now, "this tree")
                else:  # one core: this tree's benchmark ends before the older one starts
                    ours = finish(start(REPO, None, args.runs, ours_extra), "this tree")
                    then = start(old, None, args.runs, [])
                outputs = {"this tree": ours, args.ref: finish(then, args.ref)}
                rates, per_run, episodes = {}, {}, {}
                for tree, output in outputs.items():
                    rates[tree], per_run[tree], episodes[tree], line = rate_of(output, tree)
                    print(f"[round {round_ + 1}] {tree}: {line}")
                ratio = rates["this tree"] / rates[args.ref]
                print(f"[round {round_ + 1}] episodes per CPU second, this tree / {args.ref}: x {ratio:.2f}")
                if episodes["this tree"] == episodes[args.ref]:  # the same run shape: compare the runs
                    cheaper = per_run[args.ref] / per_run["this tree"]
                    print(
                        f"[round {round_ + 1}] CPU seconds per run of {episodes[args.ref]} episodes, "
                        f"{args.ref} / this tree: x {cheaper:.2f}"
                    )
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(old)], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
