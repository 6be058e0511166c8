#!/usr/bin/env bash
# Records the sample frame logs in frame-logs/: four real sessions through ctxopt-proxy.
#
#   ./proxy-tests/peers/record-frame-logs.sh
#
#   ts-filesystem.jsonl       TypeScript SDK client  -> server-filesystem (initialize era, roots)
#   ts-everything.jsonl       TypeScript SDK client  -> server-everything (roots, sampling,
#                             elicitation, progress, logging, list_changed)
#   py-session-memory.jsonl   Python ClientSession   -> server-memory
#   py-client-stateless.jsonl Python high-level Client -> py_server.py (stateless 2026-07-28,
#                             server/discover, no initialize, _meta server identity with an icon)
#
# and fixtures/frame-logs/everything-compaction.jsonl: TypeScript SDK client (record_compaction.mjs)
# -> server-everything through --compact-results 500 (see that folder's README). With log names
# as arguments (`record-frame-logs.sh everything-compaction`), only those are recorded.
#
# The sessions run in a scratch directory ($TMPDIR/ctxopt-frame-logs, default /tmp) that holds a
# copy of fixtures/trees/interop-project as `project/` and links to the installed peers, and the
# servers are started with paths relative to it. So the logs name only that scratch directory
# (cwd, the served tree, the roots) and relative script paths: nothing of the machine that
# recorded them. Header times and pids differ per recording.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
peers="$repo/proxy-tests/peers"
out="$repo/frame-logs"

"$repo/proxy-tests/run-all" --install-only
cargo build --quiet --manifest-path "$repo/Cargo.toml" --bin ctxopt-proxy
proxy="$repo/target/debug/ctxopt-proxy"

work="${TMPDIR:-/tmp}/ctxopt-frame-logs"
rm -rf "$work"
mkdir -p "$work" "$out"
cp -r "$repo/fixtures/trees/interop-project" "$work/project"
ln -s "$peers/node_modules" "$work/node_modules"
ln -s "$peers/.venv" "$work/.venv"
cp "$peers/py_server.py" "$work/py_server.py"
cd "$work"

servers=node_modules/@modelcontextprotocol
only=" $* "
wanted() { [[ "$only" == "  " || "$only" == *" $1 "* ]]; }
record() {
  local name="$1"
  shift
  wanted "$name" || return 0
  rm -f "$out/$name.jsonl"
  # "$@" is the client command; the proxy and server follow `--` inside it.
  "$@" > "$work/$name.transcript.json"
  echo "recorded frame-logs/$name.jsonl ($(wc -l < "$out/$name.jsonl") lines)" >&2
}

record ts-filesystem node "$peers/ts_client.mjs" filesystem --root "$work/project" -- \
  "$proxy" --inject none --store :memory: --name filesystem --log "$out/ts-filesystem.jsonl" -- node "$servers/server-filesystem/dist/index.js" project
record ts-everything node "$peers/ts_client.mjs" everything --root "$work/project" -- \
  "$proxy" --inject none --store :memory: --name everything --log "$out/ts-everything.jsonl" -- node "$servers/server-everything/dist/index.js" stdio
MEMORY_FILE_PATH="$work/memory.jsonl" \
record py-session-memory "$peers/.venv/bin/python" "$peers/py_client.py" session memory -- \
  "$proxy" --inject none --store :memory: --name memory --log "$out/py-session-memory.jsonl" -- node "$servers/server-memory/dist/index.js"
record py-client-stateless "$peers/.venv/bin/python" "$peers/py_client.py" client pyserver -- \
  "$proxy" --inject none --store :memory: --name py-server --log "$out/py-client-stateless.jsonl" -- .venv/bin/python py_server.py

compaction="$repo/fixtures/frame-logs/everything-compaction.jsonl"
if wanted everything-compaction; then
  rm -f "$compaction"
  node "$peers/record_compaction.mjs" \
    "$repo/fixtures/real-world/swe-agent-trajectories/pydicom__pydicom-901.traj.json" \
    "$repo/fixtures/real-world/tier1-tools-list/cloudflare-wire.jsonl" -- \
    "$proxy" --inject none --store :memory: --name everything --compact-results 500 --log "$compaction" -- node "$servers/server-everything/dist/index.js" stdio
  echo "recorded fixtures/frame-logs/everything-compaction.jsonl ($(wc -l < "$compaction") lines)" >&2
fi

if grep -l "$repo" "$out"/*.jsonl "$compaction"; then
  echo "record-frame-logs: the logs above name the repository's path" >&2
  exit 1
fi
