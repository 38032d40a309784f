use super::*;

#[test]
fn the_lock_is_seen_held_while_a_writer_is_open_and_stays_held() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    assert!(!lock_held(&path), "no database, no lock");
    let writer = Store::open(&path, &StoreOptions::default()).unwrap();
    assert!(lock_held(&path));
    // Looking did not release it: a second writer is still refused.
    assert!(lock_held(&path));
    assert!(matches!(
        Store::open(&path, &StoreOptions::default()),
        Err(StorageError::InUse(_))
    ));
    drop(writer);
    assert!(!lock_held(&path));
}

/// The other process of
/// `a_writer_in_another_process_is_seen_and_keeps_its_lock`: opens the
/// database at `MEMTRACE_TEST_HOLD` to write, creates the file at
/// `MEMTRACE_TEST_READY`, and holds the database until its standard
/// input closes. Without those variables (a plain `--ignored` run) it
/// does nothing.
#[test]
#[ignore = "run by another test, in a process of its own"]
fn hold_a_database_open_to_write() {
    use std::io::Read;
    let (Some(path), Some(ready)) = (
        std::env::var_os("MEMTRACE_TEST_HOLD"),
        std::env::var_os("MEMTRACE_TEST_READY"),
    ) else {
        return;
    };
    let _writer = Store::open(Path::new(&path), &StoreOptions::default()).unwrap();
    std::fs::write(ready, b"").unwrap();
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}

#[test]
fn a_writer_in_another_process_is_seen_and_keeps_its_lock() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    drop(Store::open(&path, &StoreOptions::default()).unwrap());
    assert!(!lock_held(&path), "closed: no lock");
    let ready = dir.path().join("ready");
    let mut other = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "store::tests::lock::hold_a_database_open_to_write",
            "--ignored",
            "--test-threads=1",
        ])
        .env("MEMTRACE_TEST_HOLD", &path)
        .env("MEMTRACE_TEST_READY", &ready)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let waited = std::time::Instant::now();
    while !ready.exists() {
        assert!(
            waited.elapsed() < std::time::Duration::from_secs(60),
            "the other process did not open the database"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(lock_held(&path), "the other process's lock is seen");
    // Asking released nothing: a writer here is still refused.
    assert!(lock_held(&path));
    assert!(matches!(
        Store::open(&path, &StoreOptions::default()),
        Err(StorageError::InUse(_))
    ));
    let reader = StoreOptions {
        read_only: true,
        ..StoreOptions::default()
    };
    assert!(Store::open(&path, &reader).unwrap().is_read_only());
    drop(other.stdin.take());
    assert!(other.wait().unwrap().success());
    assert!(!lock_held(&path), "the other process closed it");
}
