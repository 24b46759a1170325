"""pydantic-ai: agents as ``ask_*`` tools, and a model that samples the MCP client's LLM.

:class:`PydanticAIAgent` is what ``MCPServer(agents={"key": agent})`` wraps a
``pydantic_ai.Agent`` in: the reply is the run's output (text, or a
structured output under ``output`` with its JSON as ``text``) and its usage.
An agent declared with ``deps_type=Context`` receives the MCP request's
:class:`~mcpkit.server.context.Context` as its ``deps``.

:class:`SamplingModel` lets such an agent think with the calling client's LLM:
every model request becomes a ``sampling/createMessage`` request to the client
of the MCP request being served (2025-11-25 client/sampling), so a server with
no API keys of its own can host an agent. The agent's function tools travel
as sampling ``tools`` when the client declared ``sampling.tools``
(2025-11-25 client/sampling § tools in sampling); structured outputs are
asked for in the prompt, which every client supports.

Requires ``pydantic-ai`` (or ``pydantic-ai-slim``): ``pip install 'mcpkit[pydantic-ai]'``.
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal

from .._extras import require_extra

with require_extra("pydantic-ai", feature="the pydantic-ai adapter (mcpkit.adapters.pydantic_ai)"):
    from pydantic_ai.exceptions import UnexpectedModelBehavior, UserError
    from pydantic_ai.messages import (
        BinaryContent,
        ModelMessage,
        ModelRequest,
        ModelResponse,
        ModelResponsePart,
        RetryPromptPart,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
    from pydantic_ai.settings import ModelSettings

from ..errors import CapabilityError
from ..server.content import dump_text, jsonable
from ..server.context import Context, current_context
from .base import AgentResponse, register_agent_adapter

__all__ = ["PydanticAIAgent", "SamplingModel"]


# -- agents as tools ---------------------------------------------------------------------------


class PydanticAIAgent:
    """A ``pydantic_ai.Agent`` as an mcpkit agent (``name``, ``description``, ``generate``)."""

    def __init__(
        self, agent: Any, *, name: str | None = None, description: str | None = None
    ) -> None:
        self.agent = agent
        self.name: str | None = name if name is not None else getattr(agent, "name", None)
        own = getattr(agent, "description", None)
        if own is not None and not isinstance(own, str):
            own = str(own)  # a template string: its source text describes the agent
        self.description: str | None = description if description is not None else own
        deps_type = getattr(agent, "deps_type", None)
        self._deps_is_context = isinstance(deps_type, type) and issubclass(deps_type, Context)

    async def generate(self, message: str, *, context: Context | None = None) -> AgentResponse:
        options: dict[str, Any] = {}
        if self._deps_is_context:
            options["deps"] = context if context is not None else current_context()
        result = await self.agent.run(message, **options)
        output = result.output
        usage = _usage(result)
        if isinstance(output, str):
            return AgentResponse(text=output, usage=usage)
        data = jsonable(output)
        return AgentResponse(text=dump_text(data), output=data, usage=usage)


def _usage(result: Any) -> dict[str, Any] | None:
    usage = getattr(result, "usage", None)
    if usage is not None and not dataclasses.is_dataclass(usage) and callable(usage):
        usage = usage()  # pydantic-ai 1.x: a method
    if usage is None or not dataclasses.is_dataclass(usage) or isinstance(usage, type):
        return None
    # Only what was measured: zero counters and empty details say nothing.
    counted = {k: v for k, v in dataclasses.asdict(usage).items() if v}
    return jsonable(counted) if counted else None


# -- a model over MCP sampling -------------------------------------------------------------------

_STOP_REASONS: dict[str, Literal["stop", "length", "tool_call"]] = {
    "endTurn": "stop",
    "stopSequence": "stop",
    "maxTokens": "length",
    "toolUse": "tool_call",
}


class SamplingModel(Model):
    """A pydantic-ai model backed by the MCP client's LLM (``sampling/createMessage``).

    >>> from pydantic_ai import Agent                                   # doctest: +SKIP
    >>> agent = Agent(SamplingModel(), name="poet", description="Writes haiku.")
    >>> server = MCPServer(name="s", version="1", agents={"poet": agent})

    The request goes to the client of the MCP request being served (found
    through :func:`mcpkit.current_context`, or ``context`` when given), which
    must have declared the ``sampling`` capability. ``max_tokens`` is used when
    the agent's model settings set none; ``model_preferences`` (hints,
    priorities) and ``include_context`` pass through to the client.
    """

    def __init__(
        self,
        *,
        max_tokens: int = 1024,
        model_preferences: dict[str, Any] | None = None,
        include_context: Literal["none", "thisServer", "allServers"] | None = None,
        timeout: float | None = None,
        context: Context | None = None,
        settings: ModelSettings | None = None,
    ) -> None:
        super().__init__(
            settings=settings,
            profile={
                # Sampling has no JSON mode: structured output is asked for in the prompt.
                "default_structured_output_mode": "prompted",
                "supports_json_schema_output": False,
                "supports_json_object_output": False,
                "supports_tools": True,
                "supports_image_input": True,
                "supports_audio_input": True,
                "supports_document_input": False,
                "supports_video_input": False,
            },
        )
        self.max_tokens = max_tokens
        self.model_preferences = model_preferences
        self.include_context = include_context
        self.timeout = timeout
        self._context = context

    @property
    def model_name(self) -> str:
        return "mcp-sampling"  # the client picks the model; its name comes back per response

    @property
    def system(self) -> str:
        return "mcp-sampling"

    def _find_context(self) -> Context:
        ctx = self._context or current_context()
        if ctx is None:
            raise UserError(
                "SamplingModel needs an MCP request to sample through: use it in an agent "
                "served by MCPServer(agents=...) or a tool, or pass SamplingModel(context=ctx)"
            )
        return ctx

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        ctx = self._find_context()
        # The 2026-07-28 era asks through input-required rounds (session.inputs); only the
        # handshake era's stateless HTTP mode has no way to ask the client at all.
        if ctx.session.stateless and ctx.session.inputs is None:
            raise CapabilityError(
                "this agent samples the client's LLM, but the server runs in stateless mode, "
                "which has no channel for server-to-client requests such as sampling"
            )
        model_settings, params = self.prepare_request(model_settings, model_request_parameters)
        settings: dict[str, Any] = dict(model_settings or {})
        tool_defs = [*params.function_tools, *params.output_tools]
        sampling_caps = ctx.client_capabilities.get("sampling")
        with_tools = bool(tool_defs)
        if with_tools and not (isinstance(sampling_caps, dict) and "tools" in sampling_caps):
            # 2025-11-25 client/sampling § tools: servers MUST NOT send tools to such clients.
            raise CapabilityError(
                "this agent has tools, but the client did not declare the 'sampling.tools' "
                "capability, so its LLM cannot call them through MCP sampling"
            )
        system_prompt, sampling_messages = to_sampling_messages(
            messages, params, with_tools=with_tools
        )
        request: dict[str, Any] = {
            "messages": sampling_messages,
            "maxTokens": settings.get("max_tokens") or self.max_tokens,
        }
        if system_prompt:
            request["systemPrompt"] = system_prompt
        for key, value in (
            ("temperature", settings.get("temperature")),
            ("stopSequences", settings.get("stop_sequences")),
            ("modelPreferences", self.model_preferences),
            ("includeContext", self.include_context),
        ):
            if value is not None:
                request[key] = value
        if with_tools:
            request["tools"] = [
                {
                    "name": t.name,
                    "description": t.description or "",
                    "inputSchema": t.parameters_json_schema,
                }
                for t in tool_defs
            ]
            if not params.allow_text_output:
                request["toolChoice"] = {"mode": "required"}
        result = await ctx.session.send_request(
            "sampling/createMessage",
            request,
            ctx.request,
            timeout=self.timeout,
            capability="sampling",
        )
        return from_sampling_result(result)

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: Any = None,
    ) -> AsyncIterator[StreamedResponse]:
        raise UserError("MCP sampling returns whole messages: use agent.run(), not streaming")
        yield  # pragma: no cover  (makes this an async generator)


def _instructions(messages: Sequence[ModelMessage], params: ModelRequestParameters) -> str | None:
    parts = params.instruction_parts
    if parts:
        return "\n\n".join(p.content for p in parts if p.content)
    for message in reversed(messages):  # a direct model.request(): the latest request's
        if isinstance(message, ModelRequest):
            return message.instructions
    return None


def _user_block(item: Any) -> dict[str, Any]:
    if isinstance(item, str):
        return {"type": "text", "text": item}
    if isinstance(item, BinaryContent):
        kind = item.media_type.split("/", 1)[0]
        if kind in ("image", "audio"):
            return {
                "type": kind,
                "data": base64.b64encode(item.data).decode("ascii"),
                "mimeType": item.media_type,
            }
    raise UserError(
        f"MCP sampling carries text, images and audio; cannot send {type(item).__name__}"
    )


def to_sampling_messages(
    messages: Sequence[ModelMessage], params: ModelRequestParameters, *, with_tools: bool
) -> tuple[str | None, list[dict[str, Any]]]:
    """pydantic-ai history → (``systemPrompt``, ``SamplingMessage`` list).

    Without tools every message holds one content block (the only form before
    2025-11-25), and neighbouring texts of one role are joined, since many LLM
    APIs want the roles to alternate. With tools (2025-11-25 only) an assistant
    turn is one message with its text and ``tool_use`` blocks, and the tool
    results answering it form one user message of ``tool_result`` blocks alone
    (client/sampling § tool result messages).
    """
    system: list[str] = []
    out: list[dict[str, Any]] = []

    def add(role: str, block: dict[str, Any]) -> None:
        last = out[-1] if out else None
        if (
            last is not None
            and last["role"] == role
            and block["type"] == "text"
            and isinstance(last["content"], dict)
            and last["content"].get("type") == "text"
        ):
            last["content"] = {
                "type": "text",
                "text": f"{last['content']['text']}\n\n{block['text']}",
            }
        else:
            out.append({"role": role, "content": block})

    for message in messages:
        if isinstance(message, ModelRequest):
            results: list[dict[str, Any]] = []
            later: list[dict[str, Any]] = []  # after the tool results, which come first
            for part in message.parts:
                if isinstance(part, SystemPromptPart):
                    system.append(part.content)
                elif isinstance(part, UserPromptPart):
                    items = [part.content] if isinstance(part.content, str) else part.content
                    later.extend(_user_block(item) for item in items)
                elif isinstance(part, ToolReturnPart | RetryPromptPart):
                    text = (
                        part.model_response_str()
                        if isinstance(part, ToolReturnPart)
                        else part.model_response()
                    )
                    if with_tools and part.tool_call_id:
                        result: dict[str, Any] = {
                            "type": "tool_result",
                            "toolUseId": part.tool_call_id,
                            "content": [{"type": "text", "text": text}],
                        }
                        if isinstance(part, RetryPromptPart):
                            result["isError"] = True
                        results.append(result)
                    else:
                        later.append({"type": "text", "text": text})
            if results:
                out.append({"role": "user", "content": results})
            for block in later:
                add("user", block)
        elif isinstance(message, ModelResponse):
            blocks: list[dict[str, Any]] = []
            for rpart in message.parts:
                if isinstance(rpart, TextPart) and rpart.content:
                    blocks.append({"type": "text", "text": rpart.content})
                elif isinstance(rpart, ToolCallPart) and with_tools:
                    blocks.append(
                        {
                            "type": "tool_use",
                            "id": rpart.tool_call_id,
                            "name": rpart.tool_name,
                            "input": rpart.args_as_dict(),
                        }
                    )
            if with_tools and blocks:
                out.append({"role": "assistant", "content": blocks})
            else:
                for block in blocks:
                    add("assistant", block)
    instructions = _instructions(messages, params)
    if instructions:
        system.insert(0, instructions)
    return ("\n\n".join(s for s in system if s) or None), out


def from_sampling_result(result: dict[str, Any]) -> ModelResponse:
    """A ``CreateMessageResult`` → a pydantic-ai ``ModelResponse``."""
    if result.get("role") != "assistant":
        raise UnexpectedModelBehavior(
            f"MCP sampling answered with role {result.get('role')!r}, expected 'assistant'"
        )
    content = result.get("content")
    blocks = content if isinstance(content, list) else [content]
    parts: list[ModelResponsePart] = []
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            parts.append(TextPart(content=str(block.get("text", ""))))  # type: ignore[union-attr]
        elif kind == "tool_use":
            assert isinstance(block, dict)
            parts.append(
                ToolCallPart(
                    tool_name=str(block.get("name")),
                    args=block.get("input") or {},
                    tool_call_id=str(block.get("id")),
                )
            )
        else:
            raise UnexpectedModelBehavior(
                f"MCP sampling answered with {kind!r} content; this agent can use text "
                "and tool calls only"
            )
    model = result.get("model")
    stop = result.get("stopReason")
    return ModelResponse(
        parts=parts,
        model_name=model if isinstance(model, str) else None,
        provider_name="mcp-sampling",
        finish_reason=_STOP_REASONS.get(stop) if isinstance(stop, str) else None,
    )


# ``as_agent`` (and so ``MCPServer(agents=...)``) finds this adapter through the registry.
register_agent_adapter(__name__, PydanticAIAgent)
