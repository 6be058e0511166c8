#!/usr/bin/env node
// Calls one task-based tool with the TypeScript SDK client (its tasks API, `client.experimental
// .tasks.callToolStream`): the `tools/call` is answered with a task handle, the SDK polls
// `tasks/get` until the task ends and fetches the result with `tasks/result`.
//
// Usage: node ts_task_client.mjs <tool> <arguments as JSON> -- <command> [args...]
// Output (one JSON document on stdout): { taskId, events: [message types], result }.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const dash = process.argv.indexOf("--");
if (dash !== 4 || process.argv.length < 6) {
  process.stderr.write("usage: node ts_task_client.mjs <tool> <arguments as JSON> -- <command> [args...]\n");
  process.exit(2);
}
const [tool, args] = [process.argv[2], JSON.parse(process.argv[3])];
const [command, ...commandArgs] = process.argv.slice(dash + 1);
const transport = new StdioClientTransport({ command, args: commandArgs, stderr: "inherit" });
const client = new Client({ name: "ctxopt-task-ts", version: "1.0.0" }, { capabilities: {} });
await client.connect(transport);
// The listing tells the client which tools run as tasks.
await client.listTools();
let taskId = null;
let result = null;
const events = [];
for await (const message of client.experimental.tasks.callToolStream({ name: tool, arguments: args })) {
  events.push(message.type);
  if (message.type === "taskCreated") taskId = message.task.taskId;
  if (message.type === "result") result = message.result;
  if (message.type === "error") throw message.error;
}
await client.close();
process.stdout.write(JSON.stringify({ taskId, events, result }) + "\n");
