#!/usr/bin/env node
// The README demo's scripted session: a real MCP client (the TypeScript SDK) talks to
// server-filesystem through ctxopt-proxy, the way a coding agent would.
//
// Usage: node demo_session.mjs <workspace> <context-out> -- <server command> [args...]
//
// It lists the tools, reads two files, asks for a path that does not exist (an error), edits a
// file and reads it again, then — when the proxy injected them — asks for the compacted session
// context (`build_context`, saved to <context-out>) and the history of the edited file
// (`get_file_history`).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { writeFileSync } from "node:fs";

const argv = process.argv.slice(2);
const dash = argv.indexOf("--");
if (dash !== 2 || dash === argv.length - 1) {
  process.stderr.write("usage: node demo_session.mjs <workspace> <context-out> -- <server command> [args...]\n");
  process.exit(2);
}
const [root, contextOut] = argv;
const [command, ...args] = argv.slice(dash + 1);

const client = new Client({ name: "ctxopt-demo", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command, args, stderr: "inherit" }));

const say = (line) => process.stdout.write(`${line}\n`);
const firstText = (result) =>
  (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
const call = async (name, args) => {
  const result = await client.callTool({ name, arguments: args });
  const text = firstText(result);
  const head = text.split("\n").slice(0, 3).join(" | ");
  say(`  ${result.isError ? "ERROR" : "ok   "} ${name} ${JSON.stringify(args)} -> ${head.slice(0, 100)}`);
  return result;
};

const { tools } = await client.listTools();
say(`tools/list: ${tools.length} tools: ${tools.map((t) => t.name).join(", ")}`);
say("session:");
await call("read_text_file", { path: `${root}/notes/todo.txt` });
await call("read_text_file", { path: `${root}/src/lib.rs` });
await call("read_text_file", { path: `${root}/src/missing.rs` });
writeFileSync(`${root}/notes/todo.txt`, "- fix the failing parser test in src/lib.rs\n- never change the public API\n");
await call("read_text_file", { path: `${root}/notes/todo.txt` });

const names = new Set(tools.map((t) => t.name));
if (names.has("build_context")) {
  const ctx = await client.callTool({
    name: "build_context",
    arguments: { task: "fix the failing parser test in src/lib.rs", budget: 600 },
  });
  writeFileSync(contextOut, firstText(ctx));
  say(`  ok    build_context {"task":"fix the failing parser test in src/lib.rs","budget":600} -> ${contextOut}`);
}
if (names.has("get_file_history")) {
  const history = await client.callTool({
    name: "get_file_history",
    arguments: { path: `${root}/notes/todo.txt` },
  });
  const versions = history.structuredContent?.versions ?? [];
  say(`  ok    get_file_history {"path":"notes/todo.txt"} -> ${versions.length} versions (frame-log seq ${versions.map((v) => v.seq).join(", ")})`);
}
await client.close();
