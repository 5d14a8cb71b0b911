"""AUC and steps-to-threshold on hand-worked numbers; run names and rounding."""

import numpy as np
import pytest
from paired_rollouts.design import parse_run
from paired_rollouts.errors import UserError
from paired_rollouts.stats.curves import (
    auc,
    auc_weights,
    round4,
    steps_to_threshold,
)


def test_paper_weights():
    assert np.allclose(auc_weights([0, 20, 40, 60, 80, 100]), [0.1, 0.2, 0.2, 0.2, 0.2, 0.1])


def test_standin_and_uneven_steps():
    assert np.allclose(auc_weights([0, 4, 8]), [0.25, 0.5, 0.25])
    # 0, 1, 3: gaps 1 and 2 over span 3 -> [0.5, 1.5, 1] / 3
    assert np.allclose(auc_weights([0, 1, 3]), [1 / 6, 1 / 2, 1 / 3])
    assert auc([5], [0.7]) == pytest.approx(0.7)


def test_register_value_reproduced():
    # docs/analysis.md#curves-and-auc: t1-c2-independent-s0
    values = [0.5, 0.5078125, 0.5625, 0.59375, 0.6796875, 0.6796875]
    assert auc(range(0, 101, 20), values) == pytest.approx(0.58671875)


def test_auc_rejects_bad_steps():
    with pytest.raises(UserError):
        auc_weights([0, 20, 20])


def test_steps_to_threshold():
    steps = [0, 20, 40]
    assert steps_to_threshold(steps, [0.7, 0.8, 0.9], 0.617) == 0
    assert steps_to_threshold(steps, [0.5, 0.6, 0.7], 0.65) == pytest.approx(30.0)
    assert steps_to_threshold(steps, [0.5, 0.6, 0.6], 0.617) is None  # censored


def test_run_names_and_rounding():
    assert parse_run("c2-independent-s1").to_dict() == {
        "condition": "C2",
        "arm": "independent",
        "seed": 1,
        "scaling": "group",
    }
    assert parse_run("c4-blocking_paired-scale_none-s2").scaling == "none"
    with pytest.raises(UserError):
        parse_run("C2_paired_0")
    assert round4({"a": [0.123456, float("nan")], "b": 3}) == {"a": [0.1235, None], "b": 3}
