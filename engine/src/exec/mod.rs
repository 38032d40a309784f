//! The query executor: runs query plans over the stored traces, traversals
//! and MATCH on the cached CSR adjacency, FIND over the cached catalogs, rows
//! streamed to a sink.
//!
//! From the bottom up: `value` (row values, their JSON form, the sink rows go
//! to), `ctx` (one trace as a query reads it, and its records' fields), `row`
//! (the rows conditions and projections read), `run` (the executor and its
//! dispatch per statement), the statements `traverse` (TRACE, FORWARD),
//! `find` (FIND), `matching` (MATCH) and `describe` (DESCRIBE), `api`
//! (the query API of the database and its snapshots), `batch` (rows handed
//! out many at a time, column by column), `cancel` (the token that stops a
//! running query), and `subgraph` (what a TRACE, FORWARD or MATCH reaches,
//! handed out as a petgraph graph).

mod api;
pub(crate) mod batch;
pub(crate) mod cancel;
mod capture;
pub(crate) mod ctx;
mod describe;
mod find;
mod matching;
mod row;
pub(crate) mod run;
pub(crate) mod subgraph;
mod traverse;
pub(crate) mod value;

/// A database in a temporary folder holding one trace, from export text.
#[cfg(test)]
pub(crate) fn test_db(export: &str) -> (tempfile::TempDir, crate::Engine) {
    let dir = tempfile::tempdir().unwrap();
    let db = crate::Engine::open(dir.path().join("t.db")).unwrap();
    db.import_reader(
        export.as_bytes(),
        crate::InputFormat::Json,
        "t",
        &crate::ImportOptions::default(),
    )
    .unwrap();
    (dir, db)
}
