"""Traces per second of attribution and of the failure patterns: the memtrace CLI on one core
beside Spark in local mode, local[1] and local[2], on the same generated traces.

    python python/bench/spark.py --memtrace target/release/memtrace [--traces 1000] [--dir D]

`make bench-spark` runs it with a release wheel and binary. The set is `memtrace gen --system
all --traces N --seed 1` (LoCoMo-size traces), written once into `--dir` and reused. Each job
starts from the trace files, so every side imports what it analyses:

- CLI, one core: `memtrace import` then `memtrace attribute` (or `memtrace patterns --builtin`)
  into a new database, pinned to one core with taskset and RAYON_NUM_THREADS=1, timed whole
  (both processes).
- partition functions, one core: `memtrace.partition` over the same files in this process,
  pinned to one core, batches of 64 files: what a Spark task runs, without Spark.
- Spark local[1] and local[2]: `read_traces` then `mapInArrow` of the partition function,
  written to Spark's `noop` sink; the session is started and warmed up on a few files first,
  so its start-up is not in the figure.

Each side runs `--runs` times (default 2) in turn; the table gives the best run and traces per
second from it. The machine must be otherwise idle for the scaling of local[2] to show.
"""

import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]


def sh(args, env=None, cores="0"):
    """Runs a command pinned to `cores`; returns its seconds."""
    full = ["taskset", "-c", cores, *args] if shutil.which("taskset") else list(args)
    started = time.perf_counter()
    subprocess.run(full, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def gen(memtrace, out, n):
    if (out / "manifest.json").exists():
        return
    subprocess.run([memtrace, "gen", "--system", "all", "--traces", str(n), "--seed", "1",
                    "--out", str(out)], check=True)


def cli_job(memtrace, traces, job, scratch):
    env = dict(os.environ, RAYON_NUM_THREADS="1")
    db = pathlib.Path(tempfile.mkdtemp(dir=scratch)) / "cli.db"
    try:
        t = sh([memtrace, "--db", str(db), "import", str(traces)], env)
        if job == "attribute":
            t += sh([memtrace, "--db", str(db), "attribute", "--format", "json"], env)
        else:
            t += sh([memtrace, "--db", str(db), "patterns", "--builtin", "--format", "json"], env)
        return t
    finally:
        shutil.rmtree(db.parent, ignore_errors=True)


def partition_job(files, job, scratch):
    """The partition functions in this process, on one core."""
    import pyarrow as pa

    import memtrace.partition as mp

    if hasattr(os, "sched_setaffinity"):
        before = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {min(before)})
    try:
        started = time.perf_counter()
        rows = 0
        for i in range(0, len(files), 64):
            chunk = files[i : i + 64]
            batch = pa.record_batch(
                {"path": [str(f) for f in chunk], "content": [f.read_bytes() for f in chunk]}
            )
            fn = mp.attribute if job == "attribute" else mp.patterns
            for out in fn([batch], scratch=scratch):
                rows += out.num_rows
        return time.perf_counter() - started, rows
    finally:
        if hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, before)


def spark_job(spark, traces, job):
    import memtrace.spark as ms

    df = ms.read_traces(spark, str(traces))
    if job == "attribute":
        out = df.mapInArrow(ms.attribute("evidence"), ms.VERDICTS)
    else:
        out = df.mapInArrow(ms.patterns(), ms.PATTERN_HITS)
    started = time.perf_counter()
    out.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - started


def session(cores, warm):
    from pyspark.sql import SparkSession

    import memtrace.spark as ms

    os.environ["PYSPARK_PYTHON"] = sys.executable
    started = time.perf_counter()
    spark = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(f"memtrace-bench-{cores}")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "4g")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "64")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    ms.read_traces(spark, str(warm)).mapInArrow(ms.attribute(), ms.VERDICTS).write.format(
        "noop"
    ).mode("overwrite").save()
    return spark, time.perf_counter() - started


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--memtrace", required=True, help="the memtrace binary (release)")
    ap.add_argument("--traces", type=int, default=1000)
    ap.add_argument("--dir", default=str(ROOT / "target" / "bench-spark"))
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    base = pathlib.Path(args.dir)
    base.mkdir(parents=True, exist_ok=True)
    traces = base / f"gen{args.traces}"
    gen(args.memtrace, traces, args.traces)
    files = sorted(p for p in traces.glob("*.json") if p.name != "manifest.json")
    warm = base / "warm"
    if not warm.exists():
        warm.mkdir()
        for f in files[:4]:
            shutil.copy(f, warm / f.name)
    scratch = base / "scratch"
    scratch.mkdir(exist_ok=True)
    size = sum(f.stat().st_size for f in files)
    print(f"{len(files)} traces, {size / 2**20:.0f} MiB of JSON; best of {args.runs} runs\n")

    results = {}
    for job in ["attribute", "patterns"]:
        for _ in range(args.runs):
            t = cli_job(args.memtrace, traces, job, scratch)
            results.setdefault(("CLI, 1 core", job), []).append(t)
            t, _rows = partition_job(files, job, str(scratch))
            results.setdefault(("partition functions, 1 core", job), []).append(t)
    for cores in [1, 2]:
        spark, start = session(cores, warm)
        print(f"Spark local[{cores}] session start and warm-up: {start:.1f} s")
        for job in ["attribute", "patterns"]:
            for _ in range(args.runs):
                t = spark_job(spark, traces, job)
                results.setdefault((f"Spark local[{cores}]", job), []).append(t)
        spark.stop()
    print()
    print("| side | job | seconds (best) | traces/s | per trace |")
    print("|---|---|---:|---:|---:|")
    for (side, job), times in results.items():
        best = min(times)
        print(f"| {side} | {job} | {best:.1f} | {len(files) / best:.1f} | "
              f"{best / len(files) * 1000:.1f} ms |")


if __name__ == "__main__":
    main()
