//! Writing a report's Markdown and HTML files, each whole or not at all.

use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use super::types::Report;
use crate::error::{AnalysisError, Result};

fn io_err(path: &Path, source: io::Error) -> AnalysisError {
    AnalysisError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Writes `text` to `path` through a temporary file in the same folder,
/// renamed over `path` once complete.
fn write_atomic(path: &Path, text: &str) -> Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut file = fs::File::create(&tmp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(io_err(&tmp, e));
    }
    fs::rename(&tmp, path).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        io_err(path, e)
    })
}

impl Report {
    /// Writes `report.md` and `report.html` into `dir`, creating it when
    /// missing; each file is written under a temporary name and renamed, so
    /// a reader never sees half a report. Returns the two paths.
    pub fn write(&self, dir: &Path) -> Result<(PathBuf, PathBuf)> {
        match fs::metadata(dir) {
            Ok(m) if !m.is_dir() => {
                return Err(io_err(
                    dir,
                    io::Error::new(
                        io::ErrorKind::NotADirectory,
                        "exists and is not a directory",
                    ),
                ))
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?
            }
            Err(e) => return Err(io_err(dir, e)),
        }
        let md = dir.join("report.md");
        let html = dir.join("report.html");
        write_atomic(&md, &self.markdown())?;
        write_atomic(&html, &self.html())?;
        Ok((md, html))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrib::Method;
    use crate::prelude::*;
    use crate::report::test_support::fixture;

    #[test]
    fn write_puts_both_files_in_a_new_folder_and_names_a_bad_path() {
        let (dir, db) = fixture();
        let report = db.report(Method::Evidence, None).unwrap();
        let out = dir.path().join("out/nested");
        let (md, html) = report.write(&out).unwrap();
        assert_eq!(
            (md.clone(), html.clone()),
            (out.join("report.md"), out.join("report.html"))
        );
        assert_eq!(fs::read_to_string(&md).unwrap(), report.markdown());
        assert_eq!(fs::read_to_string(&html).unwrap(), report.html());
        // Again, over the old files; no temporary file stays behind.
        report.write(&out).unwrap();
        let mut names: Vec<String> = fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["report.html", "report.md"]);

        let file = dir.path().join("a-file");
        fs::write(&file, "x").unwrap();
        let err = report.write(&file).unwrap_err();
        assert!(
            matches!(&err, AnalysisError::Io { path, .. } if path == &file.display().to_string())
        );
        assert!(err.to_string().contains("is not a directory"), "{err}");
        let err = report.write(&file.join("below")).unwrap_err();
        assert!(err.to_string().contains("a-file"), "{err}");
    }
}
