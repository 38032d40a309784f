//! The chat-completions wire format: messages, tools and tool calls, the
//! request body in native tool-calling form or as a JSON-in-text protocol
//! for endpoints without tool calling, and the reading of responses.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    /// The text; `None` for an assistant message that only calls tools.
    #[serde(default)]
    pub content: Option<String>,
    /// The tools an assistant message calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a `tool` message: the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    fn text(role: &str, content: impl Into<String>) -> Message {
        Message {
            role: role.into(),
            content: Some(content.into()),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Message {
        Message::text("system", content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Message {
        Message::text("user", content)
    }

    /// An assistant message with text only.
    pub fn assistant(content: impl Into<String>) -> Message {
        Message::text("assistant", content)
    }

    /// The result of a tool call.
    pub fn tool(call_id: impl Into<String>, content: impl Into<String>) -> Message {
        Message {
            role: "tool".into(),
            content: Some(content.into()),
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.into()),
        }
    }
}

/// A call of one tool by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id, echoed by the tool message that answers it.
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type", default = "function_kind")]
    pub kind: String,
    /// The function and its arguments.
    pub function: FunctionCall,
}

fn function_kind() -> String {
    "function".into()
}

impl ToolCall {
    /// A function call with JSON-text arguments.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> ToolCall {
        ToolCall {
            id: id.into(),
            kind: function_kind(),
            function: FunctionCall {
                name: name.into(),
                arguments: arguments.into(),
            },
        }
    }
}

/// The function a tool call names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// The tool's name.
    pub name: String,
    /// Its arguments as JSON text, exactly as the model wrote them (they may
    /// not parse).
    pub arguments: String,
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// Its name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// Its arguments as a JSON schema object.
    pub parameters: Value,
}

/// One request: the conversation so far and the tools on offer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The messages, oldest first.
    pub messages: Vec<Message>,
    /// The tools; empty for a plain completion.
    pub tools: Vec<Tool>,
}

/// Tokens a completion used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens of the prompt.
    pub prompt_tokens: u64,
    /// Tokens of the answer.
    pub completion_tokens: u64,
    /// Whether the endpoint did not say and these are estimates
    /// ([`estimate_tokens`]).
    #[serde(default)]
    pub estimated: bool,
}

/// The model's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The assistant message. In the text protocol its JSON call is turned
    /// into a [`ToolCall`] here, so callers see one shape.
    pub message: Message,
    /// Tokens used.
    pub usage: Usage,
    /// Why the model stopped, when it says.
    pub finish_reason: Option<String>,
}

/// A rough token count: one token per four bytes, rounded up. Used when an
/// endpoint reports no usage, and to size prompts.
pub fn estimate_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// The instructions that replace native tool calling: each tool described
/// as JSON, and the one reply shape the model must use.
pub fn text_protocol(tools: &[Tool]) -> String {
    let mut s = String::from(
        "You cannot call functions natively. To use a tool, reply with exactly one JSON \
         object and nothing else, of the form {\"tool\": \"<name>\", \"arguments\": {...}}. \
         The result comes back in the next user message. The tools:\n",
    );
    for t in tools {
        let spec =
            json!({"name": t.name, "description": t.description, "parameters": t.parameters});
        s.push_str(&spec.to_string());
        s.push('\n');
    }
    s
}

/// The JSON body of a chat-completions request for `model`. With
/// `native_tools` the tools go in the `tools` field; without, they are
/// described by [`text_protocol`] in the system message, earlier tool calls
/// are written back as their JSON text, and tool results become user
/// messages, so an endpoint without tool calling sees plain text only.
pub fn request_body(
    model: &str,
    req: &ChatRequest,
    native_tools: bool,
    temperature: f64,
    max_output_tokens: u32,
) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    let messages: Vec<Value> = if native_tools || req.tools.is_empty() {
        req.messages.iter().map(|m| json!(m)).collect()
    } else {
        text_messages(req)
    };
    body.insert("messages".into(), Value::Array(messages));
    if native_tools && !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters}})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        body.insert("tool_choice".into(), json!("auto"));
    }
    body.insert("temperature".into(), json!(temperature));
    body.insert("max_tokens".into(), json!(max_output_tokens));
    Value::Object(body)
}

fn text_messages(req: &ChatRequest) -> Vec<Value> {
    let protocol = text_protocol(&req.tools);
    let mut out = Vec::with_capacity(req.messages.len() + 1);
    let mut told = false;
    for m in &req.messages {
        match m.role.as_str() {
            "system" if !told => {
                told = true;
                let text = format!("{}\n\n{protocol}", m.content.as_deref().unwrap_or(""));
                out.push(json!({"role": "system", "content": text}));
            }
            "assistant" if !m.tool_calls.is_empty() => {
                let calls: Vec<String> = m
                    .tool_calls
                    .iter()
                    .map(|c| {
                        let args: Value = serde_json::from_str(&c.function.arguments)
                            .unwrap_or_else(|_| Value::String(c.function.arguments.clone()));
                        json!({"tool": c.function.name, "arguments": args}).to_string()
                    })
                    .collect();
                out.push(json!({"role": "assistant", "content": calls.join("\n")}));
            }
            "tool" => {
                let text = format!(
                    "Result of your tool call:\n{}",
                    m.content.as_deref().unwrap_or("")
                );
                out.push(json!({"role": "user", "content": text}));
            }
            _ => out.push(json!(m)),
        }
    }
    if !told {
        out.insert(0, json!({"role": "system", "content": protocol}));
    }
    out
}

/// Reads a chat-completions response body. In the text protocol
/// (`native_tools` false) a JSON tool call in the content becomes a
/// [`ToolCall`] with the id `text-<call_number>`. The error is a sentence
/// saying what is missing or wrong.
pub fn parse_response(
    body: &str,
    native_tools: bool,
    call_number: usize,
) -> Result<ChatResponse, String> {
    let v: Value = serde_json::from_str(body)
        .map_err(|e| format!("body is not JSON ({e}): {}", excerpt(body, 120)))?;
    if let Some(err) = v.get("error") {
        return Err(format!(
            "the endpoint reported an error: {}",
            excerpt(&err.to_string(), 200)
        ));
    }
    let choice = v
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or("no choices[0] in the response")?;
    let msg = choice
        .get("message")
        .ok_or("no choices[0].message in the response")?;
    let content = match msg.get("content") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            return Err(format!(
                "choices[0].message.content is not text: {}",
                excerpt(&other.to_string(), 80)
            ))
        }
    };
    let mut tool_calls = Vec::new();
    if let Some(calls) = msg.get("tool_calls").filter(|c| !c.is_null()) {
        let calls = calls
            .as_array()
            .ok_or("choices[0].message.tool_calls is not a list")?;
        for (i, c) in calls.iter().enumerate() {
            let f = c
                .get("function")
                .ok_or_else(|| format!("tool_calls[{i}] has no function"))?;
            let name = f
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("tool_calls[{i}].function has no name"))?;
            // Some servers send the arguments as an object, not as text.
            let arguments = match f.get("arguments") {
                Some(Value::String(s)) => s.clone(),
                None | Some(Value::Null) => "{}".into(),
                Some(other) => other.to_string(),
            };
            let id = c
                .get("id")
                .and_then(Value::as_str)
                .map_or_else(|| format!("call-{call_number}-{i}"), str::to_string);
            tool_calls.push(ToolCall::new(id, name, arguments));
        }
    }
    if !native_tools && tool_calls.is_empty() {
        if let Some((name, arguments)) = content.as_deref().and_then(parse_text_call) {
            tool_calls.push(ToolCall::new(
                format!("text-{call_number}"),
                name,
                arguments,
            ));
        }
    }
    let finish_reason = choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .map(str::to_string);
    let usage = match v.get("usage").filter(|u| !u.is_null()) {
        Some(u) => Usage {
            prompt_tokens: u.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0),
            completion_tokens: u
                .get("completion_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            estimated: false,
        },
        None => Usage {
            prompt_tokens: 0,
            completion_tokens: estimate_tokens(content.as_deref().unwrap_or(""))
                + tool_calls
                    .iter()
                    .map(|c| estimate_tokens(&c.function.arguments))
                    .sum::<u64>(),
            estimated: true,
        },
    };
    Ok(ChatResponse {
        message: Message {
            role: "assistant".into(),
            content,
            tool_calls,
            tool_call_id: None,
        },
        usage,
        finish_reason,
    })
}

/// The first JSON object in `text` that has a string `tool` field, as
/// (tool name, arguments as JSON text). Prose and code fences around it
/// are ignored.
pub fn parse_text_call(text: &str) -> Option<(String, String)> {
    let obj = find_json_object(text, |o| o.get("tool").is_some_and(Value::is_string))?;
    let name = obj.get("tool").and_then(Value::as_str)?.to_string();
    let args = match obj.get("arguments").cloned().unwrap_or_else(|| json!({})) {
        Value::String(s) => s,
        other => other.to_string(),
    };
    Some((name, args))
}

/// The first JSON object in `text` (prose and code fences around it are
/// ignored) for which `accept` holds.
pub fn find_json_object(
    text: &str,
    accept: impl Fn(&Map<String, Value>) -> bool,
) -> Option<Map<String, Value>> {
    let bytes = text.as_bytes();
    let mut start = 0;
    while let Some(off) = text[start..].find('{') {
        let open = start + off;
        if let Some(close) = matching_brace(bytes, open) {
            if let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(&text[open..=close]) {
                if accept(&obj) {
                    return Some(obj);
                }
            }
        }
        start = open + 1;
    }
    None
}

/// The index of the brace closing the one at `open`, skipping strings.
fn matching_brace(bytes: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_str = false;
    let mut escaped = false;
    for (i, &b) in bytes.iter().enumerate().skip(open) {
        if in_str {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// At most `max` characters of `s`, with an ellipsis when cut.
pub fn excerpt(s: &str, max: usize) -> String {
    let mut out: String = s.chars().take(max).collect();
    if s.chars().nth(max).is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Vec<Tool> {
        vec![Tool {
            name: "finish".into(),
            description: "Name the faulty op.".into(),
            parameters: json!({"type": "object", "properties": {"op_id": {"type": "string"}}}),
        }]
    }

    #[test]
    fn a_native_tool_call_is_read_with_its_arguments_and_usage() {
        let body = r#"{"choices":[{"message":{"role":"assistant","content":null,
            "tool_calls":[{"id":"c1","type":"function","function":{"name":"finish",
            "arguments":"{\"op_id\":\"op-3\"}"}}]},"finish_reason":"tool_calls"}],
            "usage":{"prompt_tokens":120,"completion_tokens":9}}"#;
        let r = parse_response(body, true, 0).unwrap();
        assert_eq!(
            r.message.tool_calls,
            vec![ToolCall::new("c1", "finish", r#"{"op_id":"op-3"}"#)]
        );
        assert_eq!(r.usage.prompt_tokens, 120);
        assert_eq!(r.usage.completion_tokens, 9);
        assert!(!r.usage.estimated);
        assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    }

    #[test]
    fn arguments_sent_as_an_object_become_text() {
        let body = r#"{"choices":[{"message":{"role":"assistant","tool_calls":[
            {"function":{"name":"finish","arguments":{"op_id":"op-3"}}}]}}]}"#;
        let r = parse_response(body, true, 4).unwrap();
        assert_eq!(r.message.tool_calls[0].id, "call-4-0");
        assert_eq!(
            r.message.tool_calls[0].function.arguments,
            r#"{"op_id":"op-3"}"#
        );
        assert!(r.usage.estimated);
    }

    #[test]
    fn a_body_that_is_no_completion_says_what_is_missing() {
        assert!(parse_response("{not json", true, 0)
            .unwrap_err()
            .contains("not JSON"));
        assert!(parse_response(r#"{"choices":[]}"#, true, 0)
            .unwrap_err()
            .contains("choices[0]"));
        assert!(
            parse_response(r#"{"error":{"message":"model not found"}}"#, true, 0)
                .unwrap_err()
                .contains("model not found")
        );
        let e = parse_response(
            r#"{"choices":[{"message":{"tool_calls":[{"function":{}}]}}]}"#,
            true,
            0,
        )
        .unwrap_err();
        assert!(e.contains("no name"), "{e}");
    }

    #[test]
    fn the_text_protocol_reads_a_call_out_of_prose_and_fences() {
        let content = "Let me look.\n```json\n{\"tool\": \"finish\", \"arguments\": {\"op_id\": \"op-}3\"}}\n```";
        let body =
            json!({"choices":[{"message":{"role":"assistant","content":content}}]}).to_string();
        let r = parse_response(&body, false, 7).unwrap();
        assert_eq!(
            r.message.tool_calls,
            vec![ToolCall::new("text-7", "finish", r#"{"op_id":"op-}3"}"#)]
        );
        // Natively, text stays text.
        assert!(parse_response(&body, true, 7)
            .unwrap()
            .message
            .tool_calls
            .is_empty());
        assert_eq!(parse_text_call("{\"a\": 1} no call here"), None);
    }

    #[test]
    fn the_text_body_describes_the_tools_and_carries_no_tool_roles() {
        let req = ChatRequest {
            messages: vec![
                Message::system("You attribute failures."),
                Message::user("Case 1"),
                Message {
                    role: "assistant".into(),
                    content: None,
                    tool_calls: vec![ToolCall::new("c1", "finish", "{\"op_id\":\"op-1\"}")],
                    tool_call_id: None,
                },
                Message::tool("c1", "op-1 does not exist"),
            ],
            tools: tools(),
        };
        let native = request_body("m", &req, true, 0.0, 512);
        assert_eq!(native["tools"][0]["function"]["name"], "finish");
        assert_eq!(native["messages"][3]["role"], "tool");
        let text = request_body("m", &req, false, 0.0, 512);
        assert!(text.get("tools").is_none());
        let msgs = text["messages"].as_array().unwrap();
        assert!(msgs[0]["content"]
            .as_str()
            .unwrap()
            .contains("\"tool\": \"<name>\""));
        assert!(msgs[0]["content"]
            .as_str()
            .unwrap()
            .contains("Name the faulty op."));
        assert_eq!(
            msgs[2]["content"],
            r#"{"tool":"finish","arguments":{"op_id":"op-1"}}"#
        );
        assert_eq!(msgs[3]["role"], "user");
        assert!(msgs.iter().all(|m| m["role"] != "tool"));
    }

    proptest::proptest! {
        #[test]
        fn any_call_written_in_text_reads_back(name in "[a-z_]{1,12}", v in "\\PC{0,40}", prose in "[a-zA-Z .,]{0,30}") {
            let call = json!({"tool": name, "arguments": {"value": v}}).to_string();
            let text = format!("{prose}{call}{prose}");
            let (n, args) = parse_text_call(&text).unwrap();
            proptest::prop_assert_eq!(n, name);
            let back: Value = serde_json::from_str(&args).unwrap();
            proptest::prop_assert_eq!(back["value"].as_str(), Some(v.as_str()));
        }
    }
}
