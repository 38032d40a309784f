// End-to-end tests of LLM attribution through the binary, against a scripted
// OpenAI-compatible server on 127.0.0.1 that the test starts: configuration
// from the environment, attribute, eval with cost, re-runs from the cache,
// the written report summary, prompt feedback, and errors.

mod common;

use std::path::Path;
use std::process::Output;

use common::*;
use memtrace::attrib::agent::walker;
use memtrace::llm::scripted::{self, Reply, ScriptedServer};

/// Variables that could point the binary at a real endpoint or config file.
const LLM_VARS: &[&str] = &[
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "MEMTRACE_LLM_BASE_URL",
    "MEMTRACE_LLM_API_KEY",
    "MEMTRACE_LLM_MODEL",
    "MEMTRACE_LLM_CONFIG",
    "MEMTRACE_LLM_TIMEOUT",
    "MEMTRACE_LLM_RETRIES",
    "MEMTRACE_LLM_BACKOFF_MS",
    "MEMTRACE_LLM_TOOLS",
    "MEMTRACE_EMBED_BASE_URL",
    "MEMTRACE_EMBED_API_KEY",
    "MEMTRACE_EMBED_MODEL",
    "XDG_CONFIG_HOME",
];

/// `memtrace --db DB ARGS` in `cwd` with a clean LLM environment plus `env`.
fn llm_run(cwd: &Path, db: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut c = command(cwd, Some(db), args);
    for v in LLM_VARS {
        c.env_remove(v);
    }
    c.env("HOME", cwd);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run memtrace")
}

fn fail(o: Output) -> String {
    assert!(
        !o.status.success(),
        "memtrace should have failed: {}",
        stdout(&o)
    );
    stderr(&o)
}

#[test]
fn hybrid_attribution_eval_report_and_feedback_against_a_local_endpoint() {
    let (dir, db) = generated("3");
    let cwd = dir.path();
    let server = ScriptedServer::start(walker::script()).unwrap();
    let url = server.base_url();
    let env = [
        ("MEMTRACE_LLM_BASE_URL", url.as_str()),
        ("MEMTRACE_LLM_MODEL", "walker"),
    ];

    let o = ok(llm_run(
        cwd,
        &db,
        &env,
        &["attribute", "--using", "hybrid", "--format", "json"],
    ));
    assert!(
        stderr(&o).contains(&format!("LLM: model walker at {url}, no key")),
        "{}",
        stderr(&o)
    );
    let verdicts = json(&o);
    let verdicts = verdicts.as_array().unwrap();
    assert!(verdicts.len() >= 20, "{}", verdicts.len());
    for v in verdicts {
        assert_eq!(v["method"], "hybrid");
        assert_eq!(v["model"], "walker");
        assert!(v["error_type"].is_string(), "{v}");
        assert!(v["cost"]["calls"].as_u64().unwrap() >= 1, "{v}");
        assert!(v["cost"]["tokens_in"].as_u64().unwrap() > 0, "{v}");
    }
    let sent = server.requests().len();
    assert!(sent >= verdicts.len());

    // A re-run is answered from the database's cache and stores nothing new.
    let o = ok(llm_run(cwd, &db, &env, &["attribute", "--using", "hybrid"]));
    assert!(
        stdout(&o).contains("0 new verdict(s) stored"),
        "{}",
        stdout(&o)
    );
    assert_eq!(server.requests().len(), sent);

    // Stored with their cost, queryable.
    let o = ok(llm_run(
        cwd,
        &db,
        &env,
        &[
            "query",
            "--format",
            "json",
            "FIND attributions WHERE method = 'hybrid' RETURN count(*) AS n, min(calls) AS c, min(tokens_in) AS t, min(model) AS m",
        ],
    ));
    let rows = json(&o);
    let row = &rows["rows"][0];
    assert_eq!(row[0].as_u64(), Some(verdicts.len() as u64), "{rows}");
    assert!(
        row[1].as_u64().unwrap() >= 1 && row[2].as_u64().unwrap() > 0,
        "{rows}"
    );
    assert_eq!(row[3], "walker");

    // eval: accuracy as for the evidence method, plus cost.
    let o = ok(llm_run(
        cwd,
        &db,
        &env,
        &[
            "eval",
            "--method",
            "hybrid",
            "--setting",
            "benchmark",
            "--format",
            "json",
        ],
    ));
    let e = json(&o);
    assert_eq!(e["method"], "hybrid");
    assert!(e["cases"].as_u64().unwrap() > 0);
    assert!(e["error_type_accuracy"].as_f64().unwrap() >= 0.85, "{e}");
    assert_eq!(
        e["cost"]["calls"], 0,
        "all answers came from the cache: {e}"
    );
    assert!(e["cost"]["cached_calls"].as_u64().unwrap() >= e["cases"].as_u64().unwrap());
    assert!(e["cost_per_case"]["tokens_in"].as_u64().unwrap() > 0);
    assert_eq!(e["cost_by_system"].as_object().unwrap().len(), 4, "{e}");
    let o = ok(llm_run(
        cwd,
        &db,
        &env,
        &["eval", "--method", "hybrid", "--setting", "benchmark"],
    ));
    let table = stdout(&o);
    assert!(
        table.contains("tokens in") && table.contains("tokens out"),
        "{table}"
    );
    assert!(table.contains("answered from the cache"), "{table}");

    // The report with a written summary per system.
    let o = ok(llm_run(
        cwd,
        &db,
        &env,
        &["report", "--method", "hybrid", "--llm", "--out", "rep"],
    ));
    assert!(stdout(&o).contains("written summaries:"), "{}", stdout(&o));
    let md = std::fs::read_to_string(cwd.join("rep/report.md")).unwrap();
    assert_eq!(md.matches("### Written summary").count(), 4, "{md}");
    assert!(md.contains("Written by the model walker"), "{md}");
    assert!(md.contains("> The most common failure is"), "{md}");
    let html = std::fs::read_to_string(cwd.join("rep/report.html")).unwrap();
    assert!(html.contains("<h3>Written summary</h3>"));

    // Prompt feedback, keyed <prompt-id>@1, with the cases behind it.
    let o = ok(llm_run(
        cwd,
        &db,
        &env,
        &["feedback", "--method", "hybrid", "--out", "fb.json"],
    ));
    assert!(stdout(&o).contains("rewrite suggested"), "{}", stdout(&o));
    let fb: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cwd.join("fb.json")).unwrap()).unwrap();
    let prompts = fb.as_object().unwrap();
    assert!(!prompts.is_empty(), "{fb}");
    for (key, p) in prompts {
        assert_eq!(key, &format!("{}@1", p["prompt_id"].as_str().unwrap()));
        assert!(!p["suggested"].as_str().unwrap().is_empty(), "{p}");
        assert!(!p["current"].as_str().unwrap().is_empty(), "{p}");
        let cases = p["cases"].as_array().unwrap();
        assert!(!cases.is_empty(), "{p}");
        assert!(cases[0]["op_id"].is_string() && cases[0]["query"].is_string());
    }
}

/// `memtrace query --format json STATEMENT` with `env`: the rows.
fn query_rows(
    cwd: &Path,
    db: &Path,
    env: &[(&str, &str)],
    statement: &str,
) -> Vec<Vec<serde_json::Value>> {
    let o = ok(llm_run(
        cwd,
        db,
        env,
        &["query", "--format", "json", statement],
    ));
    let v = json(&o);
    serde_json::from_value(v["rows"].clone()).unwrap_or_else(|e| panic!("{e}: {v}"))
}

#[test]
fn attribute_over_a_find_sends_and_stores_exactly_its_cases_each_in_its_own_trace() {
    let (dir, db) = generated("3");
    let cwd = dir.path();
    let server = ScriptedServer::start(walker::script()).unwrap();
    let url = server.base_url();
    let env = [
        ("MEMTRACE_LLM_BASE_URL", url.as_str()),
        ("MEMTRACE_LLM_MODEL", "walker"),
    ];
    let cond = "trace.project_id IN ['mem0', 'rag', 'evermemos'] AND case.query_id < 'query:Q2'";
    let order = "ORDER BY case.query_id DESC, trace.id";
    let pick = format!("FIND cases WHERE {cond} {order}");
    let id = |v: &serde_json::Value| v.as_str().unwrap().to_string();
    // What the subquery returns on its own: cases of several traces, and
    // not every case of any of them.
    let want: Vec<(String, String, String)> = query_rows(
        cwd,
        &db,
        &[],
        &format!("FIND cases WHERE {cond} RETURN trace.id, case.query_id, case.query {order}"),
    )
    .iter()
    .map(|r| (id(&r[0]), id(&r[1]), id(&r[2])))
    .collect();
    let traces: std::collections::BTreeSet<&str> = want.iter().map(|w| w.0.as_str()).collect();
    assert!(traces.len() >= 2 && want.len() >= 3, "{want:?}");
    let all = query_rows(cwd, &db, &[], "FIND cases RETURN count(*)");
    let all = all[0][0].as_u64().unwrap() as usize;
    for t in &traces {
        let n = query_rows(
            cwd,
            &db,
            &[],
            &format!("FIND cases WHERE trace.id = '{t}' RETURN count(*)"),
        );
        let picked = want.iter().filter(|w| w.0 == *t).count();
        assert!(
            (n[0][0].as_u64().unwrap() as usize) > picked,
            "every case of {t} picked"
        );
    }
    assert!(all > want.len());

    let statement = format!("ATTRIBUTE ({pick}) USING hybrid");
    let rows = query_rows(cwd, &db, &env, &statement);
    // One verdict per case picked, in the subquery's order.
    let got: Vec<(String, String)> = rows.iter().map(|r| (id(&r[0]), id(&r[1]))).collect();
    let expected: Vec<(String, String)> = want
        .iter()
        .map(|(t, c, _)| (t.clone(), c.clone()))
        .collect();
    assert_eq!(got, expected);
    assert!(
        rows.iter().all(|r| r[2].is_string() && r[3].is_string()),
        "{rows:?}"
    );
    // The model was asked about those cases and no other.
    let sent = server.requests();
    assert!(sent.len() >= want.len(), "{} requests", sent.len());
    for r in &sent {
        assert!(
            want.iter()
                .any(|(_, _, question)| r.body.contains(question.as_str())),
            "a request about another case: {}",
            &r.body[..r.body.len().min(2000)]
        );
    }
    for (_, _, question) in &want {
        assert!(
            sent.iter().any(|r| r.body.contains(question.as_str())),
            "{question}"
        );
    }
    // Stored in their own traces, by the method and model, as the query's.
    let stored: std::collections::BTreeSet<(String, String)> = query_rows(
        cwd,
        &db,
        &[],
        "FIND attributions WHERE method = 'hybrid' AND model = 'walker' AND author = 'query' \
         RETURN trace.id, case",
    )
    .iter()
    .map(|r| (id(&r[0]), id(&r[1])))
    .collect();
    assert_eq!(stored, expected.iter().cloned().collect());
    let total = query_rows(cwd, &db, &[], "FIND attributions RETURN count(*)");
    assert_eq!(total[0][0].as_u64(), Some(want.len() as u64));

    // Again: answered from the cache, nothing new stored.
    let again = query_rows(cwd, &db, &env, &statement);
    assert_eq!(again, rows);
    assert_eq!(server.requests().len(), sent.len());
    let total = query_rows(cwd, &db, &[], "FIND attributions RETURN count(*)");
    assert_eq!(total[0][0].as_u64(), Some(want.len() as u64));

    // A subquery of ops is refused before anything is sent.
    let o = llm_run(
        cwd,
        &db,
        &env,
        &["query", "ATTRIBUTE (FIND ops LIMIT 1) USING hybrid"],
    );
    let e = fail(o);
    assert!(
        e.contains("line 1, column 12: FIND ops returns ops, not failed cases"),
        "{e}"
    );
    assert_eq!(server.requests().len(), sent.len());
}

#[test]
fn without_an_endpoint_or_with_a_bad_setting_the_error_says_what_to_set() {
    let (dir, db) = generated("3");
    let cwd = dir.path();
    let e = fail(llm_run(cwd, &db, &[], &["attribute", "--using", "llm"]));
    assert!(
        e.contains(
            "no API key for https://api.openai.com/v1: set OPENAI_API_KEY or MEMTRACE_LLM_API_KEY"
        ),
        "{e}"
    );
    let e = fail(llm_run(
        cwd,
        &db,
        &[
            ("MEMTRACE_LLM_BASE_URL", "http://127.0.0.1:9/v1"),
            ("MEMTRACE_LLM_TIMEOUT", "soon"),
        ],
        &["eval", "--method", "llm"],
    ));
    assert!(e.contains("MEMTRACE_LLM_TIMEOUT is 'soon'"), "{e}");
    let e = fail(llm_run(
        cwd,
        &db,
        &[("MEMTRACE_LLM_CONFIG", "missing.toml")],
        &["report", "--llm"],
    ));
    assert!(e.contains("missing.toml"), "{e}");
    // Nothing was stored by the failed runs.
    let o = ok(llm_run(
        cwd,
        &db,
        &[],
        &["query", "FIND attributions RETURN count(*) AS n"],
    ));
    assert!(
        stdout(&o).contains("\n0\n") || stdout(&o).contains(" 0\n"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn an_api_key_reaches_the_endpoint_and_nowhere_else() {
    let (dir, db) = generated("3");
    let cwd = dir.path();
    let key = "sk-test-4c1d-never-shown";
    let server = ScriptedServer::start(Box::new(|_| Reply::Status {
        status: 401,
        headers: Vec::new(),
        body:
            "{\"error\": {\"message\": \"Incorrect API key provided: sk-test-4c1d-never-shown\"}}"
                .into(),
    }))
    .unwrap();
    let url = server.base_url();
    let env = [
        ("MEMTRACE_LLM_BASE_URL", url.as_str()),
        ("MEMTRACE_LLM_API_KEY", key),
    ];
    let o = llm_run(cwd, &db, &env, &["attribute", "--using", "llm"]);
    let e = fail(o.clone());
    assert!(e.contains("401") && e.contains("check the API key"), "{e}");
    assert!(!e.contains("4c1d") && !stdout(&o).contains("4c1d"), "{e}");
    assert!(stderr(&o).contains("key set for 1 of 1"), "{}", stderr(&o));
    let auth = server.requests()[0]
        .header("authorization")
        .map(str::to_string);
    assert_eq!(auth.as_deref(), Some(format!("Bearer {key}").as_str()));
    // Not in any file of the database.
    let mut stack = vec![db.clone()];
    while let Some(p) = stack.pop() {
        for entry in std::fs::read_dir(&p).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                assert!(
                    !bytes.windows(key.len()).any(|w| w == key.as_bytes()),
                    "the key is in {}",
                    path.display()
                );
            }
        }
    }
}

#[test]
fn ctrl_c_stops_an_llm_run_promptly_and_says_nothing_is_lost() {
    use std::time::{Duration, Instant};
    let (dir, db) = generated("3");
    let cwd = dir.path();
    let server = ScriptedServer::start(Box::new(|_| {
        Reply::Delay(Duration::from_secs(60), Box::new(Reply::Raw("late".into())))
    }))
    .unwrap();
    let url = server.base_url();
    let mut c = command(cwd, Some(&db), &["attribute", "--using", "llm"]);
    for v in LLM_VARS {
        c.env_remove(v);
    }
    c.env("HOME", cwd).env("MEMTRACE_LLM_BASE_URL", &url);
    let child = c
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while server.requests().is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no request reached the server"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let interrupted = Instant::now();
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: sends SIGINT to the child this test started and still owns.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let o = child.wait_with_output().unwrap();
    assert!(
        interrupted.elapsed() < Duration::from_secs(10),
        "{:?}",
        interrupted.elapsed()
    );
    let e = fail(o);
    assert!(
        e.contains("cancelled; the answers received so far are cached"),
        "{e}"
    );
}

/// A local embeddings endpoint: words hashed into 64 dimensions.
fn embeddings_server() -> ScriptedServer {
    ScriptedServer::start(Box::new(|r| {
        if r.path.ends_with("/embeddings") {
            Reply::Json(scripted::embeddings(r, 64))
        } else {
            Reply::Status {
                status: 404,
                headers: Vec::new(),
                body: "no such route".into(),
            }
        }
    }))
    .unwrap()
}

#[test]
fn dense_and_hybrid_evidence_search_use_a_local_embeddings_endpoint_and_its_cache() {
    let (dir, db) = generated("5");
    let cwd = dir.path();
    let server = embeddings_server();
    let url = server.base_url();
    let env = [
        ("MEMTRACE_EMBED_BASE_URL", url.as_str()),
        ("MEMTRACE_EMBED_MODEL", "bag-of-words"),
    ];
    let recall = |method: &str| -> serde_json::Value {
        json(&ok(llm_run(
            cwd,
            &db,
            &env,
            &["evidence-recall", "--method", method, "--format", "json"],
        )))
    };
    let sparse = recall("sparse");
    assert_eq!(sparse["method"], "sparse");
    assert!(server.requests().is_empty(), "sparse search sends nothing");
    let dense = recall("dense");
    let sent = server.requests();
    assert!(!sent.is_empty());
    for r in &sent {
        assert_eq!(r.path, "/v1/embeddings");
        assert_eq!(r.json.as_ref().unwrap()["model"], "bag-of-words");
    }
    assert_eq!(dense["method"], "dense");
    assert_eq!(dense["total"]["cases"], sparse["total"]["cases"]);
    assert!(dense["total"]["found"].as_u64().unwrap() > 0, "{dense}");
    // Every message and question is embedded once: the rerun and the hybrid
    // search read the vectors from the database.
    let again = recall("dense");
    assert_eq!(again["total"], dense["total"]);
    let hybrid = recall("hybrid");
    assert_eq!(server.requests().len(), sent.len(), "vectors are cached");
    assert!(hybrid["total"]["found"].as_u64().unwrap() > 0, "{hybrid}");
    // Attribution takes the same search.
    let o = ok(llm_run(
        cwd,
        &db,
        &env,
        &[
            "attribute",
            "--setting",
            "evaluation",
            "--search",
            "hybrid",
            "--format",
            "json",
        ],
    ));
    let verdicts = json(&o);
    assert!(!verdicts.as_array().unwrap().is_empty());
    for v in verdicts.as_array().unwrap() {
        assert_eq!(v["setting"], "evaluation");
    }
    // Without a model there is no dense search, and the error says what to set.
    let e = fail(llm_run(
        cwd,
        &db,
        &[],
        &["evidence-recall", "--method", "dense"],
    ));
    assert!(
        e.contains("needs an embeddings endpoint: set MEMTRACE_EMBED_MODEL"),
        "{e}"
    );
    // A dead endpoint is named.
    let dead = [
        ("MEMTRACE_EMBED_BASE_URL", "http://127.0.0.1:9/v1"),
        ("MEMTRACE_EMBED_MODEL", "other-model"),
        ("MEMTRACE_LLM_RETRIES", "0"),
    ];
    let e = fail(llm_run(
        cwd,
        &db,
        &dead,
        &["evidence-recall", "--method", "hybrid"],
    ));
    assert!(e.contains("http://127.0.0.1:9/v1"), "{e}");
}
