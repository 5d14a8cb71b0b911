"""CLI: ``paired-rollouts tasks`` regenerates (or verifies) the frozen task pools."""

from __future__ import annotations

import argparse
import logging

_EPILOG = """\
The pools are the paper's, byte for byte: train (2000), validation (300; the paper's "heldout" pool,
records keep task_id "heldout-NNNNN"), test (300) and diagnostic (16), plus MANIFEST.json with each
pool's count, sha256, template and size counts. Before writing, every regenerated pool's SHA-256 is
compared with the paper's frozen hash; if any differs nothing is written and the command fails.

examples:
  paired-rollouts tasks --out data/tasks            # regenerate (about 5 s) and write
  paired-rollouts tasks --out data/tasks --verify   # only check the files already there
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "tasks",
        help="generate the frozen task pools (train/validation/test/diagnostic) and MANIFEST.json",
        description="Regenerate the back-office task pools from generator seed 20260904 and write them "
        "only if their hashes equal the paper's.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", default="data/tasks", help="output folder (default: data/tasks)")
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="generator seed (default 20260904, the paper's; other seeds need --no-check)",
    )
    parser.add_argument(
        "--no-check",
        action="store_true",
        help="write even if the hashes differ from the paper's (not the paper's pools!)",
    )
    parser.add_argument(
        "--verify",
        action="store_true",
        help="do not generate: hash the pool files in --out against the paper and exit",
    )
    parser.set_defaults(handler=run_tasks)


def run_tasks(args: argparse.Namespace) -> int:
    from paired_rollouts.backoffice.tasks import GENERATOR_SEED, POOL_ORDER, verify_pools, write_pools
    from paired_rollouts.errors import UserError

    log = logging.getLogger("paired_rollouts.tasks")
    from pathlib import Path

    if Path(args.out).exists() and not Path(args.out).is_dir():
        raise UserError(f"--out {args.out}: is a file; give the folder the pools go in (e.g. data/tasks)")
    if args.verify:
        hashes = verify_pools(args.out)
        for name in POOL_ORDER:
            print(f"{name}: {hashes[name]} OK")
        return 0
    seed = GENERATOR_SEED if args.seed is None else args.seed
    if seed != GENERATOR_SEED and not args.no_check:
        raise UserError(
            f"--seed {seed}: only seed {GENERATOR_SEED} reproduces the paper's pools; add "
            "--no-check to write pools for another seed"
        )
    from paired_rollouts.io import check_writable_folder

    check_writable_folder(args.out)  # before the generation's seconds of work, not after
    manifest = write_pools(args.out, seed=seed, check=not args.no_check, progress=True)
    for name in POOL_ORDER:
        entry = manifest["pools"][name]
        log.info("%s: %d tasks, sha256 %s", name, entry["count"], entry["sha256"])
    print(f"wrote {len(POOL_ORDER)} pools and MANIFEST.json to {args.out}")
    return 0
