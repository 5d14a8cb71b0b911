"""One training step of a tiny Qwen3.5-family model on the CPU, as a digest of its loss, gradients and
updated weights (tests/test_kernels.py runs it natively and under an emulated AVX2 CPU).

Run: ``python tests/kernel_digest.py portable|native``. Prints one JSON line: the CPU features torch
found, the kernels it ran and the digest. ``portable`` pins the kernels the way every torch command does
(``training.kernels.prepare_torch``); ``native`` lets torch pick them by the CPU.
"""

from __future__ import annotations

import hashlib
import json
import sys
from types import SimpleNamespace

from paired_rollouts.training.kernels import prepare_torch
from tiny_qwen35 import TINY_TEXT_CONFIG


def main() -> int:
    mode = sys.argv[1]
    prepare_torch(SimpleNamespace(device="cpu", portable_cpu_kernels=mode == "portable"))
    import torch
    from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig, set_seed

    torch.set_num_threads(1)
    set_seed(0)
    config = Qwen3_5TextConfig(
        vocab_size=512, pad_token_id=0, eos_token_id=1, bos_token_id=None, **TINY_TEXT_CONFIG
    )
    model = Qwen3_5ForCausalLM(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)  # as the trainers step
    ids = torch.randint(2, 512, (2, 48), generator=torch.Generator().manual_seed(1))
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    digest = hashlib.sha256()
    digest.update(loss.detach().numpy().tobytes())
    for name, parameter in sorted(model.named_parameters()):
        digest.update(name.encode())
        digest.update(parameter.grad.numpy().tobytes())
    digest.update(torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5).numpy().tobytes())
    optimizer.step()
    for _, parameter in sorted(model.named_parameters()):
        digest.update(parameter.detach().numpy().tobytes())
    with torch.no_grad():
        probabilities = torch.softmax(model(input_ids=ids[:, :16]).logits[:, -1] / 0.7, dim=-1)
    digest.update(probabilities.numpy().tobytes())
    sampled = torch.multinomial(probabilities, 4, generator=torch.Generator().manual_seed(2))
    digest.update(sampled.numpy().tobytes())
    print(
        json.dumps(
            {
                "avx512": torch.cpu._is_avx512_supported(),
                "avx2": torch.cpu._is_avx2_supported(),
                "kernels": torch.backends.cpu.get_cpu_capability(),
                "digest": digest.hexdigest(),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
