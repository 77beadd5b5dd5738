# oz0's warm-ups of a session made ahead (put between reader.py and loader.py): after the loader
# has imported the harness's dependencies, each framework among them runs one agent of oz0's own
# (never the plugin's) against a model answered in this process, so that what a framework does
# on its first run (its lazy imports, its clients' and schemas' set-up) is done before the job
# comes. Nothing leaves the process: the model clients' HTTP goes to a model this process serves on
# a loopback socket, or to an httpx.MockTransport; the frameworks' telemetry is off while they
# run. A warm-up that fails is given up, said in the loader's line, and the session runs as it
# would have without it; an asynchronous one is also given up past WARM_UP_TIMEOUT (the others
# call nothing that waits on the network).

import asyncio as _asyncio
import importlib

WARM_UP_TIMEOUT = 20.0  # seconds, each

_WARM_ENV = {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "OTEL_SDK_DISABLED": "true",
    "ANONYMIZED_TELEMETRY": "false",
    "LANGCHAIN_TRACING_V2": "false",
}


def _answer(httpx, request):
    """The in-process model: Anthropic's Messages or OpenAI's Chat Completions, streamed or not;
    a call to the tool `echo` first, then, once its result is in the conversation, a text."""
    body = json.loads(request.content or b"{}")
    said = json.dumps(body.get("messages", []))
    done = '"tool_result"' in said or '"role": "tool"' in said
    stream = bool(body.get("stream"))
    if request.url.path.endswith("/messages"):
        return httpx.Response(200, **_anthropic(done, stream))
    return httpx.Response(200, **_openai(done, stream))


def _sse(events):
    return "".join("event: %s\ndata: %s\n\n" % (name, json.dumps(data)) for name, data in events).encode()


def _anthropic(done, stream):
    usage = {"input_tokens": 1, "output_tokens": 1}
    if done:
        block, stop = {"type": "text", "text": "warm"}, "end_turn"
    else:
        block, stop = {"type": "tool_use", "id": "toolu_warm", "name": "echo", "input": {"text": "warm"}}, "tool_use"
    if not stream:
        message = {"id": "msg_warm", "type": "message", "role": "assistant", "model": "warm-up",
                   "content": [block], "stop_reason": stop, "stop_sequence": None, "usage": usage}
        return {"json": message}
    start = dict(block, **({"text": ""} if done else {"input": {}}))
    delta = {"type": "text_delta", "text": "warm"} if done else {"type": "input_json_delta", "partial_json": '{"text": "warm"}'}
    events = [
        ("message_start", {"type": "message_start", "message": {"id": "msg_warm", "type": "message", "role": "assistant",
                                                                 "model": "warm-up", "content": [], "stop_reason": None,
                                                                 "stop_sequence": None, "usage": usage}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": start}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                           "usage": {"output_tokens": 1}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return {"content": _sse(events), "headers": {"content-type": "text/event-stream"}}


def _openai(done, stream):
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    call = {"id": "call_warm", "type": "function", "function": {"name": "echo", "arguments": '{"text": "warm"}'}}
    if not stream:
        message = {"role": "assistant", "content": "warm"} if done else {"role": "assistant", "content": None, "tool_calls": [call]}
        return {"json": {"id": "chatcmpl-warm", "object": "chat.completion", "created": 0, "model": "warm-up",
                         "choices": [{"index": 0, "message": message, "finish_reason": "stop" if done else "tool_calls"}],
                         "usage": usage}}
    chunk = {"id": "chatcmpl-warm", "object": "chat.completion.chunk", "created": 0, "model": "warm-up"}
    delta = {"role": "assistant", "content": "warm"} if done else {"role": "assistant", "tool_calls": [dict(call, index=0)]}
    lines = [dict(chunk, choices=[{"index": 0, "delta": delta, "finish_reason": None}]),
             dict(chunk, choices=[{"index": 0, "delta": {}, "finish_reason": "stop" if done else "tool_calls"}]),
             dict(chunk, choices=[], usage=usage)]
    body = "".join("data: %s\n\n" % json.dumps(line) for line in lines) + "data: [DONE]\n\n"
    return {"content": body.encode(), "headers": {"content-type": "text/event-stream"}}


def _http(sdk, asynchronous=True):
    """An HTTP client of the kind the SDK sdk (anthropic, openai) takes, its requests answered by
    _answer: the SDKs moved from httpx to httpx2, and take only their own."""
    base = importlib.import_module(sdk + "._base_client")
    httpx = getattr(base, "httpx2", None) or getattr(base, "httpx")
    transport = httpx.MockTransport(lambda request: _answer(httpx, request))
    return httpx.AsyncClient(transport=transport) if asynchronous else httpx.Client(transport=transport)


def echo(text: str) -> str:
    """Says the text back."""
    return text


async def _serve_model(reader, writer):
    """The in-process model over a loopback socket: a model client's real HTTP path (its
    connection pool, its SSL context, its HTTP/1.1 parser) runs once too."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        path = lines[0].split(" ")[1]
        size = 0
        for line in lines[1:]:
            if line.lower().startswith("content-length:"):
                size = int(line.split(":", 1)[1])
        body = json.loads(await reader.readexactly(size) if size else b"{}")
        said = json.dumps(body.get("messages", []))
        done = '"tool_result"' in said or '"role": "tool"' in said
        make = _anthropic if path.endswith("/messages") else _openai
        answer = make(done, bool(body.get("stream")))
        content = answer["content"] if "content" in answer else json.dumps(answer["json"]).encode()
        kind = answer.get("headers", {}).get("content-type", "application/json")
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: %s\r\ncontent-length: %d\r\nconnection: close\r\n\r\n" % (kind.encode(), len(content)) + content)
        await writer.drain()
    finally:
        writer.close()


def _traced(client_class):
    """The option that makes a client of client_class trace its calls on a provider of the warm-up's
    own (never the global one), when the SDK traces its calls (the Anthropic SDK's open_telemetry)
    and OpenTelemetry's SDK is loaded: a job whose spans go to the node takes that path (its
    streams' snapshots are pydantic generic models, built on first use), so it runs once here too."""
    if "opentelemetry.sdk.trace" not in sys.modules:
        return None
    import inspect

    try:
        if "open_telemetry" not in inspect.signature(client_class.__init__).parameters:
            return None
    except (TypeError, ValueError):
        return None
    from opentelemetry.sdk.trace import TracerProvider

    # A provider made while the warm-ups' OTEL_SDK_DISABLED is set makes no spans, and the SDK
    # would skip its traced path; this one has no processor: its spans go nowhere.
    disabled = os.environ.pop("OTEL_SDK_DISABLED", None)
    try:
        # Not kept alive by an atexit hook: a provider that lives on has the SDK run its fork hook
        # (a thread) in every session forked from here.
        try:
            provider = TracerProvider(shutdown_on_exit=False)
        except TypeError:
            provider = TracerProvider()
    finally:
        if disabled is not None:
            os.environ["OTEL_SDK_DISABLED"] = disabled
    return {"open_telemetry": {"tracer_provider": provider}}


async def _warm_sdk(sdk):
    """One call of each kind (streamed and not) through the SDK sdk (anthropic, openai) over its
    own HTTP client to a model on a loopback socket of this process's, then through a mock
    transport and traced (in a session forked ahead, _lean: the first only)."""
    module = importlib.import_module(sdk)
    server = await _asyncio.start_server(_serve_model, "127.0.0.1", 0)
    try:
        url = "http://127.0.0.1:%d" % server.sockets[0].getsockname()[1]
        traced = _traced(module.AsyncAnthropic) if sdk == "anthropic" else None
        if _lean:
            variants = [traced or {}]  # a job's path: its HTTP, and its spans when it traces
        else:
            variants = [{}, {"http_client": _http(sdk)}] + ([traced] if traced else [])
        for extra in variants:
            if sdk == "anthropic":
                client = module.AsyncAnthropic(base_url=url, api_key="warm-up", max_retries=0, **extra)
                call = lambda **kw: client.messages.create(model="warm-up", max_tokens=8, messages=[{"role": "user", "content": "hi"}], **kw)
            else:
                client = module.AsyncOpenAI(base_url=url + "/v1", api_key="warm-up", max_retries=0, **extra)
                call = lambda **kw: client.chat.completions.create(model="warm-up", messages=[{"role": "user", "content": "hi"}], **kw)
            await call()
            async for _ in await call(stream=True):
                pass
            await client.close()
    finally:
        server.close()
        await server.wait_closed()


async def _warm_anthropic():
    await _warm_sdk("anthropic")


async def _warm_openai():
    await _warm_sdk("openai")


async def _warm_adk():
    import anthropic
    from google.adk.agents import LlmAgent
    from google.adk.agents.run_config import RunConfig, StreamingMode
    from google.adk.models.anthropic_llm import AnthropicLlm
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService
    from google.genai import types

    client = anthropic.AsyncAnthropic(base_url="http://warm-up.invalid", api_key="warm-up", http_client=_http("anthropic"), max_retries=0)
    agent = LlmAgent(name="warm_up", model=AnthropicLlm(model="warm-up", max_tokens=8, client=client),
                     instruction=lambda context: "Warm up.", tools=[echo],
                     before_tool_callback=lambda tool, args, tool_context: None,
                     after_tool_callback=lambda tool, args, tool_context, tool_response: None)
    runner = Runner(app_name="warm_up", agent=agent, session_service=InMemorySessionService())
    session = await runner.session_service.create_session(app_name="warm_up", user_id="warm_up")
    message = types.Content(role="user", parts=[types.Part(text="hi")])
    for mode in (StreamingMode.SSE, StreamingMode.NONE):
        async for _ in runner.run_async(user_id="warm_up", session_id=session.id, new_message=message,
                                        run_config=RunConfig(streaming_mode=mode)):
            pass


def _warm_strands():
    from strands import Agent
    from strands.models.anthropic import AnthropicModel
    from strands.tools.executors import SequentialToolExecutor

    model = AnthropicModel(client_args={"base_url": "http://warm-up.invalid", "api_key": "warm-up",
                                        "http_client": _http("anthropic"), "max_retries": 0},
                           model_id="warm-up", max_tokens=8)
    Agent(model=model, tools=[_strands_tool()], callback_handler=None, tool_executor=SequentialToolExecutor())("hi")


def _strands_tool():
    from strands import tool

    return tool(echo)


async def _warm_agent_framework():
    import openai
    from agent_framework import Agent
    from agent_framework.openai import OpenAIChatCompletionClient

    client = openai.AsyncOpenAI(base_url="http://warm-up.invalid/v1", api_key="warm-up", http_client=_http("openai"), max_retries=0)
    agent = Agent(client=OpenAIChatCompletionClient(model="warm-up", async_client=client), tools=[echo])
    await agent.run("hi")
    async for _ in agent.run("hi", stream=True):
        pass


def _warm_langgraph():
    from langchain_anthropic import ChatAnthropic
    from langchain_core.tools import tool
    from langgraph.prebuilt import create_react_agent

    model = ChatAnthropic(model="warm-up", api_key="warm-up", base_url="http://warm-up.invalid", max_retries=0)
    model._client._client = _http("anthropic", False)  # its HTTP, to the model in this process
    model._async_client._client = _http("anthropic")
    create_react_agent(model, [tool(echo)], prompt="Warm up.").invoke({"messages": [("user", "hi")]})


def _warm_opentelemetry():
    """The OpenTelemetry SDK as a session's export_spans() sets it up, on a provider of its own
    (never the global one): a span made, ended and encoded for OTLP/HTTP, its exporter made (it
    sends nothing; no batch processor, whose thread a fork would not copy)."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    # Made while the warm-ups' OTEL_SDK_DISABLED is set, a provider makes no spans: not this one.
    disabled = os.environ.pop("OTEL_SDK_DISABLED", None)
    try:
        try:
            provider = TracerProvider(resource=Resource.create(), shutdown_on_exit=False)
        except TypeError:  # an SDK without the option
            provider = TracerProvider(resource=Resource.create())
    finally:
        if disabled is not None:
            os.environ["OTEL_SDK_DISABLED"] = disabled
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with provider.get_tracer("oz0.warm-up").start_as_current_span("warm-up") as span:
        span.set_attribute("warm", True)
    provider.shutdown()
    try:
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        return
    encode_spans(memory.get_finished_spans()).SerializePartialToString()
    OTLPSpanExporter(endpoint="http://127.0.0.1:9/v1/traces").shutdown()


# (the warm-up, the modules it needs loaded): run in this order, each only when its modules are.
_WARMUPS = [
    (_warm_opentelemetry, ("opentelemetry.sdk.trace",)),
    (_warm_anthropic, ("anthropic",)),
    (_warm_openai, ("openai",)),
    (_warm_adk, ("google.adk", "anthropic")),
    (_warm_strands, ("strands", "anthropic")),
    (_warm_agent_framework, ("agent_framework", "openai")),
    (_warm_langgraph, ("langgraph", "langchain_anthropic")),
]


# A session forked ahead runs the warm-ups again (zygote.py), to own the pages a run writes
# before its job comes: it needs a job's path run once, not each variant, and a core it takes is
# one a job may want: its SDK warm-ups take one path (the SDK's HTTP, traced when it traces).
_lean = False


def _warm_up(lean=False):
    """Runs the warm-ups of the loaded frameworks; returns (those done, those given up)."""
    global _lean
    _lean = lean
    done, failed = [], []
    saved = {k: os.environ.get(k) for k in _WARM_ENV}
    os.environ.update(_WARM_ENV)
    try:
        for fn, needs in _WARMUPS:
            if not all(name in sys.modules for name in needs):
                continue
            name = fn.__name__[len("_warm_"):]
            try:
                if _asyncio.iscoroutinefunction(fn):
                    _asyncio.run(_asyncio.wait_for(fn(), WARM_UP_TIMEOUT))
                else:
                    fn()
                done.append(name)
            except BaseException as err:  # a framework that cannot warm up runs cold, as before
                failed.append("%s: %s: %s" % (name, type(err).__name__, str(err)[:200]))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    _keep_weakly_cached()
    return done, failed


# What the warm-ups made that a library caches only weakly, held here: the collection the loader
# runs before it freezes (and forks) would drop it, and each job would make it again.
_KEPT = []


def _keep_weakly_cached():
    """Keeps pydantic's parametrized generic models (the Anthropic SDK's ParsedMessage[...] of a
    stream, for one), which its cache holds weakly: building them again costs a job 15-40 ms."""
    generics = sys.modules.get("pydantic._internal._generics")
    cache = getattr(generics, "_GENERIC_TYPES_CACHE", None)
    if cache is None:
        return
    try:
        _KEPT.extend(list(cache.values()))
    except Exception:  # a pydantic whose cache is not a mapping: nothing kept, nothing lost
        pass
