//! Reading a file a user hands in: case files, expectations files and backends files, all
//! three the same way. Regular files only (a FIFO, socket or device is refused before it is
//! opened for reading, and again by the open file's own type, so nothing waits on a FIFO or
//! reads /dev/zero); within a size bound checked before a byte is parsed; and YAML within a
//! node budget, counted on the text by the scan and, where the file has aliases, on their
//! expansion before the parser builds anything. Error messages that quote the file are
//! bounded and escaped, and a file that is not YAML at all is never quoted.

use super::scan::{self, MAX_NESTING, Scan, ScanError};
use serde::de::{self, DeserializeOwned, DeserializeSeed, Visitor};
use std::cell::Cell;
use std::fmt;
use std::io::Read;
use std::path::Path;

/// What a kind of file may hold, and how it is named in messages.
#[derive(Clone, Copy, Debug)]
pub struct FileKind {
    /// `case file`, `expectations file`, `backends file`.
    pub name: &'static str,
    /// The largest file read, in bytes: a bigger one is refused before it is read.
    pub max_bytes: u64,
    /// The most YAML nodes (scalars, lists, mappings, aliases) the file may hold, aliases
    /// expanded: parsing takes about 200 bytes of memory per node.
    pub max_nodes: usize,
    /// The deepest nesting such a file needs in practice (for the message past `MAX_NESTING`).
    pub usual_nesting: usize,
    /// What the file's top level is expected to be: the `expecting` text of the type it is
    /// parsed into, by which a file that is not one at all is recognized and never quoted.
    pub expecting: &'static str,
}

/// Case files: 32 MiB and 4 Mi nodes. The largest the suite writes itself is a fuzz
/// campaign's saved case with a 2 MiB input listed value by value (about 2 Mi nodes and
/// 12 MiB); the corpus's largest file is 160 KB.
pub(crate) const CASE_FILE: FileKind = FileKind {
    name: "case file",
    max_bytes: 32 << 20,
    max_nodes: 4 << 20,
    usual_nesting: 20,
    expecting: "a YAML mapping with `cases:` (a case file)",
};

/// Expectations files (`--expectations`, `--expectations-dir`): 1 MiB and 64 Ki nodes; the
/// repository's are 2 KB.
pub(crate) const EXPECTATIONS_FILE: FileKind = FileKind {
    name: "expectations file",
    max_bytes: 1 << 20,
    max_nodes: 1 << 16,
    usual_nesting: 8,
    expecting: "a YAML mapping with `expected_failures:`, `known_differences:` or \
                `not_enforced:` (an expectations file)",
};

/// Backends files (`--backend-config`, backends.yaml): 1 MiB and 64 Ki nodes; the
/// repository's is 1 KB.
pub const BACKENDS_FILE: FileKind = FileKind {
    name: "backends file",
    max_bytes: 1 << 20,
    max_nodes: 1 << 16,
    usual_nesting: 6,
    expecting: "a YAML mapping with `backends:` (a backends file)",
};

/// Whether a symbolic link at the path itself is followed: yes for a path the user named,
/// no for a file found by walking a folder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Links {
    Follow,
    DoNotFollow,
}

/// A problem with a file's contents, at a line when known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileError {
    pub line: Option<usize>,
    pub message: String,
}

impl FileError {
    fn new(line: Option<usize>, message: String) -> FileError {
        FileError { line, message }
    }

    /// `FILE:LINE: MESSAGE` (`FILE: MESSAGE` without a line).
    pub fn in_file(&self, file: &str) -> String {
        match self.line {
            Some(line) => format!("{file}:{line}: {}", self.message),
            None => format!("{file}: {}", self.message),
        }
    }
}

/// The type of a file system entry that is not a regular file, in words; None for one that is.
pub(crate) fn not_regular(file_type: &std::fs::FileType) -> Option<&'static str> {
    if file_type.is_file() {
        return None;
    }
    if file_type.is_dir() {
        return Some("a folder");
    }
    if file_type.is_symlink() {
        return Some("a symbolic link");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return Some("a FIFO");
        }
        if file_type.is_socket() {
            return Some("a socket");
        }
        if file_type.is_char_device() {
            return Some("a character device");
        }
        if file_type.is_block_device() {
            return Some("a block device");
        }
    }
    Some("not a regular file")
}

fn not_regular_error(what: &str) -> FileError {
    FileError::new(
        None,
        format!("{what}, not a regular file: not read (only regular files are)"),
    )
}

/// Opens for reading without waiting: O_NONBLOCK, so that a FIFO put there after the type
/// was checked opens at once (and is then refused); O_NOFOLLOW where links are not followed.
/// On Windows, FILE_FLAG_OPEN_REPARSE_POINT in their place: a link or junction put there
/// after the check opens as itself, never as its target.
fn open(path: &Path, links: Links) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let mut flags = libc::O_NONBLOCK;
        if links == Links::DoNotFollow {
            flags |= libc::O_NOFOLLOW;
        }
        options.custom_flags(flags);
    }
    #[cfg(windows)]
    if links == Links::DoNotFollow {
        use std::os::windows::fs::OpenOptionsExt;
        // winbase.h's FILE_FLAG_OPEN_REPARSE_POINT.
        const FILE_FLAG_OPEN_REPARSE_POINT: u32 = 0x0020_0000;
        options.custom_flags(FILE_FLAG_OPEN_REPARSE_POINT);
    }
    #[cfg(not(any(unix, windows)))]
    let _ = links;
    options.open(path)
}

/// The file's bytes: a regular file of at most `kind.max_bytes`, refused otherwise before it
/// is read (a file that grows while it is read is refused at the bound).
pub(crate) fn read_bounded(
    path: &Path,
    kind: &FileKind,
    links: Links,
) -> Result<Vec<u8>, FileError> {
    let metadata = match links {
        Links::Follow => std::fs::metadata(path),
        Links::DoNotFollow => std::fs::symlink_metadata(path),
    };
    let metadata = metadata.map_err(|e| FileError::new(None, format!("cannot read: {e}")))?;
    if let Some(what) = not_regular(&metadata.file_type()) {
        return Err(not_regular_error(what));
    }
    let file = open(path, links).map_err(|e| FileError::new(None, format!("cannot read: {e}")))?;
    // The open file's own type: whatever the path names now, this is what would be read.
    let metadata = file
        .metadata()
        .map_err(|e| FileError::new(None, format!("cannot read: {e}")))?;
    if let Some(what) = not_regular(&metadata.file_type()) {
        return Err(not_regular_error(what));
    }
    let too_big = |size: u64| {
        FileError::new(
            None,
            format!(
                "{size} bytes, more than the bound for {}s ({} bytes, {} MiB): not read",
                kind.name,
                kind.max_bytes,
                kind.max_bytes >> 20
            ),
        )
    };
    if metadata.len() > kind.max_bytes {
        return Err(too_big(metadata.len()));
    }
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    file.take(kind.max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| FileError::new(None, format!("cannot read: {e}")))?;
    if bytes.len() as u64 > kind.max_bytes {
        return Err(too_big(bytes.len() as u64));
    }
    Ok(bytes)
}

/// The file as UTF-8 text (`read_bounded`); text that is not UTF-8 is refused at the line and
/// column of its first bad byte.
pub fn read_text(path: &Path, kind: &FileKind, links: Links) -> Result<String, FileError> {
    let bytes = read_bounded(path, kind, links)?;
    String::from_utf8(bytes).map_err(|e| {
        let bytes = e.as_bytes();
        let valid = e.utf8_error().valid_up_to();
        let line_start = bytes[..valid]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1);
        FileError::new(
            Some(bytes[..valid].iter().filter(|&&b| b == b'\n').count() + 1),
            format!(
                "not UTF-8 text: byte 0x{:02X} at column {} starts no UTF-8 character",
                bytes[valid],
                valid - line_start + 1
            ),
        )
    })
}

/// The scan before the parser: nesting and the nodes written, within `kind`'s bounds.
pub(crate) fn check_yaml(text: &str, kind: &FileKind) -> Result<Scan, FileError> {
    // YAML 1.1 (the parser's) ends lines at NEL, LS and PS too; editors and this scan do not,
    // so every line number after one would be off. Found by the case-file fuzz target.
    if let Some(at) = text.find(['\u{85}', '\u{2028}', '\u{2029}']) {
        let c = text[at..].chars().next().unwrap_or(' ');
        return Err(FileError::new(
            Some(1 + text[..at].matches('\n').count()),
            format!(
                "a U+{:04X} line break (YAML 1.1 ends a line there, editors do not; write \
                 `\\u{:04x}` in a double-quoted string): not parsed",
                c as u32, c as u32
            ),
        ));
    }
    scan::scan(text, kind.max_nodes).map_err(|e| match e {
        ScanError::TooDeep { line } => FileError::new(
            Some(line),
            format!(
                "nested more than {MAX_NESTING} levels deep (open brackets plus indentation); \
                 {}s need about {}",
                kind.name, kind.usual_nesting
            ),
        ),
        ScanError::TooManyNodes { line } => FileError::new(
            Some(line),
            format!(
                "more than {} YAML nodes (values, lists, mappings) by this line, the bound for \
                 {}s: not parsed",
                kind.max_nodes, kind.name
            ),
        ),
        ScanError::TagDirective { line } => FileError::new(
            Some(line),
            format!(
                "a `%TAG` directive (it renames YAML's tags; {}s use no tags): not parsed",
                kind.name
            ),
        ),
    })
}

/// Parses text that `check_yaml` scanned: where it has aliases, their expansion is counted
/// against the node budget first (the parser would build it whole), then parsed into `T`.
pub(crate) fn parse_checked<T: DeserializeOwned>(
    text: &str,
    scan: &Scan,
    kind: &FileKind,
) -> Result<T, FileError> {
    if scan.first_alias.is_some() {
        count_expanded(text, scan, kind)?;
    }
    serde_yaml::from_str(text).map_err(|e| yaml_error(&e, scan, kind))
}

/// A whole YAML file's text into `T`, within `kind`'s bounds.
pub(crate) fn parse_yaml<T: DeserializeOwned>(text: &str, kind: &FileKind) -> Result<T, FileError> {
    let scan = check_yaml(text, kind)?;
    parse_checked(text, &scan, kind)
}

/// Reads and parses a file the user named (an expectations or backends file): errors are
/// `FILE:LINE: MESSAGE`, naming the field where the parser does.
pub fn load_yaml<T: DeserializeOwned>(path: &Path, kind: &FileKind) -> Result<T, String> {
    let file = path.display().to_string();
    let text = read_text(path, kind, Links::Follow).map_err(|e| e.in_file(&file))?;
    parse_yaml(&text, kind).map_err(|e| e.in_file(&file))
}

/// The text of the error the budget visitor raises, told apart from the parser's own.
const OVER_BUDGET: &str = "dmlcts: over the node budget";

/// Walks the parsed document, aliases expanded, and stops at the node budget: it builds
/// nothing, so a small file of aliases that expands to gigabytes is refused after
/// `max_nodes` steps. Errors other than the budget's are left to the typed parse to report.
fn count_expanded(text: &str, scan: &Scan, kind: &FileKind) -> Result<(), FileError> {
    let left = Cell::new(kind.max_nodes);
    let budget = Budget { left: &left };
    match budget.deserialize(serde_yaml::Deserializer::from_str(text)) {
        Err(e) if e.to_string().contains(OVER_BUDGET) => Err(FileError::new(
            scan.first_alias,
            format!(
                "its aliases expand to more than {} YAML nodes, the bound for {}s (the first \
                 alias is on this line): not parsed",
                kind.max_nodes, kind.name
            ),
        )),
        Err(e) if e.to_string().contains("repetition limit") => Err(yaml_error(&e, scan, kind)),
        _ => Ok(()),
    }
}

#[derive(Clone, Copy)]
struct Budget<'a> {
    left: &'a Cell<usize>,
}

impl Budget<'_> {
    fn take<E: de::Error>(self) -> Result<(), E> {
        match self.left.get() {
            0 => Err(E::custom(OVER_BUDGET)),
            left => {
                self.left.set(left - 1);
                Ok(())
            }
        }
    }
}

impl<'de> DeserializeSeed<'de> for Budget<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Budget<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.take()
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.take()
    }
    fn visit_i128<E: de::Error>(self, _: i128) -> Result<(), E> {
        self.take()
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.take()
    }
    fn visit_u128<E: de::Error>(self, _: u128) -> Result<(), E> {
        self.take()
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.take()
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.take()
    }
    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<(), E> {
        self.take()
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.take()
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.take()
    }
    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        self.take()?;
        d.deserialize_any(self)
    }
    fn visit_newtype_struct<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        self.take()?;
        d.deserialize_any(self)
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.take()?;
        while seq.next_element_seed(self)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.take()?;
        while map.next_key_seed(self)?.is_some() {
            map.next_value_seed(self)?;
        }
        Ok(())
    }
    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
        use serde::de::VariantAccess;
        self.take()?;
        let ((), variant) = data.variant_seed(self)?;
        variant.newtype_variant_seed(self)
    }
}

/// The parser's error as a `FileError`: its line, and its message bounded (`bounded_message`),
/// with the line of the first alias where the parser gives none for its repetition limit.
pub(crate) fn yaml_error(e: &serde_yaml::Error, scan: &Scan, kind: &FileKind) -> FileError {
    let message = bounded_message(&without_location(&e.to_string()), kind);
    match e.location() {
        Some(location) => FileError::new(Some(location.line()), message),
        None if message.contains("repetition limit") => FileError::new(
            scan.first_alias,
            format!("{message}: its aliases expand to too much (the first is on this line)"),
        ),
        None => FileError::new(None, message),
    }
}

/// serde_yaml appends " at line L column C"; the line is reported separately.
fn without_location(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_string(),
        None => message.to_string(),
    }
}

/// The most characters of a file's text a message quotes (`quoted`).
pub(crate) const MAX_QUOTED_CHARS: usize = 64;

/// The most characters of a parser's message kept (`bounded_message`).
pub(crate) const MAX_MESSAGE_CHARS: usize = 400;

/// Strings the parser's message quotes longer than this are not shown.
const MAX_SHOWN_STRING: usize = 40;

/// Text from a file, for a message: control characters, line breaks of every kind,
/// non-characters and bidirectional controls escaped as `\u{..}`; at most
/// `MAX_QUOTED_CHARS` characters, then `…` and the full length.
pub fn quoted(text: &str) -> String {
    bounded_text(text, MAX_QUOTED_CHARS)
}

/// `text` escaped as `quoted` does, and cut after `max_chars` characters.
pub(crate) fn bounded_text(text: &str, max_chars: usize) -> String {
    let mut out = String::new();
    for (shown, c) in text.chars().enumerate() {
        if shown == max_chars {
            out.push_str(&format!("… ({} characters)", text.chars().count()));
            break;
        }
        if needs_escape(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// Characters a terminal, an XML file or a YAML comment would act on or refuse, or that print
/// as nothing (format characters and the rest `text` escapes): `text`'s one list.
pub(crate) fn needs_escape(c: char) -> bool {
    crate::text::is_escaped(c)
}

/// A parser's message about a file, fit to print: a string it quotes is shown only when short
/// (40 characters) and never when the file's top level is not what `kind` expects (a file that
/// is not YAML at all, such as a key or a token, reads as one long string); names in
/// backticks (`unknown field `...``) bounded; everything escaped, at most 400 characters.
pub(crate) fn bounded_message(message: &str, kind: &FileKind) -> String {
    let top_level = message.contains(kind.expecting);
    // A file that is not this kind of file at all: say what it reads as, and nothing of it.
    if top_level && let Some(rest) = message.strip_prefix("invalid type: ") {
        let what = match rest.split([' ', ',']).next().unwrap_or("") {
            "string" => "a string",
            "integer" | "floating" => "a number",
            "sequence" => "a list",
            "boolean" => "a boolean",
            "unit" | "null" => "empty",
            _ => "something else",
        };
        return format!("invalid type: {what}, expected {}", kind.expecting);
    }
    let mut out = String::new();
    let mut rest = message;
    while !rest.is_empty() {
        let string_at = rest.find("string \"");
        let tick_at = rest.find('`');
        match (string_at, tick_at) {
            (Some(s), t) if t.is_none_or(|t| s < t) => {
                out.push_str(&rest[..s]);
                let body = &rest[s + "string \"".len()..];
                let end = debug_string_end(body);
                let shown = &body[..end];
                if top_level || shown.chars().count() > MAX_SHOWN_STRING {
                    out.push_str("a string");
                } else {
                    out.push_str(&format!(
                        "string \"{}\"",
                        bounded_text(shown, MAX_SHOWN_STRING)
                    ));
                }
                rest = body.get(end + 1..).unwrap_or("");
            }
            (_, Some(t)) => {
                out.push_str(&rest[..=t]);
                let body = &rest[t + 1..];
                let end = body.find('`').unwrap_or(body.len());
                out.push_str(&quoted(&body[..end]));
                out.push('`');
                rest = body.get(end + 1..).unwrap_or("");
            }
            _ => {
                out.push_str(rest);
                rest = "";
            }
        }
    }
    bounded_text(&out, MAX_MESSAGE_CHARS)
}

/// Where a string quoted as Rust's `{:?}` ends (its closing quote), past escapes.
fn debug_string_end(body: &str) -> usize {
    let bytes = body.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i,
            _ => i += 1,
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_text_is_escaped_and_bounded() {
        assert_eq!(
            quoted("a\x1b[2Jb\r\u{85}\u{2028}\u{fffe}"),
            "a\\u{1b}[2Jb\\u{d}\\u{85}\\u{2028}\\u{fffe}"
        );
        let long = "x".repeat(100);
        assert_eq!(
            quoted(&long),
            format!("{}… (100 characters)", "x".repeat(64))
        );
    }

    #[test]
    fn a_message_shows_short_strings_and_hides_long_ones_and_any_at_the_top_level() {
        let kind = &CASE_FILE;
        assert_eq!(
            bounded_message(
                "cases[0].split.axis: invalid type: string \"abc\", expected u32",
                kind
            ),
            "cases[0].split.axis: invalid type: string \"abc\", expected u32"
        );
        let long = format!("invalid type: string \"{}\", expected u32", "k".repeat(41));
        assert_eq!(
            bounded_message(&long, kind),
            "invalid type: a string, expected u32"
        );
        let top = format!(
            "invalid type: string \"hunter2\", expected {}",
            kind.expecting
        );
        assert_eq!(
            bounded_message(&top, kind),
            format!("invalid type: a string, expected {}", kind.expecting)
        );
        let pin = format!(
            "invalid type: integer `123456`, expected {}",
            kind.expecting
        );
        assert_eq!(
            bounded_message(&pin, kind),
            format!("invalid type: a number, expected {}", kind.expecting)
        );
        let field = format!("unknown field `{}\x1b`, expected `cases`", "f".repeat(70));
        assert_eq!(
            bounded_message(&field, kind),
            format!(
                "unknown field `{}… (71 characters)`, expected `cases`",
                "f".repeat(64)
            )
        );
    }
}
