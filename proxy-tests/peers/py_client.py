"""Drives one scripted MCP session with the Python SDK (`mcp` 2.3.0) against a stdio server and
prints a canonical JSON transcript of everything the client observed.

Usage: python py_client.py <session|client> <filesystem|everything|memory|pyserver> [--root DIR]
       -- <command> [args...]
       python py_client.py <session|client> <everything|pyserver> [--root DIR] --url <URL>

`session` uses the low-level `ClientSession` and the `initialize` handshake. `client` uses the
high-level `Client` in its default `auto` mode: it probes `server/discover` first, runs stateless
2026-07-28 against a server that answers it (the Python SDK's own server), and falls back to
`initialize` otherwise (the TypeScript reference servers).

The server command may be the server itself (a direct session) or ctxopt-proxy wrapping it (a
proxied session); the interop tests run both and compare the transcripts. With --url the client talks
Streamable HTTP to the server itself (the direct session of a remote server, whose proxied session
runs `ctxopt-proxy --url`). The output is one JSON
document with sorted keys:
  {client, scenario, protocol, server, transcript, serverRequests, notifications,
   wire: {sent: [{id, method}], received: [{id, method}]}}
`wire` lists the JSON-RPC messages this client wrote and read, in order.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp.client.session
import mcp.client.stdio
from mcp.client.streamable_http import streamable_http_client
from mcp import Client, ClientSession, StdioServerParameters, stdio_client, types
from pydantic import BaseModel

# After the session, stdio_client closes the server's stdin and waits this long for it to exit
# before it sends SIGTERM to the process group (the SDK's default is 2 s). On a busy machine 2 s
# can cut a proxy off before it writes its log trailer, which the tests check: wait patiently.
mcp.client.stdio.PROCESS_TERMINATION_TIMEOUT = 120.0
# The high-level Client gives its `server/discover` probe 10 s. A Python server that takes longer
# to start (importing `mcp` on a loaded machine) misses it; the client then sends `initialize`, is
# told the connection already serves 2026-07-28, and probes again: a real, timing-dependent path
# that would make two runs of one session differ. Wait long enough for the first probe.
mcp.client.session.DISCOVER_TIMEOUT_SECONDS = 120.0

SCENARIOS = ("filesystem", "everything", "memory", "pyserver")


def usage(message: str) -> None:
    print(f"py_client: {message}", file=sys.stderr)
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    sys.exit(2)


def parse_args(argv: list[str]) -> tuple[str, str, str | None, list[str], str | None]:
    dash = argv.index("--") if "--" in argv else len(argv)
    own, command = argv[:dash], argv[dash + 1 :]
    if len(own) < 2:
        usage("missing arguments")
    kind, scenario, rest = own[0], own[1], own[2:]
    if kind not in ("session", "client") or scenario not in SCENARIOS:
        usage(f"unknown mode or scenario: {kind} {scenario}")
    root = None
    url = None
    while rest:
        flag = rest.pop(0)
        if flag == "--root" and rest:
            root = rest.pop(0)
        elif flag == "--url" and rest:
            url = rest.pop(0)
        else:
            usage(f"unknown option {flag}")
    if (url is None) == (not command):
        usage("give either `-- <command>` or `--url <URL>`")
    return kind, scenario, root, command, url


def plain(value: Any) -> Any:
    """JSON-ready data from SDK models (wire names, no unset members)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def summary(message: Any) -> dict[str, Any]:
    """What a test needs to find a message in a proxy's log: its id and, unless a response, method."""
    inner = getattr(message, "message", message)
    inner = getattr(inner, "root", inner)
    return {"id": getattr(inner, "id", None), "method": getattr(inner, "method", None)}


async def ignore_progress(_progress: float, _total: float | None, _message: str | None) -> None:
    """A progress callback: having one makes the client send a progressToken (the
    notifications themselves are counted in `wire`)."""


class RecordingRead:
    """A read stream that records each message it hands on."""

    def __init__(self, inner: Any, log: list[dict[str, Any]]):
        self._inner, self._log = inner, log

    async def receive(self) -> Any:
        item = await self._inner.receive()
        if not isinstance(item, Exception):
            self._log.append(summary(item))
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> RecordingRead:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def __aenter__(self) -> RecordingRead:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class RecordingWrite:
    """A write stream that records each message it sends."""

    def __init__(self, inner: Any, log: list[dict[str, Any]]):
        self._inner, self._log = inner, log

    async def send(self, item: Any, /) -> None:
        self._log.append(summary(item))
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> RecordingWrite:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class Driver:
    """One scripted session: the callbacks a client declares, and what it observed."""

    def __init__(self, scenario: str, root: str | None):
        self.scenario = scenario
        self.root = root
        self.transcript: list[dict[str, Any]] = []
        self.server_requests: list[dict[str, Any]] = []
        self.notifications: list[dict[str, Any]] = []
        self.wire: dict[str, list[dict[str, Any]]] = {"sent": [], "received": []}

    @asynccontextmanager
    async def transport(self, command: list[str], url: str | None):
        if url is not None:
            async with streamable_http_client(url) as (read, write):
                yield RecordingRead(read, self.wire["received"]), RecordingWrite(write, self.wire["sent"])
            return
        params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            yield RecordingRead(read, self.wire["received"]), RecordingWrite(write, self.wire["sent"])

    def callbacks(self) -> dict[str, Any]:
        async def list_roots(_context: Any) -> types.ListRootsResult:
            self.server_requests.append({"method": "roots/list"})
            roots = [types.Root(uri=Path(self.root).as_uri(), name="fixture")] if self.root else []
            return types.ListRootsResult(roots=roots)

        async def sampling(_context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
            self.server_requests.append({"method": "sampling/createMessage", "params": plain(params)})
            return types.CreateMessageResult(
                role="assistant",
                model="ctxopt-test-model",
                stop_reason="endTurn",
                content=types.TextContent(type="text", text="a canned sampling answer"),
            )

        async def elicitation(_context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
            self.server_requests.append({"method": "elicitation/create", "message": params.message})
            return types.ElicitResult(action="accept", content={"name": "Ada Lovelace", "check": True, "integer": 7})

        async def logging(params: types.LoggingMessageNotificationParams) -> None:
            self.notifications.append({"method": "notifications/message", "params": plain(params)})

        async def messages(message: Any) -> None:
            if isinstance(message, Exception):
                self.notifications.append({"method": "exception", "params": str(message)})
            else:
                inner = getattr(message, "root", message)
                self.notifications.append({"method": getattr(inner, "method", None), "params": None})

        return {
            "list_roots_callback": list_roots,
            "sampling_callback": sampling,
            "elicitation_callback": elicitation,
            "logging_callback": logging,
            "message_handler": messages,
        }

    async def step(self, op: str, args: dict[str, Any], run: Callable[[], Awaitable[Any]]) -> None:
        try:
            self.transcript.append({"op": op, "args": args, "result": plain(await run())})
        except Exception as error:  # the transcript records failures; both sessions must agree on them
            self.transcript.append(
                {"op": op, "args": args, "error": {"code": getattr(error, "code", None), "message": str(error)}}
            )

    async def wait_for_roots(self) -> None:
        with anyio.fail_after(10):
            while not any(r["method"] == "roots/list" for r in self.server_requests):
                await anyio.sleep(0.01)

    async def run(self, api: Any, session: ClientSession) -> None:
        """Runs the scenario; `api` is a `Client` or a `ClientSession` (same method names)."""

        async def tool(name: str, arguments: dict[str, Any], **kw: Any) -> None:
            await self.step("tools/call", {"name": name, "arguments": arguments}, lambda: api.call_tool(name, arguments, **kw))

        async def tool_names() -> list[str]:
            return sorted(t.name for t in (await api.list_tools()).tools)

        await self.step("tools/list", {}, tool_names)
        root = self.root
        if self.scenario == "filesystem":
            await self.wait_for_roots()
            await tool("list_allowed_directories", {})
            await tool("list_directory", {"path": root})
            await tool("read_text_file", {"path": f"{root}/notes/todo.txt"})
            await tool("read_text_file", {"path": f"{root}/notes/unicode.txt", "tail": 1})
            await tool("read_multiple_files", {"paths": [f"{root}/src/main.rs", f"{root}/data/config.json"]})
            await tool("search_files", {"path": root, "pattern": "**/*.txt"})
            await tool("read_text_file", {"path": f"{root}/../../outside.txt"})
        elif self.scenario == "everything":
            await self.wait_for_roots()
            await tool("echo", {"message": "hello from python"})
            await tool("get-sum", {"a": 1, "b": 2})
            await tool("get-tiny-image", {})
            await tool("get-resource-links", {"count": 2})

            await tool("trigger-long-running-operation", {"duration": 0.2, "steps": 2}, progress_callback=ignore_progress)
            await tool("trigger-sampling-request", {"prompt": "python asks", "maxTokens": 10})
            await tool("trigger-elicitation-request", {})
            await tool("get-roots-list", {})
            await self.step("prompts/get", {"name": "args-prompt"}, lambda: api.get_prompt("args-prompt", {"city": "Oslo"}))
            await self.step("ping", {}, session.send_ping)
        elif self.scenario == "memory":
            await tool(
                "create_entities",
                {"entities": [{"name": "pyclient", "entityType": "client", "observations": ["speaks python"]}]},
            )
            await tool("add_observations", {"observations": [{"entityName": "pyclient", "contents": ["uses mcp 2.3.0"]}]})
            await tool("search_nodes", {"query": "python"})
            await tool("delete_entities", {"entityNames": ["pyclient"]})
            await tool("read_graph", {})
        else:
            await tool("add", {"a": 20, "b": 22})
            await tool("echo", {"text": "byte-exact ✓"})

            await tool("count_words", {"text": "one two three"}, progress_callback=ignore_progress)
            await tool("fail", {"reason": "on purpose"})
            await self.step("resources/read", {"uri": "fixture://greeting"}, lambda: api.read_resource("fixture://greeting"))
            await self.step("prompts/get", {"name": "summarize"}, lambda: api.get_prompt("summarize", {"topic": "MCP"}))

    def output(self, kind: str, protocol: str | None, server: Any) -> dict[str, Any]:
        notifications = sorted(self.notifications, key=lambda n: json.dumps(n, sort_keys=True))
        return {
            "client": f"py-{kind}",
            "scenario": self.scenario,
            "protocol": protocol,
            "server": plain(server),
            "transcript": self.transcript,
            "serverRequests": self.server_requests,
            "notifications": notifications,
            "wire": self.wire,
        }


async def main() -> None:
    kind, scenario, root, command, url = parse_args(sys.argv[1:])
    driver = Driver(scenario, root)
    info = types.Implementation(name="ctxopt-interop-py", version="1.0.0")
    if kind == "session":
        async with driver.transport(command, url) as (read, write):
            async with ClientSession(read, write, client_info=info, **driver.callbacks()) as session:
                init = await session.initialize()
                await driver.run(session, session)
                result = driver.output(kind, init.protocol_version, init.server_info)
    else:
        async with Client(driver.transport(command, url), client_info=info, **driver.callbacks()) as client:
            await driver.run(client, client.session)
            result = driver.output(kind, client.protocol_version, client.server_info)
    print(json.dumps(result, sort_keys=True, ensure_ascii=False))


if __name__ == "__main__":
    anyio.run(main)
