#!/usr/bin/env bash
# The README's main command: install everything, then run the study twice on this machine (profile
# `cpu`): first with the surrogate policy (16 seeds per arm, results/surrogate/paper/tables.pdf), then
# with the LLM stand-in that exercises TRL (results/standin/paper/tables.pdf).
#
#   bash scripts/run.sh [extra snakemake arguments]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
VENV=${PAIRED_ROLLOUTS_VENV:-$ROOT/.venv}

bash scripts/setup.sh
export PATH="$VENV/bin:$PATH"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
# Targets and flags before --config: it takes every word after it. The surrogate study also draws its
# default regime map (24 cells x 16 seed pairs, README "The regime map"): its page is in tables.pdf, so
# `all` builds it (naming `regime_map` as well changes nothing).
"$VENV/bin/snakemake" all regime_map "$@" --profile cpu --config accelerator=cpu scale=surrogate
exec "$VENV/bin/snakemake" --profile cpu all "$@"
