//! The short texts of a trace's records that rows show (its variables'
//! full node ids and categories, its ops' ids, names and kinds), kept as
//! compact tables and stored at import as one value per trace, so that a
//! query handing out rows reads them with one get instead of decoding
//! every record of the trace.

mod format;
mod kind;
mod table;
mod trace;

#[cfg(test)]
mod tests;

pub use kind::{TextKind, TextRun};
pub use table::{CompleteRecords, Records, TextTable};
pub use trace::{TraceTexts, VarText};
