"""The smallest Qwen3.5 text configuration the model tests build (one DeltaNet and one attention layer)."""

TINY_TEXT_CONFIG = dict(
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=1,
    head_dim=16,
    linear_num_key_heads=2,
    linear_num_value_heads=2,
    linear_key_head_dim=8,
    linear_value_head_dim=8,
    layer_types=["linear_attention", "full_attention"],
)

# The stand-in (training.model.STANDIN_DEFAULTS) narrowed further, for the CPU tests that roll out a random one.
TINY_STANDIN_OVERRIDES = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "head_dim": 16,
    "linear_key_head_dim": 16,
    "linear_value_head_dim": 16,
}


def tiny_standin(pools: dict, n_tasks: int = 6, folder=None):
    """A random tiny stand-in (seed 0) and its BPE tokenizer (400 tokens) trained on scripted transcripts of
    ``n_tasks`` of the first 20 train tasks; both saved to ``folder`` when given (a ``--model-dir``)."""
    from paired_rollouts.training.model import build_random_model, standin_config
    from paired_rollouts.training.warmstart import build_tokenizer

    tokenizer = build_tokenizer(pools["train"][:20], n_tasks, 400)
    model = build_random_model(standin_config(tokenizer, TINY_STANDIN_OVERRIDES), 0)
    if folder is not None:
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
    return model, tokenizer
