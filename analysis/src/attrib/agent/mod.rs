//! The LLM attributor: a tool-calling loop in which a model explores the
//! trace from the evidence until it names the earliest decisive faulty op.
//!
//! Every answer is validated (the op must exist and fit the error type; an
//! invalid one is sent back with the reason, within the case's budget),
//! cached in the database by a hash of (model, messages, tools), and
//! costed. Trace content reaches the model only inside a fence.

pub mod explore;
pub mod fit;
pub mod prompt;
pub mod walker;

use std::time::Instant;

use memtrace_llm::chat::estimate_tokens;
use memtrace_llm::{ChatRequest, ChatResponse, Client, LlmError, Message};
use serde::{Deserialize, Serialize};

use super::case::FailedCase;
use super::evidence::Evidence;
use super::flow::Finding;
use super::model::TraceModel;
use super::verdict::{Cost, ErrorType, Method, Verdict};
use crate::error::{AnalysisError, Result};
use explore::{Explorer, Outcome};
use memtrace_engine::Cancel;
use memtrace_engine::Engine;

/// A cached answer: the body as received, and how it must be read.
#[derive(Serialize, Deserialize)]
struct CachedAnswer {
    native_tools: bool,
    body: String,
}

/// The cache key of a request to `model`.
pub fn cache_key(model: &str, req: &ChatRequest) -> Result<[u8; 32]> {
    let mut h = blake3::Hasher::new();
    h.update(b"memtrace-llm-cache-1\0");
    h.update(model.as_bytes());
    h.update(b"\0");
    h.update(serde_json::to_string(&req.messages)?.as_bytes());
    h.update(b"\0");
    h.update(serde_json::to_string(&req.tools)?.as_bytes());
    Ok(*h.finalize().as_bytes())
}

fn llm_error(e: LlmError) -> AnalysisError {
    match e {
        LlmError::Cancelled => AnalysisError::Engine(memtrace_engine::EngineError::Cancelled),
        other => AnalysisError::Llm(other),
    }
}

/// One answer: from the cache when it holds the request, else from the
/// endpoint (and then cached).
async fn ask(
    client: &Client,
    db: &Engine,
    cancel: &Cancel,
    req: &ChatRequest,
    call_number: usize,
    cost: &mut Cost,
) -> Result<ChatResponse> {
    let key = cache_key(&client.config().model, req)?;
    if let Some(bytes) = db.memo(&key)? {
        let cached: Option<CachedAnswer> = serde_json::from_slice(&bytes).ok();
        if let Some(r) = cached.and_then(|c| {
            memtrace_llm::chat::parse_response(&c.body, c.native_tools, call_number).ok()
        }) {
            cost.cached_calls += 1;
            return Ok(r);
        }
    }
    let cancelled = || cancel.is_cancelled();
    let ex = client
        .chat(req, call_number, &cancelled)
        .await
        .map_err(llm_error)?;
    cost.calls += 1;
    let entry = CachedAnswer {
        native_tools: ex.native_tools,
        body: ex.raw,
    };
    db.put_memo(&key, &serde_json::to_vec(&entry)?)?;
    Ok(ex.response)
}

/// Adds an answer's tokens to `cost`. An endpoint that reports no usage
/// gets estimates: the prompt from the request's text, the completion from
/// the answer's.
fn count_tokens(cost: &mut Cost, req: &ChatRequest, resp: &ChatResponse) {
    let u = resp.usage;
    let prompt = if u.estimated && u.prompt_tokens == 0 {
        req.messages
            .iter()
            .map(|m| {
                let calls: String = m
                    .tool_calls
                    .iter()
                    .map(|c| c.function.arguments.as_str())
                    .collect();
                estimate_tokens(m.content.as_deref().unwrap_or("")) + estimate_tokens(&calls)
            })
            .sum()
    } else {
        u.prompt_tokens
    };
    cost.tokens_in += prompt;
    cost.tokens_out += u.completion_tokens;
    cost.estimated |= u.estimated;
}

/// What the loop is given for one case.
pub struct CaseInput<'a> {
    /// The trace.
    pub model: &'a TraceModel,
    /// The case.
    pub case: &'a FailedCase,
    /// Its evidence.
    pub evidence: &'a Evidence,
    /// Hybrid mode: the evidence-flow finding (or `Some(None)` when it found
    /// none); `None` in plain LLM mode.
    pub hypothesis: Option<Option<&'a Finding>>,
}

/// The verdict the model gave by calling the finish tool.
struct ModelVerdict {
    error_type: ErrorType,
    op: usize,
    reason: String,
    confidence: Option<f64>,
}

/// How the tool-calling loop ended.
enum LoopEnd {
    /// The model called finish with a valid verdict.
    Finished(ModelVerdict),
    /// The case's budget ran out first; the text says which budget.
    BudgetEnded(String),
}

/// Runs the loop on one case until a valid verdict or the end of its
/// budget. Transport failures that outlast the retries end the whole run
/// with an error (answers so far stay cached).
pub async fn attribute_case(
    client: &Client,
    db: &Engine,
    cancel: &Cancel,
    input: CaseInput<'_>,
) -> Result<Verdict> {
    let started = Instant::now();
    let CaseInput {
        model,
        case,
        evidence,
        hypothesis,
    } = input;
    let config = client.config();
    let method = if hypothesis.is_some() {
        Method::Hybrid
    } else {
        Method::Llm
    };
    let mut frontier = evidence.items.clone();
    if let Some(q) = case.query_node.as_deref().and_then(|q| model.var(q)) {
        frontier.push(q);
    }
    let mut explorer = Explorer::new(model, case, frontier);
    let messages = vec![
        Message::system(prompt::system(explorer.fence())),
        Message::user(prompt::case(
            model,
            case,
            evidence,
            &explorer,
            hypothesis,
            config.max_calls,
        )),
    ];
    let mut cost = Cost::default();
    let end = tool_loop(client, db, cancel, &mut explorer, messages, &mut cost).await?;
    cost.seconds = (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
    let micros = started.elapsed().as_micros() as u64;
    let mut v = Verdict::undecided(case, method, micros);
    v.chain = explorer.chain();
    v.model = Some(config.model.clone());
    v.cost = Some(cost);
    match end {
        LoopEnd::Finished(found) => {
            v.error_type = Some(found.error_type);
            v.op_id = Some(model.ops[found.op].op_id.clone());
            v.op_name = model.ops[found.op].op_name.clone();
            v.confidence = found.confidence.unwrap_or(0.5);
            v.reason = found.reason;
        }
        LoopEnd::BudgetEnded(why) => {
            let why = match &explorer.last_problem {
                Some(p) => format!("{why}; the last problem: {p}"),
                None => why,
            };
            give_up(&mut v, model, &why, hypothesis.flatten());
        }
    }
    Ok(v)
}

/// Which budget of the case is spent, when one is.
fn budget_ended(cost: &Cost, config: &memtrace_llm::Config) -> Option<String> {
    let used = cost.calls + cost.cached_calls;
    if used >= config.max_calls {
        return Some(format!("the budget of {} calls ended", config.max_calls));
    }
    if cost.tokens_in + cost.tokens_out >= config.max_tokens {
        return Some(format!(
            "the budget of {} tokens ended ({} used)",
            config.max_tokens,
            cost.tokens_in + cost.tokens_out
        ));
    }
    None
}

/// The tool-calling loop: asks the model, runs the tools it calls and sends
/// back their replies, until it calls finish or the budget ends.
async fn tool_loop(
    client: &Client,
    db: &Engine,
    cancel: &Cancel,
    explorer: &mut Explorer<'_>,
    mut messages: Vec<Message>,
    cost: &mut Cost,
) -> Result<LoopEnd> {
    let tools = explore::tools();
    loop {
        cancel.check()?;
        if let Some(why) = budget_ended(cost, client.config()) {
            return Ok(LoopEnd::BudgetEnded(why));
        }
        let used = cost.calls + cost.cached_calls;
        let req = ChatRequest {
            messages: messages.clone(),
            tools: tools.clone(),
        };
        let resp = ask(client, db, cancel, &req, used as usize, cost).await?;
        count_tokens(cost, &req, &resp);
        let calls = resp.message.tool_calls.clone();
        messages.push(resp.message);
        if calls.is_empty() {
            explorer.last_problem = Some("the model answered without calling a tool".into());
            messages.push(Message::user(
                "Reply with a tool call. To give your verdict, call finish.",
            ));
            continue;
        }
        for call in &calls {
            match explorer.call(&call.function.name, &call.function.arguments) {
                Outcome::Reply(text) => messages.push(Message::tool(&call.id, text)),
                Outcome::Finish {
                    error_type,
                    op,
                    reason,
                    confidence,
                } => {
                    return Ok(LoopEnd::Finished(ModelVerdict {
                        error_type,
                        op,
                        reason,
                        confidence,
                    }));
                }
            }
        }
    }
}

/// Fills the verdict of a case the model left undecided, saying why.
fn give_up(v: &mut Verdict, model: &TraceModel, why: &str, hypothesis: Option<&Finding>) {
    match hypothesis {
        // Hybrid keeps the evidence-flow verdict when the model gave
        // none, so it is never left with less than the analysis.
        Some(h) => {
            v.error_type = Some(h.error_type);
            v.op_id = Some(model.ops[h.op].op_id.clone());
            v.op_name = model.ops[h.op].op_name.clone();
            v.confidence = (h.confidence * 0.9 * 100.0).round() / 100.0;
            v.reason = format!(
                "the model reached no verdict ({why}); the evidence-flow verdict stands: {}",
                h.reason
            );
            v.chain = h.chain.clone();
        }
        None => v.reason = format!("no verdict: {why}"),
    }
}

/// One plain completion (no tools), through the cache: the answer's text
/// and what it cost.
pub async fn complete(
    client: &Client,
    db: &Engine,
    cancel: &Cancel,
    messages: Vec<Message>,
) -> Result<(String, Cost)> {
    let started = Instant::now();
    let mut cost = Cost::default();
    let req = ChatRequest {
        messages,
        tools: Vec::new(),
    };
    let resp = ask(client, db, cancel, &req, 0, &mut cost).await?;
    count_tokens(&mut cost, &req, &resp);
    cost.seconds = (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
    Ok((resp.message.content.unwrap_or_default(), cost))
}

/// The LLM endpoint that a database's analyses use.
pub trait LlmSettings {
    /// Sets the LLM endpoint that `USING llm`, `USING hybrid`, the written
    /// report summary and prompt feedback use, instead of the one the
    /// environment describes.
    fn set_llm_config(&self, config: memtrace_llm::Config);

    /// The LLM settings in use: those set by [`LlmSettings::set_llm_config`],
    /// else read from the environment and the config file
    /// ([`memtrace_llm::Config::from_env`]) and kept.
    fn llm_config(&self) -> Result<memtrace_llm::Config>;

    /// Sets the embeddings endpoint that dense and hybrid evidence search
    /// use (`None`: none), instead of the one the environment describes.
    fn set_embeddings_config(&self, config: Option<memtrace_llm::Config>);

    /// The embeddings settings in use: those set by
    /// [`LlmSettings::set_embeddings_config`], else read from the
    /// environment ([`memtrace_llm::Config::embeddings_from_env`]); `None`
    /// when no embeddings model is configured.
    fn embeddings_config(&self) -> Result<Option<memtrace_llm::Config>>;
}

/// The settings kept for an open database.
#[derive(Default)]
struct LlmSlot(std::sync::Mutex<Option<memtrace_llm::Config>>);

/// The embeddings settings kept for an open database (outer `None`: not
/// read yet).
#[derive(Default)]
struct EmbedSlot(std::sync::Mutex<Option<Option<memtrace_llm::Config>>>);

impl LlmSettings for Engine {
    fn set_llm_config(&self, config: memtrace_llm::Config) {
        let slot = self.shared::<LlmSlot>();
        *slot.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(config);
    }

    fn llm_config(&self) -> Result<memtrace_llm::Config> {
        let slot = self.shared::<LlmSlot>();
        let mut slot = slot.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = slot.as_ref() {
            return Ok(c.clone());
        }
        let c = memtrace_llm::Config::from_env()?;
        *slot = Some(c.clone());
        Ok(c)
    }

    fn set_embeddings_config(&self, config: Option<memtrace_llm::Config>) {
        let slot = self.shared::<EmbedSlot>();
        *slot.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(config);
    }

    fn embeddings_config(&self) -> Result<Option<memtrace_llm::Config>> {
        let slot = self.shared::<EmbedSlot>();
        let mut slot = slot.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = slot.as_ref() {
            return Ok(c.clone());
        }
        let c = memtrace_llm::Config::embeddings_from_env()?;
        *slot = Some(c.clone());
        Ok(c)
    }
}

/// A client and a runtime to drive it from synchronous code.
pub(crate) fn client_for(db: &Engine) -> Result<(Client, tokio::runtime::Runtime)> {
    let client = Client::new(db.llm_config()?)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| AnalysisError::ClientCannotStart {
            client: "LLM",
            source,
        })?;
    Ok((client, rt))
}

#[cfg(test)]
mod tests;
