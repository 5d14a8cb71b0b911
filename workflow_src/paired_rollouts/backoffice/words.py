"""Fixed vocabularies of the back-office world and its tasks.

The order of every list matters: world and task generation draw indices into them, so reordering a
list changes every generated world and every task pool hash (docs/simulator.md#word-lists).
"""

from __future__ import annotations

FIRST_NAMES: tuple[str, ...] = (
    "Ayesha",
    "Farhan",
    "Nusrat",
    "Tanvir",
    "Sadia",
    "Rafiq",
    "Mehnaz",
    "Imran",
    "Lamia",
    "Shakil",
    "Priya",
    "Arjun",
    "Meera",
    "Rohan",
    "Kavya",
    "Daniel",
    "Sophie",
    "Lucas",
    "Emma",
    "Noah",
    "Chen",
    "Wei",
    "Yuki",
    "Haruto",
    "Amara",
    "Kwame",
    "Zainab",
    "Omar",
    "Elena",
    "Mateo",
)

LAST_NAMES: tuple[str, ...] = (
    "Rahman",
    "Hossain",
    "Ahmed",
    "Islam",
    "Chowdhury",
    "Khan",
    "Sharma",
    "Patel",
    "Singh",
    "Das",
    "Smith",
    "Johnson",
    "Brown",
    "Garcia",
    "Martinez",
    "Nguyen",
    "Kim",
    "Sato",
    "Okafor",
    "Novak",
)

STREETS: tuple[str, ...] = (
    "Green Road",
    "Lake Avenue",
    "Station Street",
    "Mill Lane",
    "Harbor Drive",
    "Elm Street",
    "Park Boulevard",
    "River Road",
    "Market Street",
    "Hill Crescent",
)

CITIES: tuple[str, ...] = (
    "Dhaka",
    "Chattogram",
    "Sylhet",
    "Rajshahi",
    "Khulna",
    "Barishal",
    "Rangpur",
    "Mymensingh",
    "Comilla",
    "Gazipur",
)

PRODUCT_NAMES: tuple[str, ...] = (
    "Wireless Mouse",
    "Mechanical Keyboard",
    "USB-C Hub",
    "Laptop Stand",
    "Webcam 1080p",
    "Noise-Cancelling Headphones",
    "Portable SSD 1TB",
    "Monitor Arm",
    "Desk Lamp",
    "Ergonomic Chair",
    "Standing Desk Mat",
    "Bluetooth Speaker",
    "Smart Plug",
    "Power Bank 20000mAh",
    "HDMI Cable 2m",
    "Wireless Charger",
    "Fitness Tracker",
    "E-Reader",
    "Tablet Stylus",
    "Travel Adapter",
    "Coffee Grinder",
    "Electric Kettle",
    "Air Purifier",
    "Water Filter Jug",
    "Yoga Mat",
    "Running Shoes",
    "Backpack 30L",
    "Insulated Bottle",
    "Camping Lantern",
    "Rain Jacket",
    "Board Game Set",
    "Puzzle 1000 pieces",
    "Sketchbook A4",
    "Watercolor Set",
    "Desk Organizer",
    "Cable Management Kit",
    "Phone Tripod",
    "Ring Light",
    "Microphone USB",
    "Laptop Sleeve 14in",
)

REFUND_REASONS: tuple[str, ...] = ("damaged item", "late delivery", "customer request", "wrong item")

# Defined in the original generator but never drawn from; kept so the vocabulary is complete.
CANCEL_REASONS: tuple[str, ...] = ("customer request", "duplicate order", "out of stock", "fraud check")

TICKET_SUMMARIES: tuple[str, ...] = (
    "Package arrived damaged",
    "Charged twice for one order",
    "Cannot log in to account",
    "Wrong item delivered",
    "Delivery is late",
    "Request invoice copy",
    "Product stopped working",
)

# Task instructions use their own (different) address vocabularies.
TASK_STREETS: tuple[str, ...] = (
    "Lake Avenue",
    "Green Road",
    "Harbor Drive",
    "Elm Street",
    "Market Street",
    "River Road",
)
TASK_CITIES: tuple[str, ...] = ("Dhaka", "Sylhet", "Khulna", "Rajshahi", "Chattogram", "Rangpur")

ORDER_STATUSES: tuple[str, ...] = ("pending", "paid", "shipped", "delivered", "cancelled")
ORDER_STATUS_WEIGHTS: tuple[int, ...] = (25, 30, 20, 15, 10)
CARRIERS: tuple[str, ...] = ("standard", "express")
TICKET_CATEGORIES: tuple[str, ...] = ("billing", "shipping", "product", "account", "other")
TICKET_PRIORITIES: tuple[str, ...] = ("low", "normal", "high")
CUSTOMER_TIERS: tuple[str, ...] = ("standard", "gold")
