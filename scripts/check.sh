#!/usr/bin/env bash
# Set up everything from a bare machine and run every check: install, lint, types, tests.
# Usage: bash scripts/check.sh            (VENV=path to choose the virtualenv, default .venv)
#        bash scripts/check.sh --all      the same with every lane of the environment matrix
#        bash scripts/check.sh --quick    the contributor loop: lint, types and the core suites
#                                         in the existing VENV (installed once if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
# Each stage's header carries the time since the start, so the log shows what each one costs.
step() { printf '\n== [+%dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }
QUICK=0
LANE=${XCSH_CI_LANE:-}
case "${1:-}" in
  --quick) QUICK=1 ;;
  --all) LANE=all ;;
  "") ;;
  *) echo "usage: bash scripts/check.sh [--all | --quick]" >&2; exit 2 ;;
esac

# Every run builds and installs the package, lints, type-checks, runs the lab extension's unit
# tests, the whole main suite, jupyter_server's own API tests, the core suites with every fast
# path off, the API fuzzing, both MCP clients and the conformance suite, the docs site, the
# browser tests and the nodeless wheel. The environment matrix around them is in three lanes,
# run one per commit in turn (HEAD's commit count, modulo 3), so that each lane runs on
# every third commit and a run stays within 45 minutes on a 2-core machine (all three lanes
# at once took 62-76):
#   versions       JupyterLab's lowest and newest 4.x (the lab extension), the core suites on
#                  the lowest declared versions and on the newest pre-releases
#   services       Enterprise Gateway, a real JupyterHub, s3contents on a local S3, Pillow
#   collaboration  jupyter-collaboration (newest, newest 4.x), jupyter-server-documents, and
#                  Jupyter AI 3 (whose backend it is)
# --all (or XCSH_CI_LANE=all) runs the three; XCSH_CI_LANE=<lane> one of them.
LANES=(versions services collaboration)
if [ -z "$LANE" ]; then
  # A shallow clone has no count to go by: its commit's hash chooses (each lane then runs on a
  # third of the commits, not every third one). Outside git: the first lane.
  if [ "$(git rev-parse --is-shallow-repository 2>/dev/null)" = true ]; then
    turn=$((16#$(git rev-parse --short=7 HEAD)))
  else
    turn=$(git rev-list --count HEAD 2>/dev/null || echo 0)
  fi
  LANE=${LANES[$((turn % ${#LANES[@]}))]}
fi
case " all ${LANES[*]} " in
  *" $LANE "*) ;;
  *) echo "XCSH_CI_LANE=$LANE: not one of all ${LANES[*]}" >&2; exit 2 ;;
esac
lane() { [ "$LANE" = all ] || [ "$LANE" = "$1" ]; }

# Every Python process prints its threads' stacks on a fatal signal, and output is not held in
# buffers: a stage that hangs shows where, in the log, up to the moment it was stopped.
export PYTHONFAULTHANDLER=1 PYTHONUNBUFFERED=1

# Run one test command within a time limit. pytest-timeout fails a test that runs too long, but
# cannot stop a process stuck where Python never gets control back (a C call that never
# returns, a hang after the last test): past the limit the command gets SIGABRT (each Python
# process then prints its stacks, see above) and is run once more. A second hang, or a
# failure, fails the run.
bounded() {  # <minutes> <command...>
  local minutes=$1 rc=0
  shift
  timeout --signal=ABRT --kill-after=30 "${minutes}m" "$@" || rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    printf '\n== HUNG: %s ran past %s minutes (stacks above); once more\n' "$*" "$minutes"
    rc=0
    timeout --signal=ABRT --kill-after=30 "${minutes}m" "$@" || rc=$?
  fi
  return "$rc"
}

# The quick loop (CONTRIBUTING.md): what a change most often breaks, in about three minutes. It
# reuses VENV as it is (an editable install follows the working tree; the first run makes one),
# and runs lint, types and every test of tests/ that is neither `slow` (2 s or more) nor
# `process` (a Kernel Gateway, other servers, a child Python): ~1,400 of ~1,750, in two workers.
# CI runs everything below.
QUICK_TESTS=(tests -n 2 -m "not slow and not process")
if [ "$QUICK" = 1 ]; then
  start=$SECONDS
  if ! "$VENV/bin/python" -I -c "import jupyter_xcsh, pytest, mypy" 2>/dev/null \
    || [ ! -x "$VENV/bin/ruff" ]; then
    step "python environment ($VENV: editable install, once)"
    python3 -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q -e ".[test,dev]"
  fi
  . "$VENV/bin/activate"
  step "lint and types"
  ruff check .
  ruff format --check .
  mypy
  [ -d node_modules ] || npm ci --no-audit --no-fund
  npm run lint:check
  step "core suites (quick)"
  bounded 10 python -m pytest "${QUICK_TESTS[@]}" -p no:cacheprovider -q -ra
  step "quick checks passed in $((SECONDS - start)) s (the full run: bash scripts/check.sh)"
  exit 0
fi

step "the environment matrix's lane of this run: $LANE (of ${LANES[*]}; --all for every lane)"
step "python environment ($VENV)"
python3 -m venv "$VENV"
. "$VENV/bin/activate"
python -m pip install -q --upgrade pip
# Builds the lab extension with npm (hatch-jupyter-builder) and installs the package as users do.
# uv installs the other environments (below).
python -m pip install -q ".[test,dev]" uv

step "installed extensions"
jupyter server extension list 2>&1 | tee /tmp/xcsh-server-ext.txt
grep -Eq "jupyter_xcsh .*enabled" /tmp/xcsh-server-ext.txt
grep -Eq "jupyter_xcsh .*OK" /tmp/xcsh-server-ext.txt
jupyter labextension list 2>&1 | tee /tmp/xcsh-lab-ext.txt
grep -Eq "jupyter-xcsh .*enabled.*OK" /tmp/xcsh-lab-ext.txt

step "lint and types"
ruff check .
ruff format --check .
mypy
[ -d node_modules ] || npm ci --no-audit --no-fund
npm run lint:check

step "lab extension unit tests (jest)"
npm test

step "lab extension built and unit-tested on the lowest and the newest JupyterLab 4.x"
# Every @jupyterlab/* package at the floor package.json declares, then at the newest published
# 4.x (pre-releases included), each in its own copy (.cache/lab-*): types, the prebuilt
# extension, jest. ~3 minutes each. (Run beside the main suite, its npm installs' writes made
# the suite's saves wait on the disk: the suite took 5 minutes longer, about what it saved.)
if lane versions; then
  bounded 10 bash scripts/lab-matrix.sh lowest
  bounded 10 bash scripts/lab-matrix.sh newest
else
  echo "in the versions lane (not this run's)"
fi

step "the sdist and the wheel, built as a release is; the lowest versions' environment"
# The sdist and the wheel from it, as a release is; the wheel is installed, with no Node, below,
# and the other environments install it rather than building the package again.
rm -rf dist
python -m pip install -q build
python -m build --outdir dist . >/tmp/xcsh-build.txt 2>&1 || { cat /tmp/xcsh-build.txt; exit 1; }
ls dist
WHEEL=$(ls "$PWD"/dist/jupyter_xcsh-*.whl)
# uv resolves every requirement pyproject.toml declares to its lowest version (the packages
# those need to their newest), so a floor that no longer works fails below. It reads the
# requirements from the source tree (from a wheel they would not count as direct).
if lane versions; then
  python3 -m venv "$VENV-lowest"
  uv pip install -q --python "$VENV-lowest/bin/python" --resolution lowest-direct ".[test-core]"
fi

# Every other environment is installed in the background while the tests run (a job of its
# own, one install at a time; its log is printed if it fails): the tests leave the CPU partly
# idle, waiting on kernels.
extra_envs() {
  set -euo pipefail
  from_wheel() {  # <virtualenv> <uv pip install arguments...>
    python3 -m venv "$1"
    uv pip install -q --python "$1/bin/python" "${@:2}"
  }
  from_wheel "$VENV-mcp" "$WHEEL[mcp-test]"
  mkdir -p "$VENV-mcp-node"
  npm install --no-audit --no-fund --prefix "$VENV-mcp-node" @modelcontextprotocol/inspector@2.12.0
  # What users do, with pip: the wheel and JupyterLab in a fresh environment.
  python3 -m venv "$VENV-wheel"
  "$VENV-wheel/bin/python" -m pip install -q --upgrade pip
  "$VENV-wheel/bin/python" -m pip install -q "$WHEEL" jupyterlab pytest pytest-timeout playwright
  from_wheel "$VENV-docs" "$WHEEL[docs]"
  if lane versions; then
    from_wheel "$VENV-newest" --upgrade --prerelease allow "$WHEEL[test]"
  fi
  if lane services; then
    from_wheel "$VENV-images" "$WHEEL[test,images]"
    from_wheel "$VENV-eg" "jupyter_enterprise_gateway>=3.2,<4" ipykernel
    from_wheel "$VENV-hub" "$WHEEL[deploy-test]"
    [ -x .cache/chp/node_modules/.bin/configurable-http-proxy ] || {
      mkdir -p .cache/chp
      npm install --silent --no-audit --no-fund --prefix .cache/chp configurable-http-proxy@5
    }
    from_wheel "$VENV-s3" "$WHEEL[test]" s3contents "moto[server]"
  fi
  if lane collaboration; then
    from_wheel "$VENV-rtc" "$WHEEL[test]" jupyter-collaboration
    from_wheel "$VENV-rtc4" "$WHEEL[test]" "jupyter-collaboration>=4,<5"
    from_wheel "$VENV-sdocs" "$WHEEL[test]" jupyter-server-documents
    from_wheel "$VENV-ai" "$WHEEL[test]" "jupyter-ai>=3,<4"
  fi
}
ENVS_LOG=$(mktemp /tmp/xcsh-envs.XXXXXX)
extra_envs >"$ENVS_LOG" 2>&1 &
ENVS_PID=$!

step "tests"
# pytest exits 5 when it collects no test: set -e makes that a failure, as it must be.
# Two pytest-xdist workers: the tests mostly wait on kernels and servers. Measured here: 15:19
# in one process, 9:21 in two (12.6 minutes of CPU: two thirds of the 2 cores). Each worker
# has its own temporary folder and its own Kernel Gateway.
bounded 30 python -m pytest tests -n 2 -p no:cacheprovider -q -ra --durations=15

# The environments' job ended long before (it takes a few minutes); its log only if it failed.
envs_rc=0
wait "$ENVS_PID" || envs_rc=$?
if [ "$envs_rc" -ne 0 ]; then
  cat "$ENVS_LOG"
  echo "installing the environments failed (rc $envs_rc)"
  exit 1
fi

step "jupyter_server's own REST API tests with the extension loaded (scripts/server-tests.sh)"
# Its contents, kernels and sessions API tests, of the installed release (its sdist, cached in
# .cache/), with jupyter_xcsh in every server they start: the extension must not change how the
# server it lives in behaves. ~2 minutes.
VENV="$VENV" bounded 10 bash scripts/server-tests.sh

# The core suites (notebook tool, python tool, runs in place, stdin, MCP), run
# again where something other than the code changes: the fast paths, the dependencies.
CORE_TESTS=(tests/api/inplace tests/api/notebook tests/unit/search tests/unit/notebook/edit \
  tests/unit/notebook/rooms tests/unit/notebook/storage/test_notebook_document.py \
  tests/unit/notebook/test_notebook_outputs.py tests/unit/notebook/test_notebook_reader.py \
  tests/api/python/test_python_execution.py tests/api/python/test_python_frozen_kernel.py \
  tests/api/python/test_python_images.py tests/api/python/test_python_interrupts.py \
  tests/api/python/test_python_kernel_activity.py tests/api/python/test_python_kernels_gone.py \
  tests/api/python/test_python_notebook_kernel.py tests/api/python/test_python_output_bound.py \
  tests/api/python/test_python_queued_messages.py tests/api/python/test_python_recovery.py \
  tests/api/python/test_python_remote_kernel.py tests/api/python/test_python_sessions_listed.py \
  tests/api/python/test_python_stdin.py tests/api/python/test_python_streaming.py tests/unit/mcp \
  tests/api/mcp/test_mcp_config_api.py tests/api/mcp/test_mcp_config_command.py \
  tests/api/mcp/test_mcp_endpoint.py tests/api/mcp/test_mcp_modern.py \
  tests/api/mcp/test_mcp_resources.py tests/api/mcp/test_mcp_resources_live.py \
  tests/api/mcp/test_mcp_runs_resources.py tests/api/mcp/test_mcp_summary.py \
  tests/api/mcp/test_mcp_tasks.py tests/api/mcp/test_mcp_tools.py
  tests/unit/execution/kernel/test_stdin_policy.py tests/api/server/test_fast_paths.py \
    tests/process/test_startup_heap.py)
versions() {  # <python>: the versions of the packages the matrix is about
  "$1" -m pip list 2>/dev/null | grep -Ei "^(jupyter[-_](server|client|core|events)|ipykernel|tornado|nbformat|pyzmq|traitlets) "
}

step "two lanes at once: the core suites on the lowest declared versions ($VENV-lowest, versions lane); every fast path off (XCSH_TEST_FAST_PATHS=off), then the API fuzzing, the MCP clients, Pillow and S3 (services lane) and the docs"
# The lowest versions: uv lowest-direct (above), ipykernel 6.29; Kernel Gateway 3 needs a newer
# jupyter_server, so the gateway tests use the one of the main environment. Fast paths off: the
# public API everywhere. The lowest lane is the longer (~14 against ~10 minutes): the other
# runs the shorter stages after its suite. Both mostly wait on kernels and servers; each has
# its own pytest temporary folder and log, printed when both lanes have ended.
# Outside the versions lane there is no lowest lane beside it: the fast-paths-off suite then
# has two workers of its own.
TWICE=$(mktemp -d /tmp/xcsh-twice.XXXXXX)
OFF_WORKERS=()
if lane versions; then
  versions "$VENV-lowest/bin/python"
  XCSH_KERNEL_GATEWAY="$(realpath "$VENV")/bin/jupyter-kernelgateway" \
    bounded 25 "$VENV-lowest/bin/python" -m pytest "${CORE_TESTS[@]}" -p no:cacheprovider -q -ra \
    --basetemp="$TWICE/lowest" >"$TWICE/lowest.txt" 2>&1 &
  lowest_pid=$!
else
  echo "the lowest declared versions: in the versions lane (not this run's)" >"$TWICE/lowest.txt"
  true &
  lowest_pid=$!
  OFF_WORKERS=(-n 2)
fi
fast_paths_off_then_the_short_stages() {
  XCSH_TEST_FAST_PATHS=off bounded 25 python -m pytest "${CORE_TESTS[@]}" "${OFF_WORKERS[@]}" \
    -p no:cacheprovider -q -ra --basetemp="$TWICE/fast-paths-off"

  if lane versions; then
    step "core suites on the newest releases, pre-releases included ($VENV-newest)"
    versions "$VENV-newest/bin/python" | tee "$TWICE/newest-versions.txt"
    # Without a pre-release newer than the main environment's releases the two are the same
    # environment, whose whole suite already ran above: the core suites run again only if not.
    if versions python | cmp -s - "$TWICE/newest-versions.txt"; then
      echo "same versions as $VENV (no newer pre-release): covered by the test stage above"
    else
      bounded 15 "$VENV-newest/bin/python" -m pytest "${CORE_TESTS[@]}" -p no:cacheprovider -q -ra \
        --basetemp="$TWICE/newest"
    fi
  fi

  step "API fuzzing (Schemathesis over rest-api.yml, live server, fixed seed)"
  VENV="$VENV" bounded 15 bash scripts/fuzz.sh

  step "MCP with the official SDK client ($VENV-mcp)"
  # Its own environment: the SDK's tree (pydantic, httpx2, starlette, ...) is the client's, not
  # the server's, which serves MCP natively (see jupyter_xcsh/mcp/__init__.py).
  # The MCP Inspector's CLI is in a prefix of its own, from npm (mcp-tests/test_inspector_cli.py).
  XCSH_MCP_INSPECTOR="$(cd "$VENV-mcp-node/node_modules/.bin" && pwd)/mcp-inspector" \
    bounded 10 "$VENV-mcp/bin/python" -m pytest mcp-tests -p no:cacheprovider -q -ra \
    --basetemp="$TWICE/mcp"

  step "MCP conformance suite for servers (Node 22, scripts/mcp-conformance.sh)"
  NODE_PREFIX="$VENV-mcp-node" bounded 10 bash scripts/mcp-conformance.sh

  if ! lane services; then
    echo "Pillow and S3: in the services lane (not this run's)"
  else
    step "image downscaling with Pillow installed ($VENV-images)"
    # A second environment with the images extra: the tests marked `pillow` run here (the main
    # environment has no Pillow and runs the `without_pillow` ones).
    bounded 10 "$VENV-images/bin/python" -m pytest tests/unit/outputs/test_image_budget.py \
      tests/api/python/test_python_images.py -p no:cacheprovider -q -ra --basetemp="$TWICE/images"

    step "contents off the local disk: s3contents on a local S3, moto's server ($VENV-s3)"
    # Every tool with S3ContentsManager as the server's contents manager, its bucket on a moto
    # server the tests start on 127.0.0.1 (tests/support/s3.py): notebooks, runs in place, files,
    # artifacts saved through the contents manager, nothing left on the local disk. ~1.5 minutes.
    "$VENV-s3/bin/python" -m pip list 2>/dev/null | grep -Ei "^(s3contents|s3fs|moto) "
    bounded 10 "$VENV-s3/bin/python" -m pytest tests -m s3 -p no:cacheprovider -q -ra \
      --basetemp="$TWICE/s3"
  fi

  step "the docs site: Sphinx with MyST, every warning an error ($VENV-docs)"
  # docs/conf.py: a broken link or anchor between pages, or a missing image, fails the build
  # (-W -n); links outside the repository are not checked (no internet here). ~20 s.
  "$VENV-docs/bin/python" -m pip list 2>/dev/null | grep -Ei "^(sphinx|myst-parser|pydata-sphinx-theme) "
  bounded 5 "$VENV-docs/bin/sphinx-build" -W --keep-going -n -q docs "$TWICE/docs"
}
fast_paths_off_then_the_short_stages >"$TWICE/fast-paths-off.txt" 2>&1 &
off_pid=$!
lowest_rc=0 off_rc=0
wait "$lowest_pid" || lowest_rc=$?
wait "$off_pid" || off_rc=$?
printf '\n-- the lowest declared versions: exit %s\n' "$lowest_rc"
cat "$TWICE/lowest.txt"
printf '\n-- every fast path off, then the short stages: exit %s\n' "$off_rc"
cat "$TWICE/fast-paths-off.txt"
if [ "$off_rc" -ne 0 ] || [ "$lowest_rc" -ne 0 ]; then exit 1; fi

step "browser tests (Playwright + Debian Chromium, a real jupyter lab)"
command -v chromium || (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium)
bounded 15 python -m pytest ui-tests -p no:cacheprovider -q -m "not collaboration"

step "the wheel, installed where there is no Node ($VENV-wheel)"
# What users get from PyPI: sdist and wheel built as a release is (the wheel from the sdist),
# the wheel installed with JupyterLab into a fresh environment, then used on a PATH holding
# only that environment: no node, no npm. Both extensions must be enabled by the package's own
# files, and a browser smoke test runs against that install.
WHEEL_VENV="$PWD/$VENV-wheel"
nodeless() { env PATH="$WHEEL_VENV/bin" "$@"; }
nodeless python -c "import shutil, sys; sys.exit(shutil.which('node') is not None or shutil.which('npm') is not None)"
nodeless jupyter server extension list 2>&1 | tee /tmp/xcsh-wheel-server-ext.txt
grep -Eq "jupyter_xcsh .*enabled" /tmp/xcsh-wheel-server-ext.txt
grep -Eq "jupyter_xcsh .*OK" /tmp/xcsh-wheel-server-ext.txt
nodeless jupyter labextension list 2>&1 | tee /tmp/xcsh-wheel-lab-ext.txt
grep -Eq "jupyter-xcsh .*enabled.*OK" /tmp/xcsh-wheel-lab-ext.txt
XCSH_UI_AUTOENABLE=1 XCSH_UI_SCREENSHOTS="$PWD/test-artifacts/ui-tests-wheel" \
  bounded 10 env PATH="$WHEEL_VENV/bin" python -m pytest -p no:cacheprovider -q -ra \
  "ui-tests/test_livesync.py::test_agent_insert_appears_in_the_open_notebook" \
  "ui-tests/test_agent_at_a_glance.py::test_status_bar_counts_a_running_call_and_opens_the_panel_on_it"

if lane services; then
  step "with Enterprise Gateway instead of Kernel Gateway ($VENV-eg)"
  # Enterprise Gateway pins older Jupyter packages: it runs from an environment of its own, the
  # tests' server (this environment) points at it. The gateway half of every kernel suite runs.
  "$VENV-eg/bin/python" -m pip list 2>/dev/null | grep -Ei "^(jupyter[-_]enterprise[-_]gateway|jupyter[-_]client) "
  XCSH_ENTERPRISE_GATEWAY="$PWD/$VENV-eg/bin/jupyter-enterprisegateway" bounded 20 \
    python -m pytest -n 2 -p no:cacheprovider -q -ra -k gateway \
    tests/api/python/test_python_execution.py tests/api/python/test_python_interrupts.py \
      tests/api/python/test_python_stdin.py \
    tests/api/python/test_python_recovery.py tests/api/python/test_python_kernels_gone.py \
    tests/api/python/test_python_remote_kernel.py tests/api/python/test_python_streaming.py \
      tests/api/python/test_sessions_api.py \
    tests/api/python/test_execution_faults.py tests/api/inplace/test_notebook_run_gateway.py \
      tests/api/python/test_python_sessions_listed.py

  step "behind a real JupyterHub ($VENV-hub)"
  # A hub with its proxy (configurable-http-proxy, from npm) on 127.0.0.1, single-user servers
  # spawned from this environment; agents reach them only through the hub's public URL.
  "$VENV-hub/bin/python" -m pip list 2>/dev/null | grep -Ei "^(jupyterhub|mcp) "
  XCSH_UI_SCREENSHOTS="$PWD/test-artifacts/hub" \
    bounded 10 "$VENV-hub/bin/python" -m pytest deploy-tests -p no:cacheprovider -q -ra
else
  step "Enterprise Gateway and JupyterHub: in the services lane (not this run's)"
fi

# jupyter-collaboration turns every open notebook into a shared document that the notebook tool
# changes directly (docs/developers/contract.md §4). Each release line gets an environment of its own: the tests with a
# real room (-m collaboration) and the browser tests; the newest also the file-path tests with
# the extension loaded but no room open (XCSH_TEST_RTC=1; the long save race already ran above:
# once is enough, they test that a loaded extension with no room changes nothing).
rtc_checks() {  # <virtualenv> [file-paths]
  "$1/bin/python" -m pip list 2>/dev/null | grep -Ei "^(jupyter[-_]collaboration|jupyter[-_]server[-_]ydoc|pycrdt) "
  bounded 10 "$1/bin/python" -m pytest tests -p no:cacheprovider -q -ra -m collaboration
  if [ "${2:-}" = file-paths ]; then
    XCSH_TEST_RTC=1 bounded 10 "$1/bin/python" -m pytest tests/api/inplace tests/api/notebook \
      tests/unit/search tests/unit/notebook/edit tests/unit/notebook/rooms \
      tests/unit/notebook/storage/test_notebook_document.py \
      tests/unit/notebook/test_notebook_outputs.py tests/unit/notebook/test_notebook_reader.py -n 2 \
      -p no:cacheprovider -q -ra -k "not racing"
  fi
  XCSH_UI_SCREENSHOTS="$PWD/test-artifacts/ui-tests-${1##*-}" \
    bounded 10 "$1/bin/python" -m pytest ui-tests -p no:cacheprovider -q -m collaboration
}

if ! lane collaboration; then
  step "jupyter-collaboration and jupyter-server-documents: in the collaboration lane (not this run's)"
  step "all checks passed (lane $LANE)"
  exit 0
fi

step "with jupyter-collaboration, newest release ($VENV-rtc)"
rtc_checks "$VENV-rtc" file-paths

step "with jupyter-collaboration, newest 4.x release ($VENV-rtc4)"
rtc_checks "$VENV-rtc4"

step "with jupyter-server-documents, Jupyter AI 3's collaboration backend ($VENV-sdocs)"
# Installed instead of jupyter-collaboration (which must not be there: both serve
# /api/collaboration/room). Its rooms hold the live documents the notebook tool changes; it
# also puts every notebook session in a room. The tests with a real room (-m server_documents,
# its outputs store off and on), then the notebook tool's file-path tests with it loaded and no
# room open (XCSH_TEST_SERVER_DOCUMENTS=1; runs in place are left out: their new session opens
# a room, which the server_documents tests cover). ~3 minutes.
"$VENV-sdocs/bin/python" -m pip list 2>/dev/null | grep -Ei "^(jupyter[-_]server[-_]documents|jupyter[-_]ydoc|pycrdt) "
if "$VENV-sdocs/bin/python" -m pip show -q jupyter-collaboration jupyter-server-ydoc 2>/dev/null; then
  echo "jupyter-collaboration is installed in $VENV-sdocs: these tests need it absent"; exit 1
fi
bounded 10 "$VENV-sdocs/bin/python" -m pytest tests -p no:cacheprovider -q -ra -m server_documents
XCSH_TEST_SERVER_DOCUMENTS=1 bounded 10 "$VENV-sdocs/bin/python" -m pytest -n 2 -p no:cacheprovider -q -ra \
  -k "not racing and not test_run_runs_the_cell_with_that_execution_count" \
  tests/api/notebook/test_notebook_access.py tests/api/notebook/test_notebook_addressing.py \
    tests/api/notebook/test_notebook_batch_events.py tests/api/notebook/test_notebook_changes.py \
    tests/api/notebook/test_notebook_create.py tests/api/notebook/test_notebook_edit_cache.py \
    tests/api/notebook/test_notebook_edit_loop.py tests/api/notebook/test_notebook_endpoint.py \
    tests/api/notebook/test_notebook_execution_count.py tests/api/notebook/test_notebook_find.py \
    tests/api/notebook/test_notebook_preconditions.py \
    tests/api/notebook/test_notebook_read_images.py tests/api/notebook/test_notebook_revert.py \
    tests/api/notebook/test_notebook_room_review.py tests/api/notebook/test_notebook_saves.py \
    tests/api/notebook/test_notebook_stale.py tests/api/notebook/test_notebook_store.py \
    tests/unit/notebook/edit/test_notebook_cells.py \
    tests/unit/notebook/rooms/test_notebook_shared.py \
    tests/unit/notebook/storage/test_notebook_document.py \
    tests/unit/notebook/test_notebook_outputs.py tests/unit/notebook/test_notebook_reader.py \
    tests/unit/search/test_notebook_grep.py

step "Jupyter AI 3's personas get the tools from its persona manager ($VENV-ai)"
# jupyter-ai installed: its PersonaManager's MCP server list holds this server (URL, token),
# and a persona's stamped headers call the notebook tool with it (tests/api/mcp/test_jupyter_ai.py).
"$VENV-ai/bin/python" -m pip list 2>/dev/null | grep -Ei "^jupyter[-_]ai([-_]persona[-_]manager)? "
bounded 5 "$VENV-ai/bin/python" -m pytest tests -m jupyter_ai -p no:cacheprovider -q -ra

step "all checks passed (lane $LANE)"
