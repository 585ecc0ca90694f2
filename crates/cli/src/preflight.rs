//! What a command checks before it starts a backend, so that a run never ends in "cannot
//! write" after its whole length (and a fuzz campaign never loses its cases): each report file
//! and folder it will write can be written. And the notes on what a case folder's walk left
//! out.

use crate::error::CommandError;
use dmlcts_harness::Corpus;
use dmlcts_harness::report::write::{check_file_writable, check_folder_writable};
use std::path::Path;

/// Each report file a command will write, with its flag (`--json`, `--junit`; `-` is stdout
/// and needs no check): the first that cannot be written is the error. Missing folders are
/// made.
pub(crate) fn check_report_files(files: &[(&str, Option<&Path>)]) -> Result<(), CommandError> {
    for (flag, path) in files {
        if let Some(path) = path
            && !crate::closing::is_stdout(path)
            && let Err(e) = check_file_writable(path)
        {
            return Err(CommandError::Output(format!(
                "{flag} {}: {e}",
                path.display()
            )));
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
