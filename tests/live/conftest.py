"""Shared helpers of the live tests: the memtrace binary, a database, and
`memtrace serve` started on a free loopback port."""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
BIN = Path(os.environ.get("MEMTRACE_BIN", ROOT / "target" / "debug" / "memtrace")).resolve()
SAMPLE = ROOT / "tests" / "fixtures" / "sample_export.json"


def memtrace(db, *args, check=True):
    out = subprocess.run(
        [str(BIN), "--db", str(db), *args], capture_output=True, text=True, timeout=300
    )
    if check and out.returncode != 0:
        raise AssertionError(f"memtrace {' '.join(args)}: {out.returncode}\n{out.stdout}\n{out.stderr}")
    return out


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "memtrace.db"
    memtrace(path, "import", str(SAMPLE))
    return path


class Server:
    def __init__(self, db, *args):
        self.proc = subprocess.Popen(
            [str(BIN), "--db", str(db), "serve", "--addr", "127.0.0.1:0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stdout.readline().strip()
        assert "listening on http://" in line, line
        self.url = line.split("listening on ", 1)[1]

    def get(self, path):
        with urllib.request.urlopen(self.url + path, timeout=30) as r:
            return json.load(r)

    def query(self, statement):
        req = urllib.request.Request(
            self.url + "/api/query",
            data=json.dumps({"statement": statement}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.load(r)

    def wait(self, what, check, seconds=60):
        start = time.time()
        while True:
            got = check()
            if got:
                return got
            assert time.time() - start < seconds, f"not after {seconds} s: {what}"
            time.sleep(0.2)

    def stop(self):
        if self.proc.stdout.closed:
            return ""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        err = self.proc.stderr.read()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return err


@pytest.fixture
def serve():
    started = []

    def start(db, *args):
        s = Server(db, *args)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


def run_app(script, endpoint, *args):
    """Runs a script of this folder as an application: OTEL_EXPORTER_OTLP_ENDPOINT is the only
    OpenTelemetry setting it gets."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
    out = subprocess.run(
        [sys.executable, str(HERE / script), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=HERE,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return [json.loads(l) for l in out.stdout.splitlines() if l.strip()], out.stderr
