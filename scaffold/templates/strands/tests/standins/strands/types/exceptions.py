class ModelThrottledException(Exception):
    """The model API answered 429: Strands' retry strategy retries it."""


class EventLoopException(Exception):
    """An error of a model call after the first cycle, wrapped."""
