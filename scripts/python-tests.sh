#!/usr/bin/env bash
# Tests of the Python binding (python/tests): builds the wheel once with maturin, in the
# workspace's target/ and the dev profile that `cargo test` used (so RocksDB's C++ compiled
# there is reused), installs it into a virtual environment with pytest, and runs the tests.
#
#   scripts/python-tests.sh              # as `make test` runs it
#   PYTHON=python3.9 scripts/python-tests.sh   # against another interpreter (>= 3.9)
#   scripts/python-tests.sh --bench      # a release wheel, then python/bench/overhead.py
#   scripts/python-tests.sh --bench-spark   # a release wheel and binary, then python/bench/spark.py
#
# smartcomment 0.1.2 needs Python >= 3.12: the newest Python 3.12+ found (on PATH, or one
# that pyenv installed) is used, else python3, and then the smartcomment test skips with
# its reason. pyarrow and pandas are installed when the package index has them, for the
# to_arrow / to_pandas tests (which check the error message without them), and duckdb for the
# Parquet export's tests. The Spark tests (python/tests/test_spark.py) run PySpark in local
# mode: PySpark is installed at the version pinned below, and a Java runtime from Debian's
# packages when no Java 17 or newer is on PATH; both are required (a failed install fails).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BENCH=0
if [ "${1:-}" = "--bench" ]; then BENCH=1; fi
if [ "${1:-}" = "--bench-spark" ]; then BENCH=2; fi
# PySpark 4.0 runs on Java 17 and 21 and Python 3.9 to 3.13.
PYSPARK_PIN="pyspark==4.0.1"

# ---------------------------------------------------------------- interpreter

version_of() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null; }
at_least() { # at_least PYTHON MINOR: whether PYTHON is 3.MINOR or newer
  "$1" -c "import sys; sys.exit(0 if sys.version_info >= (3, $2) else 1)" 2>/dev/null
}

pick_python() {
  local p v
  for v in 3.14 3.13 3.12; do
    p=$(command -v "python$v" 2>/dev/null || true)
    if [ -n "$p" ] && at_least "$p" 12; then echo "$p"; return; fi
  done
  if command -v pyenv >/dev/null 2>&1; then
    for v in $(pyenv versions --bare 2>/dev/null | grep -E '^3\.[0-9]+\.[0-9]+$' | sort -rV); do
      p="$(pyenv root)/versions/$v/bin/python"
      if [ -x "$p" ] && at_least "$p" 12; then echo "$p"; return; fi
    done
  fi
  command -v python3
}

PY=${PYTHON:-$(pick_python)}
if ! at_least "$PY" 9; then
  echo "python-tests: $PY is Python $(version_of "$PY"); the binding needs 3.9 or newer" >&2
  exit 1
fi
echo "python-tests: Python $(version_of "$PY") at $PY" >&2

# ---------------------------------------------------------------- environment

VENV="$ROOT/target/python-venv-$(version_of "$PY")"
if [ ! -x "$VENV/bin/python" ]; then
  if ! "$PY" -m venv "$VENV" 2>/dev/null; then
    # Debian's python3 keeps venv in a separate package.
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
    rm -rf "$VENV"
    "$PY" -m venv "$VENV"
  fi
fi
VPY="$VENV/bin/python"
"$VPY" -m pip install -q --disable-pip-version-check "maturin>=1.7,<2" "pytest>=7"
if at_least "$VPY" 12; then
  "$VPY" -m pip install -q --disable-pip-version-check "smartcomment==0.1.2"
fi
"$VPY" -m pip install -q --disable-pip-version-check pyarrow pandas \
  || echo "python-tests: pyarrow / pandas not installed; their tests check the error instead" >&2
"$VPY" -m pip install -q --disable-pip-version-check duckdb \
  || echo "python-tests: duckdb not installed; the Parquet tests that read with it skip" >&2

# ---------------------------------------------------------------- Spark

java_major() { # the major version of the java on PATH, or 0
  local v
  v=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1)
  echo "${v:-0}"
}
if ! command -v java >/dev/null 2>&1 || [ "$(java_major)" -lt 17 ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "python-tests: installing a Java runtime for PySpark" >&2
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends default-jre-headless >/dev/null
fi
if [ "$(java_major)" -lt 17 ]; then
  echo "python-tests: PySpark needs Java 17 or newer; java on PATH is $(java_major)" >&2
  exit 1
fi
"$VPY" -m pip install -q --disable-pip-version-check "$PYSPARK_PIN"
export MEMTRACE_SPARK_TESTS=1

# ---------------------------------------------------------------- wheel

WHEELS="$ROOT/target/wheels"
rm -f "$WHEELS"/memtrace-*.whl
PROFILE=()
if [ "$BENCH" != 0 ]; then PROFILE=(--release); fi
"$VENV/bin/maturin" build --locked -q "${PROFILE[@]}" -m python/Cargo.toml --interpreter "$VPY" -o "$WHEELS"
"$VPY" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "$WHEELS"/memtrace-*.whl

# ---------------------------------------------------------------- tests

if [ "$BENCH" = 1 ]; then
  exec "$VPY" python/bench/overhead.py
fi
if [ "$BENCH" = 2 ]; then
  cargo build --locked --release -p memtrace-repl
  exec "$VPY" python/bench/spark.py --memtrace "$ROOT/target/release/memtrace" "${@:2}"
fi

# The Spark tests compare with the CLI that `cargo test` built (built here when missing).
export MEMTRACE_BIN="$ROOT/target/debug/memtrace"
if [ ! -x "$MEMTRACE_BIN" ]; then cargo build --locked -p memtrace-repl; fi

# From the tests' folder, so `import memtrace` finds the installed package, not python/memtrace.
cd python/tests
exec "$VPY" -m pytest -q -rs -p no:cacheprovider .
