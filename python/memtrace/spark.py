"""memtrace on Spark: attribution, failure patterns, cases and statistics over millions of
traces, one partition at a time, with ``DataFrame.mapInArrow``.

    >>> import memtrace.spark as ms
    >>> traces = ms.read_traces(spark, "s3a://bucket/traces/")       # path, content
    >>> verdicts = traces.mapInArrow(ms.attribute("evidence"), ms.VERDICTS)
    >>> verdicts.write.parquet("s3a://bucket/memtrace/verdicts")

Each function here returns the function that ``mapInArrow`` runs on a partition (see
:mod:`memtrace.partition` for what it does and the result tables), with the scratch database
in the executor's local folder. ``VERDICTS``, ``PATTERN_HITS``, ``CASES`` and ``STATS`` are the
result schemas as Spark DDL. The workers need the ``memtrace`` package and pyarrow installed,
as the driver does; nothing here imports pyspark until a DataFrame is read.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence, Union

from . import partition as _partition

PathLike = Union[str, "os.PathLike[str]"]
PartitionFunction = Callable[[Iterator[Any]], Iterator[Any]]


def schema(table: str) -> str:
    """A result table's schema as Spark DDL (``"source STRING NOT NULL, ..."``), for
    ``mapInArrow``: ``verdicts``, ``pattern_hits``, ``cases`` or ``stats``."""
    pa = _partition._pyarrow()
    types = {
        pa.string(): "STRING",
        pa.int64(): "BIGINT",
        pa.float64(): "DOUBLE",
    }
    columns = []
    for f in _partition.schema(table):
        if pa.types.is_list(f.type) and f.type.value_type == pa.string():
            ddl = "ARRAY<STRING>"
        elif f.type in types:
            ddl = types[f.type]
        else:  # every result column is one of the above
            raise TypeError(f"table {table}: column {f.name} has no Spark type here ({f.type})")
        columns.append(f"`{f.name}` {ddl}" + ("" if f.nullable else " NOT NULL"))
    return ", ".join(columns)


def _scratch(given: Optional[PathLike]) -> Optional[str]:
    """The scratch folder: the one given, else the executor's own local folder (where
    Spark also keeps shuffle files), else the temporary folder."""
    if given is not None:
        return os.fspath(given)
    try:
        from pyspark import SparkFiles

        root = SparkFiles.getRootDirectory()
    except Exception:  # not in a Spark worker: the temporary folder
        return None
    return root if root and os.path.isdir(root) else None


def attribute(
    method: str = "evidence",
    *,
    setting: Optional[str] = None,
    content: str = "content",
    source: Optional[str] = "path",
    scratch: Optional[PathLike] = None,
) -> PartitionFunction:
    """The partition function that attributes every failed case (``VERDICTS`` rows); see
    :func:`memtrace.partition.attribute`."""
    _partition._pyarrow()

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        return _partition.attribute(
            batches,
            method,
            setting=setting,
            content=content,
            source=source,
            scratch=_scratch(scratch),
        )

    return run


def patterns(
    names: Optional[Sequence[str]] = None,
    *,
    statements: Optional[Mapping[str, Any]] = None,
    params: Optional[Mapping[str, Any]] = None,
    content: str = "content",
    source: Optional[str] = "path",
    scratch: Optional[PathLike] = None,
    threads: int = 1,
) -> PartitionFunction:
    """The partition function that runs failure patterns (``PATTERN_HITS`` rows); see
    :func:`memtrace.partition.patterns`. The patterns are checked here, in the driver, so a
    bad one fails before any task starts."""
    _partition.check_patterns(names, statements=statements, params=params)

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        return _partition.patterns(
            batches,
            names,
            statements=statements,
            params=params,
            content=content,
            source=source,
            scratch=_scratch(scratch),
            threads=threads,
        )

    return run


def cases(
    *,
    content: str = "content",
    source: Optional[str] = "path",
    scratch: Optional[PathLike] = None,
) -> PartitionFunction:
    """The partition function that lists failed cases (``CASES`` rows)."""
    _partition._pyarrow()

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        return _partition.cases(batches, content=content, source=source, scratch=_scratch(scratch))

    return run


def stats(
    *,
    content: str = "content",
    source: Optional[str] = "path",
    scratch: Optional[PathLike] = None,
) -> PartitionFunction:
    """The partition function that counts what each trace holds (``STATS`` rows)."""
    _partition._pyarrow()

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        return _partition.stats(batches, content=content, source=source, scratch=_scratch(scratch))

    return run


def read_traces(spark: Any, path: Union[str, Sequence[str]], *, recursive: bool = True) -> Any:
    """The trace files under a folder (or several), one row each, as the partition functions
    take them: ``path`` (string) and ``content`` (binary). Takes ``*.json`` and ``*.jsonl``
    files, as ``memtrace import`` does, and leaves out a generated set's ``manifest.json``;
    any file system Spark reads (local, HDFS, S3, GCS, ADLS) will do."""
    from pyspark.sql import functions as F

    paths = [path] if isinstance(path, str) else list(path)
    df = (
        spark.read.format("binaryFile")
        .option("pathGlobFilter", "*.{json,jsonl}")
        .option("recursiveFileLookup", str(recursive).lower())
        .load(paths)
    )
    return df.where(~F.col("path").endswith("/manifest.json")).select("path", "content")


def read_table(
    spark: Any, table: str, *, content: str = "content", source: Optional[str] = None
) -> Any:
    """A table whose rows each hold a trace file (text or binary) in ``content``, in the shape
    the partition functions take: ``path`` (from ``source``, or null) and ``content``."""
    from pyspark.sql import functions as F

    df = spark.table(table)
    name = F.col(source).cast("string") if source is not None else F.lit(None).cast("string")
    return df.select(name.alias("path"), F.col(content).alias("content"))


def __getattr__(name: str) -> str:
    # The schemas are made on first use, so importing this module needs no pyarrow.
    tables = {"VERDICTS": "verdicts", "PATTERN_HITS": "pattern_hits", "CASES": "cases", "STATS": "stats"}
    if name in tables:
        return schema(tables[name])
    raise AttributeError(f"module 'memtrace.spark' has no attribute {name!r}")
