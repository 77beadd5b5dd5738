from __future__ import annotations

import os
import sys
from typing import Any

from standin_model import OPENAI, Client

_CONFIG = {"model_id", "params"}


class OpenAIModel:
    """strands.models.openai.OpenAIModel: openai.AsyncOpenAI(**client_args), Chat Completions."""

    def __init__(
        self, client: Any = None, client_args: dict[str, Any] | None = None, **model_config: Any
    ) -> None:
        if client is not None and client_args is not None:
            raise ValueError("Only one of 'client' or 'client_args' should be provided")
        for key in set(model_config) - _CONFIG:
            print(f"Invalid configuration parameters: ['{key}']", file=sys.stderr)
        if "model_id" not in model_config:
            raise TypeError("OpenAIModel needs model_id")
        args = dict(client_args or {})
        self.config = model_config
        self.client = Client(
            OPENAI,
            base_url=args.get("base_url")
            or os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"),
            api_key=args.get("api_key") or os.environ.get("OPENAI_API_KEY", ""),
            headers=dict(args.get("default_headers") or {}),
            max_retries=args.get("max_retries", 2),
        )

    def max_tokens(self) -> int:
        return int((self.config.get("params") or {}).get("max_tokens", 4096))
