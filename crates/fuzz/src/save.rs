//! What a campaign leaves behind as it runs: one minimal case per bucket, saved in the corpus
//! format and named by its signature, with the command that replays it; and the lock that
//! keeps two campaigns out of one folder.

use crate::check::materialize_all;
use crate::options::CampaignOptions;
use crate::outcome::{Bucket, BucketStatus};
use crate::replay::saved_case_replay;
use dmlcts_harness::corpus::data::logical_elements;
use dmlcts_harness::report::write::{check_folder_writable, write_atomically};
use dmlcts_harness::text::yaml_comment;
use dmlcts_harness::{Expectation, cases_to_yaml};
use dmlcts_oracle::execute as oracle_execute;
use std::path::Path;

/// Outputs of more elements than this are saved without their expected values (the oracle
/// recomputes them when the case runs; listed, a 2 MiB output would be a 12 MB file).
pub const MAX_SAVED_EXPECTED_ELEMENTS: usize = 4096;

/// The most lines, and characters per line, of the failure's report a saved case's header
/// keeps; past them, a line saying how much was left out.
pub const MAX_SAVED_REPORT_LINES: usize = 200;
pub const MAX_SAVED_REPORT_LINE_CHARS: usize = 400;

/// Writes the bucket's minimal case to `out_dir/<signature>.yaml`, once: when the bucket is
/// found (so a campaign stopped part-way keeps it), and again only if a job found a case of
/// the same bucket with a lower index, which replaces it (`saved` is then unset). The file is
/// written to a temporary file and renamed (`write_atomically`): a link or FIFO at its name is
/// replaced, never followed, and a killed campaign never leaves it truncated. Sets `saved` and
/// `replay`. Informational buckets are not failures and are not saved (a values-only backend
/// would otherwise leave one must-reject case per rule in cases/regressions/, the corpus's own
/// folder).
pub fn save_bucket(options: &CampaignOptions, bucket: &mut Bucket) {
    let Some(out_dir) = &options.out_dir else {
        return;
    };
    if matches!(bucket.status, BucketStatus::Informational { .. }) || bucket.saved.is_some() {
        return;
    }
    let mut case = bucket.case.clone();
    case.name = format!(
        "regression.{}.{}",
        short_slug(&options.backend_name),
        bucket.id
    );
    case.file = String::new();
    case.description = Some(format!(
        "found by {} (backend {}, seed {}, case {}, {} check)",
        crate::replay::campaign_runner(options),
        options.backend_name,
        options.seed,
        bucket.first_index,
        bucket.kind.name()
    ));
    case.tags = vec!["regression".to_string()];
    // Stored expected values make the file readable; the oracle recomputes them anyway.
    let output_elements: usize = (case.op.outputs().iter())
        .map(|(_, d)| d.sizes.iter().map(|&s| s as usize).product::<usize>())
        .sum();
    if case.expect == Expectation::Accept
        && output_elements <= MAX_SAVED_EXPECTED_ELEMENTS
        && let Ok(inputs) = materialize_all(&case)
    {
        let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
        if let Ok(outputs) = oracle_execute(&case.op, &refs) {
            case.expected = case
                .op
                .outputs()
                .iter()
                .zip(&outputs)
                .map(|((_, d), o)| Some(logical_elements(d, &o.bytes)))
                .collect();
        }
    }
    let path = out_dir.join(format!("{}.yaml", file_stem(&bucket.id)));
    let status = match &bucket.status {
        BucketStatus::New if !bucket.reproduced => {
            "NEW, but it did not fail again when re-run (flaky?), so it was not shrunk".to_string()
        }
        BucketStatus::New => "NEW".to_string(),
        BucketStatus::Known { name, reason } => format!("known ({name}: {reason})"),
        BucketStatus::Informational { reason } => format!("informational ({reason})"),
    };
    let replay = saved_case_replay(options, &case.name, &path.display().to_string());
    let header = format!(
        "# Saved by {}: the minimal case of bucket {}\n\
         # status: {}\n\
         # check: {}; operator: {}; feature level: {}\n\
         # first found: case {} of seed {} (case seed {}); the campaign's report counts its hits\n\
         # replay: {}\n\
         # What failed:\n{}\n",
        comment_text(&crate::replay::campaign_runner(options)),
        comment_text(&bucket.id),
        comment_text(&status),
        bucket.kind.name(),
        case.op.kind(),
        case.feature_level,
        bucket.first_index,
        options.seed,
        bucket.first_seed,
        // Whole, however long: a cut command would not run.
        yaml_comment(&replay.render()),
        comment_lines(&bucket.report)
    );
    let body = header + &cases_to_yaml(std::slice::from_ref(&case));
    match write_atomically(&path, body.as_bytes()) {
        Ok(()) => {
            bucket.saved = Some(path);
            bucket.replay = Some(replay);
        }
        Err(e) => {
            bucket
                .report
                .push_str(&format!("\n(could not write {}: {e})", path.display()));
        }
    }
}

/// Text for one line of a YAML comment (`text::yaml_comment`: every line break, CR, NEL, LS,
/// PS as well as LF, and control character escaped, so that nothing in it leaves the
/// comment), at most `MAX_SAVED_REPORT_LINE_CHARS` characters of it.
fn comment_text(text: &str) -> String {
    let escaped = yaml_comment(text);
    let total = escaped.chars().count();
    if total <= MAX_SAVED_REPORT_LINE_CHARS {
        return escaped.into_owned();
    }
    let kept: String = escaped.chars().take(MAX_SAVED_REPORT_LINE_CHARS).collect();
    format!("{kept}… ({total} characters)")
}

/// A report as `#   ` comment lines (`comment_text` each), at most `MAX_SAVED_REPORT_LINES`.
fn comment_lines(report: &str) -> String {
    let lines: Vec<&str> = report.split('\n').collect();
    let mut out: Vec<String> = (lines.iter().take(MAX_SAVED_REPORT_LINES))
        .map(|l| format!("#   {}", comment_text(l)))
        .collect();
    if lines.len() > MAX_SAVED_REPORT_LINES {
        out.push(format!(
            "#   ... and {} more lines",
            lines.len() - MAX_SAVED_REPORT_LINES
        ));
    }
    out.join("\n")
}

/// A bucket's id as a file name: ids are made of `[a-z0-9._]` (signatures, `known.` and a
/// slug); anything else, or a leading dot, is slugged, so the name never leaves the folder.
fn file_stem(id: &str) -> String {
    let plain = !id.is_empty()
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'));
    if plain { id.to_string() } else { slug(id) }
}

/// A campaign's hold on its `--out` folder: one campaign at a time saves into a folder, so
/// one's cases and report never point at another's. Held until dropped, and released by the
/// system when the process ends however it ends (an advisory lock on the folder itself on
/// Unix; on a `.dmlcts-fuzz.lock` file in it elsewhere).
#[derive(Debug)]
pub struct OutFolderLock {
    _file: std::fs::File,
}

impl OutFolderLock {
    /// Makes the folder if needed, checks that a file can be written in it, and locks it;
    /// another campaign holding it is an error that says so.
    pub fn acquire(folder: &Path) -> Result<OutFolderLock, String> {
        check_folder_writable(folder)?;
        #[cfg(unix)]
        let file = std::fs::File::open(folder);
        #[cfg(not(unix))]
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(folder.join(".dmlcts-fuzz.lock"));
        let file = file.map_err(|e| format!("cannot lock {}: {e}", folder.display()))?;
        match file.try_lock() {
            Ok(()) => Ok(OutFolderLock { _file: file }),
            Err(std::fs::TryLockError::WouldBlock) => Err(format!(
                "another fuzz campaign is saving into {} (it holds the folder's lock); give \
                 this one its own --out",
                folder.display()
            )),
            Err(std::fs::TryLockError::Error(e)) => {
                Err(format!("cannot lock {}: {e}", folder.display()))
            }
        }
    }
}

/// The most characters of a backend's name a saved case's name keeps (a `process:` backend
/// is named by its whole command).
const MAX_NAME_SLUG_CHARS: usize = 40;

/// `slug`, at most `MAX_NAME_SLUG_CHARS` characters.
pub(crate) fn short_slug(text: &str) -> String {
    slug(text).chars().take(MAX_NAME_SLUG_CHARS).collect()
}

/// A name made of `[a-z0-9_]`.
pub fn slug(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect()
}
