from .base_llm import BaseLlm
from .llm_request import LlmRequest

__all__ = ["BaseLlm", "LlmRequest"]
