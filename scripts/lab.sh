#!/usr/bin/env bash
# Set up everything from a bare machine and start JupyterLab with jupyter-xcsh on an example.
# Usage: bash scripts/lab.sh            (PORT=8888 by default; prints the URL with its token)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
python3 -m venv "$VENV"
. "$VENV/bin/activate"
python -m pip install -q --upgrade pip
python -m pip install -q ".[dev]"
mkdir -p workspace
[ -f workspace/demo.ipynb ] || cp examples/demo.ipynb workspace/demo.ipynb
exec jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.port="${PORT:-8888}" \
  --ServerApp.port_retries=0 --allow-root --no-browser \
  --ServerApp.root_dir=workspace workspace/demo.ipynb
