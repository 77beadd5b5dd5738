"""Stand-in of AWS Strands Agents (strands-agents), with the interfaces the template uses: see
tests/standins/standin_model.py."""

from .agent import Agent, AgentResult
from .tools.decorator import tool

__all__ = ["Agent", "AgentResult", "tool"]
