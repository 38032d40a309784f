"""Type stubs of memtrace's native module (use it through the ``memtrace`` package)."""

from os import PathLike
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

__version__: str

class Error(Exception):
    """Base class of every error memtrace raises."""

class QueryError(Error):
    """A statement that does not parse or does not make sense."""

    line: Optional[int]
    column: Optional[int]
    message: Optional[str]
    caret: Optional[str]

class NotFoundError(Error):
    """No trace, variable, op or failed case matches a reference."""

class InvalidTraceError(Error):
    """An input is not a valid trace; nothing of it was stored."""

class AlreadyStoredError(Error):
    """A trace's graph id is already stored with other content."""

class ImportFailedError(Error):
    """Some files of an import failed; the others were stored."""

    failures: List[Tuple[str, str]]
    imported: List[Dict[str, Any]]

class StoreError(Error):
    """The store failed or refused (I/O, or locked by another process)."""

class LlmError(Error):
    """The LLM endpoint failed or is not configured."""

class QueryTimeoutError(Error):
    """The work ran longer than its time limit and was stopped."""

class ClosedError(Error):
    """The database was closed."""

class Database:
    def __init__(self, path: Union[str, PathLike[str]], read_only: bool = False) -> None: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def path(self) -> str: ...
    @property
    def read_only(self) -> bool: ...
    def query(
        self, text: str, params: Optional[Dict[str, Any]] = None, timeout: Optional[float] = None
    ) -> Tuple[List[str], List[Dict[str, Any]]]: ...
    def _time_in_rust(
        self, text: str, repeats: int, params: Optional[Dict[str, Any]] = None
    ) -> List[float]: ...
    def import_path(self, path: str, force: bool = False) -> List[Dict[str, Any]]: ...
    def import_bytes(
        self, data: bytes, source: str, force: bool = False, lines: bool = False
    ) -> List[Dict[str, Any]]: ...
    def traces(self) -> List[Dict[str, Any]]: ...
    def stats(self) -> Dict[str, Any]: ...
    def cases(self, trace: Optional[str] = None) -> List[Dict[str, Any]]: ...
    def attribute(
        self,
        method: str,
        trace: Optional[str] = None,
        cases: Optional[List[str]] = None,
        store: bool = True,
        author: Optional[str] = None,
        progress: Optional[Callable[[Dict[str, Any]], None]] = None,
        timeout: Optional[float] = None,
        setting: Optional[str] = None,
    ) -> List[Dict[str, Any]]: ...
    def attributions(self, trace: Optional[str] = None) -> List[Dict[str, Any]]: ...
    def eval(
        self,
        method: str,
        trace: Optional[str] = None,
        timeout: Optional[float] = None,
        setting: Optional[str] = None,
    ) -> Dict[str, Any]: ...
    def report(self, dir: str, method: str, trace: Optional[str] = None) -> Dict[str, Any]: ...
    def export_parquet(
        self,
        dir: str,
        traces: Optional[List[str]] = None,
        projects: Optional[List[str]] = None,
        partition: str = "none",
        force: bool = False,
    ) -> Dict[str, Any]: ...
    def patterns(self) -> List[Dict[str, Any]]: ...
    def save_pattern(
        self,
        name: str,
        statement: str,
        params: Optional[Dict[str, Any]] = None,
        author: Optional[str] = None,
    ) -> int: ...
    def drop_pattern(self, name: str, author: Optional[str] = None) -> None: ...
    def run_pattern(
        self,
        name: str,
        params: Optional[Dict[str, Any]] = None,
        over: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> Tuple[List[str], List[Dict[str, Any]], Dict[str, int], int]: ...
    def set_llm(
        self,
        base_url: str,
        model: str,
        api_key: Optional[str] = None,
        timeout: Optional[float] = None,
        concurrency: Optional[int] = None,
    ) -> None: ...

def run_partition(
    table: str,
    data: bytes,
    content: str = "content",
    source: Optional[str] = None,
    scratch: Optional[str] = None,
    threads: int = 1,
    method: str = "evidence",
    setting: Optional[str] = None,
    names: Optional[List[str]] = None,
    statements: Optional[Dict[str, Any]] = None,
    params: Optional[Dict[str, Any]] = None,
) -> bytes: ...
def partition_schema(table: str) -> bytes: ...
