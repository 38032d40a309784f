# The two commands of the README, and a few more for developers.
# Every target installs the build dependencies first when they are missing.

.PHONY: demo test deps check book bench bench-suite bench-python bench-spark fuzz

# Import the bundled sample into ./memtrace.db and print stats and the traces.
demo: deps
	cargo run --locked -p memtrace-repl -- demo

# Run every test of the workspace (unit, property, end-to-end, crash safety, doc tests), then the
# web viewer's tests in headless Chromium against the binary that cargo test built, then the Python
# binding's tests (its wheel built with the same profile and target/, in a virtual environment),
# PySpark's in local mode among them, then the live tests: an OpenTelemetry-instrumented app
# exporting to `memtrace serve`, and `memtrace mcp` driven by the MCP Python client SDK (pinned
# packages, in a virtual environment).
test: deps
	cargo test --locked
	bash scripts/browser-tests.sh
	bash scripts/python-tests.sh
	bash scripts/live-tests.sh

deps:
	@bash scripts/deps.sh

# Formatting, lints and the import graph (no cycle of crates or files), as CI checks them.
check: deps
	cargo fmt --all --check
	python3 scripts/imports.py
	cargo clippy --locked --all-targets -- -D warnings
	cargo clippy --locked -p memtrace-python --all-targets -- -D warnings

# The book (docs/src) as a website in docs/book, and a check of every relative link and anchor
# of the README, ARCHITECTURE.md, BENCHMARKS.md and the book. mdBook is installed when missing.
MDBOOK_VERSION ?= 0.4.52
book:
	@command -v mdbook >/dev/null 2>&1 || cargo install --locked mdbook --version $(MDBOOK_VERSION) --no-default-features --features search
	mdbook build docs
	python3 scripts/book-check.py

# The import benchmark (release build): memtrace beside raw RocksDB puts.
# smartcomment's own import is measured too when this Python can import smartcomment (the
# venv that `make test` makes for the Python tests can).
BENCH_PYTHON ?= $(if $(wildcard target/python-venv-3.13/bin/python),target/python-venv-3.13/bin/python,python3)

bench: deps
	cargo run --locked --release -p memtrace-bench -- import --python $(BENCH_PYTHON)

# A query through the Python binding beside the same query in Rust (release wheel, same process).
bench-python: deps
	bash scripts/python-tests.sh --bench

# Traces per second of attribution and patterns: the CLI on one core beside Spark local[1] and
# local[2] on the same 1,000 generated traces (release wheel and binary; python/bench/spark.py).
bench-spark: deps
	bash scripts/python-tests.sh --bench-spark

# The benchmark suite (release build): generated sets of 10, 100 and 1,000 traces, four traces of
# 10k variables and growth traces whose closure holds 1k, 10k and 100k nodes; import beside raw
# RocksDB puts; TRACE, MATCH and FIND, cold (files evicted from the page cache) and warm, beside
# SQLite recursive CTEs and joins. DuckDB is a second peer when Python's duckdb module is
# installed (`pip install duckdb`); without it the suite says so and goes on.
bench-suite: deps
	cargo run --locked --release -p memtrace-bench -- suite

# Fuzz the query parser and its round trip (cargo-fuzz, nightly toolchain) for FUZZ_SECONDS;
# new inputs go to fuzz/corpus/parse, a crashing input to fuzz/artifacts/parse.
FUZZ_SECONDS ?= 600
fuzz: deps
	@cargo fuzz --version >/dev/null 2>&1 || cargo install --locked cargo-fuzz
	mkdir -p fuzz/corpus/parse
	cargo +nightly fuzz run parse fuzz/corpus/parse fuzz/seeds -- -max_total_time=$(FUZZ_SECONDS) -dict=fuzz/memtrace.dict
