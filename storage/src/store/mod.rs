//! The store: opening (with the schema check), writing one trace in one
//! batch, consistent snapshot reads, and the one removal (dropping a trace).

mod append;
mod bulk;
pub mod cf;
mod create;
mod flush;
mod io;
mod lock;
mod open;
mod options;
mod read;
mod readers;
mod remove;
mod schema;
mod writer;

#[cfg(test)]
mod tests;

pub use bulk::BULK_BYTES;
pub use io::dir_bytes;
pub use open::{Store, StoreOptions};
pub use options::{base_options, writer_options};
pub use read::ReadView;
pub use schema::{content_digest, content_digest_pieces, OLDEST_SCHEMA_VERSION, SCHEMA_VERSION};
pub use writer::TraceWriter;
