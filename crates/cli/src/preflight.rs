//! What a command checks before it starts a backend, so that a run never ends in "cannot
//! write" after its whole length (and a fuzz campaign never loses its cases): each report file
//! and folder it will write can be written. And the notes on what a case folder's walk left
//! out.

use crate::error::CommandError;
use dmlcts_harness::Corpus;
use dmlcts_harness::report::write::{check_folder_writable, check_report_writable, written_into};
use std::path::Path;

/// Each report file a command will write, with its flag (`--json`, `--junit`; `-` is stdout
/// and needs no check): the first that cannot be written is the error. Missing folders are
/// made.
pub(crate) fn check_report_files(files: &[(&str, Option<&Path>)]) -> Result<(), CommandError> {
    for (flag, path) in files {
        if let Some(path) = path
            && !crate::closing::is_stdout(path)
            && let Err(e) = check_report_writable(path)
        {
            return Err(CommandError::Output(format!(
                "{flag} {}: {e}",
                path.display()
            )));
        }
    }
    Ok(())
}

/// What a path names, for telling two paths apart: the file it names now (device and inode,
/// links followed), or, for a name with nothing there yet, its absolute path with `.` and
/// `..` resolved (the folder's links followed where it exists).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Identity {
    /// Device and inode (Unix); elsewhere the resolved name stands for the file.
    #[cfg(unix)]
    File(u64, u64),
    Name(std::path::PathBuf),
}

fn identity(path: &Path) -> Identity {
    #[cfg(unix)]
    if let Ok(meta) = std::fs::metadata(path) {
        use std::os::unix::fs::MetadataExt;
        return Identity::File(meta.dev(), meta.ino());
    }
    Identity::Name(absolute(path))
}

/// `path` made absolute, the existing part of its folder resolved by the file system.
fn absolute(path: &Path) -> std::path::PathBuf {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut existing = path.as_path();
    let mut rest = Vec::new();
    while std::fs::canonicalize(existing).is_err() {
        let (Some(parent), Some(name)) = (existing.parent(), existing.file_name()) else {
            return path.clone();
        };
        rest.push(name.to_os_string());
        existing = parent;
    }
    let mut resolved = std::fs::canonicalize(existing).unwrap_or_else(|_| existing.into());
    for name in rest.into_iter().rev() {
        resolved.push(name);
    }
    resolved
}

/// Each report path a command writes (flag, path; `-` is stdout and left out) is refused when
/// it names what another report path names, or an input of the run (flag, path): a file, or a
/// case file a `--cases` folder would be walked for (`.yaml`, `.yml` inside it). Checked before
/// the run starts, so a report never overwrites a case file, the expectations or another report.
pub(crate) fn check_distinct(
    reports: &[(&str, &Path)],
    inputs: &[(&str, &Path)],
) -> Result<(), CommandError> {
    // Reports written into a device, a FIFO or a descriptor's file replace nothing: two may
    // share one (`--json /dev/null --junit /dev/null`).
    let reports: Vec<(&str, &Path)> = (reports.iter().copied())
        .filter(|(_, p)| !crate::closing::is_stdout(p) && !written_into(p))
        .collect();
    let shown = |p: &Path| dmlcts_harness::text::line(&p.display().to_string()).into_owned();
    for (i, (flag, path)) in reports.iter().enumerate() {
        let this = identity(path);
        for (other_flag, other) in &reports[..i] {
            if identity(other) == this {
                return Err(CommandError::Usage(format!(
                    "{flag} {} and {other_flag} {} are the same file: one report would \
                     overwrite the other",
                    shown(path),
                    shown(other)
                )));
            }
        }
        for (input_flag, input) in inputs {
            let same = identity(input) == this
                || (std::fs::metadata(input).is_ok_and(|m| m.is_dir())
                    && path.extension().is_some_and(|e| e == "yaml" || e == "yml")
                    && absolute(path).starts_with(absolute(input)));
            if same {
                return Err(CommandError::Usage(format!(
                    "{flag} {} would overwrite an input of this run ({input_flag} {})",
                    shown(path),
                    shown(input)
                )));
            }
        }
    }
    Ok(())
}

/// A folder a command will write in (`matrix --out`): made if missing; one that cannot be
/// written is the error.
pub(crate) fn check_report_folder(flag: &str, folder: &Path) -> Result<(), CommandError> {
    check_folder_writable(folder)
        .map_err(|e| CommandError::Output(format!("{flag} {}: {e}", folder.display())))
}

/// A note for each entry a case folder's walk left out, with why (a link, a FIFO, ...).
pub(crate) fn print_skipped(corpus: &Corpus) {
    for skipped in &corpus.skipped {
        // A file name is the user's folder's text: escaped, like every case file's text.
        crate::say!(
            "note: left out {}",
            dmlcts_harness::text::line(&skipped.to_string())
        );
    }
}
