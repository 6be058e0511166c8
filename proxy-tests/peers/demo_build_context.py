"""A scripted agent session through ctxopt-proxy, ending with the proxy's build_context.

usage: demo_build_context.py PROJECT_DIR -- PROXY_COMMAND...

The Python MCP SDK client lists the tools (the server's and the injected ones), reads two files
of PROJECT_DIR, reads a file that does not exist, rewrites one file and reads it again, then asks
the proxy's build_context for a task and get_file_history for the rewritten file. Prints what it
saw, ending with the build_context text.
"""

import sys
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client


async def main() -> None:
    split = sys.argv.index("--")
    project = Path(sys.argv[1]).resolve()
    command = sys.argv[split + 1 :]
    notes, billing = project / "notes.txt", project / "billing.rs"
    params = StdioServerParameters(command=command[0], args=command[1:])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            names = [t.name for t in (await s.list_tools()).tools]
            print(f"tools ({len(names)}): {', '.join(names)}\n")
            for path in (notes, billing, project / "rates.rs"):
                r = await s.call_tool("read_text_file", {"path": str(path)})
                first = r.content[0].text.splitlines()[0] if r.content else ""
                print(f"read_text_file {path.name}: {'ERROR ' if r.is_error else ''}{first}")
            await s.call_tool(
                "write_file",
                {"path": str(notes), "content": "invoice totals are rounded half even (v2)\n"},
            )
            await s.call_tool("read_text_file", {"path": str(notes)})
            print("write_file notes.txt, read_text_file notes.txt again\n")
            history = await s.call_tool("get_file_history", {"path": "notes.txt"})
            versions = history.structured_content["versions"]
            print(f"get_file_history notes.txt: {len(versions)} versions")
            for v in versions:
                print(f"  seq {v.get('seq')}: {v['content'].strip()}")
            task = "fix total_cents rounding in billing.rs; the rates come from rates.rs"
            built = await s.call_tool("build_context", {"task": task, "budget": 1500})
            stats = built.structured_content["stats"]
            print(
                f"\nbuild_context ({stats['inputTokens']} tokens of records -> "
                f"{stats['outputTokens']} tokens):\n"
            )
            print(built.content[0].text)


anyio.run(main)
