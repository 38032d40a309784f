#!/usr/bin/env bash
# Tests of what memtrace does live, with the real client libraries (tests/live):
#  - a small RAG application instrumented with the OpenTelemetry SDK and OpenInference exports
#    to a running `memtrace serve` through OTEL_EXPORTER_OTLP_ENDPOINT alone;
#  - `memtrace mcp` driven by the official MCP Python client SDK over stdio.
#
#   cargo build && scripts/live-tests.sh
#   MEMTRACE_BIN=target/release/memtrace scripts/live-tests.sh
#
# The packages are installed, at pinned versions, into a virtual environment under target/
# the first time (and whenever the pins change).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

BIN=${MEMTRACE_BIN:-target/debug/memtrace}
if [ ! -x "$BIN" ]; then
  echo "live-tests: no memtrace binary at $BIN; build it first: cargo build" >&2
  exit 1
fi
case "$BIN" in /*) ;; *) BIN="$ROOT/$BIN" ;; esac
export MEMTRACE_BIN="$BIN"

PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)'; then
  echo "live-tests: the MCP client SDK needs Python 3.10 or newer; $PY is older" >&2
  exit 1
fi
PINS=(
  "mcp==2.3.0"
  "opentelemetry-api==1.45.2"
  "opentelemetry-sdk==1.45.2"
  "opentelemetry-exporter-otlp-proto-http==1.45.2"
  "openinference-instrumentation==0.1.72"
  "openinference-semantic-conventions==0.1.42"
  "pytest>=7,<9"
)
VENV="$ROOT/target/live-venv-$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
STAMP="$VENV/.pins"
if [ ! -x "$VENV/bin/python" ]; then
  if ! "$PY" -m venv "$VENV" 2>/dev/null; then
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
    rm -rf "$VENV"
    "$PY" -m venv "$VENV"
  fi
fi
if [ "$(cat "$STAMP" 2>/dev/null)" != "${PINS[*]}" ]; then
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "${PINS[@]}"
  echo "${PINS[*]}" > "$STAMP"
fi

cd tests/live
exec "$VENV/bin/python" -m pytest -q -rs -p no:cacheprovider .
