from __future__ import annotations

import enum


class StreamingMode(enum.Enum):
    NONE = None
    SSE = "sse"
    BIDI = "bidi"


class RunConfig:
    def __init__(
        self,
        *,
        streaming_mode: StreamingMode = StreamingMode.NONE,
        max_llm_calls: int = 500,
        **kwargs: object,
    ) -> None:
        self.streaming_mode = streaming_mode
        self.max_llm_calls = max_llm_calls
