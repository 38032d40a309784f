//! What the client needs to know: the endpoints (a pool of base URLs and
//! keys), the model, time limits, concurrency and the budget of one case;
//! and where it is read from: built-in defaults, a TOML file, then the
//! environment (`OPENAI_*`, then `MEMTRACE_LLM_*`).

mod defaults;
mod env;
mod file;
mod load;
mod pool;
mod setting;
#[cfg(test)]
mod tests;
mod types;
mod url;

pub use types::{Config, Endpoint, Secret, ToolMode};
