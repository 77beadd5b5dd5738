from . import types

__all__ = ["types"]
