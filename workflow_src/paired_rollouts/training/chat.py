"""What the policy sees: the system prompt, the prompt rows and the rendered conversation.

The tool descriptions in every prompt are the tools' own declarations (``backoffice.tools``, next to each
implementation; ours, the paper's prose is not reproduced).
"""

from __future__ import annotations

from typing import Any

SYSTEM_PROMPT = (
    "You work in the back office of an online shop. Carry out the customer's requests with the tools: "
    "look up the customer and the orders you need, make exactly the requested changes and nothing else, "
    "then call finish. Tools can fail for a while: if a service is unavailable, try again; if you are "
    "rate limited, wait as told; if a request timed out, check whether it was applied before repeating it. "
    "You have a limited number of tool calls."
)


def prompt_messages(task: dict[str, Any]) -> list[dict[str, str]]:
    """The dataset row's ``prompt``: system message + the task instruction."""
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": task["instruction"]},
    ]


def tool_call_message(calls: list[tuple[str, dict[str, Any]]], content: str = "") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [{"type": "function", "function": {"name": n, "arguments": a}} for n, a in calls],
    }


def tool_message(name: str, content: str) -> dict[str, str]:
    return {"role": "tool", "name": name, "content": content}


def render(
    tokenizer: Any,
    messages: list[dict[str, Any]],
    tools: list[Any],
    chat_template: str | None = None,
    add_generation_prompt: bool = False,
) -> str:
    """Render a conversation with the same template and kwargs the trainer uses (thinking disabled)."""
    return tokenizer.apply_chat_template(
        messages,
        tools=tools,
        chat_template=chat_template,
        tokenize=False,
        add_generation_prompt=add_generation_prompt,
        enable_thinking=False,
    )
