"""A small, offline customer-support assistant: the function under test of the examples.

It answers from a fixed knowledge base with a little simulated latency, the way a real
LLM-backed service would answer over the network. No API key, no server.
"""

from __future__ import annotations

import anyio

from aeval import Parameters

KNOWLEDGE = {
    ("hours", "open", "opening"): "We're open Monday to Friday, 9am to 5pm.",
    ("refund", "money back"): "You can request a refund within 30 days of purchase.",
    ("password", "reset"): "Click 'Forgot password' on the login page to reset your password.",
    ("shipping", "deliver"): "Standard shipping takes 3 to 5 business days.",
    ("human", "agent", "person"): "I'm connecting you with a human agent now.",
}
FALLBACK = "I'm sorry, I don't know the answer to that yet."


async def answer(params: Parameters) -> str:
    """Answer the question in the first parameter (or the named parameter ``question``)."""
    question = str(params.get("question", None) or params[0]).lower()
    await anyio.sleep(0.005)
    for keywords, reply in KNOWLEDGE.items():
        if any(word in question for word in keywords):
            return reply
    return FALLBACK


async def chat(question: str) -> str:
    """The same assistant as a chat function: the question alone, as text."""
    return await answer(Parameters({"question": question}))
