"""memtrace from Python: store the execution traces of LLM memory systems, ask where an
answer came from, and find the operation that made it wrong.

    >>> import memtrace
    >>> with memtrace.open("memtrace.db") as db:
    ...     db.import_path("traces/")
    ...     rows = db.query("TRACE answer:42 IN TRACE 'mem0-0002-s7' UNTIL op.kind = 'extraction'")
    ...     verdicts = db.attribute("evidence")

Every call that reads or writes the store releases the GIL, so other Python threads run
(and may query the same database) meanwhile; Ctrl-C (KeyboardInterrupt) stops a running
query, import or attribution. Errors are raised as subclasses of :class:`memtrace.Error`.
"""

from __future__ import annotations

import getpass
import html
import json
import os
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from . import _memtrace
from ._memtrace import (
    AlreadyStoredError,
    ClosedError,
    Error,
    ImportFailedError,
    InvalidTraceError,
    LlmError,
    NotFoundError,
    QueryError,
    QueryTimeoutError,
    StoreError,
)

__version__: str = _memtrace.__version__

__all__ = [
    "open",
    "Database",
    "QueryResult",
    "PatternResult",
    "Error",
    "QueryError",
    "NotFoundError",
    "InvalidTraceError",
    "AlreadyStoredError",
    "ImportFailedError",
    "StoreError",
    "LlmError",
    "QueryTimeoutError",
    "ClosedError",
    "__version__",
]

PathLike = Union[str, "os.PathLike[str]"]

#: The attribution methods: ``evidence`` (deterministic, no LLM), ``llm`` and ``hybrid``.
METHODS = ("evidence", "llm", "hybrid")


def _optional(module: str, what: str) -> Any:
    """Imports an optional dependency, or says how to install it."""
    try:
        return __import__(module)
    except ImportError as e:
        raise ImportError(
            f"{what} needs {module}, which is not installed: pip install {module}"
        ) from e


def _cell(value: Any) -> str:
    """A value as the text of an HTML table cell."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return html.escape(text)


def _login() -> str:
    """The login name, as the query language's SAVE PATTERN records it."""
    try:
        return getpass.getuser() or "memtrace python"
    except Exception:  # no login name in this environment
        return "memtrace python"


class QueryResult(List[Dict[str, Any]]):
    """The rows of a query: a list of dicts from column name to value, in column order.

    ``columns`` holds the column names (a row's keys, in order). ``to_arrow()`` and
    ``to_pandas()`` convert it when pyarrow / pandas are installed.
    """

    columns: List[str]

    def __init__(self, columns: Sequence[str], rows: Iterable[Dict[str, Any]]) -> None:
        super().__init__(rows)
        self.columns = list(columns)

    def to_arrow(self) -> Any:
        """The rows as a ``pyarrow.Table`` with one column per result column (needs pyarrow)."""
        pa = _optional("pyarrow", "QueryResult.to_arrow()")
        return pa.table({c: [row.get(c) for row in self] for c in self.columns})

    def to_pandas(self) -> Any:
        """The rows as a ``pandas.DataFrame`` with the result's columns (needs pandas)."""
        pd = _optional("pandas", "QueryResult.to_pandas()")
        return pd.DataFrame.from_records(list(self), columns=self.columns)

    #: How many rows ``repr`` and the notebook view show.
    SHOWN = 20

    def __repr__(self) -> str:
        shown = ",\n ".join(repr(row) for row in self[: self.SHOWN])
        more = f",\n ... {len(self) - self.SHOWN} more" if len(self) > self.SHOWN else ""
        return f"QueryResult(columns={self.columns!r}, {len(self)} row(s)):\n[{shown}{more}]"

    def _repr_html_(self) -> str:
        """A table for Jupyter: the first rows, values escaped."""
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{_cell(row.get(c))}</td>" for c in self.columns) + "</tr>"
            for row in self[: self.SHOWN]
        )
        more = (
            f"<p>{len(self) - self.SHOWN} more row(s) of {len(self)}</p>"
            if len(self) > self.SHOWN
            else f"<p>{len(self)} row(s)</p>"
        )
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}"


class PatternResult(QueryResult):
    """The hits of a failure pattern over the traces: one dict per hit, its trace's graph id
    under ``trace``. ``per_trace`` maps each trace with hits to how many; ``traces`` is how
    many traces the pattern ran on."""

    per_trace: Dict[str, int]
    traces: int

    def __init__(
        self,
        columns: Sequence[str],
        rows: Iterable[Dict[str, Any]],
        per_trace: Dict[str, int],
        traces: int,
    ) -> None:
        super().__init__(columns, rows)
        self.per_trace = per_trace
        self.traces = traces

    def __repr__(self) -> str:
        return (
            f"PatternResult: {len(self)} hit(s) in {len(self.per_trace)} of {self.traces} "
            f"trace(s); " + super().__repr__()
        )


class Database:
    """An open memtrace database: a folder that holds traces, verdicts and patterns.

    ``Database(path)`` creates the database when the folder does not exist. With
    ``read_only=True`` it opens an existing one for reading only, without taking its lock,
    so it opens while another process (``memtrace serve``, an import) writes; it sees what
    was committed when it opened. Use it as a context manager, or call ``close()``.
    """

    def __init__(self, path: PathLike = "memtrace.db", read_only: bool = False) -> None:
        self._db = _memtrace.Database(os.fspath(path), read_only)

    # -- lifetime ---------------------------------------------------------------------------

    def close(self) -> None:
        """Closes the database (a second close does nothing); later calls raise ClosedError."""
        self._db.close()

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called."""
        return self._db.closed

    @property
    def path(self) -> str:
        """The database's folder."""
        return os.fspath(self._db.path)

    @property
    def read_only(self) -> bool:
        """Whether it was opened for reading only."""
        return self._db.read_only

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return repr(self._db)

    # -- queries ----------------------------------------------------------------------------

    def query(
        self,
        text: str,
        params: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Optional[float] = None,
    ) -> QueryResult:
        """Runs one statement of the query language and returns its rows as dicts.

        ``params`` gives the values of ``$name`` parameters (keys with or without ``$``):
        None, bool, int, float, str, or lists of them. ``timeout`` (seconds) stops a query
        that runs longer and raises QueryTimeoutError. A statement that does not parse
        raises QueryError with ``line``, ``column`` and ``caret``.
        """
        columns, rows = self._db.query(text, _params(params), timeout)
        return QueryResult(columns, rows)

    # -- import -----------------------------------------------------------------------------

    def import_path(self, path: PathLike, *, force: bool = False) -> List[Dict[str, Any]]:
        """Imports a smartcomment export or MemTraceBench file, or every ``*.json`` and
        ``*.jsonl`` under a folder. Each file is all or nothing. Returns the traces stored;
        a trace already stored with the same content is reported with ``unchanged: True``
        and not stored again, so a folder can be imported again to resume. When some files
        fail, ImportFailedError lists them (``failures``) and the traces the other files
        stored (``imported``). ``force`` stores a trace whose graph id is already stored
        with other content as a new trace."""
        return self._db.import_path(os.fspath(path), force)

    def import_export(
        self, export: Mapping[str, Any], *, source: str = "<dict>", force: bool = False
    ) -> List[Dict[str, Any]]:
        """Imports one export held as a dict: what smartcomment's ``export_graph()``
        returns, or a MemTraceBench record. ``source`` names it in errors and in the trace
        record. NaN and infinities are kept as Python wrote them."""
        if not isinstance(export, Mapping):
            raise TypeError(
                f"import_export takes a dict (an export), not {type(export).__name__}"
            )
        data = json.dumps(export, ensure_ascii=False, allow_nan=True).encode("utf-8")
        return self._db.import_bytes(data, source, force, False)

    def import_network(
        self, network: Any, *, source: Optional[str] = None, force: bool = False
    ) -> List[Dict[str, Any]]:
        """Imports a live smartcomment ``ExecNetwork`` (or anything with ``export_graph()``,
        such as the graph a ``comment_graph`` block yields), read in memory: no file."""
        export_graph = getattr(network, "export_graph", None)
        if not callable(export_graph):
            raise TypeError(
                "import_network takes a smartcomment ExecNetwork (something with "
                f"export_graph()), not {type(network).__name__}"
            )
        export = export_graph()
        if source is None:
            graph_id = export.get("graph_id") if isinstance(export, Mapping) else None
            source = f"<smartcomment {graph_id}>" if graph_id else "<smartcomment>"
        return self.import_export(export, source=source, force=force)

    def import_json(
        self,
        text: Union[str, bytes],
        *,
        source: str = "<json>",
        lines: bool = False,
        force: bool = False,
    ) -> List[Dict[str, Any]]:
        """Imports one export given as JSON text (or, with ``lines``, one per line)."""
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        return self._db.import_bytes(data, source, force, lines)

    # -- what is stored ---------------------------------------------------------------------

    def traces(self) -> List[Dict[str, Any]]:
        """Every stored trace: id, graph_id, user_id, project_id, created_at, counts, source."""
        return self._db.traces()

    def stats(self) -> Dict[str, Any]:
        """What the database holds: traces, sessions, variables, ops, edges, cases, bytes."""
        return self._db.stats()

    def cases(self, trace: Optional[str] = None) -> List[Dict[str, Any]]:
        """The failed cases of one trace (graph id or ``#ID``) or of every trace."""
        return self._db.cases(trace)

    # -- attribution ------------------------------------------------------------------------

    def attribute(
        self,
        method: str = "evidence",
        *,
        trace: Optional[str] = None,
        cases: Optional[Sequence[str]] = None,
        store: bool = True,
        author: Optional[str] = None,
        progress: Optional[Callable[[Dict[str, Any]], None]] = None,
        timeout: Optional[float] = None,
        setting: Optional[str] = None,
    ) -> List[Dict[str, Any]]:
        """Names the earliest decisive faulty op and its error type for each failed case.

        ``method`` is ``evidence`` (deterministic), ``llm`` or ``hybrid`` (an
        OpenAI-compatible endpoint: ``set_llm``, or the ``OPENAI_*`` / ``MEMTRACE_LLM_*``
        environment). ``trace`` limits it to one trace and ``cases`` to some of its cases.
        Verdicts are stored (``store``) as ``author``, as ``memtrace attribute`` stores
        them. ``progress`` is called with a dict (traces_read, traces, cases_done,
        cases_expected, calls, tokens_in, tokens_out) as the run goes. ``setting`` is what
        each case shows the method: ``benchmark`` (all it holds, the default), ``evaluation``
        (its annotated evidence hidden) or ``production`` (that and its gold answer hidden)."""
        return self._db.attribute(
            method,
            trace,
            list(cases) if cases is not None else None,
            store,
            author,
            progress,
            timeout,
            setting,
        )

    def attributions(self, trace: Optional[str] = None) -> List[Dict[str, Any]]:
        """The verdicts stored for one trace or every trace, oldest first."""
        return self._db.attributions(trace)

    def eval(
        self,
        method: str = "evidence",
        *,
        trace: Optional[str] = None,
        timeout: Optional[float] = None,
        setting: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Runs ``method`` over the labelled failed cases and scores it against the labels
        (error type and op accuracy, per system and error type) in one ``setting``
        (``benchmark`` by default, ``evaluation`` or ``production``); nothing is stored."""
        return self._db.eval(method, trace, timeout, setting)

    def report(
        self,
        dir: PathLike = "memtrace-report",
        *,
        method: str = "evidence",
        trace: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Writes the diagnostic report of the stored verdicts of ``method`` into ``dir``
        (``report.md`` and ``report.html``, created when missing) and returns it as a dict,
        with the two files' paths under ``markdown`` and ``html``."""
        return self._db.report(os.fspath(dir), method, trace)

    def export_parquet(
        self,
        dir: PathLike,
        *,
        traces: Optional[Sequence[str]] = None,
        projects: Optional[Sequence[str]] = None,
        partition: str = "none",
        force: bool = False,
    ) -> Dict[str, Any]:
        """Writes every trace (or those ``traces`` and ``projects`` pick) as Parquet tables in
        ``dir``: one folder per table (traces, sessions, nodes, edges, ops, cases, verdicts),
        split into Hive folders by ``partition`` (``"none"``, ``"trace"`` or ``"project"``).
        ``dir`` may be missing or empty; ``force`` replaces an earlier Parquet export there.
        Returns what was written (``traces``, ``rows`` per table, ``files``, ``bytes``)."""
        return self._db.export_parquet(
            os.fspath(dir),
            list(traces) if traces is not None else None,
            list(projects) if projects is not None else None,
            partition,
            force,
        )

    def set_llm(
        self,
        base_url: str,
        model: str,
        api_key: Optional[str] = None,
        *,
        timeout: Optional[float] = None,
        concurrency: Optional[int] = None,
    ) -> None:
        """Sets the OpenAI-compatible endpoint (``base_url`` such as
        ``https://api.openai.com/v1``) and model that the ``llm`` and ``hybrid`` methods use
        for this database, instead of the environment's."""
        self._db.set_llm(base_url, model, api_key, timeout, concurrency)

    # -- failure patterns -------------------------------------------------------------------

    def patterns(self) -> List[Dict[str, Any]]:
        """Every pattern, the built-in ones first: name, builtin, error_type, params
        (defaults), definition, version."""
        return self._db.patterns()

    def save_pattern(
        self,
        name: str,
        statement: str,
        params: Optional[Mapping[str, Any]] = None,
        *,
        author: Optional[str] = None,
    ) -> int:
        """Saves a failure pattern: a TRACE, FORWARD, MATCH or FIND statement (without
        ``IN TRACE``) and a default for each of its parameters. Saving a name again adds a
        version. Returns the version."""
        return self._db.save_pattern(name, statement, _params(params), author or _login())

    def drop_pattern(self, name: str, *, author: Optional[str] = None) -> None:
        """Drops a saved pattern; its history stays."""
        self._db.drop_pattern(name, author or _login())

    def run_pattern(
        self,
        name: str,
        params: Optional[Mapping[str, Any]] = None,
        *,
        over: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> PatternResult:
        """Runs a pattern (built in or saved) over every trace, or those whose record the
        condition ``over`` holds for (``"trace.project_id = 'mem0'"``), in parallel.
        ``params`` overrides the pattern's defaults."""
        columns, rows, per_trace, traces = self._db.run_pattern(
            name, _params(params), over, timeout
        )
        return PatternResult(columns, rows, per_trace, traces)


def _params(params: Optional[Mapping[str, Any]]) -> Optional[Dict[str, Any]]:
    if params is None:
        return None
    if not isinstance(params, Mapping):
        raise TypeError(f"params is a dict of names to values, not {type(params).__name__}")
    return dict(params)


def open(path: PathLike = "memtrace.db", read_only: bool = False) -> Database:  # noqa: A001
    """Opens the database at ``path`` (created when missing; see :class:`Database`)."""
    return Database(path, read_only=read_only)
