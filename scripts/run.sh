#!/usr/bin/env bash
# The README's main command: install everything, then run the whole study at stand-in scale on
# this machine (profile `cpu`), ending in results/standin/paper/tables.pdf.
#
#   bash scripts/run.sh [extra snakemake arguments]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
VENV=${PAIRED_ROLLOUTS_VENV:-$ROOT/.venv}

bash scripts/setup.sh
export PATH="$VENV/bin:$PATH"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
exec "$VENV/bin/snakemake" --profile cpu all "$@"
