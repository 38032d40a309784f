//! The model's view of a trace: a frontier of variables, their op subgraphs
//! rendered compactly and paged, whole values on request, and the history of
//! the exploration. Everything the trace recorded is fenced as data.

use serde_json::{json, Value};

use memtrace_llm::Tool;

use super::super::case::FailedCase;
use super::super::model::TraceModel;
use super::super::verdict::{ErrorType, Step};
use super::fit;

/// The most variables the frontier holds.
pub const MAX_FRONTIER: usize = 16;
/// Ops shown per page of an exploration.
pub const OPS_PER_PAGE: usize = 6;
/// Variables listed per side (inputs, outputs) of one op.
pub const VARS_PER_OP: usize = 8;
/// Characters of a value shown in an exploration.
pub const VALUE_CHARS: usize = 160;
/// Characters of a value per page of `view_value`.
pub const PAGE_CHARS: usize = 3000;

/// Characters of one value that a summary or feedback request shows.
pub(crate) const SHOWN_CHARS: usize = 300;

/// Wraps trace content so the model can tell data from instructions. The
/// tag is derived from the case, and any copy of it inside the data is
/// broken, so a value cannot close its own fence.
#[derive(Debug, Clone)]
pub struct Fence {
    tag: String,
}

impl Fence {
    /// The fence of one case.
    pub fn new(trace_graph_id: &str, case_id: &str) -> Fence {
        let hash = blake3::hash(format!("{trace_graph_id}\u{0}{case_id}").as_bytes());
        let hex: String = hash.as_bytes()[..4]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Fence {
            tag: format!("data-{hex}"),
        }
    }

    /// The tag, `data-xxxxxxxx`.
    pub fn tag(&self) -> &str {
        &self.tag
    }

    /// `text` between the fence's markers.
    pub fn wrap(&self, text: &str) -> String {
        let safe = text.replace(&self.tag, "data-????????");
        format!("<{t}>{safe}</{t}>", t = self.tag)
    }
}

/// A name from the trace, made safe to print outside a fence: one line, cut.
fn ident(s: &str) -> String {
    let one: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(100)
        .collect();
    one
}

fn cut(s: &str, max: usize) -> (String, bool) {
    let mut it = s.char_indices();
    match it.nth(max) {
        Some((i, _)) => (s[..i].to_string(), true),
        None => (s.to_string(), false),
    }
}

/// What a tool call did.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Text for the model (a result, or why the call was refused).
    Reply(String),
    /// A valid verdict.
    Finish {
        /// The error type.
        error_type: ErrorType,
        /// The op (position in the trace model).
        op: usize,
        /// The model's reason.
        reason: String,
        /// The model's confidence, when it gave one.
        confidence: Option<f64>,
    },
}

/// The exploration state of one case.
#[derive(Debug)]
pub struct Explorer<'m> {
    model: &'m TraceModel,
    case: &'m FailedCase,
    fence: Fence,
    frontier: Vec<usize>,
    history: Vec<String>,
    explored: Vec<usize>,
    /// Why the last call was refused, for a "no verdict" reason.
    pub last_problem: Option<String>,
}

impl<'m> Explorer<'m> {
    /// Starts with `frontier` (evidence and question variables), cut to
    /// [`MAX_FRONTIER`].
    pub fn new(model: &'m TraceModel, case: &'m FailedCase, mut frontier: Vec<usize>) -> Self {
        frontier.dedup();
        frontier.truncate(MAX_FRONTIER);
        Explorer {
            model,
            case,
            fence: Fence::new(&case.graph_id, &case.id),
            frontier,
            history: Vec::new(),
            explored: Vec::new(),
            last_problem: None,
        }
    }

    /// The case's fence.
    pub fn fence(&self) -> &Fence {
        &self.fence
    }

    /// The frontier, as full node ids.
    pub fn frontier_ids(&self) -> Vec<String> {
        self.frontier
            .iter()
            .map(|&v| self.model.vars[v].full_node_id.clone())
            .collect()
    }

    /// The chain of the exploration: each variable explored, in order, with
    /// the op that made it.
    pub fn chain(&self) -> Vec<Step> {
        self.explored
            .iter()
            .map(|&v| {
                let op = self.model.made_by(v).first().copied();
                Step {
                    op_id: op.map_or(String::new(), |o| self.model.ops[o].op_id.clone()),
                    op_name: op
                        .and_then(|o| self.model.ops[o].op_name.clone())
                        .unwrap_or_default(),
                    var: self.model.vars[v].full_node_id.clone(),
                    what: "explored".into(),
                }
            })
            .collect()
    }

    /// A variable line: id, category, and its value cut to `max`.
    pub fn var_line(&self, v: usize, max: usize) -> String {
        let var = &self.model.vars[v];
        let value = self.model.value(v);
        let (shown, was_cut) = cut(value, max);
        let more = if was_cut {
            format!(" (cut at {max} of {} chars)", value.chars().count())
        } else {
            String::new()
        };
        format!(
            "{} [{}] = {}{more}",
            ident(&var.full_node_id),
            ident(var.category.as_deref().unwrap_or("-")),
            self.fence.wrap(&shown)
        )
    }

    fn var_list(&self, list: &[usize]) -> String {
        let mut parts: Vec<String> = list
            .iter()
            .take(VARS_PER_OP)
            .map(|&v| ident(&self.model.vars[v].full_node_id))
            .collect();
        if list.len() > VARS_PER_OP {
            parts.push(format!("+{} more", list.len() - VARS_PER_OP));
        }
        if parts.is_empty() {
            "-".into()
        } else {
            parts.join(", ")
        }
    }

    fn op_block(&self, op: usize, var: usize) -> String {
        let o = &self.model.ops[op];
        let mut s = format!(
            "  {} {} [{}] #{} in execution order",
            ident(&o.op_id),
            ident(o.op_name.as_deref().unwrap_or("?")),
            ident(o.category.as_deref().unwrap_or("-")),
            op + 1
        );
        if let Some(c) = o.comment.as_deref().filter(|c| !c.is_empty()) {
            s.push_str(&format!(
                " comment {}",
                self.fence.wrap(&cut(c, VALUE_CHARS).0)
            ));
        }
        s.push_str(&format!(
            "\n    in:  {}",
            self.var_list(self.model.inputs(op))
        ));
        s.push_str(&format!(
            "\n    out: {}",
            self.var_list(self.model.outputs(op))
        ));
        // Values of the neighbours, the variable explored left out.
        let mut shown = 0;
        for &n in self.model.inputs(op).iter().chain(self.model.outputs(op)) {
            if n == var || shown >= 4 {
                continue;
            }
            shown += 1;
            s.push_str(&format!("\n      {}", self.var_line(n, VALUE_CHARS / 2)));
        }
        s
    }

    /// The op subgraphs of a variable, one page of them.
    pub fn explore(&self, v: usize, page: usize) -> String {
        let m = self.model;
        let mut ops: Vec<(usize, &str)> = m.made_by(v).iter().map(|&o| (o, "wrote it")).collect();
        ops.extend(m.read_by(v).iter().map(|&o| (o, "read it")));
        let pages = ops.len().div_ceil(OPS_PER_PAGE).max(1);
        let mut s = format!("{}\n", self.var_line(v, VALUE_CHARS));
        if page >= pages {
            s.push_str(&format!(
                "(no page {}: this variable has {pages} page(s) of ops)",
                page + 1
            ));
            return s;
        }
        for (o, what) in ops.iter().skip(page * OPS_PER_PAGE).take(OPS_PER_PAGE) {
            s.push_str(&format!("{what}:\n{}\n", self.op_block(*o, v)));
        }
        if ops.is_empty() {
            s.push_str("no op wrote or read this variable\n");
        }
        let older = m.vars[v].version > 1;
        s.push_str(&format!(
            "page {} of {pages}{}",
            page + 1,
            if older {
                format!(
                    "; earlier versions exist (e.g. {}@{})",
                    ident(&m.vars[v].full_name),
                    m.vars[v].version - 1
                )
            } else {
                String::new()
            }
        ));
        s
    }

    fn var_arg(&self, args: &Value, key: &str) -> Result<usize, String> {
        let r = args
            .get(key)
            .and_then(Value::as_str)
            .ok_or_else(|| format!("'{key}' is missing or not a string"))?;
        self.model.var(r).ok_or_else(|| {
            format!(
                "no variable '{}' in this trace; use ids as shown, like name@version",
                ident(r)
            )
        })
    }

    fn var_args(&self, args: &Value) -> Result<Vec<usize>, String> {
        let list = args
            .get("vars")
            .and_then(Value::as_array)
            .ok_or("'vars' is missing or not a list of variable ids")?;
        list.iter()
            .map(|x| {
                let r = x.as_str().ok_or("'vars' must hold strings")?;
                self.model
                    .var(r)
                    .ok_or_else(|| format!("no variable '{}' in this trace", ident(r)))
            })
            .collect()
    }

    fn page_arg(args: &Value, key: &str) -> Result<usize, String> {
        match args.get(key) {
            None | Some(Value::Null) => Ok(0),
            Some(v) => v
                .as_u64()
                .filter(|&p| p >= 1)
                .map(|p| p as usize - 1)
                .ok_or_else(|| format!("'{key}' must be a whole number from 1")),
        }
    }

    /// Runs one tool call; `arguments` is the model's JSON text.
    pub fn call(&mut self, name: &str, arguments: &str) -> Outcome {
        let outcome = match serde_json::from_str::<Value>(arguments) {
            Ok(args) if args.is_object() => self.dispatch(name, &args),
            Ok(_) => Err("the arguments must be a JSON object".to_string()),
            Err(e) => Err(format!(
                "the arguments are not valid JSON ({e}); send them again as a JSON object"
            )),
        };
        let summary = match &outcome {
            Ok(Outcome::Finish { .. }) => "finish: accepted".to_string(),
            Ok(Outcome::Reply(_)) => "ok".to_string(),
            Err(e) => format!("refused: {e}"),
        };
        self.history.push(format!(
            "{}. {}({}) -> {summary}",
            self.history.len() + 1,
            ident(name),
            cut(arguments, 120).0
        ));
        match outcome {
            Ok(o) => {
                self.last_problem = None;
                o
            }
            Err(e) => {
                self.last_problem = Some(e.clone());
                Outcome::Reply(format!("refused: {e}"))
            }
        }
    }

    fn dispatch(&mut self, name: &str, args: &Value) -> Result<Outcome, String> {
        match name {
            "explore" => {
                let v = self.var_arg(args, "var")?;
                if !self.frontier.contains(&v) {
                    return Err(format!(
                        "{} is not on the frontier; add_frontier it first (frontier: {})",
                        ident(&self.model.vars[v].full_node_id),
                        self.frontier_ids().join(", ")
                    ));
                }
                let page = Self::page_arg(args, "page")?;
                if !self.explored.contains(&v) {
                    self.explored.push(v);
                }
                Ok(Outcome::Reply(self.explore(v, page)))
            }
            "view_value" => {
                let v = self.var_arg(args, "var")?;
                let page = Self::page_arg(args, "page")?;
                let chars: Vec<char> = self.model.value(v).chars().collect();
                let pages = chars.len().div_ceil(PAGE_CHARS).max(1);
                if page >= pages {
                    return Err(format!("the value has {pages} page(s)"));
                }
                let text: String = chars
                    .iter()
                    .skip(page * PAGE_CHARS)
                    .take(PAGE_CHARS)
                    .collect();
                Ok(Outcome::Reply(format!(
                    "{} page {} of {pages}:\n{}",
                    ident(&self.model.vars[v].full_node_id),
                    page + 1,
                    self.fence.wrap(&text)
                )))
            }
            "add_frontier" => {
                let vars = self.var_args(args)?;
                let new: Vec<usize> = vars
                    .into_iter()
                    .filter(|v| !self.frontier.contains(v))
                    .collect();
                if self.frontier.len() + new.len() > MAX_FRONTIER {
                    return Err(format!(
                        "the frontier holds at most {MAX_FRONTIER} variables and has {}; \
                         remove_frontier some first",
                        self.frontier.len()
                    ));
                }
                self.frontier.extend(new);
                Ok(Outcome::Reply(format!(
                    "frontier: {}",
                    self.frontier_ids().join(", ")
                )))
            }
            "remove_frontier" => {
                let vars = self.var_args(args)?;
                self.frontier.retain(|v| !vars.contains(v));
                Ok(Outcome::Reply(format!(
                    "frontier: {}",
                    if self.frontier.is_empty() {
                        "(empty)".to_string()
                    } else {
                        self.frontier_ids().join(", ")
                    }
                )))
            }
            "history" => Ok(Outcome::Reply(if self.history.is_empty() {
                "no calls yet".into()
            } else {
                self.history.join("\n")
            })),
            "finish" => self.finish(args),
            other => Err(format!(
                "there is no tool '{}'; the tools are explore, view_value, add_frontier, \
                 remove_frontier, history and finish",
                ident(other)
            )),
        }
    }

    fn finish(&self, args: &Value) -> Result<Outcome, String> {
        let t = args
            .get("error_type")
            .and_then(Value::as_str)
            .ok_or("'error_type' is missing")?;
        let error_type: ErrorType = t.parse()?;
        let op_ref = args
            .get("op_id")
            .and_then(Value::as_str)
            .ok_or("'op_id' is missing")?;
        let op = self.model.op(op_ref).ok_or_else(|| {
            format!(
                "there is no op '{}' in this trace; name an op id shown by explore (like {})",
                ident(op_ref),
                self.model.ops.first().map_or("op-1", |o| o.op_id.as_str())
            )
        })?;
        fit::check(self.model, self.case, error_type, op)?;
        let reason = args
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim()
            .to_string();
        if reason.is_empty() {
            return Err("'reason' is missing: say in a sentence or two why".into());
        }
        let confidence = args
            .get("confidence")
            .and_then(Value::as_f64)
            .map(|c| c.clamp(0.0, 1.0));
        Ok(Outcome::Finish {
            error_type,
            op,
            reason,
            confidence,
        })
    }
}

/// The tools offered to the model.
pub fn tools() -> Vec<Tool> {
    let var = json!({"type": "string", "description": "a variable id, name@version"});
    let page = json!({"type": "integer", "minimum": 1, "description": "page, from 1"});
    let vars = json!({"type": "array", "items": {"type": "string"}, "description": "variable ids"});
    vec![
        Tool {
            name: "explore".into(),
            description: "Show the op subgraphs of a frontier variable: each op that wrote or \
                          read it, with its name, category, inputs, outputs and their values \
                          (cut). Paged."
                .into(),
            parameters: json!({"type": "object", "properties": {"var": var, "page": page},
                               "required": ["var"]}),
        },
        Tool {
            name: "view_value".into(),
            description: "Show a whole value of any variable, in pages.".into(),
            parameters: json!({"type": "object", "properties": {"var": var, "page": page},
                               "required": ["var"]}),
        },
        Tool {
            name: "add_frontier".into(),
            description: format!("Add variables to the frontier (at most {MAX_FRONTIER} in all)."),
            parameters: json!({"type": "object", "properties": {"vars": vars},
                               "required": ["vars"]}),
        },
        Tool {
            name: "remove_frontier".into(),
            description: "Remove variables from the frontier.".into(),
            parameters: json!({"type": "object", "properties": {"vars": vars},
                               "required": ["vars"]}),
        },
        Tool {
            name: "history".into(),
            description: "List the calls made so far and what each did.".into(),
            parameters: json!({"type": "object", "properties": {}}),
        },
        Tool {
            name: "finish".into(),
            description: "Give the verdict: the error type and the earliest decisive faulty op."
                .into(),
            parameters: json!({"type": "object", "properties": {
                "error_type": {"type": "string", "enum": ErrorType::ALL.map(ErrorType::name)},
                "op_id": {"type": "string", "description": "the faulty op's id"},
                "reason": {"type": "string", "description": "why, citing ops and variables"},
                "confidence": {"type": "number", "minimum": 0, "maximum": 1}},
                "required": ["error_type", "op_id", "reason"]}),
        },
    ]
}
