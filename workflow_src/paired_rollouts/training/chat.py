"""What the policy sees: the system prompt, the tool descriptions and the rendered conversation.

The tool descriptions here are ours (the paper's prose is not reproduced). They are kept short on purpose:
every rollout's prompt carries all 13 tool schemas, so their length is paid on every forward pass. They
name no concrete ids, carriers, categories or priorities: every request states its values, and values
listed in the schemas were distractors the stand-in copied instead of the request's (the simulator still
rejects an unknown value with an error that lists the allowed ones).
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

# name -> (summary, {argument: description}); argument names/order/types come from TOOL_SIGNATURES.
TOOL_DOCS: dict[str, tuple[str, dict[str, str]]] = {
    "search_customers": (
        "Find customers whose name, email or phone contains the query (5 results per page).",
        {"query": "Text to match.", "offset": "First result to return (0 = first page)."},
    ),
    "get_customer": ("Read a customer record.", {"customer_id": "Customer id (C and four digits)."}),
    "list_orders": (
        "List the orders of a customer, highest id first (5 per page).",
        {"customer_id": "Customer id (C and four digits).", "offset": "First result to return (0 = first page)."},
    ),
    "get_order": ("Read an order: items, status, address, refunds, reservations.", {"order_id": "Order id (O and four digits)."}),
    "check_inventory": ("Read stock, reserved and available units of a product.", {"sku": "Product id (SKU- and four digits)."}),
    "update_shipping_address": (
        "Set a new shipping address on an order that has not shipped.",
        {"order_id": "Order id.", "street": "Street line.", "city": "City.", "postal_code": "Postal code."},
    ),
    "cancel_order": ("Cancel a pending or paid order.", {"order_id": "Order id.", "reason": "Reason for cancelling."}),
    "issue_refund": (
        "Refund an amount on an order that was charged.",
        {"order_id": "Order id.", "amount_cents": "Amount in cents.", "reason": "Reason for the refund."},
    ),
    "reserve_stock": (
        "Reserve units of a product for an order.",
        {"sku": "Product id.", "quantity": "Units to reserve.", "order_id": "Order id."},
    ),
    "schedule_shipment": (
        "Ship a paid, fully reserved order.",
        {"order_id": "Order id.", "carrier": "Carrier, as named in the request.", "day": "Shipping day (today to today + 7)."},
    ),
    "create_ticket": (
        "Open a support ticket for a customer.",
        {
            "customer_id": "Customer id.",
            "order_id": "Linked order id, or an empty string for none.",
            "category": "Ticket category, as named in the request.",
            "priority": "Ticket priority, as named in the request.",
            "summary": "Ticket summary.",
        },
    ),
    "wait": ("Let time pass, e.g. after being rate limited.", {"seconds": "Seconds to wait (1 to 600)."}),
    "finish": ("End the episode after making all requested changes.", {"summary": "What was done, in one sentence."}),
}


def docstring(name: str) -> str:
    """A Google-style docstring (summary + Args:) that TRL/transformers turn into the tool schema."""
    summary, args = TOOL_DOCS[name]
    lines = [summary, "", "Args:"]
    lines += [f"    {arg}: {text}" for arg, text in args.items()]
    return "\n".join(lines) + "\n"


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


def render(tokenizer: Any, messages: list[dict[str, Any]], tools: list[Any], chat_template: str | None = None,
           add_generation_prompt: bool = False) -> str:
    """Render a conversation with the same template and kwargs the trainer uses (thinking disabled)."""
    return tokenizer.apply_chat_template(
        messages,
        tools=tools,
        chat_template=chat_template,
        tokenize=False,
        add_generation_prompt=add_generation_prompt,
        enable_thinking=False,
    )
