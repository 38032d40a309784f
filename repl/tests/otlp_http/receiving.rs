//! Spans received in pieces, kills and Ctrl-C, malformed and slow requests, bursts and back-pressure.

use super::*;

#[test]
fn spans_in_pieces_as_json_protobuf_and_gzip_become_the_traces_the_file_import_makes() {
    let (dir, db) = database();
    let server = serve(dir.path(), &db, &["--otlp-quiet", "0.3"]);
    // The two traces' spans interleaved over five requests in three encodings.
    let spans = spans_of(&fixture());
    let mut pieces: Vec<Vec<(Value, Value, Value)>> = vec![Vec::new(); 5];
    for (i, s) in spans.into_iter().enumerate() {
        pieces[i % 5].push(s);
    }
    for (k, piece) in pieces.iter().enumerate() {
        let doc = request_of(piece);
        let (status, head, body) = match k % 3 {
            0 => post_json(&server.addr, &doc),
            1 => request(
                &server.addr,
                "POST",
                "/v1/traces",
                &[("Content-Type", "application/x-protobuf")],
                &protobuf(&doc),
            ),
            _ => request(
                &server.addr,
                "POST",
                "/v1/traces",
                &[
                    ("Content-Type", "application/x-protobuf"),
                    ("Content-Encoding", "gzip"),
                ],
                &gzip(&protobuf(&doc)),
            ),
        };
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        if k % 3 == 0 {
            assert!(head.contains("content-type: application/json"), "{head}");
            assert_eq!(serde_json::from_slice::<Value>(&body).unwrap(), json!({}));
        } else {
            assert!(
                head.contains("content-type: application/x-protobuf"),
                "{head}"
            );
            let r = opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse::decode(&body[..]).unwrap();
            assert!(r.partial_success.is_none());
        }
    }
    let listing = wait_for(&server.addr, &[RAG, FOLLOW_UP]);
    // The failed evaluation is a case, and the evidence method gives it a verdict.
    let cases = api(&server.addr, &format!("/api/traces/{RAG}/cases"));
    assert_eq!(cases["cases"].as_array().unwrap().len(), 1, "{cases}");
    let none = api(&server.addr, &format!("/api/traces/{FOLLOW_UP}/cases"));
    assert_eq!(none["cases"].as_array().unwrap().len(), 0, "{none}");
    drop(server);
    let o = ok(run(
        dir.path(),
        Some(&db),
        &[
            "query",
            &format!("ATTRIBUTE CASES IN TRACE '{RAG}' USING evidence"),
            "--format",
            "json",
        ],
    ));
    let rows = json(&o)["rows"].clone();
    assert_eq!(rows.as_array().unwrap().len(), 1, "{rows}");
    assert!(rows[0][2].is_string(), "a verdict: {rows}");
    // The same spans imported from the file: the same traces.
    let other = dir.path().join("file.db");
    ok(run(
        dir.path(),
        Some(&other),
        &[
            "import",
            fixtures().join("otlp/rag_session.json").to_str().unwrap(),
        ],
    ));
    for g in [RAG, FOLLOW_UP] {
        assert_eq!(
            export(dir.path(), &db, g),
            export(dir.path(), &other, g),
            "{g}"
        );
    }
    let (v, o, e) = counts(&listing, RAG);
    assert!(v > 10 && o == 7 && e > 10, "{v} {o} {e}");
}

#[test]
fn a_kill_between_the_acknowledgement_and_the_assembly_loses_nothing() {
    let (dir, db) = database();
    let server = serve(dir.path(), &db, &["--otlp-quiet", "60"]);
    let (status, _, body) = post_json(&server.addr, &fixture());
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    // Acknowledged, not yet stored (the quiet period is a minute): kill -9.
    assert!(!stored(&server.addr).iter().any(|g| g == RAG));
    drop(server);
    let listed = stdout(&ok(run(dir.path(), Some(&db), &["traces"])));
    assert!(!listed.contains(RAG), "{listed}");
    // The next start takes the spans back from the spool and stores them.
    let server = serve(dir.path(), &db, &["--otlp-quiet", "0.2"]);
    wait_for(&server.addr, &[RAG, FOLLOW_UP]);
    drop(server);
    let other = dir.path().join("file.db");
    ok(run(
        dir.path(),
        Some(&other),
        &[
            "import",
            fixtures().join("otlp/rag_session.json").to_str().unwrap(),
        ],
    ));
    assert_eq!(
        export(dir.path(), &db, RAG),
        export(dir.path(), &other, RAG)
    );
    // A third start stores nothing again.
    let server = serve(dir.path(), &db, &["--otlp-quiet", "0.2"]);
    std::thread::sleep(Duration::from_millis(800));
    let all = stored(&server.addr);
    assert_eq!(all.iter().filter(|g| *g == RAG).count(), 1, "{all:?}");
}

#[test]
fn ctrl_c_stores_every_trace_held_and_late_spans_store_the_trace_again() {
    let (dir, db) = database();
    let spans = spans_of(&fixture());
    // The RAG turn without its evaluation, which comes later.
    let (eval, rest): (Vec<_>, Vec<_>) = spans
        .into_iter()
        .filter(|(_, _, sp)| sp["traceId"] == RAG.trim_start_matches("otel-"))
        .partition(|(_, _, sp)| sp["name"] == "correctness_eval");
    let server = serve(dir.path(), &db, &["--otlp-quiet", "60"]);
    assert_eq!(post_json(&server.addr, &request_of(&rest)).0, 200);
    // SIGTERM: the receiver stores what it holds before it stops.
    let mut server = server;
    let pid = server.child.id().to_string();
    assert!(std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let status = server.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let listed = stdout(&ok(run(
        dir.path(),
        Some(&db),
        &["traces", "--format", "json"],
    )));
    assert!(listed.contains(RAG), "{listed}");
    let q = format!("FIND cases IN TRACE '{RAG}' RETURN count(*)");
    let cases = json(&ok(run(
        dir.path(),
        Some(&db),
        &["query", &q, "--format", "json"],
    )));
    assert_eq!(cases["rows"][0][0], 0);
    // The evaluation comes minutes later: the trace is stored again, whole,
    // with its case, and the earlier one is dropped (and logged).
    let server = serve(dir.path(), &db, &["--otlp-quiet", "0.2"]);
    assert_eq!(post_json(&server.addr, &request_of(&eval)).0, 200);
    let start = Instant::now();
    loop {
        let (status, _, body) = request(
            &server.addr,
            "POST",
            "/api/query",
            &[("Content-Type", "application/json")],
            json!({ "statement": q }).to_string().as_bytes(),
        );
        let text = String::from_utf8_lossy(&body).into_owned();
        if status == 200 {
            let rows: Value = serde_json::from_str(&text).unwrap();
            if rows["rows"][0][0] == 1 {
                break;
            }
        } else {
            // The moment between storing the trace again and dropping the
            // earlier one: the graph id names both.
            assert!(status == 400 && text.contains("several"), "{status} {text}");
        }
        assert!(start.elapsed() < Duration::from_secs(30), "{text}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let all = stored(&server.addr);
    assert_eq!(all.iter().filter(|g| *g == RAG).count(), 1, "{all:?}");
    let found = api_query(
        &server.addr,
        &format!("FIND traces WHERE trace.graph_id = '{RAG}' RETURN trace.source"),
    );
    assert!(
        found["rows"][0][0].as_str().unwrap().contains("late spans"),
        "{found}"
    );
    drop(server);
    let log = stdout(&ok(run(dir.path(), Some(&db), &["log"])));
    assert!(log.contains("superseded by"), "{log}");
}

#[test]
fn malformed_oversized_and_wrongly_typed_requests_get_their_status() {
    let (dir, db) = database();
    let server = serve(
        dir.path(),
        &db,
        &["--otlp-quiet", "0.2", "--otlp-max-body", "1"],
    );
    let a = &server.addr;
    // Not JSON: 400 with a Status naming the problem.
    let (status, _, body) = request(
        a,
        "POST",
        "/v1/traces",
        &[("Content-Type", "application/json")],
        b"{\"resourceSpans\": [",
    );
    assert_eq!(status, 400);
    let s: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(s["code"], 3);
    assert!(s["message"].as_str().unwrap().contains("not JSON"), "{s}");
    // Not protobuf.
    let (status, _, body) = request(
        a,
        "POST",
        "/v1/traces",
        &[("Content-Type", "application/x-protobuf")],
        b"\xff\xff\xff\xff",
    );
    assert_eq!(status, 400);
    let s = receiver_status(&body);
    assert!(s.contains("ExportTraceServiceRequest"), "{s}");
    // A wrong structure: 400 naming the place.
    let (status, _, body) = post_json(a, &json!({"resourceSpans": [{"scopeSpans": 7}]}));
    assert_eq!(status, 400);
    let s: Value = serde_json::from_slice(&body).unwrap();
    assert!(
        s["message"]
            .as_str()
            .unwrap()
            .contains("resourceSpans[0].scopeSpans"),
        "{s}"
    );
    // One bad span among good ones: 200 with partial success.
    let mut doc = fixture();
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][2]["spanId"] = json!("xyz");
    let (status, _, body) = post_json(a, &doc);
    assert_eq!(status, 200);
    let s: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(s["partialSuccess"]["rejectedSpans"], "1", "{s}");
    assert!(
        s["partialSuccess"]["errorMessage"]
            .as_str()
            .unwrap()
            .contains("spans[2].spanId"),
        "{s}"
    );
    // Other media types and methods.
    let (status, _, _) = request(
        a,
        "POST",
        "/v1/traces",
        &[("Content-Type", "text/plain")],
        b"x",
    );
    assert_eq!(status, 415);
    let (status, _, _) = request(a, "GET", "/v1/traces", &[], b"");
    assert_eq!(status, 405);
    let (status, _, _) = request(
        a,
        "POST",
        "/v1/traces",
        &[
            ("Content-Type", "application/json"),
            ("Content-Encoding", "br"),
        ],
        b"{}",
    );
    assert_eq!(status, 415);
    // Over the limit (1 MiB), as sent and once decompressed.
    let big = vec![b' '; (1 << 20) + 10];
    let (status, _, body) = request(
        a,
        "POST",
        "/v1/traces",
        &[("Content-Type", "application/json")],
        &big,
    );
    assert_eq!(status, 413, "{}", String::from_utf8_lossy(&body));
    let bomb = gzip(&vec![b' '; 8 << 20]);
    assert!(bomb.len() < 1 << 20);
    let (status, _, _) = request(
        a,
        "POST",
        "/v1/traces",
        &[
            ("Content-Type", "application/json"),
            ("Content-Encoding", "gzip"),
        ],
        &bomb,
    );
    assert_eq!(status, 413);
    // An empty request is a request with no spans.
    assert_eq!(post_json(a, &json!({})).0, 200);
    // A foreign Host is refused as on the rest of the server.
    let (status, _, _) = request(
        a,
        "POST",
        "/v1/traces",
        &[
            ("Content-Type", "application/json"),
            ("Host", "evil.example"),
        ],
        b"{}",
    );
    assert_eq!(status, 403);
    // The good spans of the partly refused request were kept.
    wait_for(a, &[RAG, FOLLOW_UP]);
}

/// The message of a protobuf `google.rpc.Status` (field 2).
fn receiver_status(body: &[u8]) -> String {
    #[derive(Clone, PartialEq, prost::Message)]
    struct Status {
        #[prost(int32, tag = "1")]
        code: i32,
        #[prost(string, tag = "2")]
        message: String,
    }
    let s = Status::decode(body).unwrap();
    assert_eq!(s.code, 3);
    s.message
}

#[test]
fn a_slow_client_is_cut_off_without_holding_up_the_others() {
    let (dir, db) = database();
    let server = serve(
        dir.path(),
        &db,
        &["--otlp-quiet", "0.2", "--idle-timeout", "1"],
    );
    let addr = server.addr.clone();
    // Several clients send half a body and stall.
    let stalled: Vec<_> = (0..12)
        .map(|_| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(&addr).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
                write!(
                    s,
                    "POST /v1/traces HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"resourceSpans\": ["
                )
                .unwrap();
                let mut out = Vec::new();
                let _ = s.read_to_end(&mut out);
                String::from_utf8_lossy(&out).into_owned()
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    // Meanwhile an exporter is answered at once.
    let start = Instant::now();
    assert_eq!(post_json(&addr, &fixture()).0, 200);
    assert!(start.elapsed() < Duration::from_secs(5));
    for t in stalled {
        let answer = t.join().unwrap();
        assert!(
            answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
            "{answer}"
        );
    }
    wait_for(&addr, &[RAG, FOLLOW_UP]);
}

#[test]
fn a_burst_of_concurrent_exporters_loses_and_doubles_nothing() {
    let (dir, db) = database();
    let server = serve(dir.path(), &db, &["--otlp-quiet", "0.5"]);
    let addr = server.addr.clone();
    let base = spans_of(&fixture());
    // 16 exporters, each sending 4 traces (the fixture's two with new trace
    // ids) in 3 requests each, protobuf: 64 traces, 96 requests at once.
    const EXPORTERS: usize = 16;
    let threads: Vec<_> = (0..EXPORTERS)
        .map(|e| {
            let addr = addr.clone();
            let base = base.clone();
            std::thread::spawn(move || {
                let mut sent = Vec::new();
                for round in 0..2 {
                    let mut spans = base.clone();
                    let mut ids = Vec::new();
                    for (_, _, sp) in &mut spans {
                        let t = sp["traceId"].as_str().unwrap();
                        let new = format!("{:04x}{:02x}{}", e + 1, round, &t[6..]);
                        sp["traceId"] = json!(new);
                        if !ids.contains(&new) {
                            ids.push(new);
                        }
                    }
                    for chunk in spans.chunks(5) {
                        let body = protobuf(&request_of(chunk));
                        let mut tries = 0;
                        loop {
                            let (status, head, _) = request(
                                &addr,
                                "POST",
                                "/v1/traces",
                                &[("Content-Type", "application/x-protobuf")],
                                &body,
                            );
                            if status == 200 {
                                break;
                            }
                            // An exporter retries 429 and 503 after Retry-After.
                            assert!(status == 429 || status == 503, "{status}");
                            assert!(head.contains("retry-after:"), "{head}");
                            tries += 1;
                            assert!(tries < 20);
                            std::thread::sleep(Duration::from_millis(200));
                        }
                    }
                    sent.extend(ids.into_iter().map(|i| format!("otel-{i}")));
                }
                sent
            })
        })
        .collect();
    let mut all: Vec<String> = Vec::new();
    for t in threads {
        all.extend(t.join().unwrap());
    }
    assert_eq!(all.len(), EXPORTERS * 4);
    let want: Vec<&str> = all.iter().map(String::as_str).collect();
    let listing = wait_for(&addr, &want);
    let have = stored(&addr);
    for g in &all {
        assert_eq!(have.iter().filter(|h| *h == g).count(), 1, "{g}");
    }
    let (v, o, _) = counts(&listing, &all[0]);
    assert_eq!(o, 7);
    assert!(v > 10);
}

#[test]
fn too_much_held_gets_503_with_retry_after_and_collect_only_receives() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("new.db");
    // collect creates the database, and answers only the receiver (and health).
    let server = start(
        dir.path(),
        &db,
        &[
            "collect",
            "--addr",
            "127.0.0.1:0",
            "--otlp-quiet",
            "60",
            "--otlp-max-pending",
            "1",
        ],
    );
    let a = &server.addr;
    assert_eq!(request(a, "GET", "/api/traces", &[], b"").0, 404);
    assert_eq!(request(a, "GET", "/api/health", &[], b"").0, 200);
    let base = spans_of(&fixture());
    let mut refused = None;
    for round in 0..200 {
        let mut spans = base.clone();
        for (_, _, sp) in &mut spans {
            let t = sp["traceId"].as_str().unwrap().to_string();
            sp["traceId"] = json!(format!("{round:06x}{}", &t[6..]));
        }
        let (status, head, body) = post_json(a, &request_of(&spans));
        if status == 503 {
            refused = Some((head, body));
            break;
        }
        assert_eq!(status, 200);
    }
    let (head, body) = refused.expect("a 503 once 1 MiB is held");
    assert!(head.contains("retry-after:"), "{head}");
    let s: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(s["code"], 14);
    assert!(
        s["message"]
            .as_str()
            .unwrap()
            .contains("--otlp-max-pending"),
        "{s}"
    );
    // Ctrl-C stores what was held; the database now has the traces.
    let mut server = server;
    let pid = server.child.id().to_string();
    std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert!(server.child.wait().unwrap().success());
    let stats = json(&ok(run(
        dir.path(),
        Some(&db),
        &["stats", "--format", "json"],
    )));
    assert!(stats["traces"].as_u64().unwrap() >= 2, "{stats}");
}
