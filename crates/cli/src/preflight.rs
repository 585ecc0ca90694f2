//! What a command checks before it starts a backend, so that a run never ends in "cannot
//! write" after its whole length (and a fuzz campaign never loses its cases): each report file
//! and folder it will write can be written. And the notes on what a case folder's walk left
//! out.

use dmlcts_harness::Corpus;
use dmlcts_harness::report::write::{check_file_writable, check_folder_writable};
use std::path::Path;

/// Each report file a command will write, with its flag (`--json`, `--junit`; `-` is stdout
/// and needs no check): the first that cannot be written is an error on stderr, exit status 2. Missing folders are made.
pub fn check_report_files(files: &[(&str, Option<&Path>)]) -> Result<(), i32> {
    for (flag, path) in files {
        if let Some(path) = path
            && !crate::closing::is_stdout(path)
            && let Err(e) = check_file_writable(path)
        {
            crate::say_err!("error: {flag} {}: {e}", path.display());
            return Err(2);
        }
    }
    Ok(())
}

/// A folder a command will write in (`matrix --out`): made if missing; one that cannot be
/// written is an error on stderr, exit status 2.
pub fn check_report_folder(flag: &str, folder: &Path) -> Result<(), i32> {
    check_folder_writable(folder).map_err(|e| {
        crate::say_err!("error: {flag} {}: {e}", folder.display());
        2
    })
}

/// A note for each entry a case folder's walk left out, with why (a link, a FIFO, ...).
pub fn print_skipped(corpus: &Corpus) {
    for skipped in &corpus.skipped {
        // A file name is the user's folder's text: escaped, like every case file's text.
        crate::say!(
            "note: left out {}",
            dmlcts_harness::text::line(&skipped.to_string())
        );
    }
}
