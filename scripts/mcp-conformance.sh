#!/usr/bin/env bash
# The official MCP conformance suite for servers against a live Jupyter Server with the
# extension, under Node 22 (installed from npm into a prefix of its own, with the suite).
# Usage: bash scripts/mcp-conformance.sh   (VENV: the environment the server runs from, default
# .venv; NODE_PREFIX: where Node 22 and the suite go, default $VENV-mcp-node)
# Expected failures, each with its reason: mcp-tests/conformance-baseline.yml (the 2025
# revisions) and mcp-tests/conformance-2026-baseline.yml (the 2026-07-28 requirements).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
NODE_PREFIX=${NODE_PREFIX:-$VENV-mcp-node}
SUITE=@modelcontextprotocol/conformance@0.1.16
# The first release with the 2026-07-28 revision's scenarios (a pre-release), in a prefix of
# its own: run with `--requirements 2026-07-28`, the scenarios that revision requires.
SUITE_2026=@modelcontextprotocol/conformance@0.2.0-alpha.12
mkdir -p "$NODE_PREFIX" "$NODE_PREFIX/2026"
npm install --no-audit --no-fund --prefix "$NODE_PREFIX" node@22 "$SUITE" >/dev/null
npm install --no-audit --no-fund --prefix "$NODE_PREFIX/2026" "$SUITE_2026" >/dev/null
BIN=$(cd "$NODE_PREFIX/node_modules/.bin" && pwd)
BIN_2026=$(cd "$NODE_PREFIX/2026/node_modules/.bin" && pwd)
"$BIN/node" --version

work=$(mktemp -d)
port=$("$VENV/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
token=$("$VENV/bin/python" -c 'import secrets; print(secrets.token_hex(16))')
mkdir "$work/root"
"$VENV/bin/jupyter" server --no-browser --allow-root --ServerApp.ip=127.0.0.1 \
  --ServerApp.port="$port" --ServerApp.port_retries=0 --ServerApp.root_dir="$work/root" \
  --IdentityProvider.token="$token" >"$work/server.log" 2>&1 &
server=$!
stop() {
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  rm -rf "$work"
}
trap stop EXIT
url="http://127.0.0.1:$port/api/xcsh/mcp"
for _ in $(seq 120); do
  if curl -fsS -o /dev/null -H "Authorization: token $token" "http://127.0.0.1:$port/api/status"; then
    break
  fi
  sleep 0.5
done
# The token travels in the URL's query (the suite sends no headers of its own); the server
# takes it there as in the Authorization header.
# Its "Total: N passed, M failed" counts the expected failures too: renamed, so that no reader
# of this run's output takes it for a test runner's closing line.
echo "== the suite's scenarios for the 2025 revisions ($SUITE)"
PATH="$BIN:$PATH" conformance server --url "$url?token=$token" \
  --expected-failures mcp-tests/conformance-baseline.yml -o "$work/results" |
  sed 's/^Total: /conformance scenarios (expected failures included): /'
echo "== the scenarios the 2026-07-28 revision requires ($SUITE_2026)"
# Its node is Node 22's (first on PATH); its baseline says why each expected failure fails.
PATH="$BIN:$PATH" "$BIN_2026/conformance" server --url "$url?token=$token" \
  --requirements 2026-07-28 --expected-failures mcp-tests/conformance-2026-baseline.yml \
  -o "$work/results-2026" |
  sed 's/^Total: /conformance checks (expected failures included): /'
