"""An agent with middleware of the author's own, one of each kind Agent Framework
sorts them into (agent, chat, function), given to on_the_gateway(), which puts the job's ask
last. test_agent_framework.py runs it as a harness: python tests/middleware_agent.py.
"""

from collections.abc import Awaitable, Callable

from agent_framework import (
    Agent,
    AgentContext,
    AgentMiddleware,
    ChatContext,
    ChatMiddleware,
    FunctionInvocationContext,
    FunctionMiddleware,
    tool,
)

from {{.Package}}.harness import Session, main
from {{.Package}}.wiring import (
    on_the_gateway,
    run_agent,
)


@tool
def notify_team(team: str, summary: str) -> str:
    """Tell a team about a support ticket."""
    return f"told the {team} team: {summary}"


def run(session: Session) -> str:
    class AroundTheRun(AgentMiddleware):
        async def process(
            self, context: AgentContext, call_next: Callable[[], Awaitable[None]]
        ) -> None:
            session.log("agent middleware")
            await call_next()

    class AroundEachModelCall(ChatMiddleware):
        async def process(
            self, context: ChatContext, call_next: Callable[[], Awaitable[None]]
        ) -> None:
            session.log("chat middleware")
            await call_next()

    class Triaged(FunctionMiddleware):
        async def process(
            self, context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]
        ) -> None:
            arguments = dict(context.arguments)
            context.arguments = {**arguments, "summary": f"{arguments['summary']} (triaged)"}
            await call_next()

    agent = Agent(
        instructions=session.instructions,
        tools=[notify_team],
        **on_the_gateway(session, middleware=[AroundTheRun(), AroundEachModelCall(), Triaged()]),
    )
    return run_agent(session, agent)


if __name__ == "__main__":
    main(run)
