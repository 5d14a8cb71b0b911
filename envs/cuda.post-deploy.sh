#!/usr/bin/env bash
# Run by Snakemake inside a freshly built envs/<stack>.yaml environment (working directory: the
# workflow's, i.e. the repo root). Installs the project package itself; its dependencies are
# already pinned by the environment, so --no-deps keeps them as they are.
set -euo pipefail
pip install --no-deps -e .
