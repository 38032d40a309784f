//! The storage error type.

use thiserror::Error;

/// Everything that can go wrong in the store.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum StorageError {
    /// RocksDB itself failed (I/O, lock held by another process, corruption).
    #[error("RocksDB: {0}")]
    Rocks(rocksdb::Error),
    /// A store opened for reading needs a table file of its snapshot that a
    /// writer compacted away (which readers normally prevent by holding
    /// their files open; see `Store::open`).
    #[error("the database changed since this process opened it: a writer compacted away a file its snapshot reads ({0}); open the database again to read it as it is now")]
    Changed(String),
    /// The database was written by a schema this build does not read.
    #[error("database at {path} has schema version {found}; this memtrace reads versions up to {supported} (a newer memtrace wrote it?)")]
    SchemaVersion {
        /// Where the database is.
        path: String,
        /// The version found in the database.
        found: u32,
        /// The version this build understands.
        supported: u32,
    },
    /// The path holds something that is not a memtrace database.
    #[error("{path} is not a memtrace database: {reason}")]
    NotADatabase {
        /// The path given.
        path: String,
        /// Why it was not recognised.
        reason: String,
    },
    /// No database exists at the path and creation was not asked for.
    #[error("no memtrace database at {0} (import something first, or pass --db)")]
    Missing(String),
    /// Another process holds the database open (RocksDB's folder lock).
    #[error("the database at {0} is open in another memtrace process (a REPL, an import or a query); close it there first")]
    InUse(String),
    /// A write to a database opened for reading only.
    #[error("the database at {0} is open for reading only; this needs a command that writes")]
    ReadOnly(String),
    /// A record could not be encoded.
    #[error("cannot encode {what}: {reason}")]
    Encode {
        /// What was being encoded.
        what: &'static str,
        /// The encoder's message.
        reason: String,
    },
    /// A stored record could not be decoded: the database is damaged or was
    /// written by an incompatible build.
    #[error("stored {what} is unreadable: {reason}")]
    Decode {
        /// What was being decoded.
        what: &'static str,
        /// The decoder's message.
        reason: String,
    },
    /// A record refers to a value that is not stored.
    #[error("value {0} is referenced but not stored")]
    MissingValue(String),
    /// A trace id that is not stored.
    #[error("no trace with id #{0}")]
    NoSuchTrace(u32),
    /// Ids ran out (more than 2^32 records of one kind).
    #[error("id space exhausted for {0}")]
    IdsExhausted(&'static str),
    /// A record added to a trace after its kind was finished.
    #[error("the trace's {0} were finished already; add every one before finishing them")]
    Finished(&'static str),
    /// Filesystem error outside RocksDB (sizes, directories).
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl From<rocksdb::Error> for StorageError {
    /// A table file that is gone is [`StorageError::Changed`]; any other
    /// error is RocksDB's own.
    fn from(e: rocksdb::Error) -> StorageError {
        let text = e.as_ref();
        if text.contains("No such file or directory") {
            if let Some(file) = text
                .split(|c: char| c.is_whitespace() || c == ':')
                .find(|w| w.ends_with(".sst"))
            {
                return StorageError::Changed(file.to_string());
            }
        }
        StorageError::Rocks(e)
    }
}
