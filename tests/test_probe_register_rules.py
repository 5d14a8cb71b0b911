"""The probe register's reader (records.read_probe_register) recomputes what the register states from what
it names: the H1b verdict under the frozen h1b block of the rules file it names (never a rule it states
itself), over exactly the checkpoints it was assembled from, and every paired/independent ratio from its
traces. Each register here is written by the writers (probe/scores.py's streaming probe, then
build_probe_register and apply_h1b_rules, as 'probe assemble' and 'probe verdict' do), then tampered with."""

import copy
import json
import shutil
from pathlib import Path

import pytest
from paired_rollouts.errors import UserError
from paired_rollouts.io import sha256_file
from paired_rollouts.prereg.rules import load_decision_rules
from paired_rollouts.probe import apply_h1b_rules, build_probe_register, probe_verdict
from paired_rollouts.probe.evidence import plain
from paired_rollouts.records import read_probe_register
from test_probe_evidence import _stream

RULES = "prereg/decision_rules.yaml"
K, M, G, P = 3, 4, 4, 40
WEAKER = {"estimator": "mean_centered", "outcome": "strict_majority", "transition": "strict_majority"}


def _checkpoint(seed: int, aligned: bool) -> dict:
    """One checkpoint's summaries (``test_probe_evidence._stream``: random scores, no model; ``aligned``
    makes the MC outcome probe fail there)."""
    stream = _stream(seed, aligned)
    t_ref, outcome, transition = stream.summaries(24, 8)
    return {"t_ref": t_ref, "outcome": outcome, "transition": transition}


@pytest.fixture(scope="module")
def traces() -> dict:
    """A trajectory's traces as 'probe assemble' writes them: the outcome probe fails at step 20 only,
    the transition probe passes at all three."""
    checkpoints = {0: _checkpoint(0, False), 20: _checkpoint(1, True), 40: _checkpoint(4, False)}
    return json.loads(json.dumps(plain(build_probe_register("a", "c2-paired-s0", checkpoints))))


def _verdict(register: dict, h1b: dict | None = None, source: str = RULES) -> dict:
    """The register as 'probe verdict --rules SOURCE' writes it (``h1b``: another rule than the file's)."""
    rule = h1b or load_decision_rules(source)["h1b"]
    return json.loads(json.dumps(plain(apply_h1b_rules(register, rule, source, sha256_file(source)))))


def _write(tmp_path: Path, register: dict, name: str = "a.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(register))
    return path


def _refused(path: Path, says: str) -> str:
    """The one error line reading ``path`` gives: it names the file and says ``says``."""
    with pytest.raises(UserError) as exc:
        read_probe_register(path)
    line = str(exc.value)
    assert "\n" not in line and line.startswith(f"{path}: "), line
    assert says in line, line
    return line


def test_the_register_as_written_reads(tmp_path, traces):
    honest = _verdict(traces)
    assert (honest["verdict"]["rule_source"], honest["verdict"]["rules_sha256"]) == (
        RULES,
        sha256_file(RULES),
    )
    register = read_probe_register(_write(tmp_path, honest))
    v = register.need_verdict()
    assert (v.passes, v.outcome_wins, v.checkpoints, v.transition_wins) == (False, 2, 3, 3)
    assert register.steps == [0, 20, 40]


def test_a_weaker_rule_than_the_frozen_one_is_refused(tmp_path, traces):
    """Audit: the outcome probe fails at 1 of 3 checkpoints; the verdict restated under a strict majority
    passed, and was accepted with the rules file it names at hand."""
    weaker = _verdict(traces, WEAKER)
    assert weaker["verdict"]["passes"] is True  # what the tampered register claimed
    path = _write(tmp_path, weaker)
    _refused(path, f"verdict.rule is {WEAKER}, not the h1b rule of {RULES}")


def test_a_verdict_of_a_rules_file_changed_since_is_refused(tmp_path, traces):
    rules = tmp_path / "rules.yaml"
    shutil.copy(RULES, rules)
    path = _write(tmp_path, _verdict(traces, source=str(rules)))
    assert read_probe_register(path).need_verdict().passes is False  # the file it names, as it was
    rules.write_text(rules.read_text() + "\n# edited\n")
    _refused(path, f"{rules} now has {sha256_file(rules)} (the rules changed since the verdict)")


def test_a_verdict_without_its_rules_file_is_refused(tmp_path, traces):
    """'probe verdict' names the rules file it applied: without it, no rule but the code's defaults (the
    traces' verdict) is accepted, and no consumer takes that as the H1b verdict."""
    register = _verdict(traces, WEAKER)
    del register["verdict"]["rule_source"]
    _refused(_write(tmp_path, register), "key 'verdict.rule_source' is missing beside its rules_sha256")
    del register["verdict"]["rules_sha256"]
    _refused(_write(tmp_path, register), f"verdict.rule is {WEAKER}, not the h1b rule of the code's defaults")
    del register["verdict"]["rule"]
    _refused(_write(tmp_path, register), "key 'verdict.rule' should name estimator, outcome and transition")


def test_the_traces_register_reads_but_gives_no_h1b_verdict(tmp_path, traces):
    path = _write(tmp_path, traces)
    register = read_probe_register(path)
    assert register.verdict is not None and register.verdict.passes is False
    with pytest.raises(UserError, match=f"^{path}: its verdict names no rules file"):
        register.need_verdict()


def test_a_dropped_checkpoint_is_refused(tmp_path, traces):
    """Audit: the failing checkpoint deleted and the verdict recomputed over the others was accepted."""
    register = copy.deepcopy(traces)
    del register["checkpoints"]["20"]
    dropped = _verdict(register)
    assert dropped["verdict"]["passes"] is True
    _refused(_write(tmp_path, dropped), "steps [0, 20, 40] are not the steps of its checkpoints [0, 40]")
    del dropped["steps"]
    _refused(_write(tmp_path, dropped), "key 'steps'")


@pytest.mark.parametrize(
    ("noise", "estimator", "ratio"),
    [
        ("outcome", "mean_centered", "ratio_paired_over_independent"),
        ("outcome", "implemented", "ratio_paired_over_independent"),
        ("outcome", "mean_centered", "ratio_within_paired_over_independent"),
        ("transition", "mean_centered", "ratio_paired_over_independent"),
        ("transition", "implemented", "ratio_paired_over_stratified"),
        ("transition", "mean_centered", "ratio_within_paired_over_independent"),
    ],
)
def test_a_ratio_its_traces_do_not_give_is_refused(tmp_path, traces, noise, estimator, ratio):
    """Audit: the ratio the tables show, edited with the verdict's ratios to agree, was accepted beside the
    traces that give another one."""
    register = copy.deepcopy(traces)
    register["checkpoints"]["20"][noise][estimator][ratio] = 0.1
    edited = _verdict(register)  # the verdict's ratios_by_step copy the edited ratios
    _refused(_write(tmp_path, edited), f"checkpoints.20.{noise}.{estimator}.{ratio} is 0.1, its trace")


def test_a_ratio_without_its_traces_is_refused(tmp_path, traces):
    register = copy.deepcopy(traces)
    del register["checkpoints"]["0"]["transition"]["mean_centered"]["trace_var"]["stratified"]
    _refused(
        _write(tmp_path, _verdict(register)),
        "checkpoints.0.transition.mean_centered.ratio_paired_over_stratified is",
    )


@pytest.mark.parametrize("block", ["ratios_by_step", "implemented_ratios_by_step"])
def test_verdict_ratios_other_than_the_checkpoints_are_refused(tmp_path, traces, block):
    """Audit: an edited verdict.ratios_by_step (the ratios beside the verdict) was accepted."""
    register = _verdict(traces)
    register["verdict"][block]["outcome"]["20"] = 0.1
    _refused(_write(tmp_path, register), f"verdict.{block} is")


def test_the_frozen_rule_is_the_code_default(traces):
    """The traces' verdict (no rules file) is the code's default rule: the frozen one of the repository."""
    h1b = load_decision_rules(RULES)["h1b"]
    assert traces["verdict"]["rule"] == h1b
    checkpoints = {int(s): c for s, c in traces["checkpoints"].items()}
    assert probe_verdict(checkpoints) == probe_verdict(checkpoints, **h1b)
