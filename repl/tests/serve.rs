//! `memtrace serve` as a user runs it: it listens on loopback, answers the
//! API over real HTTP, refuses foreign Host headers and form posts, warns on
//! a non-loopback address, takes imports while it serves, tells another
//! memtrace process how to reach it, and stops cleanly on Ctrl-C.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::*;

struct Server {
    child: Child,
    url: String,
    addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(cwd: &Path, db: &Path, addr: &str) -> Server {
    start_with(cwd, db, &["--addr", addr])
}

/// `memtrace serve ARGS...`, once it listens.
fn start_with(cwd: &Path, db: &Path, args: &[&str]) -> Server {
    let mut child = command(cwd, Some(db), &[&["serve"], args].concat())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start memtrace serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("memtrace serve: listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    let addr = url.trim_start_matches("http://").to_string();
    Server { child, url, addr }
}

/// One HTTP/1.1 request; returns the status and the body.
fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !headers.iter().any(|(k, _)| *k == "Host") {
        head.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    let status: u16 = text.split(' ').nth(1).unwrap().parse().unwrap();
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

fn get(addr: &str, path: &str) -> serde_json::Value {
    let (status, body) = request(addr, "GET", path, &[], b"");
    assert_eq!(status, 200, "GET {path}: {body}");
    serde_json::from_str(&body).unwrap()
}

#[test]
fn serve_answers_over_http_takes_imports_and_stops_on_ctrl_c() {
    let (dir, db) = with_sample();
    let mut server = start(dir.path(), &db, "127.0.0.1:0");
    assert!(server.url.starts_with("http://127.0.0.1:"));
    let a = server.addr.clone();
    assert_eq!(get(&a, "/api/health")["traces"], 1);
    let (status, page) = request(&a, "GET", "/", &[], b"");
    assert_eq!(status, 200);
    assert!(page.contains("app.js"), "the page loads the app");

    // A page of another site resolving to 127.0.0.1 is refused, and so is
    // a form post.
    let (status, body) = request(&a, "GET", "/api/health", &[("Host", "evil.example")], b"");
    assert_eq!(status, 403, "{body}");
    // Two Host headers are refused, whichever is first.
    for hosts in [[a.as_str(), "evil.example"], ["evil.example", a.as_str()]] {
        let (status, body) = request(
            &a,
            "GET",
            "/api/health",
            &[("Host", hosts[0]), ("Host", hosts[1])],
            b"",
        );
        assert_eq!(status, 400, "{hosts:?}: {body}");
        assert!(body.contains("2 Host headers"), "{body}");
    }
    let (status, body) = request(
        &a,
        "POST",
        "/api/query",
        &[("Content-Type", "text/plain")],
        br#"{"statement":"SHOW TRACES"}"#,
    );
    assert_eq!(status, 415, "{body}");

    // Another memtrace process cannot open the database, and is told where
    // the server is.
    let gen_dir = dir.path().join("g");
    ok(run(
        dir.path(),
        None,
        &[
            "gen",
            "--system",
            "rag",
            "--traces",
            "1",
            "--questions",
            "5",
            "--sessions",
            "3..3",
            "--messages",
            "5..5",
            "--out",
            gen_dir.to_str().unwrap(),
        ],
    ));
    let file = std::fs::read_dir(&gen_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json") && !p.ends_with("manifest.json"))
        .unwrap();
    let o = run(dir.path(), Some(&db), &["import", file.to_str().unwrap()]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("open in another memtrace process"), "{err}");
    assert!(
        err.contains(&format!("answers at {}", server.url)) && err.contains("/api/import"),
        "{err}"
    );

    // Through the server it imports, and readers see it at once.
    let body = std::fs::read(&file).unwrap();
    let (status, out) = request(
        &a,
        "POST",
        "/api/import?source=test",
        &[("Content-Type", "application/json")],
        &body,
    );
    assert_eq!(status, 201, "{out}");
    assert_eq!(get(&a, "/api/health")["traces"], 2);
    assert_eq!(
        get(&a, "/api/traces?system=rag")["traces"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    // Commands that only read open it beside the server, as many at once
    // as wanted, and see what the server committed; a writing one is
    // refused with the way through the server.
    let readers: Vec<_> = (0..3)
        .map(|_| {
            command(dir.path(), Some(&db), &["traces", "--format", "json"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for r in readers {
        let o = ok(r.wait_with_output().unwrap());
        assert_eq!(json(&o).as_array().unwrap().len(), 2);
    }
    let o = ok(run(
        dir.path(),
        Some(&db),
        &["query", "FIND ops RETURN count(*)", "--format", "json"],
    ));
    assert!(!stdout(&o).is_empty());
    let o = run(
        dir.path(),
        Some(&db),
        &["query", "ATTRIBUTE CASES USING evidence"],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("open in another memtrace process"),
        "{}",
        stderr(&o)
    );

    // Ctrl-C: it stops, and the database is whole and free again.
    let status = interrupt(&mut server);
    assert!(status.success(), "{status:?}");
    assert!(!db.join("serve.json").exists(), "the note is removed");
    let o = ok(run(dir.path(), Some(&db), &["traces", "--format", "json"]));
    assert_eq!(json(&o).as_array().unwrap().len(), 2);
}

/// Sends SIGINT and waits (up to 20 s) for the server to stop.
fn interrupt(server: &mut Server) -> std::process::ExitStatus {
    // SAFETY: sending SIGINT to our own child process.
    unsafe { libc::kill(server.child.id() as i32, libc::SIGINT) };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(s) = server.child.try_wait().unwrap() {
            return s;
        }
        assert!(Instant::now() < deadline, "serve did not stop on SIGINT");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A small query answers 200.
fn answers_a_query(addr: &str) {
    let (status, out) = request(
        addr,
        "POST",
        "/api/query",
        &[("Content-Type", "application/json")],
        br#"{"statement":"FIND ops RETURN count(*)"}"#,
    );
    assert_eq!(status, 200, "{out}");
}

/// Opens a connection and sends `head` (and nothing more).
fn stall(addr: &str, head: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    s
}

/// What the server sends on a stalled connection until it closes it.
fn answer_of(mut s: TcpStream) -> String {
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn stalled_clients_hold_no_thread_and_are_cut_off() {
    let (dir, db) = with_sample();
    let server = start_with(
        dir.path(),
        &db,
        &[
            "--addr",
            "127.0.0.1:0",
            "--threads",
            "1",
            "--idle-timeout",
            "1",
            "--header-timeout",
            "1",
        ],
    );
    let a = server.addr.clone();
    let post = |path: &str, len: usize, start: &str| {
        format!(
            "POST {path} HTTP/1.1\r\nHost: {a}\r\nContent-Type: application/json\r\nContent-Length: {len}\r\n\r\n{start}"
        )
    };
    // Twice as many stalled clients of each kind as the server has places:
    // halfway through their headers, through an upload, through a query.
    let mut heads = Vec::new();
    let mut bodies = Vec::new();
    for _ in 0..8 {
        heads.push(stall(&a, &format!("GET /api/health HTTP/1.1\r\nHost: {a}")));
        bodies.push(stall(&a, &post("/api/import", 100_000, "{\"graph")));
        bodies.push(stall(&a, &post("/api/query", 1000, "{")));
    }
    // Every endpoint still answers, at once.
    assert_eq!(get(&a, "/api/health")["traces"], 1);
    answers_a_query(&a);
    // A stalled body is answered 408 and nothing of it is stored; stalled
    // headers get the connection closed.
    for s in bodies {
        let text = answer_of(s);
        assert!(text.starts_with("HTTP/1.1 408"), "{text}");
        assert!(text.contains("nothing of it was stored"), "{text}");
    }
    for s in heads {
        assert_eq!(
            answer_of(s),
            "",
            "a stalled head is closed without an answer"
        );
    }
    assert_eq!(get(&a, "/api/health")["traces"], 1);
}

#[test]
fn a_query_whose_client_leaves_is_stopped_and_frees_its_place() {
    let (dir, db) = with_sample();
    let mut server = start_with(
        dir.path(),
        &db,
        &[
            "--addr",
            "127.0.0.1:0",
            "--threads",
            "1",
            "--query-timeout",
            "600",
            "--log",
        ],
    );
    let a = server.addr.clone();
    // A cross product of nine node sets: runs for minutes on the sample.
    let heavy =
        br#"{"statement":"MATCH (a), (b), (c), (d), (e), (f), (g), (h), (i) RETURN count(*)"}"#;
    let mut s = stall(
        &a,
        &format!(
            "POST /api/query HTTP/1.1\r\nHost: {a}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            heavy.len()
        ),
    );
    s.write_all(heavy).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    // While it holds the only place, the page and health still answer.
    assert_eq!(get(&a, "/api/health")["traces"], 1);
    assert_eq!(request(&a, "GET", "/", &[], b"").0, 200);
    drop(s);
    // Its place is free again well before the 10 s a request waits for
    // one: the query stopped when its client left.
    answers_a_query(&a);
    assert!(interrupt(&mut server).success());
    let mut log = String::new();
    server
        .child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    assert!(
        log.contains("POST /api/query: the client went away; its work was stopped"),
        "{log}"
    );
}

#[test]
fn serve_warns_on_a_non_loopback_address_and_refuses_a_bad_one() {
    let (dir, db) = with_sample();
    let mut child = command(dir.path(), Some(&db), &["serve", "--addr", "0.0.0.0:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(line.starts_with("warning: serving on 0.0.0.0:"), "{line}");
    let o = run(dir.path(), Some(&db), &["serve", "--addr", "nonsense"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--addr nonsense"), "{}", stderr(&o));
    let o = run(dir.path(), Some(&dir.path().join("missing.db")), &["serve"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("no memtrace database"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_long_condition_stops_at_the_query_timeout_and_when_its_client_leaves() {
    let dir = tempfile::tempdir().unwrap();
    gen_set(
        dir.path(),
        "g",
        &["--system", "rag", "--traces", "1", "--seed", "5"],
    );
    let db = dir.path().join("t.db");
    ok(run(dir.path(), Some(&db), &["import", "g"]));
    // 20,000 terms on each of some two thousand variables: a minute of work
    // when a condition is evaluated whole between two looks at the token.
    let chain = serde_json::json!({
        "statement": format!(
            "FIND vars WHERE {} RETURN count(*)",
            vec!["var.version >= 1"; 20_000].join(" AND ")
        )
    })
    .to_string();
    let head = |a: &str| {
        format!(
            "POST /api/query HTTP/1.1\r\nHost: {a}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            chain.len()
        )
    };

    // The query timeout stops it.
    let server = start_with(
        dir.path(),
        &db,
        &[
            "--addr",
            "127.0.0.1:0",
            "--threads",
            "1",
            "--query-timeout",
            "3",
        ],
    );
    let a = server.addr.clone();
    let started = Instant::now();
    let mut s = stall(&a, &head(&a));
    s.write_all(chain.as_bytes()).unwrap();
    let answer = answer_of(s);
    let took = started.elapsed();
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("ran longer than 3 s"), "{answer}");
    assert!(took < Duration::from_secs(12), "a 3 s limit took {took:?}");
    drop(server);

    // A client that leaves frees the one place at once: the next query does
    // not wait the 10 s a request waits for a place, and does not get 503.
    let mut server = start_with(
        dir.path(),
        &db,
        &[
            "--addr",
            "127.0.0.1:0",
            "--threads",
            "1",
            "--query-timeout",
            "600",
            "--log",
        ],
    );
    let a = server.addr.clone();
    let mut s = stall(&a, &head(&a));
    s.write_all(chain.as_bytes()).unwrap();
    // Long enough for the statement to be parsed and planned.
    std::thread::sleep(Duration::from_millis(3000));
    drop(s);
    answers_a_query(&a);
    assert!(interrupt(&mut server).success());
    let mut log = String::new();
    server
        .child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    assert!(
        log.contains("POST /api/query: the client went away; its work was stopped"),
        "{log}"
    );
}

#[test]
fn an_import_past_its_limit_gets_413_and_one_within_is_received_into_a_file() {
    let (dir, db) = with_sample();
    let server = start_with(
        dir.path(),
        &db,
        &["--addr", "127.0.0.1:0", "--max-import", "64K"],
    );
    let a = server.addr.clone();
    let uploads = db.join("uploads");
    // Declared too large: refused at once, before any of it is sent.
    let s = stall(
        &a,
        &format!(
            "POST /api/import HTTP/1.1\r\nHost: {a}\r\nContent-Type: application/json\r\nContent-Length: 200000\r\n\r\n"
        ),
    );
    let text = answer_of(s);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(text.contains("--max-import"), "{text}");
    // Sent in chunks without a length: refused once past the limit.
    let mut s = stall(
        &a,
        &format!(
            "POST /api/import HTTP/1.1\r\nHost: {a}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        ),
    );
    let chunk = vec![b' '; 16 << 10];
    for _ in 0..8 {
        if s.write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
            .is_err()
            || s.write_all(&chunk).is_err()
            || s.write_all(b"\r\n").is_err()
        {
            break;
        }
    }
    let text = answer_of(s);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    // Within the limit it is received into a file in the database's
    // folder as it arrives (half of it there while the rest is awaited),
    // then imported, and the file is gone.
    let sample = std::fs::read(sample()).unwrap();
    let mut doc: serde_json::Value = serde_json::from_slice(&sample).unwrap();
    doc["graph_id"] = "uploaded".into();
    let body = doc.to_string().into_bytes();
    let half = body.len() / 2;
    let mut s = stall(
        &a,
        &format!(
            "POST /api/import HTTP/1.1\r\nHost: {a}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        ),
    );
    s.write_all(&body[..half]).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let received = loop {
        let sizes: Vec<u64> = std::fs::read_dir(&uploads)
            .map(|d| {
                d.filter_map(|e| e.ok()?.metadata().ok())
                    .map(|m| m.len())
                    .collect()
            })
            .unwrap_or_default();
        if sizes.contains(&(half as u64)) || Instant::now() > deadline {
            break sizes;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(received, [half as u64], "the half sent is in one file");
    s.write_all(&body[half..]).unwrap();
    let text = answer_of(s);
    assert!(text.starts_with("HTTP/1.1 201"), "{text}");
    assert_eq!(
        std::fs::read_dir(&uploads).unwrap().count(),
        0,
        "the file is removed"
    );
    assert_eq!(get(&a, "/api/health")["traces"], 2);
}

/// Keeps sending a request's head, one byte every `every`, until `stop`.
fn trickle(
    addr: &str,
    every: Duration,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<()> {
    let mut s = TcpStream::connect(addr).unwrap();
    std::thread::spawn(move || {
        let head = b"GET /api/health HTTP/1.1\r\nX-Slow: ";
        let _ = s.write_all(head);
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            if s.write_all(b"a").is_err() {
                return;
            }
            std::thread::sleep(every);
        }
    })
}

#[test]
fn stalled_and_trickling_connections_are_shed_for_those_that_behave() {
    let (dir, db) = with_sample();
    let server = start_with(
        dir.path(),
        &db,
        &[
            "--addr",
            "127.0.0.1:0",
            "--max-connections",
            "32",
            "--header-timeout",
            "60",
            "--idle-timeout",
            "60",
        ],
    );
    let a = server.addr.clone();
    // Twice as many clients as connections may be open: half send nothing
    // after half a head, half send it a byte every half second.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut stalled = Vec::new();
    let mut trickling = Vec::new();
    for _ in 0..32 {
        stalled.push(stall(&a, "GET /api/health HTTP/1.1\r\nHo"));
        trickling.push(trickle(&a, Duration::from_millis(500), stop.clone()));
    }
    std::thread::sleep(Duration::from_millis(500));
    // Health probes and queries on fresh connections, some at once, all
    // answered.
    let started = Instant::now();
    let clients: Vec<_> = (0..40)
        .map(|i| {
            let a = a.clone();
            std::thread::spawn(move || {
                if i % 2 == 0 {
                    request(&a, "GET", "/api/health", &[], b"").0
                } else {
                    request(
                        &a,
                        "POST",
                        "/api/query",
                        &[("Content-Type", "application/json")],
                        br#"{"statement":"FIND ops RETURN count(*)"}"#,
                    )
                    .0
                }
            })
        })
        .collect();
    let statuses: Vec<u16> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    assert!(statuses.iter().all(|&s| s == 200), "{statuses:?}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for t in trickling {
        t.join().unwrap();
    }
    // The stalled clients were shed: closed without an answer.
    let closed = stalled.into_iter().filter(|s| {
        let mut s = s.try_clone().unwrap();
        s.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut buf = [0u8; 1];
        matches!(s.read(&mut buf), Ok(0))
    });
    assert!(closed.count() >= 8, "stalled clients were shed first");
}
