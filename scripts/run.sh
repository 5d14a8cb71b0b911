#!/usr/bin/env bash
# The README's first command: install everything, then run the study's evidence on this machine (profile
# `cpu`): the surrogate policy, 16 seeds per arm, with amendment A3's prediction, the regime map and the
# power curves (results/surrogate/paper/tables.pdf). With --standin it then also runs the study with the
# LLM stand-in on the real TRL trainer (results/standin/paper/tables.pdf): about 55 minutes more on a
# 2-core machine, which is why the default leaves it out (README, "The two commands").
#
#   bash scripts/run.sh [--standin] [extra snakemake arguments]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
VENV=${PAIRED_ROLLOUTS_VENV:-$ROOT/.venv}
STANDIN=0
if [[ ${1:-} == --standin ]]; then
  STANDIN=1
  shift
fi

bash scripts/setup.sh
export PATH="$VENV/bin:$PATH"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
# Targets and flags before --config: it takes every word after it. The surrogate study also draws its
# default regime map (24 cells x 16 seed pairs, README "The regime map"): its page is in tables.pdf, so
# `all` builds it (naming `regime_map` as well changes nothing).
"$VENV/bin/snakemake" all regime_map "$@" --profile cpu --config accelerator=cpu scale=surrogate
if ((STANDIN)); then
  exec "$VENV/bin/snakemake" --profile cpu all "$@"
fi
echo "[run] the surrogate study is in results/surrogate/ (tables.pdf under paper/); the LLM stand-in study: bash scripts/run.sh --standin"
