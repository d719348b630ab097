#!/usr/bin/env bash
# Set up everything from a bare machine and start JupyterLab with jupyter-xcsh on an example.
# Usage: bash scripts/lab.sh            (PORT=8888 by default; prints the URL with its token)
#   VENV=path      the virtualenv (default .venv)
#   WORKSPACE=dir  the lab's root, where the example notebook is copied (default workspace)
#   INSTALL=0      start at once with what VENV holds (no venv creation, no pip install)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
WORKSPACE=${WORKSPACE:-workspace}
if [ "${INSTALL:-1}" != 0 ]; then
  python3 -m venv "$VENV"
  . "$VENV/bin/activate"
  python -m pip install -q --upgrade pip
  python -m pip install -q ".[dev]"
else
  . "$VENV/bin/activate"
fi
mkdir -p "$WORKSPACE"
# The example as this environment's kernel describes its language: the lab then has nothing to
# add to it, and the notebook opens without unsaved changes.
[ -f "$WORKSPACE/demo.ipynb" ] || python - examples/demo.ipynb "$WORKSPACE/demo.ipynb" <<'PY'
import json, sys
from ipykernel.ipkernel import IPythonKernel
notebook = json.load(open(sys.argv[1], encoding="utf-8"))
notebook["metadata"]["language_info"] = IPythonKernel.language_info
with open(sys.argv[2], "w", encoding="utf-8") as f:
    f.write(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
PY
# default_url: the printed URL (and the server's root) open the example, not the Launcher.
exec jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.port="${PORT:-8888}" \
  --ServerApp.port_retries=0 --allow-root --no-browser \
  --ServerApp.root_dir="$WORKSPACE" --LabApp.default_url=/lab/tree/demo.ipynb
