"""A minimal MCP responder for the proxy benchmark: answers every request at once.

It does the least a stdio server can do (read a line, parse it, write a fixed result), so a
benchmark against it measures the pipes and the proxy, not the server. Plain Python 3, no
packages. Usage: python3 py_responder.py
"""

import json
import sys


def main() -> None:
    read = sys.stdin.buffer.readline
    write = sys.stdout.buffer.write
    flush = sys.stdout.buffer.flush
    while True:
        line = read()
        if not line:
            return
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue
        result = {"content": [{"type": "text", "text": "ok"}]}
        if message["method"] == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "py-responder", "version": "1.0.0"},
            }
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        write(json.dumps(reply, separators=(",", ":")).encode() + b"\n")
        flush()


if __name__ == "__main__":
    main()
