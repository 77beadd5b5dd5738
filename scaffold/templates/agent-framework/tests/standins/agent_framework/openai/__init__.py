"""agent_framework.openai: the OpenAI chat clients."""

from __future__ import annotations

from typing import Any

from openai import AsyncOpenAI


class OpenAIChatCompletionClient:
    """Chat Completions (POST /chat/completions)."""

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: Any = None,
        credential: Any = None,
        org_id: str | None = None,
        default_headers: Any = None,
        async_client: AsyncOpenAI | None = None,
        instruction_role: str | None = None,
        response_parser: Any = None,
        message_preparer: Any = None,
        base_url: str | None = None,
        azure_endpoint: str | None = None,
        api_version: str | None = None,
        middleware: Any = None,
        function_invocation_configuration: Any = None,
        env_file_path: Any = None,
        env_file_encoding: Any = None,
    ) -> None:
        self.model = model
        # Given a client, it is used as it is: base_url, api_key and default_headers are not.
        self.client = async_client or AsyncOpenAI(
            api_key=api_key, base_url=base_url, default_headers=default_headers
        )


class OpenAIChatClient(OpenAIChatCompletionClient):
    """The Responses API (POST /responses), which the gateway does not serve."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise AssertionError(
            "OpenAIChatClient speaks OpenAI's Responses API, which the gateway "
            "does not serve: use OpenAIChatCompletionClient"
        )


__all__ = ["OpenAIChatClient", "OpenAIChatCompletionClient"]
