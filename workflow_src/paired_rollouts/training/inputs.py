"""The inputs a learning command checks before it loads anything: the verified pre-registration, the
hash-checked pools and a usable model folder (one clear line each, naming the fix)."""

from __future__ import annotations

from pathlib import Path

from paired_rollouts.errors import UserError
from paired_rollouts.io import read_json, sha256_file


def check_verification(path: str | Path) -> None:
    """The verification report at ``path`` read strictly (``records.read_verification``: its ``passes`` is
    judged again from its failures, documents and tokens), and passing. A bare ``{"passes": true}`` or a
    report whose verdict its own findings contradict is refused in one line."""
    from paired_rollouts.records import read_verification

    source = Path(path)
    if not source.is_file():
        raise UserError(
            f"{source}: pre-registration verification not found; run 'paired-rollouts prereg verify' "
            "(training may start only after the protocol is frozen and verified)"
        )
    report = read_verification(source)
    if not report.passes:  # the reader holds passes to "no failure": a failing report lists one
        raise UserError(
            f"{source}: the pre-registration is not verified ({len(report.failures)} failure(s), e.g. "
            f"{report.failures[0]}); fix the freeze and rerun 'paired-rollouts prereg verify'"
        )


def check_pools(tasks_dir: str | Path) -> dict[str, str]:
    """Every pool file must match MANIFEST.json (load_pool checks hash and count)."""
    from paired_rollouts.backoffice.tasks import POOL_ORDER, load_pool

    folder = Path(tasks_dir)
    if not (folder / "MANIFEST.json").is_file():
        raise UserError(f"{folder}/MANIFEST.json: not found; generate the pools with 'paired-rollouts tasks'")
    hashes = {}
    for pool in POOL_ORDER:
        path = folder / f"{pool}.jsonl"
        load_pool(path)
        hashes[pool] = sha256_file(path)
    return hashes


def check_model(model_dir: str) -> str:
    """A local text-only model folder with its tokenizer (the stand-in, or a prepared Qwen3.5 snapshot)."""
    path = Path(model_dir)
    if not path.exists():
        raise UserError(
            f"--model-dir {model_dir}: not found; run 'paired-rollouts warm-start' first (CPU) or "
            "'paired-rollouts model prepare --source SNAPSHOT --out DIR' and give DIR (GPU)"
        )
    config = path / "config.json"
    if not config.is_file():
        raise UserError(
            f"{path}: no config.json; build the stand-in with 'paired-rollouts warm-start' or prepare a "
            "Qwen3.5 snapshot with 'paired-rollouts model prepare'"
        )
    model_type = read_json(config).get("model_type")
    if model_type == "qwen3_5":
        # vLLM would build the vision-language class for this folder and reject the text model's names at
        # the first weight sync; the prepared text-only folder is what every learning command loads.
        raise UserError(
            f"{config}: a vision-language Qwen3.5 snapshot; run 'paired-rollouts model prepare --source {path} "
            "--out DIR' and give DIR as --model-dir"
        )
    tok_files = ("tokenizer.json", "tokenizer_config.json")
    if not any((path / f).is_file() for f in tok_files):
        raise UserError(f"{path}: no tokenizer files next to the model; save the tokenizer into this folder")
    return str(path)
