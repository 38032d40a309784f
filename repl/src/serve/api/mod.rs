//! The JSON API under `/api/` and the embedded web app: one function from a
//! request (method, target, body) to a reply, so that tests can call it
//! without a socket.

mod body;
mod cases;
mod graph;
mod handler;
mod import;
mod json;
mod limits;
mod query;
mod structure;
mod traces;
mod uploads;

pub use handler::Api;
pub use limits::MAX_SMALL_BODY;
pub use uploads::{upload_error, Upload, Uploads};
