#!/usr/bin/env bash
# The README's test command (and what .ci/run calls): install, start the local SLURM cluster, run
# every test, stop the cluster again whatever happened.
#
#   bash scripts/test.sh [extra pytest arguments]
#
# The tests run on PYTEST_WORKERS processes (default 2; 0 runs them in this process), one test file per
# worker at a time (their module fixtures are built once), the heaviest files first (tests/conftest.py).
#
# pytest's exit code 5 (no test collected) counts as a failure here.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
VENV=${PAIRED_ROLLOUTS_VENV:-$ROOT/.venv}
workers=${PYTEST_WORKERS:-2}
if [[ ! $workers =~ ^[0-9]+$ ]]; then
  echo "[test] PYTEST_WORKERS must be a whole number (0 runs the tests in one process), not '$workers'" >&2
  exit 2
fi

bash scripts/setup.sh

as_root() { if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi; }

cluster_started=0
stop_cluster() {
  if ((cluster_started)); then
    as_root bash "$ROOT/scripts/local_slurm.sh" down || echo "[test] warning: local_slurm.sh down failed" >&2
  fi
}
trap stop_cluster EXIT
cluster_started=1
as_root bash scripts/local_slurm.sh up

export PAIRED_ROLLOUTS_REQUIRE_SLURM=1
export PAIRED_ROLLOUTS_REQUIRE_LATEX=1
export PAIRED_ROLLOUTS_REQUIRE_BROWSER=1
export PATH="$VENV/bin:$PATH"
# Stand-in training is small; keep BLAS from oversubscribing a shared 2-core machine.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}

set +e
"$VENV/bin/python" -m pytest -n "$workers" --dist loadfile --no-loadscope-reorder "$@"
status=$?
set -e
if ((status == 5)); then
  echo "[test] pytest collected no tests: failing" >&2
  exit 1
fi
exit "$status"
