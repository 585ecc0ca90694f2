//! Loading the corpus: from files, folders or the copy embedded in this crate; each case's
//! file and line; names unique across everything loaded.
//!
//! A folder is walked without following symbolic links: a link in it (to a file or a folder)
//! is left out with its reason, as is a FIFO, socket or device named like a case file, so a
//! walk visits each entry once, stays inside the folder given and never waits on a FIFO. A
//! path named by the user is followed, and read as `read::read_bounded` reads any file.

use super::data::quote_hex_literals;
use super::format::{CaseError, RawFile};
use super::read::{
    CASE_FILE, FileError, Links, MAX_MESSAGE_CHARS, bounded_text, check_yaml, not_regular,
    parse_checked, quoted, read_text,
};
use super::{Case, LoadError};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded_cases.rs"));
}

/// Folders deeper than this below the one given are not walked (each is left out with why).
pub const MAX_FOLDER_DEPTH: usize = 32;

/// Cases and the errors met while loading them.
#[derive(Clone, Debug, Default)]
pub struct Corpus {
    pub cases: Vec<Case>,
    pub errors: Vec<LoadError>,
    /// What a folder walk left out, with why (`message`): symbolic links, FIFOs, sockets and
    /// devices named like case files, folders past `MAX_FOLDER_DEPTH`. Not failures: a command
    /// prints them as notes.
    pub skipped: Vec<LoadError>,
    /// The digests of the files' bytes that were loaded (the reports name the corpus by it).
    pub digest: super::digest::CorpusDigest,
    /// What the files loaded so far cost, against `RUN_CASE_BYTES` and `RUN_CASE_NODES`.
    loaded_bytes: u64,
    loaded_nodes: usize,
}

/// What one corpus (one run) loads from case files, all files together: 256 MiB of text and
/// 8 Mi YAML nodes. A parsed case keeps at most 8 bytes per node (a listed value), so the
/// cases a run holds stay under about 64 MiB plus their text; one file's parse peaks at about
/// 200 bytes per node (its `CASE_FILE` bound, 4 Mi nodes: about 850 MB). A file past what is
/// left is a load error naming it, before it is parsed.
pub(crate) const RUN_CASE_BYTES: u64 = 256 << 20;
pub(crate) const RUN_CASE_NODES: usize = 8 << 20;

impl Corpus {
    /// The corpus compiled into this crate (the repository's cases/ folder).
    pub fn embedded() -> Corpus {
        let mut corpus = Corpus::default();
        for (file, text) in embedded::EMBEDDED_CASES {
            corpus.add_text(file, text);
        }
        corpus.check_unique_names();
        corpus
    }

    /// The names of the embedded files (for listing and tests).
    pub fn embedded_files() -> Vec<&'static str> {
        embedded::EMBEDDED_CASES.iter().map(|(f, _)| *f).collect()
    }

    /// Loads a file, or every `.yaml`/`.yml` file under a folder.
    pub fn load_path(path: &Path) -> Corpus {
        Corpus::load_paths(&[path])
    }

    /// Loads several paths into one corpus (names must be unique across all of them). A file
    /// named twice, or reached twice (a hard link, a folder and a file in it), loads once.
    pub fn load_paths(paths: &[impl AsRef<Path>]) -> Corpus {
        let mut corpus = Corpus::default();
        let mut seen = HashSet::new();
        for path in paths {
            corpus.add_path(path.as_ref(), &mut seen);
        }
        corpus.check_unique_names();
        corpus
    }

    /// A path the user named: a folder is walked, anything else read as a case file.
    fn add_path(&mut self, path: &Path, seen: &mut HashSet<FileId>) {
        if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
            let mut files = Vec::new();
            self.walk(path, 0, &mut files);
            files.sort();
            for file in files {
                self.add_file(&file, Links::DoNotFollow, seen);
            }
        } else {
            self.add_file(path, Links::Follow, seen);
        }
    }

    /// Collects the case files under `dir` (`depth` folders below the one given), leaving out
    /// with their reason what is not a regular file; follows no link.
    fn walk(&mut self, dir: &Path, depth: usize, files: &mut Vec<PathBuf>) {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) => {
                self.errors.push(file_error(
                    &dir.display().to_string(),
                    FileError {
                        line: None,
                        message: format!("cannot read folder: {e}"),
                    },
                ));
                return;
            }
        };
        for entry in entries.flatten() {
            let path = entry.path();
            // The entry's own type: a link is a link, never what it points to.
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            let case_file = path.extension().is_some_and(|e| e == "yaml" || e == "yml");
            let mut skip = |why: String| {
                self.skipped.push(LoadError {
                    file: path.display().to_string(),
                    line: None,
                    case: None,
                    message: why,
                });
            };
            if file_type.is_dir() {
                if depth + 1 > MAX_FOLDER_DEPTH {
                    skip(format!(
                        "a folder more than {MAX_FOLDER_DEPTH} levels below the one given: \
                         not walked"
                    ));
                } else {
                    self.walk(&path, depth + 1, files);
                }
            } else if file_type.is_symlink() {
                let to_folder = std::fs::metadata(&path).is_ok_and(|m| m.is_dir());
                if case_file || to_folder {
                    let what = if to_folder { "folder" } else { "file" };
                    skip(format!(
                        "a symbolic link (to a {what}): folders are walked without following \
                         links; name it with --cases to load it"
                    ));
                }
            } else if case_file {
                match not_regular(&file_type) {
                    None => files.push(path),
                    Some(what) => skip(format!("{what}, not a regular file: not read")),
                }
            }
        }
    }

    fn add_file(&mut self, path: &Path, links: Links, seen: &mut HashSet<FileId>) {
        if let Some(id) = file_id(path, links)
            && !seen.insert(id)
        {
            return;
        }
        let display = path.display().to_string();
        match read_text(path, &CASE_FILE, links) {
            Ok(text) => self.add_text(&display, &text),
            Err(e) => self.errors.push(file_error(&display, e)),
        }
    }

    /// Parses one file's text; `file` is the name used in messages.
    pub fn add_text(&mut self, file: &str, text: &str) {
        self.digest.add(text.as_bytes());
        let error = |e: FileError| file_error(file, e);
        // Checked before parsing: the parser takes seconds on very deep nesting, builds every
        // node of a huge file or of an alias bomb, ignores tags, and gives no position for an
        // alias bomb or for each case.
        let scan = match check_yaml(text, &CASE_FILE) {
            Ok(scan) => scan,
            Err(e) => {
                self.errors.push(error(e));
                return;
            }
        };
        let (bytes, nodes) = (
            self.loaded_bytes.saturating_add(text.len() as u64),
            self.loaded_nodes.saturating_add(scan.nodes),
        );
        if bytes > RUN_CASE_BYTES || nodes > RUN_CASE_NODES {
            self.errors.push(error(FileError {
                line: None,
                message: format!(
                    "{} bytes and {} YAML nodes, more than is left ({} bytes, {} nodes) of what \
                     one run loads from case files ({RUN_CASE_BYTES} bytes and \
                     {RUN_CASE_NODES} nodes, all files together): not parsed",
                    text.len(),
                    scan.nodes,
                    RUN_CASE_BYTES.saturating_sub(self.loaded_bytes),
                    RUN_CASE_NODES.saturating_sub(self.loaded_nodes)
                ),
            }));
            return;
        }
        (self.loaded_bytes, self.loaded_nodes) = (bytes, nodes);
        if let Some((line, tag)) = &scan.unknown_tag {
            let field = field_before(text, *line, tag);
            self.errors.push(error(FileError {
                line: Some(*line),
                message: format!(
                    "{field}: unknown YAML tag `{}` (case files use no tags)",
                    quoted(tag)
                ),
            }));
            return;
        }
        let raw: RawFile = match parse_checked(&quote_hex_literals(text), &scan, &CASE_FILE) {
            Ok(raw) => raw,
            Err(e) => {
                self.errors.push(error(e));
                return;
            }
        };
        if raw.cases.is_empty() {
            self.errors.push(error(FileError {
                line: scan.cases_key_line,
                message: format!("cases: no cases in {file}"),
            }));
            return;
        }
        let lines: Vec<Option<usize>> = if scan.case_lines.len() == raw.cases.len() {
            scan.case_lines.into_iter().map(Some).collect()
        } else {
            // YAML the scan does not follow: fall back to finding each `name:` by its text.
            let by_name = name_lines(text);
            raw.cases
                .iter()
                .map(|c| by_name.get(c.name.as_str()).copied())
                .collect()
        };
        for (raw_case, line) in raw.cases.iter().zip(lines) {
            match raw_case.to_case(file, line.unwrap_or(0)) {
                Ok(case) => self.cases.push(case),
                Err(CaseError { case, text }) => self.errors.push(LoadError {
                    file: file.to_string(),
                    line,
                    case: Some(quoted(&case)),
                    message: bounded_text(&text, MAX_MESSAGE_CHARS),
                }),
            }
        }
    }

    /// A name defined more than once is an error at each later definition, naming the first,
    /// and no case of that name runs: a name is a case's identity in `--filter`, expectations
    /// files and reports, and which of them a result would be about is unknowable.
    fn check_unique_names(&mut self) {
        let mut first: HashMap<&str, (&str, usize)> = HashMap::new();
        let mut duplicated: HashSet<String> = HashSet::new();
        let mut errors = Vec::new();
        for case in &self.cases {
            match first.get(case.name.as_str()) {
                Some((file, line)) => {
                    duplicated.insert(case.name.clone());
                    errors.push(LoadError {
                        file: case.file.clone(),
                        line: Some(case.line),
                        case: Some(case.name.clone()),
                        message: format!(
                            "duplicate case name (first defined at {file}:{line}); no case of \
                             this name runs"
                        ),
                    });
                }
                None => {
                    first.insert(&case.name, (&case.file, case.line));
                }
            }
        }
        self.cases.retain(|case| !duplicated.contains(&case.name));
        self.errors.extend(errors);
    }
}

/// A file's identity on its device, so that one file reached by two paths loads once.
type FileId = (u64, u64);

#[cfg(unix)]
fn file_id(path: &Path, links: Links) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    let metadata = match links {
        Links::Follow => std::fs::metadata(path),
        Links::DoNotFollow => std::fs::symlink_metadata(path),
    };
    metadata.ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn file_id(_path: &Path, _links: Links) -> Option<FileId> {
    None
}

fn file_error(file: &str, e: FileError) -> LoadError {
    LoadError {
        file: file.to_string(),
        line: e.line,
        case: None,
        message: e.message,
    }
}

/// The line (1-based) of the first `name:` with each value, found by text.
fn name_lines(text: &str) -> HashMap<&str, usize> {
    let mut lines = HashMap::new();
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start().trim_start_matches("- ").trim_start();
        if let Some(rest) = trimmed.strip_prefix("name:") {
            let value = rest.split(" #").next().unwrap_or("").trim();
            let value = value.trim_matches(|c| c == '"' || c == '\'');
            lines.entry(value).or_insert(index + 1);
        }
    }
    lines
}

/// The key a value on `line` belongs to (`split` in `    split: !weird {...}`), for messages.
fn field_before(text: &str, line: usize, value: &str) -> String {
    let text = text.lines().nth(line - 1).unwrap_or("");
    let before = text.split(value).next().unwrap_or("").trim_end();
    let key = before.strip_suffix(':').unwrap_or(before);
    let key = key
        .rsplit(|c: char| c.is_whitespace() || matches!(c, '{' | ',' | '[' | '-'))
        .next()
        .unwrap_or("")
        .trim_matches(|c| c == '"' || c == '\'');
    if key.is_empty() {
        format!("line {line}")
    } else {
        quoted(key)
    }
}
