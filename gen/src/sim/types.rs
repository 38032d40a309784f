//! The vocabulary of a simulation: the four systems, the five error types
//! of the taxonomy, and the sizes and rates of a run.

/// A simulated memory system, named as MemBase names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum System {
    /// One context unit mutated per message, trimmed to a token window.
    LongContext,
    /// A message buffer emitting chunks, BM25 top-k retrieval.
    Rag,
    /// Fact extraction, ADD/UPDATE/DELETE decisions, vector-store search.
    Mem0,
    /// Buffer, boundary detection, memory cells, episodes and atomic facts.
    EverMemOs,
}

impl System {
    /// The four systems, in the order `--system all` cycles through them.
    pub const ALL: [System; 4] = [
        System::LongContext,
        System::Rag,
        System::Mem0,
        System::EverMemOs,
    ];

    /// The name used on the command line and as the trace's `project_id`.
    pub fn name(self) -> &'static str {
        match self {
            System::LongContext => "long_context",
            System::Rag => "rag",
            System::Mem0 => "mem0",
            System::EverMemOs => "evermemos",
        }
    }

    /// The system of a name given by [`System::name`].
    pub fn parse(name: &str) -> Option<System> {
        System::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The name of the system's retrieval op.
    pub(super) fn retrieval_op(self) -> &'static str {
        match self {
            System::LongContext | System::Rag => "memory_system.retrieve",
            System::Mem0 => "memory_system.search_vector_store",
            System::EverMemOs => "memory_system.hybrid_retrieval",
        }
    }
}

/// The five error types of the MemTrace taxonomy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorType {
    /// The information never enters any memory unit.
    Extraction,
    /// A unit had it; a later update removed or degraded it.
    Update,
    /// A unit holding it was explicitly removed.
    Deletion,
    /// The store holds it; retrieval left it out of the context.
    Retrieval,
    /// The context holds all evidence; the answer is still wrong.
    Response,
}

impl ErrorType {
    /// All five, in taxonomy order.
    pub const ALL: [ErrorType; 5] = [
        ErrorType::Extraction,
        ErrorType::Update,
        ErrorType::Deletion,
        ErrorType::Retrieval,
        ErrorType::Response,
    ];

    /// The label as MemTraceBench writes it (`ExtractionError`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ErrorType::Extraction => "ExtractionError",
            ErrorType::Update => "UpdateError",
            ErrorType::Deletion => "DeletionError",
            ErrorType::Retrieval => "RetrievalError",
            ErrorType::Response => "ResponseError",
        }
    }
}

/// Sizes and rates of the simulated systems.
#[derive(Debug, Clone, PartialEq)]
pub struct SimParams {
    /// Long-Context window, in words.
    pub window_tokens: usize,
    /// RAG messages per chunk.
    pub chunk_messages: usize,
    /// Units retrieved per question (RAG, Mem0, EverMemOS).
    pub top_k: usize,
    /// Probability that a fact value gets a fault during memory construction.
    pub fault_rate: f64,
    /// Probability that a question gets a retrieval or response fault.
    pub question_fault_rate: f64,
}

impl Default for SimParams {
    fn default() -> Self {
        SimParams {
            window_tokens: 4000,
            chunk_messages: 6,
            top_k: 5,
            fault_rate: 0.15,
            question_fault_rate: 0.06,
        }
    }
}
