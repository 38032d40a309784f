//! Arbitrary text into the parser: it must never panic, and whatever parses
//! must print back to text that parses to the same statement (the round trip).

#![no_main]

use libfuzzer_sys::fuzz_target;
use memtrace_query::{parse_script, parse_statement, Statement};

/// Printing `stmt` and parsing the text gives `stmt` back, and prints the same.
fn round_trip(stmt: &Statement) {
    let printed = stmt.to_string();
    let again = parse_statement(&printed)
        .unwrap_or_else(|e| panic!("{stmt:?}\nprinted as {printed:?}\ndid not parse: {e}"));
    assert_eq!(&again, stmt, "printed as {printed:?}");
    assert_eq!(again.to_string(), printed);
}

fn check(text: &str) {
    if let Ok(stmt) = parse_statement(text) {
        round_trip(&stmt);
    }
    if let Ok(stmts) = parse_script(text) {
        for s in &stmts {
            round_trip(s);
        }
        // The statements printed as a script read back as the same script.
        let script: String = stmts.iter().map(|s| format!("{s};\n")).collect();
        let again = parse_script(&script)
            .unwrap_or_else(|e| panic!("script {script:?}\ndid not parse: {e}"));
        assert_eq!(again, stmts, "script printed as {script:?}");
    }
}

fuzz_target!(|data: &[u8]| {
    match std::str::from_utf8(data) {
        Ok(text) => check(text),
        Err(_) => check(&String::from_utf8_lossy(data)),
    }
});
