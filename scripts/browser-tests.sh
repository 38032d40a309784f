#!/usr/bin/env bash
# End-to-end browser tests of `memtrace serve` (tests/browser/serve.test.mjs).
#
#   cargo build && scripts/browser-tests.sh
#   MEMTRACE_BIN=target/release/memtrace SCREENSHOTS=/tmp/shots scripts/browser-tests.sh
#
# Installs what the tests need when missing (Debian's chromium, node and npm,
# the npm packages of tests/browser), generates a small database with failed
# cases and evidence verdicts in a temporary folder, starts the server on a
# free port, and runs the tests against it. Exits with the tests' status.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)

# ---------------------------------------------------------------- dependencies

apt_install() {
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "installing: $*" >&2
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

need=()
if [ -z "${CHROMIUM:-}" ] && ! [ -x /usr/bin/chromium ]; then need+=(chromium); fi
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
if [ ${#need[@]} -gt 0 ]; then apt_install "${need[@]}"; fi

if [ ! -d tests/browser/node_modules ] || [ tests/browser/package-lock.json -nt tests/browser/node_modules ]; then
  (cd tests/browser && npm ci --no-audit --no-fund)
  touch tests/browser/node_modules
fi

# ---------------------------------------------------------------- database and server

BIN=${MEMTRACE_BIN:-target/debug/memtrace}
if [ ! -x "$BIN" ]; then
  echo "browser-tests: no memtrace binary at $BIN; build it first: cargo build" >&2
  echo "(or set MEMTRACE_BIN to the binary)" >&2
  exit 1
fi
case "$BIN" in /*) ;; *) BIN="$ROOT/$BIN" ;; esac

TMP=$(mktemp -d "${TMPDIR:-/tmp}/memtrace-browser.XXXXXX")
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "browser-tests: generating a database in $TMP" >&2
"$BIN" --db "$TMP/db" gen --system all --traces 4 --seed 7 --out "$TMP/gen" >/dev/null
"$BIN" --db "$TMP/db" import "$TMP/gen" >/dev/null
"$BIN" --db "$TMP/db" attribute >/dev/null

"$BIN" --db "$TMP/db" serve --addr 127.0.0.1:0 > "$TMP/serve.log" 2>&1 &
SERVER_PID=$!

URL=""
for _ in $(seq 1 300); do
  if line=$(grep -Eo 'listening on (http://[0-9.:]+)' "$TMP/serve.log" 2>/dev/null | head -n 1) && [ -n "$line" ]; then
    URL=${line#listening on }
    break
  fi
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    echo "browser-tests: the server exited before listening:" >&2
    cat "$TMP/serve.log" >&2
    exit 1
  fi
  sleep 0.1
done
if [ -z "$URL" ]; then
  echo "browser-tests: the server did not print 'listening on http://...' within 30 s:" >&2
  cat "$TMP/serve.log" >&2
  exit 1
fi
echo "browser-tests: server at $URL" >&2

# ---------------------------------------------------------------- tests

status=0
MEMTRACE_URL="$URL" SCREENSHOTS="${SCREENSHOTS:-}" node --test tests/browser/ || status=$?
if [ "$status" -ne 0 ]; then
  echo "browser-tests: failed (status $status); server log:" >&2
  cat "$TMP/serve.log" >&2
fi
exit "$status"
