"""The warm start's relabelling and its copy check, on a small tokenizer built from the real pools."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def tokenizer(sim_pools):
    from paired_rollouts.training.warmstart import build_tokenizer

    return build_tokenizer(sim_pools["train"][:40], 16, 500)


def test_relabelling_is_a_bijection_within_each_kind(tokenizer):
    """Each batch's table permutes atoms within their kind and leaves every other token alone."""
    import torch
    from paired_rollouts.training.tokenizer import atom_groups
    from paired_rollouts.training.warmstart import RELABEL_KINDS, AtomRelabeller

    relabeller = AtomRelabeller(tokenizer, seed=3)
    first, second = relabeller.table(), relabeller.table()
    assert not torch.equal(first, second), "every batch must draw new bijections"
    assert sorted(first.tolist()) == list(range(len(tokenizer))), "the table must be a permutation"
    vocab = tokenizer.get_vocab()
    moved = set()
    for kind in RELABEL_KINDS:
        ids = {vocab[a] for a in atom_groups()[kind] if a in vocab}
        assert {int(first[i]) for i in ids} == ids, f"{kind} atoms must map onto atoms of the same kind"
        moved |= ids
    untouched = [i for i in range(len(tokenizer)) if i not in moved]
    assert all(int(first[i]) == i for i in untouched)
    # the same seed gives the same sequence of tables (warm starts are deterministic)
    again = AtomRelabeller(tokenizer, seed=3)
    assert torch.equal(again.table(), first)


def test_relabelled_transcript_stays_consistent(tokenizer, sim_pools):
    """The order id in the instruction and in the tool call are relabelled to the same new id."""
    import torch
    from paired_rollouts.backoffice.tasks import select_tasks
    from paired_rollouts.training.warmstart import (
        AtomRelabeller,
        _batch_tensors,
        encode_transcript,
        scripted_transcript,
        tool_functions,
    )

    task = select_tasks(sim_pools["train"], "simple_id")[0]
    ids, mask = encode_transcript(tokenizer, scripted_transcript(task), tool_functions())
    order = tokenizer.convert_tokens_to_ids(task["order_ids"][0])
    assert ids.count(order) >= 2
    relabeller = AtomRelabeller(tokenizer, seed=0)
    table = relabeller.table()
    while int(table[order]) == order:
        table = relabeller.table()
    input_ids, labels, _ = _batch_tensors([(ids, mask)], tokenizer.pad_token_id, table)
    new = int(table[order])
    assert order not in input_ids[0].tolist()
    assert input_ids[0].tolist().count(new) == ids.count(order)
    policy = labels[0] != -100
    assert torch.equal(labels[0][policy], input_ids[0][policy]), "labels follow the relabelled tokens"


def test_warm_start_reports_its_copy_accuracy(tokenizer, sim_pools):
    from paired_rollouts.settings import Settings
    from paired_rollouts.training.warmstart import warm_start

    settings = Settings.from_manifest(
        {
            "warm_start_steps": 2,
            "warm_start_tasks": 4,
            "warm_start_batch": 2,
            "hidden_size": 32,
            "task_filter": "simple_id",
        }
    )
    _, report = warm_start(tokenizer, sim_pools["train"][:40], settings.model, progress=False)
    assert report["short_steps"] == 1 and report["check_transcripts"] == 32
    assert 0.0 <= report["copied_atom_accuracy"] <= 1.0
    assert 0.0 <= report["token_accuracy"] <= 1.0


def test_a_warm_start_of_no_steps_saves_the_initial_weights(tokenizer, sim_tasks_dir, tmp_path, capsys):
    """``model.warm_start_steps: 0`` is a valid setting (an untrained stand-in): the command saves the
    model and says it took no steps, where it once failed formatting a loss it never measured."""
    import json

    from paired_rollouts.cli import main

    tokenizer.save_pretrained(tmp_path / "tokenizer")
    settings = {
        "model": {"warm_start_steps": 0, "warm_start_tasks": 1, "hidden_size": 32},
        "task_filter": "simple_id",
    }
    out = tmp_path / "model"
    code = main(
        ["warm-start", "--tokenizer", str(tmp_path / "tokenizer"), "--tasks-dir", str(sim_tasks_dir)]
        + ["--settings", json.dumps(settings), "--out", str(out)]
    )
    assert code == 0 and (out / "config.json").is_file()
    assert "warm start: no steps (model.warm_start_steps is 0)" in capsys.readouterr().out


def test_a_warm_start_that_fails_to_save_leaves_no_partial_model(
    tokenizer, sim_tasks_dir, tmp_path, capsys, monkeypatch
):
    """The model folder is written all or none: a save that fails after config.json (the workflow's
    declared output) is one line naming the folder, and neither the folder nor a temporary is left.
    Base: config.json left in the folder beside no weights, for a later job to take as a model."""
    import errno
    import json

    from paired_rollouts.cli import main
    from transformers import PreTrainedModel

    real_save = PreTrainedModel.save_pretrained

    def full_disk(self, folder, *args, **kwargs):
        self.config.save_pretrained(folder)  # config.json first, as transformers writes it
        raise OSError(errno.ENOSPC, "No space left on device", str(folder) + "/model.safetensors")

    tokenizer.save_pretrained(tmp_path / "tokenizer")
    settings = {
        "model": {"warm_start_steps": 0, "warm_start_tasks": 1, "hidden_size": 32},
        "task_filter": "simple_id",
    }
    out = tmp_path / "models" / "model"
    argv = ["warm-start", "--tokenizer", str(tmp_path / "tokenizer"), "--tasks-dir", str(sim_tasks_dir)]
    argv += ["--settings", json.dumps(settings), "--out", str(out)]
    monkeypatch.setattr(PreTrainedModel, "save_pretrained", full_disk)
    assert main(argv) == 1
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip() and "it/s]" not in x]  # no progress
    assert len(err) == 1 and str(out) in err[0] and "ENOSPC" in err[0], err
    assert not out.exists() and list((tmp_path / "models").iterdir()) == []
    monkeypatch.setattr(PreTrainedModel, "save_pretrained", real_save)
    assert main(argv) == 0 and (out / "config.json").is_file() and (out / "warm_start.json").is_file()
    assert [p.name for p in (tmp_path / "models").iterdir()] == ["model"]
