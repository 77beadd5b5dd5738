"""One session of the harness protocol over stdin and stdout, as the node runs it:

python -m {{.Package}}
"""

import signal
from typing import Any

from .harness import Session, main


def _run(session: Session) -> Any:
    # agent.py is imported here, once main() has taken stdout for the protocol: whatever it and
    # the libraries it imports print goes to the job's log, and an import error (a framework
    # missing from the environment, say) ends the session with an error that names it.
    from .agent import run

    # A cancel is SIGTERM, which ends the session at once (main()), whatever a library installed
    # as it loaded: CrewAI's telemetry installs a handler of its own that flushes to CrewAI first.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    return run(session)


if __name__ == "__main__":
    main(_run)
