//! The analyses through the embedding API: attribution, LLM summaries, patterns.

use super::*;

#[test]
fn attribution_through_the_embedding_api() {
    use memtrace::attrib::{AttributeRequest, Method};
    use memtrace::gen::set::{generate_set, GenSpec};
    use memtrace::Cancel;

    let (dir, db) = db();
    let set = dir.path().join("set");
    let spec = GenSpec {
        traces: 2,
        seed: 3,
        sessions: 4..=5,
        messages_per_session: 10..=12,
        questions: 40,
        ..GenSpec::default()
    };
    let written = generate_set(&spec, &set, false, |_, _| {}).unwrap();
    let failed: usize = written.iter().map(|t| t.failed).sum();
    assert!(failed > 0);
    let reports = db.import_paths(&[set], &ImportOptions::default(), &mut |_| {});
    assert!(reports.iter().all(|r| r.result.is_ok()));
    let cases = db.failed_cases(None).unwrap();
    assert_eq!(cases.len(), failed);

    let req = AttributeRequest {
        trace: None,
        cases: None,
        method: Method::Evidence,
        setting: Default::default(),
        search: Default::default(),
    };
    let verdicts = db.attribute(&req, &Cancel::new(), &mut |_| {}).unwrap();
    assert_eq!(verdicts.len(), failed);
    assert!(verdicts.iter().all(|v| v.error_type.is_some()));
    assert_eq!(db.store_verdicts(&verdicts, "api test").unwrap(), failed);
    let stored = db.attributions(None).unwrap();
    assert_eq!(stored.len(), failed);
    assert!(stored.iter().all(|s| s.author == "api test"));

    let e = db
        .evaluate(Method::Evidence, None, &Cancel::new(), &mut |_| {})
        .unwrap();
    assert_eq!(e.cases, failed);
    assert!(
        e.error_type_accuracy >= 0.85 && e.op_id_accuracy >= 0.85,
        "{e:?}"
    );

    let report = db.report(Method::Evidence, None).unwrap();
    assert_eq!(report.overall.failed, failed);
    assert_eq!(report.overall.attributed, failed);
    let html = report.html();
    assert!(html.contains(&written[0].graph_id[..4]));

    // The same through the query language.
    let one = &cases[0];
    let r = db
        .query(&format!(
            "ATTRIBUTE '{}' IN TRACE '{}' USING evidence",
            one.id, one.graph_id
        ))
        .unwrap();
    assert_eq!(r.rows.len(), 1);
    let r = db.query("FIND attributions RETURN count(*)").unwrap();
    assert_eq!(r.rows[0][0], failed as u64);
}

#[test]
fn picked_cases_are_attributed_each_in_its_own_trace() {
    use memtrace::attrib::{AttributeRequest, CaseOrigin, CasePick, Method};
    use memtrace::gen::{generate_trace, GenSpec, System};
    use memtrace::Cancel;

    let (_dir, db) = db();
    for system in [System::Mem0, System::Rag] {
        import(
            &db,
            &generate_trace(&GenSpec::small(system), 0)
                .document
                .to_string(),
        )
        .unwrap();
    }
    let cases = db.failed_cases(None).unwrap();
    let first_trace = cases[0].trace;
    let other = cases.iter().find(|c| c.trace != first_trace).unwrap();
    let picks = [
        // The other trace's case first: verdicts come in the order picked.
        CasePick {
            trace: other.trace,
            origin: other.origin.clone(),
        },
        CasePick {
            trace: cases[0].trace,
            origin: cases[0].origin.clone(),
        },
        CasePick {
            trace: other.trace,
            origin: other.origin.clone(),
        },
    ];
    let verdicts = db
        .attribute_picked(
            &picks,
            Method::Evidence,
            memtrace::attrib::Setting::Benchmark,
            &Cancel::new(),
            &mut |_| {},
        )
        .unwrap();
    let got: Vec<(u32, &str)> = verdicts
        .iter()
        .map(|v| (v.trace, v.case.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            (other.trace, other.id.as_str()),
            (cases[0].trace, cases[0].id.as_str())
        ]
    );
    // The same verdict as naming the case in its trace.
    let named = db
        .attribute(
            &AttributeRequest {
                trace: Some(&format!("#{}", other.trace)),
                cases: Some(std::slice::from_ref(&other.id)),
                method: Method::Evidence,
                setting: Default::default(),
                search: Default::default(),
            },
            &Cancel::new(),
            &mut |_| {},
        )
        .unwrap();
    assert_eq!(
        (&named[0].error_type, &named[0].op_id, &named[0].reason),
        (
            &verdicts[0].error_type,
            &verdicts[0].op_id,
            &verdicts[0].reason
        )
    );
    // A case the trace does not have is an error.
    let e = db
        .attribute_picked(
            &[CasePick {
                trace: first_trace,
                origin: CaseOrigin::Annotation(10_000),
            }],
            Method::Evidence,
            memtrace::attrib::Setting::Benchmark,
            &Cancel::new(),
            &mut |_| {},
        )
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("has no failed case from annotation 10001"),
        "{e}"
    );
    assert!(db
        .attribute_picked(
            &[],
            Method::Llm,
            memtrace::attrib::Setting::Benchmark,
            &Cancel::new(),
            &mut |_| {}
        )
        .unwrap()
        .is_empty());
}

#[test]
fn llm_attribution_summaries_and_feedback_through_the_embedding_api() {
    use memtrace::attrib::agent::walker;
    use memtrace::attrib::{AttributeRequest, Method};
    use memtrace::gen::set::{generate_set, GenSpec};
    use memtrace::llm::scripted::ScriptedServer;
    use memtrace::Cancel;

    let (dir, db) = db();
    let set = dir.path().join("set");
    let spec = GenSpec {
        traces: 2,
        seed: 5,
        sessions: 4..=5,
        messages_per_session: 10..=12,
        questions: 30,
        ..GenSpec::default()
    };
    generate_set(&spec, &set, false, |_, _| {}).unwrap();
    db.import_paths(&[set], &ImportOptions::default(), &mut |_| {});
    let server = ScriptedServer::start(walker::script()).unwrap();
    db.set_llm_config(memtrace::llm::Config::new(server.base_url(), "walker"));
    assert_eq!(db.llm_config().unwrap().model, "walker");

    let req = AttributeRequest {
        trace: None,
        cases: None,
        method: Method::Hybrid,
        setting: Default::default(),
        search: Default::default(),
    };
    let verdicts = db.attribute(&req, &Cancel::new(), &mut |_| {}).unwrap();
    assert_eq!(verdicts.len(), db.failed_cases(None).unwrap().len());
    assert!(verdicts.iter().all(|v| v.cost.is_some_and(|c| c.calls > 0)));
    db.store_verdicts(&verdicts, "api test").unwrap();

    let mut report = db.report(Method::Hybrid, None).unwrap();
    let cost = db.write_summaries(&mut report, &Cancel::new()).unwrap();
    assert!(cost.calls >= 1);
    assert!(report.systems.iter().any(|s| s.written.is_some()));
    assert_eq!(report.written_by.as_deref(), Some("walker"));

    let fb = db
        .prompt_feedback(Method::Hybrid, None, 4, &Cancel::new())
        .unwrap();
    assert!(!fb.prompts.is_empty());
    assert!(fb.prompts.keys().all(|k| k.ends_with("@1")));
    assert!(fb
        .prompts
        .values()
        .all(|p| p.suggested.is_some() && !p.cases.is_empty()));
}

#[test]
fn patterns_are_saved_run_and_dropped_through_the_embedding_api() {
    use memtrace::gen::{generate_trace, GenSpec, System};
    use memtrace::patterns::{PatternSpec, RunOptions};
    let (_dir, db) = db();
    for (i, system) in [System::Mem0, System::Rag].into_iter().enumerate() {
        let spec = GenSpec {
            system: Some(system),
            sessions: 4..=5,
            messages_per_session: 10..=12,
            questions: 30,
            seed: 40 + i as u64,
            ..GenSpec::default()
        };
        import(&db, &generate_trace(&spec, 0).document.to_string()).unwrap();
    }
    let v = db
        .save_pattern(
            "judged",
            "FIND ops WHERE op.name = $name RETURN op.id",
            &[("name".into(), memtrace::Value::Str("llm-judge".into()))],
            "api-test",
        )
        .unwrap();
    assert_eq!(v, 1);
    let specs = [
        PatternSpec::named("judged"),
        PatternSpec::named("stored_not_retrieved"),
    ];
    let opts = RunOptions {
        over: Some("trace.project_id = 'mem0'".into()),
        examples: 2,
    };
    let r = db
        .run_patterns(&specs, &opts, &memtrace::Cancel::new(), &|_, _| {})
        .unwrap();
    assert_eq!((r.traces, r.skipped), (1, 1));
    // Every question of the Mem0 trace was judged once.
    assert_eq!(r.patterns[0].hits, 30);
    assert_eq!(r.patterns[0].examples.len(), 2);
    assert_eq!(r.patterns[0].per_trace[0].system.as_deref(), Some("mem0"));
    // The built-in agrees with the stored attribution of the same method.
    let verdicts = db
        .attribute(
            &memtrace::attrib::AttributeRequest {
                trace: None,
                cases: None,
                method: memtrace::attrib::Method::Evidence,
                setting: Default::default(),
                search: Default::default(),
            },
            &memtrace::Cancel::new(),
            &mut |_| {},
        )
        .unwrap();
    let retrieval = verdicts
        .iter()
        .filter(|v| {
            v.system.as_deref() == Some("mem0")
                && v.error_type == Some(memtrace::attrib::ErrorType::RetrievalError)
        })
        .count() as u64;
    assert_eq!(r.patterns[1].hits, retrieval);
    db.drop_pattern("judged", "api-test").unwrap();
    assert_eq!(db.pattern_history("judged").unwrap().len(), 2);
    assert!(db.patterns().unwrap().iter().all(|p| p.builtin));
}
