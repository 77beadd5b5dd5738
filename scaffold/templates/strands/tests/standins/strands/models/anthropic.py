from __future__ import annotations

import os
import sys
from typing import Any

from standin_model import ANTHROPIC, Client

_CONFIG = {"model_id", "max_tokens", "params", "use_native_token_count"}


class AnthropicModel:
    """strands.models.anthropic.AnthropicModel: anthropic.AsyncAnthropic(**client_args), the
    Messages API."""

    def __init__(self, *, client_args: dict[str, Any] | None = None, **model_config: Any) -> None:
        for key in set(model_config) - _CONFIG:
            print(f"Invalid configuration parameters: ['{key}']", file=sys.stderr)
        if "model_id" not in model_config or "max_tokens" not in model_config:
            raise TypeError("AnthropicModel needs model_id and max_tokens")
        args = dict(client_args or {})
        self.config = model_config
        self.client = Client(
            ANTHROPIC,
            base_url=args.get("base_url")
            or os.environ.get("ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
            api_key=args.get("api_key") or os.environ.get("ANTHROPIC_API_KEY", ""),
            headers=dict(args.get("default_headers") or {}),
            max_retries=args.get("max_retries", 2),
        )

    def max_tokens(self) -> int:
        return int(self.config["max_tokens"])
