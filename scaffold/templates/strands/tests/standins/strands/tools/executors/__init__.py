class ConcurrentToolExecutor:
    """Runs a model turn's tool calls concurrently (Strands' default)."""


class SequentialToolExecutor:
    """Runs a model turn's tool calls one after the other, in the model's order."""
