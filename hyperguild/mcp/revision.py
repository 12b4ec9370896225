"""Which MCP revision a request speaks: the one place the engine decides it.

Two eras share the three endpoints (see docs/mcp.md):

- **2026-07-28** ("modern"): stateless. Every request carries its protocol
  version and client capabilities in `params._meta`, mirrored in the
  `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers. No handshake,
  no session id, `server/discover` instead of `initialize`, `resultType` and
  caching hints on results, HTTP statuses that follow the JSON-RPC code.
- **2025-11-25** and older ("legacy"): the `initialize` handshake, negotiated
  down to 2025-06-18, 2025-03-26 or 2024-11-05, exactly as before.

`decide()` reads one request (headers and body) and returns its `Revision`,
or the `Rejection` the spec prescribes. The envelope checks themselves are
the official SDK's (`mcp.shared.inbound`: the validation ladder every
2026-07-28 server runs), so hyperguild and the reference servers refuse the
same requests with the same codes. Tools, registries and the apps never see
a revision: `Dispatcher` applies it around them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    MCP_PROTOCOL_VERSION_HEADER,
    InboundLadderRejection,
    classify_inbound_request,
    decode_header_value,
    find_duplicated_routing_header,
)
from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY

MODERN_VERSION = "2026-07-28"
MODERN_VERSIONS = (MODERN_VERSION,)
# The handshake era: what `initialize` negotiates, newest first.
LEGACY_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
LATEST_LEGACY_VERSION = LEGACY_VERSIONS[0]
SUPPORTED_VERSIONS = (*MODERN_VERSIONS, *LEGACY_VERSIONS)

HEADER_MISMATCH = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"

# Methods of the handshake era that 2026-07-28 removed: a modern request for one is "method not found".
LEGACY_ONLY_METHODS = frozenset(
    {
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "tasks/result",
        "tasks/list",
    }
)
TASK_METHODS = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})
# ...and the methods only the modern era has.
MODERN_ONLY_METHODS = frozenset({"server/discover", "tasks/get", "tasks/update", "tasks/cancel"})


@dataclass(frozen=True)
class Revision:
    """The protocol revision of one request, and what its envelope declared."""

    version: str
    client_capabilities: Mapping[str, Any] = field(default_factory=dict)
    client_info: Mapping[str, Any] | None = None

    @property
    def modern(self) -> bool:
        return self.version in MODERN_VERSIONS

    def has_extension(self, name: str) -> bool:
        extensions = (
            self.client_capabilities.get("extensions") if isinstance(self.client_capabilities, Mapping) else None
        )
        return isinstance(extensions, Mapping) and isinstance(extensions.get(name), Mapping)


def legacy(message: Mapping[str, Any], header_version: str | None) -> Revision:
    """A handshake-era request: the version `initialize` asks for, else the header's, else the spec's default."""
    if message.get("method") == "initialize":
        params = message.get("params")
        requested = params.get("protocolVersion") if isinstance(params, Mapping) else None
        return Revision(version=requested if requested in LEGACY_VERSIONS else LATEST_LEGACY_VERSION)
    # 2025-11-25 transport: a request without the header is taken as 2025-03-26.
    return Revision(version=header_version or "2025-03-26")


@dataclass(frozen=True)
class Rejection:
    """A request refused before dispatch, with the HTTP status the 2026-07-28 transport prescribes."""

    code: int
    message: str
    data: Any = None

    @property
    def http_status(self) -> int:
        return http_status_for(self.code)


def http_status_for(code: int) -> int:
    """The HTTP status of a modern error response (-32601 → 404, envelope and params faults → 400)."""
    return ERROR_CODE_HTTP_STATUS.get(code, 200)


def unsupported(requested: Any) -> Rejection:
    return Rejection(
        UNSUPPORTED_PROTOCOL_VERSION,
        "Unsupported protocol version",
        {
            "supported": list(SUPPORTED_VERSIONS),
            "requested": requested if isinstance(requested, str) else str(requested),
        },
    )


def _meta(message: Mapping[str, Any]) -> Mapping[str, Any] | None:
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    return meta if isinstance(meta, Mapping) else None


def decide(
    message: Mapping[str, Any], headers: Mapping[str, str], raw_headers: Iterable[tuple[str, str]] = ()
) -> Revision | Rejection:
    """The revision of one JSON-RPC request, or why it is refused.

    A request is modern when its `MCP-Protocol-Version` header names anything
    but a handshake-era version, or when its `_meta` carries a protocol
    version; everything else is served as before (the handshake era, whose
    `initialize` picks the version). `headers` are keyed in lower case.
    """
    header_version = headers.get(MCP_PROTOCOL_VERSION_HEADER)
    meta = _meta(message)
    body_version = meta.get(PROTOCOL_VERSION_META_KEY) if meta is not None else None
    if body_version is None and (header_version is None or header_version in LEGACY_VERSIONS):
        return legacy(message, header_version)
    if body_version is None and header_version not in SUPPORTED_VERSIONS:
        # A version we have never heard of, with no envelope to check: say which versions we speak.
        return unsupported(header_version)

    duplicated = find_duplicated_routing_header(raw_headers)
    if duplicated is not None:
        return Rejection(HEADER_MISMATCH, f"Header mismatch: {duplicated} appears more than once")
    verdict = classify_inbound_request(message, headers=headers, supported_modern_versions=MODERN_VERSIONS)
    if isinstance(verdict, InboundLadderRejection):
        if verdict.code == UNSUPPORTED_PROTOCOL_VERSION:
            return unsupported(body_version)
        return Rejection(verdict.code, verdict.message, verdict.data)
    capabilities = verdict.client_capabilities if isinstance(verdict.client_capabilities, Mapping) else None
    if capabilities is None:
        return Rejection(-32602, f"params._meta[{CLIENT_CAPABILITIES_META_KEY!r}] must be an object")
    task_id = message.get("params", {}).get("taskId")
    if message.get("method") in TASK_METHODS and "mcp-name" in headers and isinstance(task_id, str):
        # The Tasks extension routes tasks/* on Mcp-Name = taskId; a header that says otherwise is refused.
        if decode_header_value(headers["mcp-name"]) != task_id:
            return Rejection(HEADER_MISMATCH, "Header mismatch: Mcp-Name does not match params.taskId")
    info = verdict.client_info if isinstance(verdict.client_info, Mapping) else None
    return Revision(version=verdict.protocol_version, client_capabilities=capabilities, client_info=info)


# --- caching hints (2026-07-28 server/utilities/caching) ------------------------

# The tool, prompt and template lists and the discovery result change only when the service restarts
# with other code or configuration; a client may keep them this long, so at most this long after
# such a restart it may still show the old list.
STATIC_LIST_TTL_MS = 60_000


@dataclass(frozen=True)
class CachePolicy:
    ttl_ms: int
    scope: str  # "public": the same for every caller; "private": never shared across tokens


CACHE_POLICIES: dict[str, CachePolicy] = {
    "server/discover": CachePolicy(STATIC_LIST_TTL_MS, "public"),
    "tools/list": CachePolicy(STATIC_LIST_TTL_MS, "public"),
    "prompts/list": CachePolicy(STATIC_LIST_TTL_MS, "public"),
    "resources/templates/list": CachePolicy(STATIC_LIST_TTL_MS, "public"),
    # Notes change whenever anyone writes one, and they are the team's, not the world's.
    "resources/list": CachePolicy(0, "private"),
    "resources/read": CachePolicy(0, "private"),
}
