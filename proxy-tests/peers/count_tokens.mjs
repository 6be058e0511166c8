#!/usr/bin/env node
// An independent o200k_base token counter for the proxy's cross-check test: the npm package
// gpt-tokenizer (a separate implementation from the Rust crates ctxopt uses).
//
// Usage: node count_tokens.mjs FILE
//   FILE holds a JSON array of strings; prints a JSON array of their token counts.
// Special-token text such as "<|endoftext|>" is counted as ordinary text, as the proxy does.
import { readFileSync } from "node:fs";
import { encode } from "gpt-tokenizer/encoding/o200k_base";

if (process.argv.length !== 3) {
  process.stderr.write("usage: node count_tokens.mjs FILE (a JSON array of strings)\n");
  process.exit(2);
}
const texts = JSON.parse(readFileSync(process.argv[2], "utf8"));
const counts = texts.map((text) => encode(text, { disallowedSpecial: new Set() }).length);
process.stdout.write(`${JSON.stringify(counts)}\n`);
