"""memtrace's analyses over batches of traces, as Arrow record batches: the functions that
Spark's ``mapInArrow`` (see :mod:`memtrace.spark`), Ray Data's ``map_batches`` and Dask run on
each partition of a large set of traces.

Each input row holds one trace file: a smartcomment export, a MemTraceBench file or an OTLP
JSON request, as text or binary (UTF-8 JSON), in the column ``content``; a column ``path``
(``source=``) names it. Each function yields, for every input batch, one batch of its result
table (``schema(table)`` gives the schema):

    >>> import pyarrow as pa, memtrace.partition as mp
    >>> batch = pa.record_batch({"path": ["t.json"], "content": [open("t.json").read()]})
    >>> for verdicts in mp.attribute([batch]):
    ...     print(verdicts.to_pylist())

A batch is imported into a private database in a scratch folder (``scratch=``, the temporary
folder by default), analysed and deleted, without the GIL; nothing is shared between batches
or processes. The same batch always gives the same rows, so a retried task repeats itself
exactly. A row whose trace does not import gives one row with ``error`` set and its
``source``, and the batch's other traces still get their results.

pyarrow is needed (``pip install pyarrow``); ``import memtrace`` does not need it.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Iterable, Iterator, Mapping, Optional, Sequence, Tuple, Union

from . import _memtrace

#: The result tables, by name: what each partition function gives.
TABLES = ("verdicts", "pattern_hits", "cases", "stats")

Batches = Union[Iterable[Any], Any]
Statement = Union[str, Tuple[str, Mapping[str, Any]]]


def _pyarrow() -> Any:
    try:
        import pyarrow
        import pyarrow.ipc  # noqa: F401  (the IPC reader and writer)
    except ImportError as e:
        raise ImportError(
            "memtrace's partition functions need pyarrow, which is not installed: "
            "pip install pyarrow"
        ) from e
    return pyarrow


def schema(table: str) -> Any:
    """The ``pyarrow.Schema`` of a result table: ``verdicts``, ``pattern_hits``, ``cases`` or
    ``stats``."""
    pa = _pyarrow()
    return pa.ipc.open_stream(_memtrace.partition_schema(table)).schema


def _batches(data: Batches) -> Iterator[Any]:
    """Record batches from a batch, a table, or an iterable of either."""
    pa = _pyarrow()
    if isinstance(data, pa.RecordBatch):
        yield data
        return
    if isinstance(data, pa.Table):
        yield from data.to_batches()
        return
    for item in data:
        if isinstance(item, pa.Table):
            yield from item.to_batches()
        elif isinstance(item, pa.RecordBatch):
            yield item
        else:
            raise TypeError(
                f"the partition functions take Arrow record batches, not {type(item).__name__}"
            )


def _run(table: str, data: Batches, content: str, source: Optional[str], **job: Any) -> Iterator[Any]:
    pa = _pyarrow()
    scratch = job.pop("scratch", None)
    if scratch is not None:
        scratch = os.fspath(scratch)
    for batch in _batches(data):
        names = batch.schema.names
        if content not in names:
            raise ValueError(
                f"the input has no content column {content} (its columns: {', '.join(names) or 'none'})"
            )
        # The default source column is optional; a named one must be there.
        src = source if source is not None and (source in names or source != "path") else None
        keep = [content] + ([src] if src is not None else [])
        batch = batch.select(keep)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, batch.schema) as writer:
            writer.write_batch(batch)
        out = _memtrace.run_partition(
            table,
            sink.getvalue().to_pybytes(),
            content=content,
            source=src,
            scratch=scratch,
            **job,
        )
        yield from pa.ipc.open_stream(out)


def attribute(
    batches: Batches,
    method: str = "evidence",
    *,
    setting: Optional[str] = None,
    content: str = "content",
    source: Optional[str] = "path",
    scratch: Optional[Union[str, "os.PathLike[str]"]] = None,
) -> Iterator[Any]:
    """Attributes every failed case of every trace: one ``verdicts`` row per case.

    ``method`` is ``evidence`` (deterministic, no network), or ``llm`` / ``hybrid`` with an
    endpoint set in each worker's environment (``MEMTRACE_LLM_*``, as for the CLI).
    ``setting`` (``benchmark``, ``evaluation`` or ``production``) is what each case shows the
    method, as ``memtrace attribute --setting`` says."""
    return _run(
        "verdicts", batches, content, source, scratch=scratch, method=method, setting=setting
    )


def patterns(
    batches: Batches,
    names: Optional[Sequence[str]] = None,
    *,
    statements: Optional[Mapping[str, Statement]] = None,
    params: Optional[Mapping[str, Any]] = None,
    content: str = "content",
    source: Optional[str] = "path",
    scratch: Optional[Union[str, "os.PathLike[str]"]] = None,
    threads: int = 1,
) -> Iterator[Any]:
    """Runs failure patterns over every trace: one ``pattern_hits`` row per hit.

    ``names`` picks built-in patterns (all of them when neither ``names`` nor ``statements``
    is given). ``statements`` adds patterns of your own, by name: a TRACE, FORWARD, MATCH or
    FIND statement, or a ``(statement, defaults)`` pair (a saved pattern's definition, as
    ``Database.patterns()`` lists it). ``params`` sets a parameter of every pattern that takes
    it, as ``memtrace patterns --param`` does. ``threads`` is how many threads a batch's run
    uses (one, where Spark gives each task a core)."""
    return _run(
        "pattern_hits",
        batches,
        content,
        source,
        scratch=scratch,
        names=list(names) if names is not None else None,
        statements=_statements(statements),
        params=dict(params) if params is not None else None,
        threads=threads,
    )


def cases(
    batches: Batches,
    *,
    content: str = "content",
    source: Optional[str] = "path",
    scratch: Optional[Union[str, "os.PathLike[str]"]] = None,
) -> Iterator[Any]:
    """Lists the failed cases of every trace: one ``cases`` row per case."""
    return _run("cases", batches, content, source, scratch=scratch)


def stats(
    batches: Batches,
    *,
    content: str = "content",
    source: Optional[str] = "path",
    scratch: Optional[Union[str, "os.PathLike[str]"]] = None,
) -> Iterator[Any]:
    """Counts what every trace holds: one ``stats`` row per trace."""
    return _run("stats", batches, content, source, scratch=scratch)


def check_patterns(
    names: Optional[Sequence[str]] = None,
    *,
    statements: Optional[Mapping[str, Statement]] = None,
    params: Optional[Mapping[str, Any]] = None,
) -> None:
    """Raises ValueError (or QueryError) now for patterns that :func:`patterns` would refuse on
    its first batch: an unknown name, a parameter no pattern takes, a statement that does not
    plan."""
    pa = _pyarrow()
    empty = pa.record_batch({"content": pa.array([], pa.string())})
    for _ in patterns([empty], names, statements=statements, params=params, source=None):
        pass


def _statements(
    statements: Optional[Mapping[str, Statement]],
) -> Optional[Dict[str, Any]]:
    if statements is None:
        return None
    if not isinstance(statements, Mapping):
        raise TypeError(
            "statements is a dict from pattern name to a statement or a (statement, defaults) "
            f"pair, not {type(statements).__name__}"
        )
    out: Dict[str, Any] = {}
    for name, given in statements.items():
        if isinstance(given, tuple) and len(given) == 2 and isinstance(given[1], Mapping):
            out[name] = (given[0], dict(given[1]))
        else:
            out[name] = given
    return out
