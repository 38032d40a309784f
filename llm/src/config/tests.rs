use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::types::{Config, Secret, ToolMode};
use crate::Result;

/// An environment holding just `vars`.
fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| map.get(name).cloned()
}

fn load(vars: &[(&str, &str)]) -> Result<Config> {
    Config::load(&env(vars), None)
}

fn load_err(vars: &[(&str, &str)]) -> String {
    match load(vars) {
        Ok(c) => panic!("expected an error, got {c:?}"),
        Err(e) => e.to_string(),
    }
}

/// A config file holding `text`, in a directory that lives as long as the guard.
fn file(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("llm.toml");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

/// Loads with `vars` and a file holding `text` (deleted on return).
fn load_file(vars: &[(&str, &str)], text: &str) -> (Result<Config>, PathBuf) {
    let (_dir, path) = file(text);
    (Config::load(&env(vars), Some(&path)), path)
}

fn urls_and_keys(c: &Config) -> Vec<(&str, Option<&str>)> {
    c.endpoints
        .iter()
        .map(|e| (e.base_url.as_str(), e.api_key.as_ref().map(Secret::expose)))
        .collect()
}

#[test]
fn a_key_never_prints() {
    let mut c = Config::new("http://127.0.0.1:1/v1/", "m");
    c.endpoints[0].api_key = Some(Secret::new("sk-very-secret"));
    assert!(!format!("{c:?}").contains("sk-very"));
    assert!(!c.describe().contains("sk-very"));
    assert_eq!(c.endpoints[0].base_url, "http://127.0.0.1:1/v1");
    assert_eq!(
        c.describe(),
        "model m at http://127.0.0.1:1/v1, key set for 1 of 1"
    );
}

#[test]
fn tool_modes_read_their_names() {
    assert_eq!("Text".parse::<ToolMode>(), Ok(ToolMode::Text));
    assert!("fancy"
        .parse::<ToolMode>()
        .unwrap_err()
        .contains("auto, native or text"));
}

#[test]
fn defaults_with_only_openai_api_key() {
    let c = load(&[("OPENAI_API_KEY", "sk-test")]).unwrap();
    let mut expected = Config::new("https://api.openai.com/v1", "gpt-4o-mini");
    expected.endpoints[0].api_key = Some(Secret::new("sk-test"));
    assert_eq!(c, expected);
    assert_eq!(c.timeout, Duration::from_secs(60));
    assert_eq!(c.tool_mode, ToolMode::Auto);
}

#[test]
fn file_then_openai_then_memtrace_llm() {
    let text = r#"
model = "from-file"
timeout_secs = 30
concurrency = 2
max_calls = 5
max_tokens = 1000
retries = 1
backoff_ms = 100
tools = "text"
temperature = 0.5
max_output_tokens = 256

[[endpoint]]
base_url = "http://file-host:8000/v1/"
api_key = "file-key"
"#;
    // The file alone.
    let (c, _) = load_file(&[], text);
    let c = c.unwrap();
    assert_eq!(c.model, "from-file");
    assert_eq!(c.timeout, Duration::from_secs(30));
    assert_eq!(c.concurrency, 2);
    assert_eq!(c.max_calls, 5);
    assert_eq!(c.max_tokens, 1000);
    assert_eq!(c.retries, 1);
    assert_eq!(c.backoff, Duration::from_millis(100));
    assert_eq!(c.tool_mode, ToolMode::Text);
    assert_eq!(c.temperature, 0.5);
    assert_eq!(c.max_output_tokens, 256);
    assert_eq!(
        urls_and_keys(&c),
        [("http://file-host:8000/v1", Some("file-key"))]
    );

    // OPENAI_* over the file.
    let openai = [
        ("OPENAI_BASE_URL", "http://openai-var:1/v1"),
        ("OPENAI_API_KEY", "openai-key"),
    ];
    let (c, _) = load_file(&openai, text);
    let c = c.unwrap();
    assert_eq!(
        urls_and_keys(&c),
        [("http://openai-var:1/v1", Some("openai-key"))]
    );
    assert_eq!(c.model, "from-file");

    // OPENAI_API_KEY never goes to the file's endpoints (only to
    // OpenAI's own, when they have no key).
    let (c, _) = load_file(&[("OPENAI_API_KEY", "openai-key")], text);
    assert_eq!(
        urls_and_keys(&c.unwrap()),
        [("http://file-host:8000/v1", Some("file-key"))]
    );
    let (c, _) = load_file(
        &[("OPENAI_API_KEY", "openai-key")],
        "[[endpoint]]\nbase_url = \"http://local:1/v1\"\n[[endpoint]]\n",
    );
    assert_eq!(
        urls_and_keys(&c.unwrap()),
        [
            ("http://local:1/v1", None),
            ("https://api.openai.com/v1", Some("openai-key"))
        ]
    );
    // Nor to a URL that MEMTRACE_LLM_BASE_URL names.
    let c = load(&[
        ("OPENAI_API_KEY", "openai-key"),
        ("MEMTRACE_LLM_BASE_URL", "http://local:2/v1"),
    ])
    .unwrap();
    assert_eq!(urls_and_keys(&c), [("http://local:2/v1", None)]);

    // MEMTRACE_LLM_* over both.
    let all = [
        ("OPENAI_BASE_URL", "http://openai-var:1/v1"),
        ("OPENAI_API_KEY", "openai-key"),
        ("MEMTRACE_LLM_BASE_URL", "https://memtrace-var/v1"),
        ("MEMTRACE_LLM_API_KEY", "memtrace-key"),
        ("MEMTRACE_LLM_MODEL", "from-env"),
        ("MEMTRACE_LLM_TIMEOUT", "2.5"),
        ("MEMTRACE_LLM_CONCURRENCY", "8"),
        ("MEMTRACE_LLM_MAX_CALLS", "20"),
        ("MEMTRACE_LLM_MAX_TOKENS", "90000"),
        ("MEMTRACE_LLM_RETRIES", "0"),
        ("MEMTRACE_LLM_BACKOFF_MS", "0"),
        ("MEMTRACE_LLM_TOOLS", "Native"),
        ("MEMTRACE_LLM_TEMPERATURE", "2"),
        ("MEMTRACE_LLM_MAX_OUTPUT_TOKENS", "4096"),
    ];
    let (c, _) = load_file(&all, text);
    let c = c.unwrap();
    assert_eq!(
        urls_and_keys(&c),
        [("https://memtrace-var/v1", Some("memtrace-key"))]
    );
    assert_eq!(c.model, "from-env");
    assert_eq!(c.timeout, Duration::from_millis(2500));
    assert_eq!(c.concurrency, 8);
    assert_eq!(c.max_calls, 20);
    assert_eq!(c.max_tokens, 90_000);
    assert_eq!(c.retries, 0);
    assert_eq!(c.backoff, Duration::ZERO);
    assert_eq!(c.tool_mode, ToolMode::Native);
    assert_eq!(c.temperature, 2.0);
    assert_eq!(c.max_output_tokens, 4096);
}

#[test]
fn empty_variables_count_as_unset() {
    let c = load(&[
        ("OPENAI_API_KEY", "sk-a"),
        ("MEMTRACE_LLM_API_KEY", ""),
        ("MEMTRACE_LLM_MODEL", "  "),
        ("MEMTRACE_LLM_BASE_URL", ""),
    ])
    .unwrap();
    assert_eq!(
        urls_and_keys(&c),
        [("https://api.openai.com/v1", Some("sk-a"))]
    );
    assert_eq!(c.model, "gpt-4o-mini");
}

#[test]
fn embeddings_need_a_model_and_keep_the_key_rules() {
    let embed = |vars: &[(&str, &str)]| Config::embeddings(&env(vars), None);
    assert_eq!(embed(&[("OPENAI_API_KEY", "sk-1")]).unwrap(), None);
    // The chat pool serves embeddings when no embeddings URL is named.
    let c = embed(&[
        ("MEMTRACE_LLM_BASE_URL", "http://local:1/v1"),
        ("MEMTRACE_EMBED_MODEL", "nomic-embed-text"),
    ])
    .unwrap()
    .unwrap();
    assert_eq!(c.model, "nomic-embed-text");
    assert_eq!(c.endpoints[0].base_url, "http://local:1/v1");
    // OPENAI_API_KEY never goes to a URL memtrace's own variable names.
    let c = embed(&[
        ("OPENAI_API_KEY", "sk-secret"),
        ("MEMTRACE_EMBED_BASE_URL", "http://embed:2/v1"),
        ("MEMTRACE_EMBED_MODEL", "e5"),
        ("MEMTRACE_LLM_TIMEOUT", "3"),
    ])
    .unwrap()
    .unwrap();
    assert_eq!(c.endpoints.len(), 1);
    assert!(c.endpoints[0].api_key.is_none());
    assert_eq!(c.timeout, Duration::from_secs(3));
    let c = embed(&[
        ("MEMTRACE_EMBED_BASE_URL", "http://embed:2/v1"),
        ("MEMTRACE_EMBED_API_KEY", "embed-key"),
        ("MEMTRACE_EMBED_MODEL", "e5"),
    ])
    .unwrap()
    .unwrap();
    assert_eq!(
        c.endpoints[0].api_key.as_ref().map(Secret::expose),
        Some("embed-key")
    );
    let e = embed(&[
        ("MEMTRACE_EMBED_BASE_URL", "https://api.openai.com/v1"),
        ("MEMTRACE_EMBED_MODEL", "text-embedding-3-small"),
    ])
    .unwrap_err()
    .to_string();
    assert!(e.contains("set MEMTRACE_EMBED_API_KEY"), "{e}");
}

#[test]
fn pool_of_urls_sharing_one_key() {
    let c = load(&[
        ("MEMTRACE_LLM_BASE_URL", "http://a:1/v1, http://b:2/v1/"),
        ("MEMTRACE_LLM_API_KEY", "k"),
    ])
    .unwrap();
    assert_eq!(
        urls_and_keys(&c),
        [("http://a:1/v1", Some("k")), ("http://b:2/v1", Some("k"))]
    );
}

#[test]
fn pool_of_keys_on_one_url() {
    let c = load(&[("MEMTRACE_LLM_API_KEY", "k1,k2,k3")]).unwrap();
    assert_eq!(
        urls_and_keys(&c),
        [
            ("https://api.openai.com/v1", Some("k1")),
            ("https://api.openai.com/v1", Some("k2")),
            ("https://api.openai.com/v1", Some("k3")),
        ]
    );
}

#[test]
fn pool_pairs_urls_and_keys_in_order() {
    let c = load(&[
        ("MEMTRACE_LLM_BASE_URL", "http://a/v1,http://b/v1"),
        ("MEMTRACE_LLM_API_KEY", "ka,kb"),
    ])
    .unwrap();
    assert_eq!(
        urls_and_keys(&c),
        [("http://a/v1", Some("ka")), ("http://b/v1", Some("kb"))]
    );
    // Several URLs and no key: local servers need none.
    let c = load(&[("MEMTRACE_LLM_BASE_URL", "http://a/v1,http://b/v1")]).unwrap();
    assert_eq!(
        urls_and_keys(&c),
        [("http://a/v1", None), ("http://b/v1", None)]
    );
}

#[test]
fn pool_counts_that_do_not_match_are_an_error() {
    let e = load_err(&[
        (
            "MEMTRACE_LLM_BASE_URL",
            "http://a/v1,http://b/v1,http://c/v1",
        ),
        ("MEMTRACE_LLM_API_KEY", "secret-ka,secret-kb"),
    ]);
    assert!(e.contains("MEMTRACE_LLM_BASE_URL has 3 URLs"), "{e}");
    assert!(e.contains("MEMTRACE_LLM_API_KEY has 2 keys"), "{e}");
    assert!(!e.contains("secret"), "{e}");

    // The file's pool against the environment's keys.
    let text =
        "[[endpoint]]\nbase_url = \"http://a/v1\"\n[[endpoint]]\nbase_url = \"http://b/v1\"\n";
    let (c, path) = load_file(
        &[("MEMTRACE_LLM_API_KEY", "secret-1,secret-2,secret-3")],
        text,
    );
    let e = c.unwrap_err().to_string();
    assert!(
        e.contains(&format!("{} has 2 endpoints", path.display())),
        "{e}"
    );
    assert!(e.contains("MEMTRACE_LLM_API_KEY has 3 keys"), "{e}");
    assert!(!e.contains("secret"), "{e}");
}

#[test]
fn empty_items_are_errors() {
    let e = load_err(&[("MEMTRACE_LLM_BASE_URL", "http://a/v1,,http://b/v1")]);
    assert!(
        e.contains("MEMTRACE_LLM_BASE_URL has an empty item (item 2 of 3)"),
        "{e}"
    );
    let e = load_err(&[("MEMTRACE_LLM_API_KEY", "secret-a, ")]);
    assert!(
        e.contains("MEMTRACE_LLM_API_KEY has an empty item (item 2 of 2)"),
        "{e}"
    );
    assert!(!e.contains("secret"), "{e}");
}

#[test]
fn bad_values_name_the_variable_the_value_and_what_is_expected() {
    let cases = [
        (
            "MEMTRACE_LLM_TIMEOUT",
            "soon",
            "a number of seconds above 0",
        ),
        ("MEMTRACE_LLM_TIMEOUT", "0", "a number of seconds above 0"),
        ("MEMTRACE_LLM_TIMEOUT", "-1", "a number of seconds above 0"),
        ("MEMTRACE_LLM_TIMEOUT", "NaN", "a number of seconds above 0"),
        (
            "MEMTRACE_LLM_TIMEOUT",
            "1e300",
            "a number of seconds above 0",
        ),
        (
            "MEMTRACE_LLM_CONCURRENCY",
            "0",
            "a whole number from 1 to 4294967295",
        ),
        ("MEMTRACE_LLM_CONCURRENCY", "2.5", "a whole number from 1"),
        ("MEMTRACE_LLM_MAX_CALLS", "0", "a whole number from 1"),
        (
            "MEMTRACE_LLM_MAX_CALLS",
            "99999999999",
            "a whole number from 1 to 4294967295",
        ),
        (
            "MEMTRACE_LLM_MAX_TOKENS",
            "0",
            "a whole number of at least 1",
        ),
        (
            "MEMTRACE_LLM_MAX_TOKENS",
            "lots",
            "a whole number of at least 1",
        ),
        ("MEMTRACE_LLM_RETRIES", "-1", "a whole number from 0"),
        (
            "MEMTRACE_LLM_BACKOFF_MS",
            "-5",
            "a whole number of at least 0",
        ),
        ("MEMTRACE_LLM_TOOLS", "fancy", "auto, native or text"),
        ("MEMTRACE_LLM_TEMPERATURE", "2.5", "a number from 0 to 2"),
        ("MEMTRACE_LLM_TEMPERATURE", "-0.1", "a number from 0 to 2"),
        ("MEMTRACE_LLM_TEMPERATURE", "warm", "a number from 0 to 2"),
        (
            "MEMTRACE_LLM_MAX_OUTPUT_TOKENS",
            "0",
            "a whole number from 1",
        ),
    ];
    for (name, value, expected) in cases {
        let e = load_err(&[("OPENAI_API_KEY", "sk-x"), (name, value)]);
        assert!(
            e.contains(&format!("{name} is '{value}': expected {expected}")),
            "{name}={value}: {e}"
        );
    }
    assert_eq!(
        load_err(&[("OPENAI_API_KEY", "sk-x"), ("MEMTRACE_LLM_TIMEOUT", "soon")]),
        "LLM configuration: MEMTRACE_LLM_TIMEOUT is 'soon': expected a number of seconds above 0"
    );
}

#[test]
fn openai_without_key_is_an_error() {
    let expected = "LLM configuration: no API key for https://api.openai.com/v1: \
                    set OPENAI_API_KEY or MEMTRACE_LLM_API_KEY";
    assert_eq!(load_err(&[]), expected);
    assert_eq!(
        load_err(&[("OPENAI_BASE_URL", "https://API.openai.com/v1/")]),
        "LLM configuration: no API key for https://API.openai.com/v1: \
         set OPENAI_API_KEY or MEMTRACE_LLM_API_KEY"
    );
    // Also when it is one of several.
    let e = load_err(&[(
        "MEMTRACE_LLM_BASE_URL",
        "http://localhost:8000/v1,https://api.openai.com:443/v1",
    )]);
    assert!(
        e.contains("no API key for https://api.openai.com:443/v1"),
        "{e}"
    );
}

#[test]
fn a_local_url_without_key_is_fine() {
    let c = load(&[("OPENAI_BASE_URL", "http://localhost:11434/v1/")]).unwrap();
    assert_eq!(urls_and_keys(&c), [("http://localhost:11434/v1", None)]);
    // A host that merely contains the name is not OpenAI's.
    let c = load(&[("OPENAI_BASE_URL", "https://api.openai.com.proxy.example/v1")]).unwrap();
    assert_eq!(c.endpoints[0].api_key, None);
}

#[test]
fn urls_need_http_and_no_credentials() {
    let e = load_err(&[("MEMTRACE_LLM_BASE_URL", "localhost:8000/v1")]);
    assert!(
        e.contains("MEMTRACE_LLM_BASE_URL is 'localhost:8000/v1': expected a URL starting with http:// or https://"),
        "{e}"
    );
    let e = load_err(&[("OPENAI_BASE_URL", "ftp://host/v1")]);
    assert!(e.contains("OPENAI_BASE_URL is 'ftp://host/v1'"), "{e}");
    let e = load_err(&[("OPENAI_BASE_URL", "https:///v1")]);
    assert!(e.contains("expected a URL with a host"), "{e}");
    let e = load_err(&[(
        "MEMTRACE_LLM_BASE_URL",
        "http://a/v1,https://bob:hunter2@b/v1",
    )]);
    assert!(e.contains("MEMTRACE_LLM_BASE_URL (item 2 of 2)"), "{e}");
    assert!(e.contains("MEMTRACE_LLM_API_KEY"), "{e}");
    assert!(!e.contains("hunter2"), "{e}");
    let e = load_err(&[("OPENAI_BASE_URL", "bob:hunter2@b/v1")]);
    assert!(!e.contains("hunter2"), "{e}");
    // An @ in the path is no credential.
    let c = load(&[("OPENAI_BASE_URL", "http://h/v1/@x")]).unwrap();
    assert_eq!(c.endpoints[0].base_url, "http://h/v1/@x");

    let (c, path) = load_file(&[], "[[endpoint]]\nbase_url = \"https://u:hunter2@h/v1\"\n");
    let e = c.unwrap_err().to_string();
    assert!(
        e.contains(&format!("{}: endpoint 1 base_url", path.display())),
        "{e}"
    );
    assert!(!e.contains("hunter2"), "{e}");
}

#[test]
fn file_unknown_key_names_the_key_and_the_file() {
    let (c, path) = load_file(&[], "model = \"m\"\ntimeout = 5\n");
    let e = c.unwrap_err().to_string();
    assert!(e.contains(&path.display().to_string()), "{e}");
    assert!(e.contains("unknown field `timeout`"), "{e}");
    assert!(e.contains("line 2, column 1"), "{e}");

    let (c, _) = load_file(
        &[],
        "[[endpoint]]\nbase_url = \"http://h/v1\"\napi_keys = \"x\"\n",
    );
    let e = c.unwrap_err().to_string();
    assert!(e.contains("unknown field `api_keys`"), "{e}");
}

#[test]
fn file_syntax_error_names_the_file() {
    let (c, path) = load_file(&[], "model = \"m\"\nconcurrency = = 3\n");
    let e = c.unwrap_err().to_string();
    assert!(e.contains(&path.display().to_string()), "{e}");
    assert!(e.contains("line 2"), "{e}");
    // A missing file names it too.
    let missing = Path::new("/nonexistent/memtrace/llm.toml");
    let e = Config::load(&env(&[]), Some(missing))
        .unwrap_err()
        .to_string();
    assert!(e.contains("/nonexistent/memtrace/llm.toml"), "{e}");
}

#[test]
fn file_bad_values_are_errors() {
    let cases = [
        (
            "timeout_secs = 0",
            "timeout_secs is '0': expected a number of seconds above 0",
        ),
        (
            "concurrency = 0",
            "concurrency is '0': expected a whole number from 1",
        ),
        (
            "max_calls = -3",
            "max_calls is '-3': expected a whole number from 1",
        ),
        (
            "max_tokens = 0",
            "max_tokens is '0': expected a whole number of at least 1",
        ),
        (
            "retries = -1",
            "retries is '-1': expected a whole number from 0",
        ),
        (
            "backoff_ms = -1",
            "backoff_ms is '-1': expected a whole number of at least 0",
        ),
        (
            "tools = \"fancy\"",
            "tools is 'fancy': expected auto, native or text",
        ),
        (
            "temperature = 3",
            "temperature is '3': expected a number from 0 to 2",
        ),
        (
            "max_output_tokens = 0",
            "max_output_tokens is '0': expected a whole number from 1",
        ),
        ("model = \"\"", "model is '': expected a model name"),
    ];
    for (line, expected) in cases {
        let (c, path) = load_file(&[("OPENAI_API_KEY", "sk-x")], line);
        let e = c.unwrap_err().to_string();
        assert!(
            e.contains(&format!("{}: {expected}", path.display())),
            "{line}: {e}"
        );
    }
    // Whole numbers are fine where fractions are allowed.
    let (c, _) = load_file(
        &[("OPENAI_API_KEY", "sk-x")],
        "timeout_secs = 1.5\ntemperature = 1",
    );
    let c = c.unwrap();
    assert_eq!(c.timeout, Duration::from_millis(1500));
    assert_eq!(c.temperature, 1.0);
}

#[test]
fn file_api_key_env_reads_the_named_variable() {
    let text =
        "[[endpoint]]\nbase_url = \"http://localhost:11434/v1\"\napi_key_env = \"MY_OLLAMA_KEY\"\n\
                [[endpoint]]\napi_key = \"inline-key\"\n";
    let (c, _) = load_file(&[("MY_OLLAMA_KEY", "ollama-key")], text);
    let c = c.unwrap();
    assert_eq!(
        urls_and_keys(&c),
        [
            ("http://localhost:11434/v1", Some("ollama-key")),
            ("https://api.openai.com/v1", Some("inline-key")),
        ]
    );

    let (c, path) = load_file(&[], text);
    let e = c.unwrap_err().to_string();
    assert!(
        e.contains(&format!("{}: endpoint 1", path.display())),
        "{e}"
    );
    assert!(e.contains("MY_OLLAMA_KEY"), "{e}");
    assert!(e.contains("not set"), "{e}");

    let both = "[[endpoint]]\nbase_url = \"http://h/v1\"\napi_key = \"secret-inline\"\napi_key_env = \"K\"\n";
    let (c, _) = load_file(&[("K", "secret-env")], both);
    let e = c.unwrap_err().to_string();
    assert!(e.contains("both api_key and api_key_env"), "{e}");
    assert!(!e.contains("secret"), "{e}");
}

#[test]
fn environment_urls_replace_the_files_pool() {
    let text = "[[endpoint]]\nbase_url = \"http://a/v1\"\napi_key = \"ka\"\n\
                [[endpoint]]\nbase_url = \"http://b/v1\"\napi_key = \"kb\"\n";
    let (c, _) = load_file(&[], text);
    assert_eq!(
        urls_and_keys(&c.unwrap()),
        [("http://a/v1", Some("ka")), ("http://b/v1", Some("kb"))]
    );
    let (c, _) = load_file(&[("MEMTRACE_LLM_BASE_URL", "http://c/v1")], text);
    assert_eq!(urls_and_keys(&c.unwrap()), [("http://c/v1", None)]);
    let (c, _) = load_file(&[("MEMTRACE_LLM_API_KEY", "k1,k2")], text);
    assert_eq!(
        urls_and_keys(&c.unwrap()),
        [("http://a/v1", Some("k1")), ("http://b/v1", Some("k2"))]
    );
}

#[test]
fn default_file_prefers_xdg_then_home() {
    assert_eq!(
        Config::default_file(&env(&[("XDG_CONFIG_HOME", "/xdg"), ("HOME", "/home/u")])),
        Some(PathBuf::from("/xdg/memtrace/llm.toml"))
    );
    assert_eq!(
        Config::default_file(&env(&[("HOME", "/home/u")])),
        Some(PathBuf::from("/home/u/.config/memtrace/llm.toml"))
    );
    // A relative XDG_CONFIG_HOME is ignored, as the XDG spec says.
    assert_eq!(
        Config::default_file(&env(&[("XDG_CONFIG_HOME", "rel"), ("HOME", "/home/u")])),
        Some(PathBuf::from("/home/u/.config/memtrace/llm.toml"))
    );
    assert_eq!(Config::default_file(&env(&[])), None);
}

#[test]
fn the_default_file_is_read_when_present() {
    let dir = tempfile::tempdir().unwrap();
    let xdg = dir.path().to_str().unwrap();
    let vars = [("XDG_CONFIG_HOME", xdg), ("OPENAI_API_KEY", "sk-x")];
    // Absent: no error.
    let c = Config::load_default(&env(&vars)).unwrap();
    assert_eq!(c.model, "gpt-4o-mini");
    // Present: read.
    std::fs::create_dir_all(dir.path().join("memtrace")).unwrap();
    let path = dir.path().join("memtrace").join("llm.toml");
    std::fs::write(&path, "model = \"from-default-file\"\n").unwrap();
    assert_eq!(
        Config::load_default(&env(&vars)).unwrap().model,
        "from-default-file"
    );
    // MEMTRACE_LLM_CONFIG wins, and must exist.
    let other = dir.path().join("other.toml");
    std::fs::write(&other, "model = \"from-named-file\"\n").unwrap();
    let named = [
        ("XDG_CONFIG_HOME", xdg),
        ("OPENAI_API_KEY", "sk-x"),
        ("MEMTRACE_LLM_CONFIG", other.to_str().unwrap()),
    ];
    assert_eq!(
        Config::load_default(&env(&named)).unwrap().model,
        "from-named-file"
    );
    let gone = [
        ("OPENAI_API_KEY", "sk-x"),
        ("MEMTRACE_LLM_CONFIG", "/nonexistent/llm.toml"),
    ];
    let e = Config::load_default(&env(&gone)).unwrap_err().to_string();
    assert!(
        e.contains("MEMTRACE_LLM_CONFIG names /nonexistent/llm.toml"),
        "{e}"
    );
}

#[test]
fn no_key_in_errors_or_debug() {
    const SECRET: &str = "sk-SECRET-9f8e7d";
    let with_key = |name: &'static str| [(name, SECRET)];
    // Loaded configurations print no key.
    for name in ["OPENAI_API_KEY", "MEMTRACE_LLM_API_KEY"] {
        let c = load(&with_key(name)).unwrap();
        assert!(!format!("{c:?}").contains(SECRET));
        assert!(!c.describe().contains(SECRET));
    }
    let (c, _) = load_file(&[], &format!("[[endpoint]]\napi_key = \"{SECRET}\"\n"));
    assert!(!format!("{:?}", c.unwrap()).contains(SECRET));

    // Errors with a key around print no key.
    let mut errors = vec![
        load_err(&[("MEMTRACE_LLM_API_KEY", &format!("{SECRET},"))]),
        load_err(&[("OPENAI_API_KEY", &format!(",{SECRET}"))]),
        load_err(&[
            (
                "MEMTRACE_LLM_BASE_URL",
                "http://a/v1,http://b/v1,http://c/v1",
            ),
            ("MEMTRACE_LLM_API_KEY", &format!("{SECRET},{SECRET}")),
        ]),
        load_err(&[("OPENAI_BASE_URL", &format!("https://user:{SECRET}@h/v1"))]),
        load_err(&[
            ("OPENAI_API_KEY", SECRET),
            ("MEMTRACE_LLM_TEMPERATURE", "9"),
        ]),
    ];
    let files = [
        // The key on the line of the error.
        format!("api_key = \"{SECRET}\"\n"),
        format!("[[endpoint]]\napi_key = \"{SECRET}\"\napi_key_env = \"X\"\n"),
        format!("[[endpoint]]\napi_key = \"{SECRET}\" junk\n"),
        format!("[[endpoint]]\napi_key = \"{SECRET}\"\napi_key = \"{SECRET}\"\n"),
        format!("[[endpoint]]\nbase_url = \"https://u:{SECRET}@h/v1\"\n"),
    ];
    for text in &files {
        let (c, _) = load_file(&[("X", SECRET)], text);
        errors.push(c.unwrap_err().to_string());
    }
    for e in errors {
        assert!(!e.contains(SECRET) && !e.contains("9f8e7d"), "{e}");
    }
}
