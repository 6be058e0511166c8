"""A Python SDK server (`mcp` 2.3.0) over stdio for the 2026-07-28 revision's multi-round features.

A Python SDK client probes `server/discover` and runs the session stateless (2026-07-28), so:
- `greet` asks who the visitor is through a resolver (`Elicit`): the SDK answers the first
  `tools/call` with `resultType: "input_required"`, `inputRequests` and a sealed `requestState`, and
  greets when the client retries with `inputResponses` and that `requestState`;
- `touch_tools` says the tool list changed: the SDK sends `notifications/tools/list_changed` on every
  `subscriptions/listen` stream that asked for it, stamped with its subscription id.

Usage: python py_revision_server.py              (stdio)
       python py_revision_server.py --http PORT  (Streamable HTTP at http://127.0.0.1:PORT/mcp)
"""

import sys
from typing import Annotated

from pydantic import BaseModel

from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve


class Visitor(BaseModel):
    name: str


def ask_visitor() -> Elicit[Visitor]:
    return Elicit("Who is visiting?", Visitor)


server = MCPServer(name="ctxopt-test-revision-server", version="1.0.0")


@server.tool()
def greet(visitor: Annotated[Visitor, Resolve(ask_visitor)], note: str = "") -> str:
    """Greets the visitor, asking who it is first."""
    return f"Welcome, {visitor.name}. {note}".strip()


@server.tool()
async def touch_tools(ctx: Context) -> str:
    """Says the tool list changed."""
    await ctx.notify_tools_changed()
    return "changed"


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--http"] and len(args) == 2:
        server.run("streamable-http", port=int(args[1]))
    elif not args:
        server.run("stdio")
    else:
        sys.exit(f"usage: {sys.argv[0]} [--http PORT]")
