"""Drives the 2026-07-28 multi-round features with the Python SDK's high-level `Client` (`mcp` 2.3.0)
against a stdio server (`py_revision_server.py`, direct or through ctxopt-proxy) and prints what it
observed as one JSON document with sorted keys:
  {greeting, asked: [elicitation messages], events: [listen events], protocol}

The client calls `greet` (answered `input_required`; the SDK answers the elicitation through the
callback below and retries with `inputResponses` and the `requestState`), then opens a
`subscriptions/listen` stream for tool-list changes, calls `touch_tools` and waits for the event.

Usage: python py_revision_client.py [--no-listen] -- <command> [args...]
(--no-listen: only the `greet` call.)
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
import mcp.client.session
import mcp.client.stdio
from mcp import Client, StdioServerParameters, stdio_client, types

# As in py_client.py: patient with a loaded machine (the proxy writes its trailer on exit, and a
# Python server may take a while to import `mcp` before it answers the discover probe).
mcp.client.stdio.PROCESS_TERMINATION_TIMEOUT = 120.0
mcp.client.session.DISCOVER_TIMEOUT_SECONDS = 120.0


async def main(command: list[str], listen: bool) -> None:
    asked: list[str] = []
    events: list[str] = []

    async def elicitation(_context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    info = types.Implementation(name="ctxopt-revision-py", version="1.0.0")
    async with Client(stdio_client(params), client_info=info, elicitation_callback=elicitation) as client:
        await client.list_tools()
        result = await client.call_tool("greet", {"note": "Sign here."})
        greeting = [c.text for c in result.content if isinstance(c, types.TextContent)]
        if listen:
            async with client.listen(tools_list_changed=True) as subscription:
                await client.call_tool("touch_tools", {})
                with anyio.fail_after(60):
                    async for event in subscription:
                        events.append(type(event).__name__)
                        break
        protocol = client.session.protocol_version if hasattr(client.session, "protocol_version") else None
    print(json.dumps({"greeting": greeting, "asked": asked, "events": events, "protocol": protocol}, sort_keys=True))


if __name__ == "__main__":
    listen = sys.argv[1:2] != ["--no-listen"]
    rest = sys.argv[1:] if listen else sys.argv[2:]
    if len(rest) < 2 or rest[0] != "--":
        sys.exit(f"usage: {sys.argv[0]} [--no-listen] -- <command> [args...]")
    anyio.run(main, rest[1:], listen)
