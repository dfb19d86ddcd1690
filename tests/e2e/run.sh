#!/usr/bin/env bash
# End-to-end tests of `toolscript serve` by real external MCP clients: the
# official Python SDK (pinned in python/requirements.txt, installed in a
# virtual environment at .venv) and the official TypeScript SDK (pinned in
# ts/package-lock.json, installed with npm ci). Needs python3 (3.10+), node
# (18+) and npm, and the package registries for the first install.
#
#   tests/e2e/run.sh             # build toolscript, install both SDKs, run both suites
#   TOOLSCRIPT_BIN=... run.sh    # test an existing binary instead
set -euo pipefail
cd "$(dirname "$0")"

if [ -z "${TOOLSCRIPT_BIN:-}" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  echo "e2e: building toolscript"
  (cd ../.. && go build -o "$tmp/toolscript" ./cmd/toolscript)
  TOOLSCRIPT_BIN="$tmp/toolscript"
fi
export TOOLSCRIPT_BIN

echo "e2e: MCP Python SDK"
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install --quiet --disable-pip-version-check -r python/requirements.txt
(cd python && PYTHONDONTWRITEBYTECODE=1 ../.venv/bin/python -m pytest -q -p no:cacheprovider .)

echo "e2e: MCP TypeScript SDK"
(cd ts && npm ci --no-audit --no-fund --loglevel=error && npm test --silent)
