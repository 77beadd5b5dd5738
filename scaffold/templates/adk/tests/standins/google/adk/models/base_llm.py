from __future__ import annotations


class BaseLlm:
    """google.adk.models.base_llm.BaseLlm: a model; `model` is its name."""

    model: str = ""
