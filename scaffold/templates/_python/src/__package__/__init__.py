"""{{.Name}}

An Orchestrator Zero plugin whose agent runs in its own harness: `python -m` this package runs
one session of the harness protocol (harness.py); your agent is run(session) in agent.py.
"""

__version__ = "0.1.0"
