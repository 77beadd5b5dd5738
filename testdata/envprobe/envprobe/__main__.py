"""A harness that says what the frameworks installed beside it read from the environment, as a
job's session sees it: the model clients' keys and base URLs, OpenTelemetry's global provider,
resource and exporter, the settings a framework makes when it is imported. A value that holds one of
the session's environment variables says its name ($ANTHROPIC_API_KEY), so that two jobs'
answers compare: a session made ahead or forked must answer as one started at its job does.

The testscripts of the Python templates run it in their plugin's environment, under oz0 dev
forked and --cold (testdata/scripts/template_*.txtar). Standard library and raw protocol only:
it needs nothing of the plugin's."""

import json
import os
import sys

# Imported at the top, as a harness imports its framework: a session made ahead loads them.
try:
    import anthropic
except ImportError:
    anthropic = None
try:
    import openai
except ImportError:
    openai = None
try:
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
except ImportError:
    trace = None
try:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
except ImportError:
    OTLPSpanExporter = None
try:
    from google.adk.models.anthropic_llm import AnthropicLlm
except ImportError:
    AnthropicLlm = None
try:
    from strands.models.anthropic import AnthropicModel as StrandsAnthropic
except ImportError:
    StrandsAnthropic = None
try:
    from agent_framework import observability as af_observability
    from agent_framework.openai import OpenAIChatCompletionClient
except ImportError:
    af_observability = None
try:
    from langchain_anthropic import ChatAnthropic
except ImportError:
    ChatAnthropic = None
try:
    from langsmith import utils as langsmith_utils
except ImportError:
    langsmith_utils = None
try:
    from crewai.telemetry import Telemetry as CrewAITelemetry
except ImportError:
    CrewAITelemetry = None


def said(value):
    """value, with the session's environment variables in it said by their names."""
    text = str(value).rstrip("/")
    for name in sorted(os.environ, key=lambda n: (-len(os.environ[n]), n)):
        held = os.environ[name].rstrip("/")
        if len(held) >= 8 and held in text:
            text = text.replace(held, "$" + name)
    return text


def exporter_headers(exporter):
    """The headers an OTLP/HTTP exporter sends: on the exporter (up to 1.44) or its client."""
    for holder in (exporter, getattr(exporter, "_client", None)):
        headers = getattr(holder, "_headers", None)
        if headers is not None:
            return dict(headers)
    raise AttributeError("no headers found on the exporter")


def readings():
    out = {}

    def read(name, fn):
        try:
            out[name] = fn()
        except Exception as err:  # said, and compared, as any other reading
            out[name] = "error: %s" % type(err).__name__

    if anthropic:
        read("anthropic key", lambda: said(anthropic.Anthropic().api_key))
        read("anthropic base_url", lambda: said(anthropic.Anthropic().base_url))
        read("anthropic async base_url", lambda: said(anthropic.AsyncAnthropic().base_url))
    if openai:
        read("openai key", lambda: said(openai.OpenAI().api_key))
        read("openai base_url", lambda: said(openai.OpenAI().base_url))
    if trace:
        read("otel global provider", lambda: type(trace.get_tracer_provider()).__name__)
        read("otel resource service.name", lambda: said(Resource.create().attributes.get("service.name")))
    if OTLPSpanExporter:
        read("otlp exporter endpoint", lambda: said(OTLPSpanExporter()._endpoint.removesuffix("/v1/traces")))
        read("otlp exporter headers", lambda: sorted((k, said(v)) for k, v in exporter_headers(OTLPSpanExporter()).items()))
    if AnthropicLlm:
        read("adk AnthropicLlm key", lambda: said(AnthropicLlm(model="m")._anthropic_client.api_key))
        read("adk AnthropicLlm base_url", lambda: said(AnthropicLlm(model="m")._anthropic_client.base_url))
    if StrandsAnthropic:
        read("strands AnthropicModel key", lambda: said(StrandsAnthropic(model_id="m", max_tokens=1).client.api_key))
        read("strands AnthropicModel base_url", lambda: said(StrandsAnthropic(model_id="m", max_tokens=1).client.base_url))
    if af_observability:
        settings = af_observability.OBSERVABILITY_SETTINGS
        read("agent_framework OBSERVABILITY_SETTINGS",
             lambda: sorted((k, said(v)) for k, v in vars(settings).items() if isinstance(v, (bool, int, str, type(None)))))
        read("agent_framework OpenAI client key", lambda: said(OpenAIChatCompletionClient(model="m").client.api_key))
        read("agent_framework OpenAI client base_url", lambda: said(OpenAIChatCompletionClient(model="m").client.base_url))
    if ChatAnthropic:
        read("langchain ChatAnthropic key", lambda: said(ChatAnthropic(model="m").anthropic_api_key.get_secret_value()))
        read("langchain ChatAnthropic url", lambda: said(ChatAnthropic(model="m").anthropic_api_url))
    if langsmith_utils:
        read("langsmith tracing enabled", lambda: said(langsmith_utils.tracing_is_enabled()))
    if CrewAITelemetry:
        read("crewai telemetry ready", lambda: said(CrewAITelemetry().ready))
    return out


def main():
    json.loads(sys.stdin.readline())  # the session request: what it asks is not read
    text = "\n".join("%s: %s" % (k, v) for k, v in readings().items())
    print(json.dumps({"type": "result", "output": text}), flush=True)


main()
