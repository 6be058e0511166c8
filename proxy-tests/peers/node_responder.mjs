#!/usr/bin/env node
// A minimal MCP responder on Node.js for the proxy benchmark: answers every request at once,
// reading stdin the way the MCP SDK's stdio transport does (data events, split on "\n").
// It separates the cost of a Node.js peer from the cost of server-everything's SDK stack.
// Usage: node node_responder.mjs
let pending = "";
process.stdin.on("data", (chunk) => {
  pending += chunk.toString("utf8");
  let newline;
  while ((newline = pending.indexOf("\n")) >= 0) {
    const line = pending.slice(0, newline);
    pending = pending.slice(newline + 1);
    const message = JSON.parse(line);
    if (message.id === undefined || message.method === undefined) continue;
    const result =
      message.method === "initialize"
        ? {
            protocolVersion: message.params.protocolVersion,
            capabilities: { tools: {} },
            serverInfo: { name: "node-responder", version: "1.0.0" },
          }
        : { content: [{ type: "text", text: "ok" }] };
    process.stdout.write(`${JSON.stringify({ jsonrpc: "2.0", id: message.id, result })}\n`);
  }
});
