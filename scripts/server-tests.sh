#!/usr/bin/env bash
# jupyter_server's own REST API tests (contents, kernels, sessions) with jupyter_xcsh loaded in
# every server they start, so that any change the extension makes to the server it lives in (how
# it saves files, counts or closes kernel connections, ...) fails them.
# Usage: bash scripts/server-tests.sh [pytest args...]
#   VENV: the environment with the package installed (default .venv); its jupyter_server is the
#   one tested, with the tests of the same release (its sdist from PyPI, cached in .cache/);
#   XCSH_SERVER_TESTS_EXTENSION=0: the control run, the same tests without the extension.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=${VENV:-.venv}
PY="$ROOT/$VENV"/bin/python
[ -x "$PY" ] || PY="$VENV/bin/python"  # an absolute VENV
VERSION=$("$PY" -c 'import importlib.metadata as m; print(m.version("jupyter_server"))')
CACHE="$ROOT/.cache/server-tests"
SRC="$CACHE/jupyter_server-$VERSION"
if [ ! -f "$SRC/.complete" ]; then
  rm -rf "$SRC"
  mkdir -p "$SRC"
  "$PY" -m pip download -q --no-deps --no-binary :all: --dest "$CACHE" "jupyter_server==$VERSION"
  # Only the tests and their pytest settings: the server imported is the installed one.
  tar -xzf "$CACHE/jupyter_server-$VERSION.tar.gz" -C "$SRC" --strip-components=1 \
    "jupyter_server-$VERSION/tests" "jupyter_server-$VERSION/pyproject.toml"
  touch "$SRC/.complete"
fi
# The kernels tests mark one test `flaky` (retried once): the one test dependency of theirs that
# the test extra lacks. Installed beside the environment, so the project's own runs never load it.
FLAKY=3.8.1
DEPS="$CACHE/flaky-$FLAKY"
[ -d "$DEPS" ] || "$PY" -m pip install -q --no-deps --target "$DEPS" "flaky==$FLAKY"

cd "$SRC"
# In the order jupyter_server's own run takes them. The plugin (server-tests/xcsh_server_tests.py)
# loads the extension in every server, checks it is loaded, and deselects the parametrizations
# with the deprecated synchronous MappingKernelManager, which fail in a long run with or without
# the extension (its docstring says why; issue 29).
PYTHONPATH="$ROOT/server-tests:$DEPS" exec "$PY" -m pytest -p xcsh_server_tests -p no:cacheprovider \
  tests/services/contents/test_api.py tests/services/kernels/test_api.py \
  tests/services/sessions/test_api.py -q -ra --color=no "$@"
