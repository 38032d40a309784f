//! The benchmark binary as a user meets it: `--help` names every benchmark
//! with examples, and a wrong argument is refused with a clear message.

use std::process::Command;

fn bench(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_memtrace-bench"))
        .args(args)
        .output()
        .expect("memtrace-bench runs")
}

#[test]
fn help_lists_every_benchmark_with_examples() {
    let out = bench(&["--help"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for sub in [
        "import",
        "suite",
        "llm",
        "attribution",
        "patterns",
        "walk-split",
    ] {
        assert!(text.contains(sub), "{sub} missing from --help:\n{text}");
    }
    assert!(text.contains("Examples"), "{text}");
    assert!(
        !text.contains("suite-step"),
        "internal steps are hidden:\n{text}"
    );
}

#[test]
fn a_wrong_argument_is_refused() {
    let out = bench(&["import", "--variables", "many"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--variables"), "{err}");
}

#[test]
fn suite_help_names_its_cold_warm_and_growth_options() {
    let out = bench(&["suite", "--help"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--scales",
        "--cold",
        "--warm",
        "--growth",
        "--no-big",
        "--no-duckdb",
        "--keep",
    ] {
        assert!(
            text.contains(flag),
            "{flag} missing from suite --help:\n{text}"
        );
    }
    assert!(text.contains("DuckDB"), "{text}");
}

#[test]
fn a_suite_without_warm_runs_is_refused() {
    let out = bench(&["suite", "--scales", "1", "--warm", "0", "--no-duckdb"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--warm"), "{err}");
}
