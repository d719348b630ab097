#!/usr/bin/env bash
# Fuzz every operation of jupyter_xcsh/rest-api.yml with Schemathesis against a live server.
# Usage: bash scripts/fuzz.sh [--seed N] [--max-examples N]
#   VENV: the environment the server runs from (default .venv, with the package installed);
#   FUZZ_VENV: Schemathesis' own environment (default $VENV-fuzz), created when missing.
# Schemathesis gets its own virtualenv: it brings Hypothesis and its own pytest plugins, which
# must not load into the project's test runs. Pinned, so a fixed seed means the same requests.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
FUZZ_VENV=${FUZZ_VENV:-$VENV-fuzz}
VERSION=4.32.5
installed=$("$FUZZ_VENV/bin/python" -c \
  'import importlib.metadata as m; print(m.version("schemathesis"))' 2>/dev/null || true)
if [ "$installed" != "$VERSION" ]; then
  python3 -m venv "$FUZZ_VENV"
  "$FUZZ_VENV/bin/python" -m pip install -q --upgrade pip
  "$FUZZ_VENV/bin/python" -m pip install -q "schemathesis==$VERSION"
fi
exec "$VENV/bin/python" -m tests.fuzz.run_fuzz --st "$FUZZ_VENV/bin/st" "$@"
