//! Why a memory system answered wrongly: failed cases, their evidence, the
//! attributors that name the earliest decisive faulty op, and the verdicts
//! they append to the database.

pub mod advice;
pub mod agent;
mod attribute;
pub mod case;
pub mod choose;
pub mod dense;
mod digest;
pub mod eval;
pub mod evidence;
pub mod flow;
pub mod holds;
pub mod labels;
pub mod message;
pub mod model;
pub mod pyvalue;
pub mod setting;
mod stored;
pub mod text;
mod traces;
pub mod verdict;
pub mod when;

pub use advice::{Feedback, FeedbackCase, PromptFeedback};
pub(crate) use attribute::attribute_trace;
pub use attribute::{Attribute, AttributeRequest, RecallReport};
pub use case::FailedCase;
pub use choose::{Candidate, Chooser};
pub use dense::Search;
pub use digest::ATTRIBUTOR_DIGEST;
pub use evidence::{Evidence, EvidenceOrigin, Recall, DEFAULT_K};
pub use labels::{CaseContext, HumanVerdict, LabelInput, HUMAN};
pub use memtrace_engine::{CaseOrigin, CasePick};
pub use model::TraceModel;
pub use setting::Setting;
pub use stored::StoredVerdict;
pub(crate) use stored::{read_verdicts, stored_verdicts};
pub(crate) use traces::trace_cases;
pub use verdict::{Cost, ErrorType, Method, RunProgress, Step, Verdict};
