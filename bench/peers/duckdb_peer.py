#!/usr/bin/env python3
"""DuckDB as a peer of memtrace-bench's suite (optional: `pip install duckdb`).

memtrace-bench writes this file into its working folder and runs it:

  duckdb_peer.py check
      prints {"version": ..., "using_key": bool}
  duckdb_peer.py load --csv DIR --db FILE
      loads DIR/{nodes,edges,ops}.csv (written by the suite from its SQLite
      copy of the graph) into a new DuckDB file, sorted by trace and target
      so that zone maps skip other traces' row groups; prints what it
      measured as JSON
  duckdb_peer.py query --db FILE --workloads JSON --starts K --cold C --warm W
      times the workloads by the suite's protocol (bench/src/protocol.rs):
      every open after closing the database and evicting its files from the
      page cache (os.posix_fadvise DONTNEED); cold queries are the first after
      such an open, warm ones are repeated W times after one untimed run;
      prints the raw latencies, row counts and digests as JSON.

Latencies include the Python call (execute and fetchall), a few microseconds.
"""

import argparse
import ctypes
import json
import os
import resource
import sys
import time

import duckdb

# The start: the node whose full node id is $2 in trace $1, as memtrace is
# given it; of equal ids, the one added last, as memtrace's name index finds.
START = "(SELECT max(id) FROM nodes WHERE trace = $1 AND full_node_id = $2)"

# The closure of the start in trace $1 (UNION, so cycles end). With USING KEY
# (DuckDB 1.3 and later) the recursion keeps one row per node in a keyed
# table and feeds back only the rows a step changed.
CLOSURE_UNION = """WITH RECURSIVE anc(n) AS (
  SELECT """ + START + """ UNION SELECT e.src FROM anc JOIN edges e ON e.trace = $1 AND e.dst = anc.n)"""
CLOSURE_KEYED = """WITH RECURSIVE anc(n) USING KEY (n) AS (
  SELECT """ + START + """ UNION SELECT e.src FROM anc JOIN edges e ON e.trace = $1 AND e.dst = anc.n)"""

DEPTH3 = """WITH RECURSIVE anc(n, d) AS (
  SELECT """ + START + """, 0 UNION SELECT e.src, anc.d + 1 FROM anc JOIN edges e ON e.trace = $1 AND e.dst = anc.n WHERE anc.d < 3)
SELECT count(DISTINCT n) - 1 FROM anc"""

MATCH = """SELECT count(*) FROM edges e1
  JOIN nodes r ON r.trace = e1.trace AND r.id = e1.dst AND r.class = 'retrieved_memories'
  JOIN edges e2 ON e2.trace = e1.trace AND e2.src = e1.dst AND e2.kind = 'evaluation'
  JOIN nodes p ON p.trace = e2.trace AND p.id = e2.dst AND p.class = 'prediction'
WHERE e1.kind = 'retrieval'"""

FIND_GROUP = "SELECT name, count(*) FROM ops GROUP BY name"

MASK = (1 << 64) - 1


def fnv1a(text):
    h = 0xCBF29CE484222325
    for b in text.encode("utf-8"):
        h ^= b
        h = (h * 0x100000001B3) & MASK
    return h


def supports_using_key():
    try:
        con = duckdb.connect()
        con.execute(
            "WITH RECURSIVE t(n) USING KEY (n) AS (SELECT 1 UNION SELECT n + 1 FROM t WHERE n < 3) SELECT count(*) FROM t"
        ).fetchall()
        con.close()
        return True
    except duckdb.Error:
        return False


def statements(using_key):
    cte = CLOSURE_KEYED if using_key else CLOSURE_UNION
    nodes = cte + "\nSELECT nd.full_node_id, nd.class FROM anc JOIN nodes nd ON nd.trace = $1 AND nd.id = anc.n WHERE anc.n <> " + START
    ops = (
        cte
        + "\nSELECT o.op_id, o.name, o.kind FROM ops o WHERE o.trace = $1 AND o.op_id IN (\n"
        + "  SELECT e.op FROM anc JOIN edges e ON e.trace = $1 AND e.dst = anc.n)"
    )
    return {
        "closure": cte + "\nSELECT count(*) - 1 FROM anc",
        "closure-spread": cte + "\nSELECT count(*) - 1 FROM anc",
        "depth3": DEPTH3,
        "nodes": nodes,
        "nodes-batches": nodes,
        "nodes-limit1": nodes + " LIMIT 1",
        "ops": ops,
        "ops-batches": ops,
        "ops-limit1": ops + " LIMIT 1",
        "match": MATCH,
        "find-group": FIND_GROUP,
    }


def peak_rss_kib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


# --- the page cache -------------------------------------------------------

_libc = None


def _mincore_resident(path):
    """Bytes of path in the page cache (mincore over a read-only mapping)."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.mmap.restype = ctypes.c_void_p
        _libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                               ctypes.c_int, ctypes.c_int, ctypes.c_long]
        _libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        _libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    try:
        size = os.path.getsize(path)
    except OSError:
        return 0
    if size == 0:
        return 0
    page = os.sysconf("SC_PAGE_SIZE")
    pages = (size + page - 1) // page
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = _libc.mmap(None, size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
        if addr is None or addr == ctypes.c_void_p(-1).value:
            raise OSError(ctypes.get_errno(), "mmap failed: " + path)
        vec = (ctypes.c_ubyte * pages)()
        rc = _libc.mincore(addr, size, vec)
        _libc.munmap(addr, size)
        if rc != 0:
            raise OSError(ctypes.get_errno(), "mincore failed: " + path)
    finally:
        os.close(fd)
    return min(sum(1 for b in vec if b & 1) * page, size)


class Eviction:
    def __init__(self):
        self.times = 0
        self.files = 0
        self.bytes = 0
        self.resident_after = 0

    def evict(self, paths):
        files = 0
        total = 0
        for p in paths:
            try:
                fd = os.open(p, os.O_RDONLY)
            except OSError:
                continue
            try:
                try:
                    os.fsync(fd)
                except OSError:
                    pass
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                total += os.fstat(fd).st_size
                files += 1
            finally:
                os.close(fd)
        resident = sum(_mincore_resident(p) for p in paths)
        self.times += 1
        self.files = max(self.files, files)
        self.bytes = max(self.bytes, total)
        self.resident_after = max(self.resident_after, resident)

    def json(self):
        return {"times": self.times, "files": self.files, "bytes": self.bytes,
                "resident_after": self.resident_after}


# --- load -----------------------------------------------------------------

def load(args):
    csv = args.csv
    start = time.perf_counter()
    con = duckdb.connect(args.db)
    opts = "header = true, allow_quoted_nulls = false"
    con.execute(f"""CREATE TABLE nodes AS SELECT * FROM read_csv('{os.path.join(csv, 'nodes.csv')}', {opts},
        columns = {{'trace': 'INTEGER', 'id': 'INTEGER', 'class': 'VARCHAR', 'full_node_id': 'VARCHAR'}})
        ORDER BY trace, id""")
    con.execute(f"""CREATE TABLE edges AS SELECT * FROM read_csv('{os.path.join(csv, 'edges.csv')}', {opts},
        columns = {{'trace': 'INTEGER', 'src': 'INTEGER', 'dst': 'INTEGER', 'op': 'VARCHAR', 'kind': 'VARCHAR'}})
        ORDER BY trace, dst""")
    con.execute(f"""CREATE TABLE ops AS SELECT * FROM read_csv('{os.path.join(csv, 'ops.csv')}', {opts},
        columns = {{'trace': 'INTEGER', 'op_id': 'VARCHAR', 'name': 'VARCHAR', 'kind': 'VARCHAR'}})
        ORDER BY trace, op_id""")
    con.execute("CHECKPOINT")
    edges = con.execute("SELECT count(*) FROM edges").fetchone()[0]
    con.close()
    seconds = time.perf_counter() - start
    disk = sum(os.path.getsize(p) for p in (args.db, args.db + ".wal") if os.path.exists(p))
    json.dump({"seconds": seconds, "peak_rss_kib": peak_rss_kib(), "disk_bytes": disk,
               "units": edges}, sys.stdout)


# --- query ----------------------------------------------------------------

class Side:
    def __init__(self, path, using_key):
        self.path = path
        self.con = None
        self.sql = statements(using_key)

    def open(self):
        self.con = duckdb.connect(self.path)

    def close(self):
        if self.con is not None:
            self.con.close()
            self.con = None

    def files(self):
        return [self.path, self.path + ".wal"]

    def starts(self, per_trace):
        traces = [t for (t,) in self.con.execute("SELECT DISTINCT trace FROM nodes ORDER BY trace").fetchall()]
        pos = {t: i for i, t in enumerate(traces)}
        rows = self.con.execute(
            """SELECT trace, id, full_node_id FROM (
                 SELECT trace, id, full_node_id, row_number() OVER (PARTITION BY trace ORDER BY id) AS k
                 FROM nodes WHERE class = 'prediction')
               WHERE k <= $1 ORDER BY trace, id""", [per_trace]).fetchall()
        return [{"pos": pos[t], "trace": t, "node": full} for (t, _, full) in rows]

    def spread(self, per_trace):
        """per_trace variables of every trace, spread evenly over them by
        full id (byte order), as protocol.rs picks them."""
        traces = [t for (t,) in self.con.execute("SELECT DISTINCT trace FROM nodes ORDER BY trace").fetchall()]
        out = []
        for pos, t in enumerate(traces):
            nodes = self.con.execute(
                "SELECT full_node_id FROM nodes WHERE trace = $1 ORDER BY full_node_id",
                [t]).fetchall()
            for p in cold_picks(len(nodes), min(per_trace, len(nodes))):
                out.append({"pos": pos, "trace": t, "node": nodes[p][0]})
        return out

    def run(self, kind, start):
        sql = self.sql[kind]
        if start is None:
            return self.con.execute(sql).fetchall()
        return self.con.execute(sql, [start["trace"], start["node"]]).fetchall()

    @staticmethod
    def answer(kind, rows, digest=True):
        """The count or number of rows, and the digest of the content (as in protocol.rs)."""
        if kind in ("closure", "closure-spread", "depth3", "match"):
            n = int(rows[0][0])
            return n, n
        if kind == "find-group":
            total, d = 0, 0
            for name, n in rows:
                total += n
                h = fnv1a(name) if name is not None and digest else 0
                d = (d + h * n) & MASK
            return total, d
        if not digest:
            return len(rows), 0
        digest = 0
        for r in rows:
            digest = (digest + fnv1a(r[0])) & MASK
        return len(rows), digest


def starts_digest(starts):
    acc = 0
    for s in starts:
        acc = (acc * 31 + fnv1a(f"{s['pos']}\t{s['node']}")) & MASK
    return acc


def cold_picks(length, samples):
    if length == 0:
        return []
    return [i * length // samples for i in range(samples)]


def query(args):
    workloads = json.loads(args.workloads)
    using_key = supports_using_key() and not args.no_using_key
    side = Side(args.db, using_key)
    ev = Eviction()
    acc = [{"us": [], "rows": 0, "digest": 0} for _ in workloads]
    open_at = next((i for i, w in enumerate(workloads) if w["kind"] == "open"), None)
    def cold_open():
        side.close()
        ev.evict(side.files())
        t = time.perf_counter()
        side.open()
        us = (time.perf_counter() - t) * 1e6
        if open_at is not None:
            acc[open_at]["us"].append(us)

    def per_start(kind):
        return kind not in ("open", "match", "find-group")

    cold_open()
    starts = side.starts(args.starts)
    picks = cold_picks(len(starts), args.cold)
    for i, w in enumerate(workloads):
        if not w["cold"] or w["kind"] == "open":
            continue
        chosen = [starts[p] for p in picks] if per_start(w["kind"]) else [None]
        for s in chosen:
            cold_open()
            t = time.perf_counter()
            rows = side.run(w["kind"], s)
            acc[i]["us"].append((time.perf_counter() - t) * 1e6)
            n, d = Side.answer(w["kind"], rows)
            acc[i]["rows"] += n
            acc[i]["digest"] = (acc[i]["digest"] + d) & MASK
    def timed(i, w, s, first, what):
        """One timed warm run, which must answer as many rows as the first."""
        t = time.perf_counter()
        rows = side.run(w["kind"], s)
        acc[i]["us"].append((time.perf_counter() - t) * 1e6)
        again, _ = Side.answer(w["kind"], rows, digest=False)
        if again != first:
            raise SystemExit(f"{what} answered {again} rows, the first run {first}")

    spread = side.spread(args.spread) if any(w["kind"] == "closure-spread" for w in workloads) else []
    for i, w in enumerate(workloads):
        if w["cold"]:
            continue
        if w["kind"] == "closure-spread":
            # Each start once untimed, then whole passes over them in turn.
            firsts = [Side.answer(w["kind"], side.run(w["kind"], s)) for s in spread]
            passes = -(-args.warm // max(len(spread), 1))
            for _ in range(passes):
                for s, (first, _) in zip(spread, firsts):
                    timed(i, w, s, first, f"{w['name']} from {s['node']}: a pass")
            for n, d in firsts:
                acc[i]["rows"] += n
                acc[i]["digest"] = (acc[i]["digest"] + d) & MASK
            continue
        chosen = starts if per_start(w["kind"]) else [None]
        for s in chosen:
            first, digest = Side.answer(w["kind"], side.run(w["kind"], s))
            for _ in range(args.warm):
                timed(i, w, s, first, f"{w['name']}: a repetition")
            acc[i]["rows"] += first
            acc[i]["digest"] = (acc[i]["digest"] + digest) & MASK
    side.close()
    version = duckdb.__version__
    note = f"DuckDB {version} (Python {sys.version.split()[0]}), closure CTEs " + (
        "with USING KEY (n)" if using_key else "with UNION")
    json.dump({
        "peak_rss_kib": peak_rss_kib(),
        "units": len(starts),
        "starts_digest": starts_digest(starts),
        "eviction": ev.json(),
        "note": note,
        "figures": [{"name": w["name"], "us": a["us"], "rows": a["rows"], "digest": a["digest"]}
                    for w, a in zip(workloads, acc)],
    }, sys.stdout)


def check(_args):
    json.dump({"version": duckdb.__version__, "using_key": supports_using_key()}, sys.stdout)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("check")
    lp = sub.add_parser("load")
    lp.add_argument("--csv", required=True)
    lp.add_argument("--db", required=True)
    qp = sub.add_parser("query")
    qp.add_argument("--db", required=True)
    qp.add_argument("--workloads", required=True)
    qp.add_argument("--starts", type=int, default=2)
    qp.add_argument("--cold", type=int, default=20)
    qp.add_argument("--warm", type=int, default=3)
    qp.add_argument("--spread", type=int, default=20,
                    help="variables per trace of the spread workload")
    qp.add_argument("--no-using-key", action="store_true",
                    help="write the closure with UNION even where USING KEY is supported")
    args = p.parse_args()
    {"check": check, "load": load, "query": query}[args.cmd](args)


if __name__ == "__main__":
    main()
