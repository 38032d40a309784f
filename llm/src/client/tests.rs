use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, UNIX_EPOCH};

use serde_json::json;

use super::detail::{endpoint_name, is_loopback};
use super::requests::Client;
use super::retry::{backoff, parse_retry_after};
use crate::chat::{parse_response, ChatRequest, Message, Tool, ToolCall};
use crate::config::{Config, Endpoint, Secret, ToolMode};
use crate::error::LlmError;
use crate::scripted::{self, Reply, ScriptedServer};

fn never() -> bool {
    false
}

fn config(servers: &[&ScriptedServer]) -> Config {
    let mut c = Config::new(servers[0].base_url(), "test-model");
    c.endpoints = servers
        .iter()
        .map(|s| Endpoint {
            base_url: s.base_url(),
            api_key: None,
        })
        .collect();
    c.timeout = Duration::from_millis(300);
    c.retries = 2;
    c.backoff = Duration::from_millis(10);
    c
}

fn request() -> ChatRequest {
    ChatRequest {
        messages: vec![
            Message::system("You attribute failures."),
            Message::user("Which op is wrong?"),
        ],
        tools: vec![Tool {
            name: "finish".into(),
            description: "Name the faulty op.".into(),
            parameters: json!({"type": "object",
                "properties": {"op_id": {"type": "string"}}}),
        }],
    }
}

fn good(r: &scripted::Recorded) -> Reply {
    Reply::Json(scripted::tool_call(
        r,
        "c1",
        "finish",
        json!({"op_id": "op-3"}),
    ))
}

/// A script answering `first` to the first `n` requests, then well.
fn fail_first(n: usize, first: Reply) -> scripted::Script {
    let mut seen = 0;
    Box::new(move |r| {
        seen += 1;
        if seen <= n {
            first.clone()
        } else {
            good(r)
        }
    })
}

fn status(status: u16, headers: &[(&str, &str)], body: &str) -> Reply {
    Reply::Status {
        status,
        headers: headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
        body: body.into(),
    }
}

#[tokio::test(flavor = "current_thread")]
async fn embeddings_come_back_in_input_order_and_bad_answers_are_named() {
    let server = ScriptedServer::start(Box::new(|r| {
        let mut v = scripted::embeddings(r, 8);
        // Answered out of order: the index puts each vector back.
        if let Some(items) = v["data"].as_array_mut() {
            items.reverse();
        }
        Reply::Json(v)
    }))
    .unwrap();
    let client = Client::new(config(&[&server])).unwrap();
    let texts = vec!["blue volvo".to_string(), "cat named luna".to_string()];
    let vectors = client.embed(&texts, &never).await.unwrap();
    assert_eq!(vectors.len(), 2);
    assert_eq!(vectors[0].len(), 8);
    let alone = client.embed(&texts[1..], &never).await.unwrap();
    assert_eq!(alone[0], vectors[1]);
    let r = &server.requests()[0];
    assert_eq!(r.path, "/v1/embeddings");
    assert_eq!(r.json.as_ref().unwrap()["input"], json!(texts));
    assert_eq!(r.json.as_ref().unwrap()["model"], "test-model");
    assert!(client.embed(&[], &never).await.unwrap().is_empty());

    let short = ScriptedServer::start(Box::new(|_| {
        Reply::Json(json!({"data": [{"index": 0, "embedding": [0.1, 0.2]}]}))
    }))
    .unwrap();
    let client = Client::new(config(&[&short])).unwrap();
    let e = client.embed(&texts, &never).await.unwrap_err().to_string();
    assert!(e.contains("1 vectors for 2 inputs"), "{e}");
    let refused = ScriptedServer::start(Box::new(|_| status(401, &[], "bad key"))).unwrap();
    let client = Client::new(config(&[&refused])).unwrap();
    let e = client.embed(&texts, &never).await.unwrap_err().to_string();
    assert!(e.contains("401") && e.contains("check the API key"), "{e}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_tool_call_comes_back_with_usage_and_the_request_carries_model_tools_and_key() {
    let server = ScriptedServer::start(Box::new(good)).unwrap();
    let mut c = config(&[&server]);
    c.endpoints[0].api_key = Some(Secret::new("sk-test-123"));
    let client = Client::new(c).unwrap();
    let x = client.chat(&request(), 0, &never).await.unwrap();
    assert_eq!(
        x.response.message.tool_calls,
        vec![ToolCall::new("c1", "finish", r#"{"op_id":"op-3"}"#)]
    );
    let sent = &server.requests()[0];
    assert_eq!(
        x.response.usage.prompt_tokens,
        scripted::prompt_tokens(sent)
    );
    assert!(x.response.usage.prompt_tokens > 0);
    assert_eq!(x.response.usage.completion_tokens, 4);
    assert!(!x.response.usage.estimated);
    assert!(x.native_tools);
    assert_eq!(x.attempts, 1);
    assert_eq!(
        parse_response(&x.raw, x.native_tools, 0).unwrap(),
        x.response
    );
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test-123"));
    let body = sent.json.as_ref().unwrap();
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["messages"][1]["content"], "Which op is wrong?");
    assert_eq!(body["tools"][0]["function"]["name"], "finish");
}

#[tokio::test(flavor = "current_thread")]
async fn without_a_key_no_authorization_header_is_sent() {
    let server = ScriptedServer::start(Box::new(good)).unwrap();
    let client = Client::new(config(&[&server])).unwrap();
    client.chat(&request(), 0, &never).await.unwrap();
    assert_eq!(server.requests()[0].header("authorization"), None);
}

#[tokio::test(flavor = "current_thread")]
async fn a_malformed_body_is_retried() {
    let server = ScriptedServer::start(fail_first(1, Reply::Raw("{\"choi".into()))).unwrap();
    let client = Client::new(config(&[&server])).unwrap();
    let x = client.chat(&request(), 0, &never).await.unwrap();
    assert_eq!(x.attempts, 2);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test(flavor = "current_thread")]
async fn a_body_malformed_every_time_is_malformed_after_all_tries() {
    let server = ScriptedServer::start(Box::new(|_| Reply::Raw("<html>".into()))).unwrap();
    let client = Client::new(config(&[&server])).unwrap();
    let e = client.chat(&request(), 0, &never).await.unwrap_err();
    match &e {
        LlmError::Malformed { endpoint, detail } => {
            assert_eq!(endpoint, &server.base_url());
            assert!(detail.contains("not JSON"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test(flavor = "current_thread")]
async fn a_429_waits_as_long_as_retry_after_says() {
    let server = ScriptedServer::start(fail_first(
        1,
        status(429, &[("Retry-After", "1")], r#"{"error":"slow down"}"#),
    ))
    .unwrap();
    let client = Client::new(config(&[&server])).unwrap();
    let t = Instant::now();
    let x = client.chat(&request(), 0, &never).await.unwrap();
    assert!(
        t.elapsed() >= Duration::from_millis(950),
        "{:?}",
        t.elapsed()
    );
    assert!(x.seconds >= 0.95);
    assert_eq!(x.attempts, 2);
}

#[tokio::test(flavor = "current_thread")]
async fn a_500_is_retried() {
    let server = ScriptedServer::start(fail_first(1, status(500, &[], "oops"))).unwrap();
    let client = Client::new(config(&[&server])).unwrap();
    let x = client.chat(&request(), 0, &never).await.unwrap();
    assert_eq!(x.attempts, 2);
}

#[tokio::test(flavor = "current_thread")]
async fn a_500_every_time_is_a_status_error_after_all_tries() {
    let server =
        ScriptedServer::start(Box::new(|_| status(500, &[], "the GPU is on fire"))).unwrap();
    let client = Client::new(config(&[&server])).unwrap();
    let e = client.chat(&request(), 0, &never).await.unwrap_err();
    match &e {
        LlmError::Status { status, detail, .. } => {
            assert_eq!(*status, 500);
            assert!(detail.contains("GPU is on fire"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test(flavor = "current_thread")]
async fn a_slow_answer_times_out_and_is_retried() {
    let server = ScriptedServer::start(fail_first(
        1,
        Reply::Delay(Duration::from_secs(1), Box::new(Reply::Raw("late".into()))),
    ))
    .unwrap();
    let client = Client::new(config(&[&server])).unwrap();
    let x = client.chat(&request(), 0, &never).await.unwrap();
    assert_eq!(x.attempts, 2);
    assert!(x.seconds < 0.9, "{}", x.seconds);
}

#[tokio::test(flavor = "current_thread")]
async fn an_answer_slow_every_time_is_unreachable_timed_out() {
    let server = ScriptedServer::start(Box::new(|r| {
        Reply::Delay(Duration::from_secs(1), Box::new(good(r)))
    }))
    .unwrap();
    let client = Client::new(config(&[&server])).unwrap();
    let e = client.chat(&request(), 0, &never).await.unwrap_err();
    match &e {
        LlmError::Unreachable {
            attempts, detail, ..
        } => {
            assert_eq!(*attempts, 3);
            assert!(detail.contains("timed out after 0.3 s"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("timed out"), "{e}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_dropped_connection_is_retried() {
    let server = ScriptedServer::start(fail_first(1, Reply::Drop)).unwrap();
    let client = Client::new(config(&[&server])).unwrap();
    let x = client.chat(&request(), 0, &never).await.unwrap();
    assert_eq!(x.attempts, 2);
}

#[tokio::test(flavor = "current_thread")]
async fn a_connection_dropped_every_time_is_unreachable() {
    let server = ScriptedServer::start(Box::new(|_| Reply::Drop)).unwrap();
    let client = Client::new(config(&[&server])).unwrap();
    let e = client.chat(&request(), 0, &never).await.unwrap_err();
    match &e {
        LlmError::Unreachable {
            endpoint,
            attempts,
            detail,
        } => {
            assert_eq!(endpoint, &server.base_url());
            assert_eq!(*attempts, 3);
            assert!(detail.contains("connection closed"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test(flavor = "current_thread")]
async fn a_401_is_not_retried_and_names_the_key_but_not_its_value() {
    let server = ScriptedServer::start(Box::new(|_| {
        status(
            401,
            &[],
            r#"{"error":{"message":"Incorrect API key provided: sk-secret-value"}}"#,
        )
    }))
    .unwrap();
    let mut c = config(&[&server]);
    c.endpoints[0].api_key = Some(Secret::new("sk-secret-value"));
    let client = Client::new(c).unwrap();
    let e = client.chat(&request(), 0, &never).await.unwrap_err();
    assert!(matches!(e, LlmError::Status { status: 401, .. }), "{e:?}");
    let text = format!("{e} {e:?}");
    assert!(text.contains("check the API key"), "{text}");
    assert!(!text.contains("sk-secret"), "{text}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn a_redirect_to_another_origin_is_not_followed_and_one_within_is() {
    // The other origin: the same host on another port.
    let elsewhere = ScriptedServer::start(Box::new(good)).unwrap();
    let other = elsewhere.base_url();
    for code in [301, 302, 303, 307, 308] {
        let to = format!("{other}/chat/completions");
        let server = ScriptedServer::start(Box::new(move |_| {
            status(code, &[("Location", to.as_str())], "")
        }))
        .unwrap();
        let mut c = config(&[&server]);
        c.endpoints[0].api_key = Some(Secret::new("sk-secret-value"));
        let client = Client::new(c).unwrap();
        let e = client.chat(&request(), 0, &never).await.unwrap_err();
        let origin = other.trim_end_matches("/v1").to_string();
        assert!(
            matches!(&e, LlmError::Redirected { to, .. } if *to == origin),
            "{code}: {e:?}"
        );
        let text = e.to_string();
        assert!(
            text.contains("does not follow a redirect to another origin"),
            "{text}"
        );
        assert_eq!(server.requests().len(), 1, "{code}: not retried");
    }
    assert!(
        elsewhere.requests().is_empty(),
        "nothing reached the other origin"
    );
    // Within the origin, a redirect is followed.
    let server = ScriptedServer::start(Box::new(|r| {
        if r.path == "/v1/chat/completions" {
            status(307, &[("Location", "/v2/chat/completions")], "")
        } else {
            good(r)
        }
    }))
    .unwrap();
    let client = Client::new(config(&[&server])).unwrap();
    client.chat(&request(), 0, &never).await.unwrap();
    let paths: Vec<String> = server.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(paths, ["/v1/chat/completions", "/v2/chat/completions"]);
}

#[tokio::test(flavor = "current_thread")]
async fn a_404_is_not_retried_and_points_at_url_and_model() {
    let server = ScriptedServer::start(Box::new(|_| {
        status(404, &[], r#"{"error":"model 'test-model' not found"}"#)
    }))
    .unwrap();
    let client = Client::new(config(&[&server])).unwrap();
    let e = client
        .chat(&request(), 0, &never)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("HTTP 404"), "{e}");
    assert!(e.contains("not found"), "{e}");
    assert!(e.contains("check the base URL and the model name"), "{e}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn auto_mode_falls_back_to_the_text_protocol_and_stays_there() {
    let server = ScriptedServer::start(Box::new(|r| {
        let has_tools = r.json.as_ref().is_some_and(|j| j.get("tools").is_some());
        if has_tools {
            status(400, &[], r#"{"error":"tools are not supported"}"#)
        } else {
            Reply::Json(scripted::text(
                r,
                r#"Here: {"tool": "finish", "arguments": {"op_id": "op-3"}}"#,
            ))
        }
    }))
    .unwrap();
    let client = Client::new(config(&[&server])).unwrap();
    assert!(client.native_tools());
    let x = client.chat(&request(), 5, &never).await.unwrap();
    assert!(!x.native_tools);
    assert_eq!(x.attempts, 2);
    assert_eq!(
        x.response.message.tool_calls,
        vec![ToolCall::new("text-5", "finish", r#"{"op_id":"op-3"}"#)]
    );
    assert_eq!(
        parse_response(&x.raw, x.native_tools, 5).unwrap(),
        x.response
    );
    assert!(!client.native_tools());
    let sent = server.requests();
    assert_eq!(sent.len(), 2);
    assert!(sent[0].json.as_ref().unwrap().get("tools").is_some());
    let second = sent[1].json.as_ref().unwrap();
    assert!(second.get("tools").is_none());
    assert!(second["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("Name the faulty op."));

    let x = client.chat(&request(), 6, &never).await.unwrap();
    assert!(!x.native_tools);
    assert_eq!(x.attempts, 1);
    let sent = server.requests();
    assert_eq!(sent.len(), 3);
    assert!(sent[2].json.as_ref().unwrap().get("tools").is_none());
}

#[tokio::test(flavor = "current_thread")]
async fn a_400_about_something_else_keeps_native_tools() {
    let server = ScriptedServer::start(Box::new(|_| {
        status(
            400,
            &[],
            r#"{"error":{"message":"This model's maximum context length is 8192"}}"#,
        )
    }))
    .unwrap();
    let client = Client::new(config(&[&server])).unwrap();
    let e = client.chat(&request(), 0, &never).await.unwrap_err();
    assert!(matches!(e, LlmError::Status { status: 400, .. }), "{e:?}");
    assert!(e.to_string().contains("maximum context length"), "{e}");
    assert!(client.native_tools());
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn native_mode_does_not_fall_back_and_text_mode_never_offers_tools() {
    let server = ScriptedServer::start(Box::new(|r| {
        if r.json.as_ref().is_some_and(|j| j.get("tools").is_some()) {
            status(400, &[], "no tools here")
        } else {
            Reply::Json(scripted::text(r, r#"{"tool": "finish", "arguments": {}}"#))
        }
    }))
    .unwrap();
    let mut c = config(&[&server]);
    c.tool_mode = ToolMode::Native;
    let native = Client::new(c.clone()).unwrap();
    let e = native.chat(&request(), 0, &never).await.unwrap_err();
    assert!(matches!(e, LlmError::Status { status: 400, .. }), "{e:?}");
    assert!(e.to_string().contains("no tools here"));
    assert!(native.native_tools());
    assert_eq!(server.requests().len(), 1);

    c.tool_mode = ToolMode::Text;
    let text = Client::new(c).unwrap();
    assert!(!text.native_tools());
    let x = text.chat(&request(), 1, &never).await.unwrap();
    assert!(!x.native_tools);
    assert_eq!(x.response.message.tool_calls[0].id, "text-1");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test(flavor = "current_thread")]
async fn the_pool_alternates_and_a_retry_moves_to_the_other_endpoint() {
    let a = ScriptedServer::start(Box::new(good)).unwrap();
    let b = ScriptedServer::start(Box::new(good)).unwrap();
    let client = Client::new(config(&[&a, &b])).unwrap();
    for i in 0..4 {
        let mut req = request();
        req.messages.push(Message::user(format!("call {i}")));
        client.chat(&req, i, &never).await.unwrap();
    }
    let calls = |s: &ScriptedServer| -> Vec<String> {
        s.requests()
            .iter()
            .map(|r| r.json.as_ref().unwrap()["messages"][2]["content"].to_string())
            .collect()
    };
    assert_eq!(calls(&a), vec!["\"call 0\"", "\"call 2\""]);
    assert_eq!(calls(&b), vec!["\"call 1\"", "\"call 3\""]);

    let down = ScriptedServer::start(Box::new(|_| status(503, &[], "busy"))).unwrap();
    let up = ScriptedServer::start(Box::new(good)).unwrap();
    let client = Client::new(config(&[&down, &up])).unwrap();
    let x = client.chat(&request(), 0, &never).await.unwrap();
    assert_eq!(x.attempts, 2);
    assert_eq!(down.requests().len(), 1);
    assert_eq!(up.requests().len(), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn cancelling_during_a_slow_answer_returns_promptly() {
    let server = ScriptedServer::start(Box::new(|r| {
        Reply::Delay(Duration::from_secs(5), Box::new(good(r)))
    }))
    .unwrap();
    let mut c = config(&[&server]);
    c.timeout = Duration::from_secs(10);
    let client = Client::new(c).unwrap();
    let flag = Arc::new(AtomicBool::new(false));
    let setter = {
        let flag = Arc::clone(&flag);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            flag.store(true, Ordering::SeqCst);
        })
    };
    let t = Instant::now();
    let cancelled = || flag.load(Ordering::SeqCst);
    let e = client.chat(&request(), 0, &cancelled).await.unwrap_err();
    assert!(matches!(e, LlmError::Cancelled), "{e:?}");
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    setter.join().unwrap();
    // Cancelled before it starts: nothing is sent.
    let e = client.chat(&request(), 0, &|| true).await.unwrap_err();
    assert!(matches!(e, LlmError::Cancelled));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn a_refused_connection_is_unreachable() {
    let port = {
        let l = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        l.local_addr().unwrap().port()
    };
    let mut c = Config::new(format!("http://127.0.0.1:{port}/v1"), "m");
    c.retries = 1;
    c.backoff = Duration::from_millis(10);
    c.timeout = Duration::from_millis(300);
    let client = Client::new(c).unwrap();
    let e = client.chat(&request(), 0, &never).await.unwrap_err();
    match &e {
        LlmError::Unreachable {
            endpoint,
            attempts,
            detail,
        } => {
            assert_eq!(endpoint, &format!("http://127.0.0.1:{port}/v1"));
            assert_eq!(*attempts, 2);
            assert!(detail.contains("could not connect"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "current_thread")]
async fn concurrency_limits_the_requests_in_flight() {
    let server = ScriptedServer::start(Box::new(|r| {
        Reply::Delay(Duration::from_millis(150), Box::new(good(r)))
    }))
    .unwrap();
    for (concurrency, slow) in [(1, true), (2, false)] {
        let mut c = config(&[&server]);
        c.concurrency = concurrency;
        c.timeout = Duration::from_secs(5);
        let client = Client::new(c).unwrap();
        let req = request();
        let t = Instant::now();
        let (x, y) = tokio::join!(client.chat(&req, 0, &never), client.chat(&req, 1, &never));
        x.unwrap();
        y.unwrap();
        let took = t.elapsed();
        assert_eq!(took >= Duration::from_millis(300), slow, "{took:?}");
    }
}

#[test]
fn an_empty_pool_or_a_bad_url_is_a_config_error() {
    let mut c = Config::new("http://127.0.0.1:1/v1", "m");
    c.endpoints.clear();
    assert!(matches!(Client::new(c), Err(LlmError::Config(_))));
    let c = Config::new("ftp://user:pw@example.com/v1", "m");
    let e = Client::new(c).unwrap_err().to_string();
    assert!(e.contains("ftp://example.com/v1"), "{e}");
    assert!(!e.contains("pw"), "{e}");
}

#[test]
fn the_chat_future_can_be_spawned() {
    fn send<T: Send>(_: &T) {}
    let client = Client::new(Config::new("http://127.0.0.1:1/v1", "m")).unwrap();
    let req = request();
    let fut = client.chat(&req, 0, &never);
    send(&fut);
}

#[test]
fn backoff_doubles_up_to_the_cap() {
    let first = Duration::from_millis(500);
    assert_eq!(backoff(first, 0), first);
    assert_eq!(backoff(first, 3), Duration::from_secs(4));
    assert_eq!(backoff(first, 7), Config::MAX_BACKOFF);
    assert_eq!(backoff(first, 200), Config::MAX_BACKOFF);
    assert_eq!(backoff(Duration::from_secs(600), 0), Config::MAX_BACKOFF);
}

#[test]
fn retry_after_reads_seconds_and_http_dates() {
    let now = UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
    let secs = |s: &str| parse_retry_after(s, now).map(|d| d.as_secs());
    assert_eq!(secs(" 7 "), Some(7));
    assert_eq!(secs("Sun, 06 Nov 1994 08:49:57 GMT"), Some(20));
    assert_eq!(secs("Sunday, 06-Nov-94 08:50:37 GMT"), Some(60));
    assert_eq!(secs("Sun Nov  6 08:49:47 1994"), Some(10));
    assert_eq!(secs("Sat, 05 Nov 1994 08:49:37 GMT"), Some(0));
    assert_eq!(
        secs("Thu, 29 Feb 2024 00:00:00 GMT"),
        Some(1_709_164_800 - 784_111_777)
    );
    assert_eq!(secs("soon"), None);
    assert_eq!(secs("-3"), None);
    assert_eq!(secs("Sun, 06 Nov 1994 25:00:00 GMT"), None);
    assert_eq!(secs("Sun, 06 Foo 1994 08:49:57 GMT"), None);
}

#[test]
fn endpoints_are_named_without_credentials() {
    assert_eq!(
        endpoint_name("https://user:sk-x@api.example.com/v1?key=sk-y"),
        "https://api.example.com/v1"
    );
    assert_eq!(
        endpoint_name("http://127.0.0.1:8000/v1"),
        "http://127.0.0.1:8000/v1"
    );
    assert!(is_loopback("http://localhost:11434/v1"));
    assert!(is_loopback("http://[::1]:8000/v1"));
    assert!(!is_loopback("https://api.openai.com/v1"));
}
