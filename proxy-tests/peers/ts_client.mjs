#!/usr/bin/env node
// Drives one scripted MCP session with the TypeScript SDK client against a stdio server (or a
// Streamable HTTP one) and prints a canonical JSON transcript of everything the client observed.
//
// Usage: node ts_client.mjs <filesystem|everything|memory|pyserver|sdkexample|blob> [--root DIR] -- <command> [args...]
//        node ts_client.mjs <everything|pyserver|blob> [--root DIR] --url <URL> [--sse]
//
// The server command may be the server itself (a direct session) or ctxopt-proxy wrapping it
// (a proxied session); the interop tests run both and compare the two transcripts. With --url
// the client talks Streamable HTTP to the server itself (the direct session of a remote server,
// whose proxied session runs `ctxopt-proxy --url`).
// Output (one JSON document on stdout):
//   { client, scenario, protocol, server, transcript, serverRequests, notifications,
//     wire: { sent: [{id, method}], received: [{id, method}] } }
// `wire` lists the JSON-RPC messages this client wrote and read, in order, so a test can match
// them with the frames a proxy logged. Keys are sorted at every depth so equal sessions print equal
// bytes.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { createHash } from "node:crypto";
import { pathToFileURL } from "node:url";

function usage(message) {
  process.stderr.write(`ts_client: ${message}\n`);
  process.stderr.write("usage: node ts_client.mjs <filesystem|everything|memory|pyserver|sdkexample|blob> [--root DIR] -- <command> [args...]\n");
  process.stderr.write("       node ts_client.mjs <everything|pyserver|blob> [--root DIR] --url <URL> [--sse]\n");
  process.exit(2);
}

function parseArgs(argv) {
  const dash = argv.indexOf("--");
  const own = dash < 0 ? argv.slice() : argv.slice(0, dash);
  const command = dash < 0 ? [] : argv.slice(dash + 1);
  const scenario = own.shift();
  let root = null;
  let url = null;
  let sse = false;
  while (own.length > 0) {
    const flag = own.shift();
    if (flag === "--root") root = own.shift();
    else if (flag === "--url") url = own.shift();
    else if (flag === "--sse") sse = true;
    else usage(`unknown option ${flag}`);
  }
  if ((url === null) === (command.length === 0)) usage("give either `-- <command>` or `--url <URL>`");
  if (sse && url === null) usage("--sse goes with --url");
  if (!["filesystem", "everything", "memory", "pyserver", "sdkexample", "blob"].includes(scenario)) usage(`unknown scenario ${scenario}`);
  return { scenario, root, url, sse, command };
}

/** Sorts object keys at every depth. */
function canonical(value) {
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === "object") {
    const out = {};
    for (const key of Object.keys(value).sort()) out[key] = canonical(value[key]);
    return out;
  }
  return value;
}

/** Resolves once `predicate()` holds, polling; rejects after `ms`. */
async function waitFor(predicate, what, ms = 10000) {
  const start = Date.now();
  while (!predicate()) {
    if (Date.now() - start > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const { scenario, root, url, sse, command } = parseArgs(process.argv.slice(2));
const transcript = [];
const notifications = [];
const serverRequests = [];
const wire = { sent: [], received: [] };

const transport = url
  ? sse
    ? new SSEClientTransport(new URL(url))
    : new StreamableHTTPClientTransport(new URL(url))
  : new StdioClientTransport({
      command: command[0],
      args: command.slice(1),
      env: process.env,
      stderr: "inherit",
      // A message may be larger than the SDK's default limit of 10 MB (the blob scenario's is 16 MiB).
      maxBufferSize: 64 * 1024 * 1024,
    });
/** What a test needs to find a message in a proxy's log: its id and, unless a response, method. */
const summary = (message) => ({ id: message.id ?? null, method: message.method ?? null });
// Record messages both ways: wrap send, and wrap whatever handler the client installs.
const send = transport.send.bind(transport);
transport.send = (message, options) => {
  wire.sent.push(summary(message));
  return send(message, options);
};
let onmessage;
let protocol = null;
Object.defineProperty(transport, "onmessage", {
  get: () => onmessage,
  set: (handler) => {
    onmessage = handler && ((message, extra) => {
      wire.received.push(summary(message));
      if (typeof message?.result?.protocolVersion === "string") protocol = message.result.protocolVersion;
      return handler(message, extra);
    });
  },
});

const client = new Client(
  { name: "ctxopt-interop-ts", version: "1.0.0" },
  { capabilities: { roots: { listChanged: true }, sampling: {}, elicitation: {} } },
);
const roots = root ? [{ uri: pathToFileURL(root).href, name: "fixture" }] : [];
client.setRequestHandler(ListRootsRequestSchema, async () => {
  serverRequests.push({ method: "roots/list" });
  return { roots };
});
client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
  serverRequests.push({ method: "sampling/createMessage", params: request.params });
  return {
    role: "assistant",
    model: "ctxopt-test-model",
    stopReason: "endTurn",
    content: { type: "text", text: "a canned sampling answer" },
  };
});
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  serverRequests.push({ method: "elicitation/create", message: request.params.message });
  return { action: "accept", content: { name: "Ada Lovelace", check: true, integer: 7 } };
});
client.fallbackNotificationHandler = async (notification) => {
  notifications.push({ method: notification.method, params: notification.params ?? null });
};

async function step(op, args, run) {
  try {
    transcript.push({ op, args, result: await run() });
  } catch (error) {
    transcript.push({ op, args, error: { code: error.code ?? null, message: String(error.message) } });
  }
}

const callTool = (name, args, options) =>
  step("tools/call", { name, arguments: args }, () => client.callTool({ name, arguments: args }, undefined, options));

async function filesystem() {
  // The server asks roots/list right after `initialized` when the client declares roots.
  await waitFor(() => serverRequests.length > 0, "roots/list from the server");
  await step("tools/list", {}, async () => (await client.listTools()).tools.map((t) => t.name).sort());
  await callTool("list_allowed_directories", {});
  await callTool("list_directory", { path: root });
  await callTool("list_directory_with_sizes", { path: `${root}/src`, sortBy: "name" });
  await callTool("read_text_file", { path: `${root}/notes/todo.txt` });
  await callTool("read_text_file", { path: `${root}/notes/unicode.txt`, head: 1 });
  await callTool("read_multiple_files", { paths: [`${root}/src/lib.rs`, `${root}/data/config.json`] });
  await callTool("directory_tree", { path: root });
  await callTool("search_files", { path: root, pattern: "**/*.rs" });
  await callTool("read_text_file", { path: "/etc/hostname" });
}

async function everything() {
  await waitFor(() => serverRequests.some((r) => r.method === "roots/list"), "roots/list from the server");
  await step("tools/list", {}, async () => (await client.listTools()).tools.map((t) => t.name).sort());
  await callTool("echo", { message: "hello through the tap" });
  await callTool("get-sum", { a: 40, b: 2 });
  await callTool("get-tiny-image", {});
  await callTool("get-structured-content", { location: "New York" });
  await callTool("get-annotated-message", { messageType: "error", includeImage: false });
  // A progress handler makes the client send a progressToken; the notifications themselves are
  // in `wire.received` (the SDK drops one that arrives in the same read as the response).
  await callTool("trigger-long-running-operation", { duration: 0.2, steps: 2 }, { onprogress: () => {} });
  await callTool("trigger-sampling-request", { prompt: "say something", maxTokens: 20 });
  await callTool("trigger-elicitation-request", {});
  await callTool("get-roots-list", {});
  await step("resources/list", {}, async () => (await client.listResources()).resources.slice(0, 3));
  await step("resources/read", { uri: "demo://resource/static/document/architecture.md" }, async () =>
    (await client.readResource({ uri: "demo://resource/static/document/architecture.md" })).contents.map((c) => ({
      uri: c.uri,
      mimeType: c.mimeType,
      length: (c.text ?? c.blob ?? "").length,
    })),
  );
  await step("prompts/list", {}, async () => (await client.listPrompts()).prompts.map((p) => p.name).sort());
  await step("prompts/get", { name: "simple-prompt" }, () => client.getPrompt({ name: "simple-prompt" }));
  await step("logging/setLevel", { level: "error" }, () => client.setLoggingLevel("error"));
  await step("ping", {}, () => client.ping());
  await callTool("no-such-tool", {});
}

/** `py_server.py`'s tools, resource and prompt (as `py_client.py`'s `pyserver` scenario). */
async function pyserver() {
  await step("tools/list", {}, async () => (await client.listTools()).tools.map((t) => t.name).sort());
  await callTool("add", { a: 20, b: 22 });
  await callTool("echo", { text: "byte-exact ✓" });
  await callTool("count_words", { text: "one two three" }, { onprogress: () => {} });
  await callTool("fail", { reason: "on purpose" });
  await step("resources/read", { uri: "fixture://greeting" }, () => client.readResource({ uri: "fixture://greeting" }));
  await step("prompts/get", { name: "summarize" }, () =>
    client.getPrompt({ name: "summarize", arguments: { topic: "MCP" } }),
  );
}

/** The TypeScript SDK's example server (`simpleStreamableHttp.js`, behind its OAuth provider). */
async function sdkexample() {
  await step("tools/list", {}, async () => (await client.listTools()).tools.map((t) => t.name).sort());
  await callTool("greet", { name: "ctxopt" });
}

/**
 * `py_server.py`'s `blob` tool (served with PY_SERVER_BLOB_TOOL=1): a 16 MiB text, transcribed as
 * its length, its SHA-256 and its last record (the text itself would make the transcript as large).
 */
async function blob() {
  const size = 16 * 1024 * 1024;
  await step("tools/call", { name: "blob", size }, async () => {
    const result = await client.callTool({ name: "blob", arguments: { size } });
    const text = result.content[0].text;
    return {
      isError: result.isError ?? false,
      length: text.length,
      sha256: createHash("sha256").update(text).digest("hex"),
      last: text.slice(-16),
    };
  });
}

async function memory() {
  await step("tools/list", {}, async () => (await client.listTools()).tools.map((t) => t.name).sort());
  await callTool("create_entities", {
    entities: [
      { name: "ctxopt", entityType: "project", observations: ["wraps MCP servers", "logs every frame"] },
      { name: "o200k_base", entityType: "tokenizer", observations: ["counts tokens"] },
    ],
  });
  await callTool("create_relations", { relations: [{ from: "ctxopt", to: "o200k_base", relationType: "counts with" }] });
  await callTool("add_observations", { observations: [{ entityName: "ctxopt", contents: ["is byte-exact"] }] });
  await callTool("search_nodes", { query: "tokens" });
  await callTool("open_nodes", { names: ["ctxopt"] });
  await callTool("delete_observations", { deletions: [{ entityName: "ctxopt", observations: ["logs every frame"] }] });
  await callTool("read_graph", {});
}

/**
 * Ends the session the way a patient client does: closes the server's stdin and waits for it to
 * exit on its own. (The SDK's `close()` sends SIGTERM after 2 s and SIGKILL 2 s later; on a busy
 * machine that can cut a proxy off before it writes its log trailer, which the tests check.)
 */
async function closeGracefully() {
  if (url) {
    // Over Streamable HTTP the client ends its session itself (DELETE), as a proxy does for
    // its client; over the legacy transport closing the event stream ends it.
    if (!sse) await transport.terminateSession();
    await client.close();
    return;
  }
  const child = transport._process; // the SDK's ChildProcess (private in the pinned 1.32.2)
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("close", resolve));
  child.stdin.end();
  await exited;
}

try {
  await client.connect(transport);
  await { filesystem, everything, memory, pyserver, sdkexample, blob }[scenario]();
  await closeGracefully();
  const output = canonical({
    client: "ts",
    scenario,
    protocol,
    server: client.getServerVersion() ?? null,
    transcript,
    serverRequests,
    notifications: notifications.map((n) => JSON.stringify(canonical(n))).sort().map((s) => JSON.parse(s)),
    wire,
  });
  process.stdout.write(`${JSON.stringify(output)}\n`);
} catch (error) {
  process.stderr.write(`ts_client: ${error.stack ?? error}\n`);
  process.exit(1);
}
