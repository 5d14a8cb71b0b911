"""Training metrics as TensorBoard event files, one folder per run (``Layout.tensorboard_dir``): what a
researcher watches while a run trains (reward, its spread, the zero-variance group fraction, clip
fractions, loss, gradient norm, tokens per second).

They are not records: every event carries a wall time, nothing in the pipeline reads them, and no
completeness or byte-identity check hashes them. Each training session (a first start or a resume) adds
its own event file that opens with TensorBoard's session-start marker at the session's first step, so
TensorBoard hides what an earlier, killed session logged past the checkpoint the new one resumed from
and the earlier sessions' files stay as they are.

LLM runs log through TRL's own ``report_to=["tensorboard"]`` (HF's ``TensorBoardCallback``), given the
writer ``attach`` opens; the surrogate writes the same tags with ``ScalarLog`` (tensorboard's own event
file writer). Tags follow HF: ``train/<name>`` at the number of updates done (HF's ``global_step``), so
TensorBoard step s shows register step s - 1.
"""

from __future__ import annotations

import importlib.util
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

PREFIX = "train/"


def installed() -> bool:
    """Whether the ``tensorboard`` package is importable (the ``train`` extra installs it)."""
    return importlib.util.find_spec("tensorboard") is not None


def _warn_missing(folder: str | Path) -> None:
    log.warning(
        "tensorboard is not installed: no event files in %s (pip install -e .[train]); the records are unchanged",
        folder,
    )


def attach(trainer: Any, folder: str | Path, first_step: int) -> bool:
    """Point the trainer's TensorBoard callback (TRL's ``report_to``) at ``folder`` with a new event file
    that marks this session's start at ``first_step`` (the first step it will log), and add
    ``train/tokens_per_second``. False (and a warning) where tensorboard is not installed."""
    from transformers.integrations import TensorBoardCallback

    callback = next(
        (c for c in trainer.callback_handler.callbacks if isinstance(c, TensorBoardCallback)), None
    )
    if callback is None:
        _warn_missing(folder)
        return False
    from torch.utils.tensorboard import SummaryWriter

    from paired_rollouts.training.callbacks import TokensPerSecond

    Path(folder).mkdir(parents=True, exist_ok=True)
    writer = SummaryWriter(log_dir=str(folder), purge_step=first_step)
    callback.tb_writer = writer
    trainer.add_callback(TokensPerSecond(writer))
    return True


class ScalarLog:
    """One session's event file of scalars (the surrogate's runs): ``log(step, values)`` writes each value
    as ``train/<name>`` at ``step``; the file opens with the session-start marker at ``first_step``.
    Without tensorboard installed it writes nothing (one warning)."""

    def __init__(self, folder: str | Path, first_step: int) -> None:
        self.writer: Any = None
        if not installed():
            _warn_missing(folder)
            return
        from tensorboard.compat.proto.event_pb2 import Event, SessionLog
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        Path(folder).mkdir(parents=True, exist_ok=True)
        self.writer = EventFileWriter(str(folder), flush_secs=10)  # seen within seconds while it trains
        self.writer.add_event(
            Event(wall_time=time.time(), step=first_step, session_log=SessionLog(status=SessionLog.START))
        )

    def log(self, step: int, values: Mapping[str, float]) -> None:
        if self.writer is None:
            return
        from tensorboard.compat.proto.event_pb2 import Event
        from tensorboard.compat.proto.summary_pb2 import Summary

        summary = Summary(
            value=[
                Summary.Value(tag=f"{PREFIX}{name}", simple_value=float(value))
                for name, value in values.items()
            ]
        )
        self.writer.add_event(Event(wall_time=time.time(), step=step, summary=summary))

    def __enter__(self) -> ScalarLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None
