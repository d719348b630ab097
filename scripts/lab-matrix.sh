#!/usr/bin/env bash
# Builds the lab extension and runs its unit tests (jest) against one JupyterLab release: the
# lowest the extension declares (package.json) or the newest published, pre-releases included.
# A copy of the sources in .cache/lab-<which>/ gets package.json rewritten by
# scripts/lab-matrix.mjs (every @jupyterlab/* package of that release, transitive ones pinned
# with npm overrides) and its own node_modules; the work tree is not touched.
# Usage: bash scripts/lab-matrix.sh <lowest|newest>
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:?usage: lab-matrix.sh <lowest|newest>}
dir=.cache/lab-$which
# Everything but its node_modules is made afresh (a stale tsconfig.tsbuildinfo would skip tsc).
mkdir -p "$dir"
find "$dir" -mindepth 1 -maxdepth 1 ! -name node_modules -exec rm -rf {} +
# The sources the build and the tests read (tracked files only, as the work tree has them).
git ls-files -z -- labextension schema scripts/build-event-types.mjs scripts/build-escapes.mjs \
  jupyter_xcsh/rest-api.yml jupyter_xcsh/outputs/escapes.json \
  jupyter_xcsh/events 'tsconfig*.json' jest.config.js \
  babel.config.js package.json .prettierrc |
  xargs -0 cp --parents -t "$dir"
# Run from the work tree: the rewriter uses its node_modules (semver).
node scripts/lab-matrix.mjs "$dir/package.json" "$which"
cd "$dir"
# The lowest release's @jupyterlab/* packages are pinned to versions that never change: npm
# may take what its cache already knows without asking the registry again (2:42 -> 0:40 here
# with a warm cache; a bare machine fetches as before). The other packages, given as ranges,
# then resolve to the newest versions the cache knows, which on a warm machine may be older
# than the registry's newest. The newest release must ask: its versions are new.
offline=
if [ "$which" = lowest ]; then offline=--prefer-offline; fi
npm install --no-audit --no-fund --no-package-lock --loglevel=error $offline
node -e 'for (const p of ["application", "notebook", "services", "translation"])
  console.log(`@jupyterlab/${p}`, require(`@jupyterlab/${p}/package.json`).version)'
# Types, the prebuilt (federated) extension, the unit tests.
npm run build:lib
npm run build:labextension:dev
npm test
