//! Tests of the fast reader: it reads what the checking reader reads, and
//! leaves every error to it.

use super::*;
use crate::import::checking_reader::{assemble, Ctx, TopSeed};
use crate::import::records::{Invalid, Top};
use crate::import::validate::validate;

const NODE: &str =
    r#"{"name":"42","class_name":"answer","version":1,"value":"'x'","session_id":"s1"}"#;

fn doc(nodes: &str, edges: &str) -> String {
    format!(
        r#"{{"graph_id":"g","data":{{"nodes":[{nodes}],"edges":[{edges}],"operations":[{{"op_id":"op-1","session_id":"s1"}}],"sessions":[{{"session_id":"s1"}}]}}}}"#
    )
}

/// The checking reader's result, or its error.
fn checking(text: &str) -> Result<Top, Invalid> {
    let ctx = Ctx::default();
    let mut de = serde_json::Deserializer::from_str(text);
    TopSeed(&ctx)
        .deserialize(&mut de)
        .map_err(|e| ctx.into_invalid(e, text.as_bytes()))
}

/// An export of `n` variables in a chain, each with `pad` escaped
/// newlines of value, a recorded trigger point, an extra key and, for
/// the first, a key written with an escape; annotations and an extra
/// member of `data` too.
fn chain(n: usize, pad: usize) -> String {
    let value = "x\\n".repeat(pad);
    let nodes: Vec<String> = (0..n)
        .map(|i| {
            let class = if i == 0 { r#""class_\u006eame""# } else { r#""class_name""# };
            format!(
                r#"{{"name":"v{i}",{class}:"c","version":1,"value":"{value}","session_id":"s1","filename":"a.py","lineno":{i},"trigger_point":"a.py:{i}","node_id":"v{i}@1","more":[1,2.50,{{"k":null}}],"comment":null,"category":"fact","created_at":"2025-01-02T03:04:05.123456","graph_id":null,"user_id":"u{i}","metadata":{{"a":[1e3,"\u00e9"]}},"full_name":"c:v{i}","full_node_id":"c:v{i}@1","op_id":"not a var field"}}"#
            )
        })
        .collect();
    let edges: Vec<String> = (1..n)
        .map(|i| {
            format!(
                r#"{{"edge_id":"e{i}","op_id":"op-{}","source_full_node_id":"c:v{}@1","target_full_node_id":"c:v{i}@1","session_id":"s1","category":"flow","comment":"c","project_id":"p","metadata":null,"name":"kept as extra"}}"#,
                i % 7,
                i - 1
            )
        })
        .collect();
    let ops: Vec<String> = (0..7)
        .map(|i| format!(r#"{{"op_id":"op-{i}","op_name":"step","session_id":"s1","lineno":3,"trigger_point":"None:3","version":7,"category":null,"node_id":"x"}}"#))
        .collect();
    format!(
        r#"{{"graph_id":"g","user_id":null,"data":{{"nodes":[{}],"edges":[{}],"version":2,"operations":[{}],"sessions":[{{"session_id":"s1","session_name":"first","comment":null,"filename":null,"lineno":null,"extra":{{}}}}],"annotations":[{{"query_id":"c:v1@1","final_op_id":"op-1","golden_answers":["a",1]}}]}},"tail":true}}"#,
        nodes.join(","),
        edges.join(","),
        ops.join(",")
    )
}

#[test]
fn the_fast_reader_reads_what_the_checking_one_reads() {
    // Small (one thread) and large (two threads: over SPLIT_BYTES),
    // the last in several jobs per list, taken by both threads.
    for (n, pad) in [(3, 1), (40, 0), (3000, 200), (5 * JOB_RECORDS + 7, 0)] {
        let text = chain(n, pad);
        assert_eq!(text.len() >= SPLIT_BYTES, n >= 3000, "{}", text.len());
        let split = parse_split(text.as_bytes()).expect("a valid export");
        let seq = checking(&text).unwrap();
        assert_eq!(format!("{split:?}"), format!("{seq:?}"));
        let t = assemble(split.0, split.1).unwrap();
        validate(&t).unwrap();
        assert_eq!((t.nodes.len(), t.edges.len()), (n, n - 1));
        assert_eq!(
            t.nodes.iter().last().unwrap().full_node_id,
            format!("c:v{}@1", n - 1)
        );
        // The recorded trigger point and node id are what smartcomment
        // computes, so they are not kept.
        assert!(t
            .nodes
            .iter()
            .nth(1)
            .unwrap()
            .common
            .trigger_point
            .is_none());
        assert!(t.nodes.iter().nth(1).unwrap().node_id.is_none());
    }
    let text = doc(NODE, "");
    let split = parse_split(text.as_bytes()).unwrap();
    assert_eq!(
        format!("{split:?}"),
        format!("{:?}", checking(&text).unwrap())
    );
    // No `data` at all.
    let split = parse_split(br#"{"graph_id":"g"}"#).unwrap();
    assert!(split.1.is_none());
}

#[test]
fn the_fast_reader_leaves_every_error_to_the_checking_one() {
    let big = chain(3000, 200);
    let cases = [
        // A wrong type deep in a large list, in its second job.
        (
            big.replacen(
                r#""edge_id":"e2900","op_id":"op-2""#,
                r#""edge_id":"e2900","op_id":2"#,
                1,
            ),
            "data.edges[2899].op_id",
        ),
        // A syntax error in a record.
        (
            big.replacen(r#""name":"v2500","#, r#""name":"v2500",,"#, 1),
            "data.nodes[2500]",
        ),
        // A key twice: in a record, in `data`, at the top.
        (
            big.replacen(r#""name":"v7","#, r#""name":"v7","name":"v7","#, 1),
            "data.nodes[7].name",
        ),
        (
            big.replacen(r#""version":2,"#, r#""nodes":[],"#, 1),
            "data.nodes",
        ),
        (
            big.replacen(r#""tail":true"#, r#""graph_id":"h""#, 1),
            "graph_id",
        ),
        (
            doc(r#"{"name":"a","version":"1"}"#, ""),
            "data.nodes[0].version",
        ),
        (doc(NODE, "").replace('}', ""), "data.nodes[0]"),
        ("[]".to_string(), "$"),
    ];
    for (text, path) in cases {
        assert!(parse_split(text.as_bytes()).is_none(), "{path}");
        let e = checking(&text)
            .map_err(|e| e.path)
            .and_then(|(h, d)| assemble(h, d).map_err(|e| e.path))
            .map(|_| ())
            .unwrap_err();
        assert_eq!(e, path);
    }
}

#[test]
fn records_that_differ_from_what_is_computed_are_left_to_the_checking_reader() {
    let node = |extra: &str| {
        doc(
            &format!(r#"{{"name":"a","class_name":"c","version":2,"session_id":"s1"{extra}}}"#),
            "",
        )
    };
    // Read by both the same way.
    for extra in [
        "",
        r#","full_name":"c:a""#,
        r#","node_id":"a@2""#,
        r#","node_id":"b@2""#,
    ] {
        let text = node(extra);
        let split = parse_split(text.as_bytes()).expect(extra);
        assert_eq!(
            format!("{split:?}"),
            format!("{:?}", checking(&text).unwrap())
        );
    }
    // Left to the checking reader, which rejects them.
    for extra in [
        r#","full_name":"c:b""#,
        r#","full_node_id":"c:a@3""#,
        r#","created_at":"yesterday""#,
        r#","version":0"#,
        r#","lineno":1.5"#,
        r#","comment":7"#,
        r#","session_name":"x","session_name":"y""#,
    ] {
        let text = node(extra);
        assert!(parse_split(text.as_bytes()).is_none(), "{extra}");
        let seq = checking(&text).and_then(|(h, d)| assemble(h, d));
        assert!(seq.is_err(), "{extra}");
    }
}

/// A JSON value to be written out with chosen whitespace and escapes.
#[derive(Debug, Clone)]
enum Doc {
    /// A literal or a number, as written.
    Token(&'static str),
    Str(String, bool),
    List(Vec<Doc>),
    Object(Vec<(String, Doc)>),
}

/// `doc` as JSON text, `space` put between tokens in turn; a string
/// marked so is written with every character escaped as `\uXXXX`.
fn write(doc: &Doc, space: &[&str], at: &mut usize, out: &mut String) {
    fn gap(space: &[&str], at: &mut usize, out: &mut String) {
        if !space.is_empty() {
            out.push_str(space[*at % space.len()]);
            *at += 1;
        }
    }
    let string = |s: &str, escaped: bool, out: &mut String| {
        if escaped {
            out.push('"');
            for u in s.encode_utf16() {
                out.push_str(&format!("\\u{u:04x}"));
            }
            out.push('"');
        } else {
            out.push_str(&serde_json::to_string(s).unwrap());
        }
    };
    gap(space, at, out);
    match doc {
        Doc::Token(t) => out.push_str(t),
        Doc::Str(s, escaped) => string(s, *escaped, out),
        Doc::List(items) => {
            out.push('[');
            for (k, d) in items.iter().enumerate() {
                if k > 0 {
                    out.push(',');
                }
                write(d, space, at, out);
            }
            gap(space, at, out);
            out.push(']');
        }
        Doc::Object(members) => {
            out.push('{');
            for (k, (key, d)) in members.iter().enumerate() {
                if k > 0 {
                    out.push(',');
                }
                gap(space, at, out);
                string(key, false, out);
                gap(space, at, out);
                out.push(':');
                write(d, space, at, out);
            }
            gap(space, at, out);
            out.push('}');
        }
    }
    gap(space, at, out);
}

fn any_doc() -> impl proptest::strategy::Strategy<Value = Doc> {
    use proptest::prelude::*;
    let text = prop_oneof![
        "[a-z ]{0,6}",
        Just("naïve café ü".to_string()),
        Just("tab\there \"quoted\" back\\slash".to_string()),
        Just("line\nbreak \u{1}".to_string()),
    ];
    let leaf = prop_oneof![
        prop_oneof![
            Just("null"),
            Just("true"),
            Just("false"),
            Just("0"),
            Just("-0"),
            Just("17"),
            Just("2.50"),
            Just("1e3"),
            Just("-1.5E+07"),
            Just("1e+999"),
            Just("2E5"),
            Just("0.5e-3"),
            Just("123456789012345678901234567890"),
        ]
        .prop_map(Doc::Token),
        (text, any::<bool>()).prop_map(|(s, e)| Doc::Str(s, e)),
    ];
    leaf.prop_recursive(4, 40, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Doc::List),
            proptest::collection::vec(("[abc]{1,2}", inner), 0..5).prop_map(Doc::Object),
        ]
    })
}

/// Whether an object of `d` has a key twice.
fn twice(d: &Doc) -> bool {
    match d {
        Doc::List(items) => items.iter().any(twice),
        Doc::Object(members) => {
            let keys: std::collections::HashSet<&String> = members.iter().map(|m| &m.0).collect();
            keys.len() < members.len() || members.iter().any(|m| twice(&m.1))
        }
        _ => false,
    }
}

proptest::proptest! {
    #[test]
    fn compact_text_is_what_the_value_writes(
        d in any_doc(),
        space in proptest::collection::vec(
            proptest::sample::select(vec!["", " ", "\n  ", "\t", "\r\n    "]),
            0..6,
        ),
    ) {
        let mut text = String::new();
        write(&d, &space, &mut 0, &mut text);
        let value: Value = serde_json::from_str(&text).unwrap();
        // Given up exactly where an escape or a key twice is.
        let gives_up = text.contains('\\') || twice(&d);
        match compact_json(&text) {
            Some(compact) => {
                proptest::prop_assert!(!gives_up, "{}", text);
                proptest::prop_assert_eq!(compact, value.to_string());
            }
            None => proptest::prop_assert!(gives_up, "{}", text),
        }
    }
}

#[test]
fn compact_text_gives_up_at_escapes_and_keys_twice() {
    for (text, want) in [
        (
            " { \"a\" : [ 1 , 2.50 , -1e3, 2E-2, true ] ,\n  \"b\": {\"a\": false} } ",
            Some(r#"{"a":[1,2.50,-1e+3,2e-2,true],"b":{"a":false}}"#),
        ),
        ("\"naïve café\"", Some("\"naïve café\"")),
        ("[ ]", Some("[]")),
        (
            "{\"a\":1,\"b\":{\"a\":2},\"c\":3}",
            Some(r#"{"a":1,"b":{"a":2},"c":3}"#),
        ),
        ("{\"a\":1,\"a\":2}", None),
        ("{\"a\":[{\"b\":1}],\"b\":{\"a\":1,\"b\":2,\"a\":3}}", None),
        ("\"caf\\u00e9\"", None),
        ("\"a\\/b\"", None),
    ] {
        assert_eq!(compact_json(text).as_deref(), want, "{text}");
        let value: Value = serde_json::from_str(text).unwrap();
        if let Some(w) = want {
            assert_eq!(value.to_string(), w, "{text}");
        }
    }
    // Many keys are left to the value.
    let many: Vec<String> = (0..=COMPACT_KEYS)
        .map(|k| format!("\"k{k}\":{k}"))
        .collect();
    assert_eq!(compact_json(&format!("{{{}}}", many.join(","))), None);
    let fewer = &many[..COMPACT_KEYS];
    let text = format!("{{{}}}", fewer.join(","));
    assert_eq!(compact_json(&text), Some(text.clone()));
}
