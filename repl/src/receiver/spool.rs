//! The receiver's write-ahead log, `otlp-spool.log` in the database folder.
//!
//! Every part of a request that the receiver accepts (the spans of one
//! trace, as an OTLP/JSON request of their own) is appended and synced to
//! disk before the request is answered, so a process killed right after
//! its 200 loses nothing: the next start reads the log back and assembles
//! what was not stored yet. When a trace is stored, a marker says which of
//! its parts it holds. Stored parts are not needed again (the stored trace
//! keeps its spans), so the log is rewritten with only the parts not yet
//! stored ([`Spool::rewrite`]): through a new file renamed over it, so a
//! crash leaves the old log or the new one, each whole.
//!
//! A record is a kind byte, the payload's length (u32, little-endian), the
//! first 8 bytes of the payload's blake3 hash (with the kind), and the
//! payload. A record cut short or whose hash does not match ends the log:
//! it was being written when the process died and was never acknowledged,
//! and it is cut off when the log is opened.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The log's file name in the database folder.
pub const FILE: &str = "otlp-spool.log";
/// The new log being written by [`Spool::rewrite`], renamed to [`FILE`] once whole.
const NEW_FILE: &str = "otlp-spool.log.new";
/// For crash tests: names a step of the receiver at which the process says
/// so on standard error and stops, to be killed there: `written` (a
/// rewrite's new log is synced), `renamed` (it replaced the old one), or
/// `superseding` (a trace stored again, the earlier one not yet dropped).
const STALL_VAR: &str = "MEMTRACE_TEST_OTLP_STALL";

/// What starts the file, so that another file is not taken for a log.
const MAGIC: &[u8; 8] = b"MTOTLP1\n";
const HEAD: usize = 1 + 4 + 8;
const PART: u8 = b'P';
const STORED: u8 = b'S';
/// Largest payload read back (a part is at most a request body).
const MAX_PAYLOAD: u32 = 1 << 30;

/// A record of the log.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// Spans of one trace.
    Part {
        /// The trace id (hex).
        trace_id: String,
        /// Whether the part holds the trace's root span.
        root: bool,
        /// `{"resourceSpans": [...]}` as JSON.
        json: Vec<u8>,
    },
    /// A trace was stored with every part of it up to an offset.
    Stored {
        /// The trace id (hex).
        trace_id: String,
        /// The offset of the last part stored; every part of the trace at
        /// or before it is stored.
        through: u64,
        /// The memtrace trace that holds them.
        trace: u64,
    },
}

/// A record as the opening scan sees it: parts without their spans.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// A part at this offset.
    Part {
        /// Where its record starts.
        offset: u64,
        /// The trace id.
        trace_id: String,
        /// Whether it holds the root span.
        root: bool,
    },
    /// A stored marker.
    Stored {
        /// The trace id.
        trace_id: String,
        /// The offset of the last part stored.
        through: u64,
    },
}

/// The open log.
pub struct Spool {
    file: File,
    path: PathBuf,
    len: u64,
    /// A rewrite renamed the log and the folder was not synced since.
    dir_unsynced: bool,
}

fn check(kind: u8, payload: &[u8]) -> [u8; 8] {
    let mut h = blake3::Hasher::new();
    h.update(&[kind]);
    h.update(payload);
    let mut out = [0u8; 8];
    out.copy_from_slice(&h.finalize().as_bytes()[..8]);
    out
}

fn encode(record: &Record) -> (u8, Vec<u8>) {
    match record {
        Record::Part {
            trace_id,
            root,
            json,
        } => {
            let mut p = Vec::with_capacity(34 + json.len() / 2);
            p.push(u8::from(*root));
            p.push(trace_id.len() as u8);
            p.extend_from_slice(trace_id.as_bytes());
            p.extend_from_slice(&lz4_flex::compress_prepend_size(json));
            (PART, p)
        }
        Record::Stored {
            trace_id,
            through,
            trace,
        } => {
            let v = serde_json::json!({"trace_id": trace_id, "through": through, "trace": trace});
            (STORED, v.to_string().into_bytes())
        }
    }
}

fn bad(what: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.into())
}

/// A part's trace id and root flag, and where its JSON starts.
fn part_head(p: &[u8]) -> io::Result<(String, bool, usize)> {
    let n = *p.get(1).ok_or_else(|| bad("a part record is cut short"))? as usize;
    let id = p
        .get(2..2 + n)
        .and_then(|b| std::str::from_utf8(b).ok())
        .ok_or_else(|| bad("a part record's trace id is unreadable"))?;
    Ok((id.to_string(), p[0] == 1, 2 + n))
}

fn decode(kind: u8, p: &[u8]) -> io::Result<Record> {
    match kind {
        PART => {
            let (trace_id, root, at) = part_head(p)?;
            let json = lz4_flex::decompress_size_prepended(&p[at..])
                .map_err(|e| bad(format!("a part record does not decompress: {e}")))?;
            Ok(Record::Part {
                trace_id,
                root,
                json,
            })
        }
        STORED => {
            let v: serde_json::Value = serde_json::from_slice(p)
                .map_err(|e| bad(format!("a stored marker is not JSON: {e}")))?;
            match (
                v["trace_id"].as_str(),
                v["through"].as_u64(),
                v["trace"].as_u64(),
            ) {
                (Some(trace_id), Some(through), Some(trace)) => Ok(Record::Stored {
                    trace_id: trace_id.to_string(),
                    through,
                    trace,
                }),
                _ => Err(bad(format!("a stored marker lacks a field: {v}"))),
            }
        }
        other => Err(bad(format!("unknown record kind {other}"))),
    }
}

impl Spool {
    /// Opens (or creates) the log in `dir` and reads it: its entries in
    /// order, and how many bytes of a torn last record were cut off.
    pub fn open(dir: &Path) -> io::Result<(Spool, Vec<Entry>, u64)> {
        let path = dir.join(FILE);
        // A rewrite cut short: the old log is still whole.
        match std::fs::remove_file(dir.join(NEW_FILE)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let fresh = !path.exists();
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)?;
        if fresh {
            file.write_all(MAGIC)?;
            file.sync_all()?;
            File::open(dir)?.sync_all()?;
        }
        let size = file.metadata()?.len();
        let mut magic = [0u8; 8];
        file.seek(SeekFrom::Start(0))?;
        file.read_exact(&mut magic)
            .map_err(|_| bad(format!("{} is too short to be a spool", path.display())))?;
        if &magic != MAGIC {
            return Err(bad(format!(
                "{} is not memtrace's OTLP spool (it does not start as one)",
                path.display()
            )));
        }
        let mut reader = io::BufReader::with_capacity(1 << 20, &mut file);
        let mut entries = Vec::new();
        let mut at = MAGIC.len() as u64;
        let mut head = [0u8; HEAD];
        let mut payload = Vec::new();
        loop {
            if reader.read_exact(&mut head).is_err() {
                break;
            }
            let kind = head[0];
            let len = u32::from_le_bytes([head[1], head[2], head[3], head[4]]);
            if len > MAX_PAYLOAD || at + (HEAD as u64) + u64::from(len) > size {
                break;
            }
            payload.resize(len as usize, 0);
            if reader.read_exact(&mut payload).is_err() || check(kind, &payload) != head[5..] {
                break;
            }
            let entry = match kind {
                PART => {
                    let (trace_id, root, _) = part_head(&payload)?;
                    Entry::Part {
                        offset: at,
                        trace_id,
                        root,
                    }
                }
                _ => match decode(kind, &payload)? {
                    Record::Stored {
                        trace_id, through, ..
                    } => Entry::Stored { trace_id, through },
                    Record::Part { .. } => unreachable!("decode keeps the kind"),
                },
            };
            entries.push(entry);
            at += (HEAD as u64) + u64::from(len);
        }
        drop(reader);
        let torn = size - at;
        if torn > 0 {
            file.set_len(at)?;
            file.sync_all()?;
        }
        file.seek(SeekFrom::Start(at))?;
        Ok((
            Spool {
                file,
                path,
                len: at,
                dir_unsynced: false,
            },
            entries,
            torn,
        ))
    }

    /// Appends a record (not yet synced); returns its offset.
    pub fn append(&mut self, record: &Record) -> io::Result<u64> {
        let (kind, payload) = encode(record);
        let len = u32::try_from(payload.len())
            .ok()
            .filter(|&l| l <= MAX_PAYLOAD)
            .ok_or_else(|| bad("a record larger than 1 GiB"))?;
        let mut buf = Vec::with_capacity(HEAD + payload.len());
        buf.push(kind);
        buf.extend_from_slice(&len.to_le_bytes());
        buf.extend_from_slice(&check(kind, &payload));
        buf.extend_from_slice(&payload);
        let at = self.len;
        if let Err(e) = self.file.write_all(&buf) {
            // Leave no half record behind for the next append to follow.
            let _ = self.file.set_len(at);
            let _ = self.file.seek(SeekFrom::Start(at));
            return Err(e);
        }
        self.len += buf.len() as u64;
        Ok(at)
    }

    /// Makes every record appended so far durable (and a rewrite's rename
    /// of the log, if it is not yet).
    pub fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()?;
        if self.dir_unsynced {
            self.sync_dir()?;
        }
        Ok(())
    }

    fn sync_dir(&mut self) -> io::Result<()> {
        File::open(self.path.parent().unwrap_or(Path::new(".")))?.sync_all()?;
        self.dir_unsynced = false;
        Ok(())
    }

    /// The record at `offset`, and its size in the log.
    pub fn read_at(&mut self, offset: u64) -> io::Result<(Record, u64)> {
        let raw = self.read_raw(offset)?;
        Ok((decode(raw[0], &raw[HEAD..])?, raw.len() as u64))
    }

    /// The record at `offset` as it is in the file, its hash checked.
    fn read_raw(&mut self, offset: u64) -> io::Result<Vec<u8>> {
        let mut head = [0u8; HEAD];
        self.file.seek(SeekFrom::Start(offset))?;
        let out = (|| {
            self.file.read_exact(&mut head)?;
            let len = u32::from_le_bytes([head[1], head[2], head[3], head[4]]);
            if len > MAX_PAYLOAD {
                return Err(bad("a record's length is out of range"));
            }
            let mut raw = vec![0u8; HEAD + len as usize];
            raw[..HEAD].copy_from_slice(&head);
            self.file.read_exact(&mut raw[HEAD..])?;
            if check(head[0], &raw[HEAD..]) != head[5..] {
                return Err(bad(format!(
                    "the record at {offset} of {} does not match its hash",
                    self.path.display()
                )));
            }
            Ok(raw)
        })();
        self.file.seek(SeekFrom::Start(self.len))?;
        out
    }

    /// Replaces the log with one holding only the records at `keep` (in
    /// that order); returns their offsets in it. The new log is written
    /// and synced beside the old one, then renamed over it, and the folder
    /// synced: a crash before the rename leaves the old log whole (the new
    /// one is removed at the next open), a crash after it the new one. On
    /// an error before the rename, the old log stays in use; after it, the
    /// new one is in use, and a folder not synced is synced by the next
    /// [`Spool::sync`] (which fails until it is).
    pub fn rewrite(&mut self, keep: &[u64]) -> io::Result<Vec<u64>> {
        let dir = self.path.parent().unwrap_or(Path::new(".")).to_path_buf();
        let new_path = dir.join(NEW_FILE);
        let written = (|| {
            let mut out = io::BufWriter::with_capacity(
                1 << 20,
                OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open(&new_path)?,
            );
            out.write_all(MAGIC)?;
            let mut at = MAGIC.len() as u64;
            let mut offsets = Vec::with_capacity(keep.len());
            for &offset in keep {
                let raw = self.read_raw(offset)?;
                out.write_all(&raw)?;
                offsets.push(at);
                at += raw.len() as u64;
            }
            let file = out.into_inner().map_err(|e| e.into_error())?;
            file.sync_all()?;
            Ok((file, offsets, at))
        })();
        let (file, offsets, len) = match written {
            Ok(w) => w,
            Err(e) => {
                let _ = std::fs::remove_file(&new_path);
                return Err(e);
            }
        };
        stall("written");
        if let Err(e) = std::fs::rename(&new_path, &self.path) {
            let _ = std::fs::remove_file(&new_path);
            return Err(e);
        }
        // Written sequentially, the new file's position is at its end.
        self.file = file;
        self.len = len;
        self.dir_unsynced = true;
        stall("renamed");
        // Until the rename is durable nothing more is acknowledged: a crash
        // could bring the old log back without what was appended to this one.
        let _ = self.sync_dir();
        Ok(offsets)
    }

    /// The log's size in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Bytes of records it holds (its size without the file's header).
    pub fn records_len(&self) -> u64 {
        self.len - MAGIC.len() as u64
    }

    /// Where the log is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Stops the thread at `step` when a crash test asks for it (see
/// [`STALL_VAR`]), so that the test can kill the process exactly there.
pub(super) fn stall(step: &str) {
    if std::env::var_os(STALL_VAR).is_some_and(|v| v == step) {
        eprintln!("memtrace: the OTLP receiver stalled at {step}");
        loop {
            std::thread::park();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(t: &str, root: bool, json: &str) -> Record {
        Record::Part {
            trace_id: t.into(),
            root,
            json: json.as_bytes().to_vec(),
        }
    }

    #[test]
    fn records_read_back_and_a_torn_tail_is_cut_off() {
        let dir = tempfile::tempdir().unwrap();
        let (mut s, entries, torn) = Spool::open(dir.path()).unwrap();
        assert!(entries.is_empty());
        assert_eq!(torn, 0);
        let a = s.append(&part("aa", false, r#"{"x":1}"#)).unwrap();
        let b = s.append(&part("bb", true, r#"{"y":2}"#)).unwrap();
        s.append(&Record::Stored {
            trace_id: "aa".into(),
            through: a,
            trace: 7,
        })
        .unwrap();
        s.sync().unwrap();
        assert_eq!(s.read_at(b).unwrap().0, part("bb", true, r#"{"y":2}"#));
        let full = s.len();
        drop(s);
        // A record half written when the process died.
        let mut f = OpenOptions::new()
            .append(true)
            .open(dir.path().join(FILE))
            .unwrap();
        f.write_all(&[PART, 200, 0, 0, 0, 1, 2, 3]).unwrap();
        drop(f);
        let (mut s, entries, torn) = Spool::open(dir.path()).unwrap();
        assert_eq!(torn, 8);
        assert_eq!(s.len(), full);
        assert_eq!(
            entries,
            vec![
                Entry::Part {
                    offset: a,
                    trace_id: "aa".into(),
                    root: false
                },
                Entry::Part {
                    offset: b,
                    trace_id: "bb".into(),
                    root: true
                },
                Entry::Stored {
                    trace_id: "aa".into(),
                    through: a,
                },
            ]
        );
        assert_eq!(s.read_at(a).unwrap().0, part("aa", false, r#"{"x":1}"#));
        // Appending goes on after the cut.
        let c = s.append(&part("cc", false, "{}")).unwrap();
        assert_eq!(c, full);
    }

    #[test]
    fn a_rewrite_keeps_only_the_records_asked_for_and_appending_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let (mut s, _, _) = Spool::open(dir.path()).unwrap();
        let a = s.append(&part("aa", true, r#"{"a":1}"#)).unwrap();
        let b = s.append(&part("bb", false, r#"{"b":2}"#)).unwrap();
        s.append(&Record::Stored {
            trace_id: "aa".into(),
            through: a,
            trace: 3,
        })
        .unwrap();
        let c = s.append(&part("cc", false, r#"{"c":3}"#)).unwrap();
        s.sync().unwrap();
        let before = s.len();
        let kept = s.rewrite(&[b, c]).unwrap();
        assert!(s.len() < before);
        assert_eq!(kept[0], MAGIC.len() as u64);
        assert_eq!(
            s.read_at(kept[1]).unwrap().0,
            part("cc", false, r#"{"c":3}"#)
        );
        let d = s.append(&part("dd", true, "{}")).unwrap();
        s.sync().unwrap();
        assert!(!dir.path().join(NEW_FILE).exists());
        drop(s);
        let (_, entries, torn) = Spool::open(dir.path()).unwrap();
        assert_eq!(torn, 0);
        let ids: Vec<_> = entries
            .iter()
            .map(|e| match e {
                Entry::Part {
                    trace_id, offset, ..
                } => (trace_id.clone(), *offset),
                Entry::Stored { .. } => panic!("no marker is kept: {e:?}"),
            })
            .collect();
        assert_eq!(
            ids,
            vec![
                ("bb".into(), kept[0]),
                ("cc".into(), kept[1]),
                ("dd".into(), d)
            ]
        );
        // Nothing kept: the log is emptied.
        let (mut s, _, _) = Spool::open(dir.path()).unwrap();
        assert!(s.rewrite(&[]).unwrap().is_empty());
        assert_eq!(s.records_len(), 0);
        assert_eq!(
            std::fs::metadata(dir.path().join(FILE)).unwrap().len(),
            MAGIC.len() as u64
        );
    }

    #[test]
    fn a_rewrite_cut_short_leaves_the_old_log_whole() {
        let dir = tempfile::tempdir().unwrap();
        let (mut s, _, _) = Spool::open(dir.path()).unwrap();
        let a = s.append(&part("aa", true, r#"{"a":1}"#)).unwrap();
        s.sync().unwrap();
        drop(s);
        // What a crash before the rename leaves: the new log beside the old.
        std::fs::write(dir.path().join(NEW_FILE), MAGIC).unwrap();
        let (mut s, entries, _) = Spool::open(dir.path()).unwrap();
        assert!(!dir.path().join(NEW_FILE).exists());
        assert_eq!(entries.len(), 1);
        assert_eq!(s.read_at(a).unwrap().0, part("aa", true, r#"{"a":1}"#));
    }

    #[test]
    fn another_file_is_not_taken_for_a_spool() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE), b"hello world, not a spool").unwrap();
        let e = Spool::open(dir.path()).err().unwrap();
        assert!(e.to_string().contains("not memtrace's OTLP spool"), "{e}");
    }
}
