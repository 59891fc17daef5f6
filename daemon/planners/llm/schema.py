"""The model's reply: a versioned JSON document, parsed strictly or not at all.

The reply is untrusted input. It is parsed into pydantic models with ``extra="forbid"``
so that a key the model invents is an error rather than silently ignored, and every
failure - not JSON, wrong shape, NaN confidence, absurd nesting - becomes one
``ModelBadOutputError`` with a one-line reason the repair turn can show the model.

Field descriptions are examples ("e.g. ..."), never instructions a model could echo as a
value: a reply that once quoted the description "text copied exactly" as its evidence.

The wire schema (``reply_json_schema``) is stricter than the parser: OpenAI-style strict
structured output wants every key required and nullable instead of optional, and no
``additionalProperties``. The parser accepts a reply that leaves out a nullable key or an
empty list, because JSON-mode models without schema enforcement often do.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field

from daemon.core.errors import ModelBadOutputError

VERSION = 1
_MAX_REASON = 240
MAX_REPLY_BYTES = 2 << 20  # a reply longer than this is not read at all (64k tokens are ~256 KB)
MAX_PROPOSALS = 100  # a reply's proposals past this many are not read (and are said to be)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Quote(_Strict):
    """A verbatim excerpt of one note, named by the id it had in the prompt."""

    note: str = Field(description='e.g. "n2"')
    quote: str = Field(description='e.g. "Deploys go out on Tuesdays."')


class Dropped(_Strict):
    """A sentence a merge leaves out on purpose, and why."""

    text: str
    reason: str


class ModelProposal(_Strict):
    kind: Literal["merge", "supersede", "soft-expire"]
    notes: list[str] = Field(description='e.g. ["n1", "n4"]')
    survivor: str | None = Field(default=None, description='e.g. "n1" or null')
    newer: str | None = Field(default=None, description='e.g. "n4" or null')
    new_path: str | None = Field(default=None, description='e.g. "development_guide.md" or null')
    new_title: str | None = Field(default=None, description='e.g. "Development guide" or null')
    merged_body: str | None = None
    rationale: str
    confidence: float = Field(ge=0.0, le=1.0, allow_inf_nan=False)
    evidence: list[Quote] = Field(default_factory=list)
    dropped: list[Dropped] = Field(default_factory=list)


class Reply(_Strict):
    v: Literal[1] = 1  # a reply without "v" is read as version 1; another version is refused
    proposals: list[ModelProposal]


# Keywords strict structured-output modes reject or ignore; the parser enforces them instead.
_UNSUPPORTED = ("default", "title", "minimum", "maximum", "minItems", "maxItems", "minLength", "maxLength", "pattern", "format")


def _strictify(node: Any) -> Any:
    if isinstance(node, list):
        return [_strictify(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: _strictify(v) for k, v in node.items() if k not in _UNSUPPORTED}
    if "const" in out:
        out["enum"] = [out.pop("const")]
    if out.get("type") == "object" and "properties" in out:
        out["required"] = list(out["properties"])
        out["additionalProperties"] = False
    return out


def reply_json_schema() -> dict[str, Any]:
    """The JSON schema for ``response_format``: strict-compatible (every key required,
    nullables as ``anyOf`` with null, no additional properties, no numeric bounds)."""
    schema: dict[str, Any] = _strictify(Reply.model_json_schema())
    return schema


_FENCE = re.compile(r"\A\s*```[A-Za-z0-9_-]*[ \t]*\r?\n(.*?)\r?\n?```\s*\Z", re.DOTALL)


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _MAX_REASON else flat[: _MAX_REASON - 1] + "…"


def _schema_reason(exc: pydantic.ValidationError) -> str:
    errors = exc.errors(include_url=False, include_input=False)
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"]) or "reply"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"does not match the reply schema: {where}: {first['msg']}{more}"


class ReplyTooLargeError(ModelBadOutputError):
    """A reply over ``MAX_REPLY_BYTES``: no repair turn is asked for (it would be as long)."""


def parse_reply(text: str) -> Reply:
    """The reply as models (see ``read_reply``), its proposals past ``MAX_PROPOSALS`` dropped."""
    return read_reply(text)[0]


def read_reply(text: str) -> tuple[Reply, int]:
    """The reply as models, and how many proposals past ``MAX_PROPOSALS`` were not read.

    Raises ModelBadOutputError (and nothing else) when it is not exactly one JSON object of
    the schema (ReplyTooLargeError when it is over ``MAX_REPLY_BYTES``, checked before any
    parsing). A single surrounding code fence is tolerated.
    """
    if not isinstance(text, str) or not text.strip():
        raise ModelBadOutputError("the reply is empty")
    size = len(text.encode("utf-8", errors="replace")) if len(text) * 4 > MAX_REPLY_BYTES else len(text)
    if size > MAX_REPLY_BYTES:
        raise ReplyTooLargeError(f"the reply is {size:,} bytes, over the {MAX_REPLY_BYTES:,} a reply may be; none of it is read")
    fenced = _FENCE.match(text)
    body = fenced.group(1) if fenced else text
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise ModelBadOutputError(_one_line(f"the reply is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}")) from None
    except (RecursionError, ValueError) as exc:  # absurd nesting; numbers beyond the int limit
        raise ModelBadOutputError(_one_line(f"the reply is not usable JSON: {exc.__class__.__name__}")) from None
    if not isinstance(data, dict):
        raise ModelBadOutputError(f"the reply is JSON but not an object (got {type(data).__name__})")
    version = data.get("v", VERSION)  # a missing "v" is reported by the schema below
    if type(version) is not int or version != VERSION:
        raise ModelBadOutputError(_one_line(f"the reply has version {version!r}; expected {VERSION}"))
    unread = 0
    if isinstance(data.get("proposals"), list) and len(data["proposals"]) > MAX_PROPOSALS:
        unread = len(data["proposals"]) - MAX_PROPOSALS
        data = {**data, "proposals": data["proposals"][:MAX_PROPOSALS]}
    try:
        return Reply.model_validate(data), unread
    except pydantic.ValidationError as exc:
        raise ModelBadOutputError(_one_line(_schema_reason(exc))) from None
    except RecursionError:
        raise ModelBadOutputError("the reply is nested too deeply") from None
