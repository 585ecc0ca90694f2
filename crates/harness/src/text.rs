//! Text from a backend or a case file, made safe where it is written. Such text is data: it
//! must not move a terminal's cursor, change its colours or title (ESC, CSI, OSC, a bare CR
//! that rewrites the line), break a line-oriented format (CR, NEL U+0085, LS U+2028, PS U+2029
//! end lines in YAML 1.1 and in many viewers), reorder what is shown (bidirectional controls),
//! or make a JUnit file invalid XML (U+FFFE, U+FFFF and other characters XML 1.0 forbids), or
//! hide in a name so that two names print alike (every format character, category Cf: the
//! soft hyphen, U+2060, the tag block; spaces other than U+0020; unassigned code points; see
//! `text/invisible.py`, which derives the table from the Unicode categories).
//!
//! Every such character is written as a visible escape: `\n`, `\r`, `\t` (one-line text only),
//! or `\u{XXXX}`. One module, used by every writer: the terminal (`line`, `block`,
//! `quoted_lines`), JUnit (`xml`, `xml_attribute`), the matrix page, the JSON report's
//! human-readable fields, and comments in saved YAML files (`yaml_comment`).

use std::borrow::Cow;
use std::fmt;

/// The escape for a character no writer may pass on as it is; `None` for a safe one. `\n`
/// and `\t` are left to the caller (kept in blocks, escaped in lines).
fn escape(c: char) -> Option<String> {
    let code = c as u32;
    let unsafe_char = match c {
        '\n' | '\t' => false,
        // C0 controls (ESC, CR, BEL, backspace, ...), DEL, and the C1 controls (CSI U+009B and
        // OSC U+009D in 8-bit terminals, NEL U+0085).
        _ if code < 0x20 || (0x7f..=0x9f).contains(&code) => true,
        // Line and paragraph separators.
        '\u{2028}' | '\u{2029}' => true,
        // Bidirectional controls: they change the order in which a line is displayed.
        '\u{061c}'
        | '\u{200e}'
        | '\u{200f}'
        | '\u{202a}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}' => true,
        // Invisible: a zero-width space and the byte-order mark.
        '\u{200b}' | '\u{feff}' => true,
        // Unicode non-characters: U+FDD0..U+FDEF and the last two code points of every plane
        // (U+FFFE and U+FFFF are not XML 1.0 characters at all).
        '\u{fdd0}'..='\u{fdef}' => true,
        _ if code & 0xfffe == 0xfffe => true,
        // By their Unicode properties (the table `invisible.py` makes): every format
        // character (Cf: U+00AD, U+2060, the tag block U+E0000..U+E007F, ...), every space
        // but U+0020, private-use and unassigned code points, and the default-ignorable
        // fillers, so that two texts that print alike are the same text.
        _ => is_invisible(code),
    };
    if !unsafe_char {
        return None;
    }
    Some(match c {
        '\r' => "\\r".to_string(),
        _ => format!("\\u{{{code:x}}}"),
    })
}

mod invisible;

/// Whether `line` writes `c` as an escape (a line break and a tab included).
pub(crate) fn is_escaped(c: char) -> bool {
    c == '\n' || c == '\t' || escape(c).is_some()
}

/// Whether `code` is in the table `invisible.py` generates.
fn is_invisible(code: u32) -> bool {
    invisible::RANGES
        .binary_search_by(|&(lo, hi)| {
            if hi < code {
                std::cmp::Ordering::Less
            } else if lo > code {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

fn escaped(text: &str, keep_newlines: bool) -> Cow<'_, str> {
    let needs = |c: char| escape(c).is_some() || (c == '\n' && !keep_newlines) || c == '\t';
    if !text.chars().any(needs) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match (c, escape(c)) {
            (_, Some(e)) => out.push_str(&e),
            ('\n', None) if !keep_newlines => out.push_str("\\n"),
            ('\t', None) if !keep_newlines => out.push_str("\\t"),
            (c, None) => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// One line: every control character, line break of any kind, bidirectional control and
/// non-character escaped. For names, reasons, device texts: anything printed on one line.
pub fn line(text: &str) -> Cow<'_, str> {
    escaped(text, false)
}

/// Text whose `\n`s are its own structure (a failure's details, made by the harness): every
/// other control character, line break, bidirectional control and non-character escaped.
pub fn block(text: &str) -> Cow<'_, str> {
    escaped(text, true)
}

/// Whether `c` ends a line anywhere: LF, CR, VT, FF, NEL, LS, PS.
fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{0b}' | '\u{0c}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// A backend's (or a case file's) text as quoted lines: each line (split at every kind of line
/// break, CR LF counting once) escaped and prefixed with `prefix`, trailing blanks dropped;
/// every line ends with `\n`. No line of it can pass for a line the harness wrote: each starts
/// with the prefix. Empty text is one line saying so.
pub(crate) fn quoted_lines(text: &str, prefix: &str) -> String {
    let mut out = String::new();
    let text = text.trim_end_matches(|c: char| c.is_whitespace());
    if text.is_empty() {
        out.push_str(prefix);
        out.push_str("(no text)\n");
        return out;
    }
    let mut rest = text;
    loop {
        let (piece, next) = match rest.find(is_line_break) {
            Some(at) => {
                let width = if rest[at..].starts_with("\r\n") {
                    2
                } else {
                    rest[at..].chars().next().map_or(1, char::len_utf8)
                };
                (&rest[..at], Some(&rest[at + width..]))
            }
            None => (rest, None),
        };
        let piece = line(piece);
        let piece = piece.trim_end();
        if piece.is_empty() {
            out.push_str(prefix.trim_end());
        } else {
            out.push_str(prefix);
            out.push_str(piece);
        }
        out.push('\n');
        match next {
            Some(next) => rest = next,
            None => break,
        }
    }
    out
}

/// A comment's text in a saved YAML file (after `# `): one line that no YAML 1.1 or 1.2 parser
/// reads as a line break, and only characters YAML allows in a stream.
pub fn yaml_comment(text: &str) -> Cow<'_, str> {
    line(text)
}

/// XML 1.0 character data (element content): markup escaped, the harness's own `\n`s kept,
/// everything `block` escapes escaped (so every character is one XML 1.0 allows).
pub fn xml(text: &str) -> String {
    markup_escaped(&block(text), Markup::XmlText)
}

/// An XML 1.0 attribute value (double-quoted): as `xml`, and its `\n`s and tabs written as
/// character references, which a parser keeps (a raw one is normalized to a space).
pub(crate) fn xml_attribute(text: &str) -> String {
    markup_escaped(&block(text), Markup::XmlAttribute)
}

/// Text for HTML content and double-quoted attribute values (the matrix page): as `xml`,
/// with HTML's entity for the apostrophe.
pub fn html(text: &str) -> String {
    markup_escaped(&block(text), Markup::Html)
}

/// Where escaped markup goes: the one escaper serves XML text, XML attributes and HTML.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Markup {
    XmlText,
    XmlAttribute,
    Html,
}

fn markup_escaped(text: &str, markup: Markup) -> String {
    let attribute = markup == Markup::XmlAttribute;
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' if markup == Markup::Html => out.push_str("&#39;"),
            '\'' => out.push_str("&apos;"),
            '\n' if attribute => out.push_str("&#10;"),
            '\t' if attribute => out.push_str("&#9;"),
            c => out.push(c),
        }
    }
    out
}

/// `line` as a `Display`: `format!("FAIL {}", Line(&name))`.
pub struct Line<'a>(pub &'a str);

impl fmt::Display for Line<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&line(self.0))
    }
}

/// `block` as a `Display`.
pub struct Block<'a>(pub &'a str);

impl fmt::Display for Block<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&block(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every character a terminal, a line-oriented reader or XML 1.0 treats specially.
    const HOSTILE: &[char] = &[
        '\u{1b}',
        '\r',
        '\u{7}',
        '\u{8}',
        '\u{0}',
        '\u{7f}',
        '\u{85}',
        '\u{9b}',
        '\u{9d}',
        '\u{2028}',
        '\u{2029}',
        '\u{202e}',
        '\u{2066}',
        '\u{feff}',
        '\u{fffe}',
        '\u{ffff}',
        '\u{fdd0}',
        '\u{1fffe}',
        '\u{10ffff}',
        '\u{0b}',
        '\u{0c}',
    ];

    #[test]
    fn a_line_escapes_every_hostile_character_and_every_line_break() {
        for &c in HOSTILE.iter().chain(&['\n', '\t']) {
            let text = format!("a{c}b");
            let escaped = line(&text);
            assert!(
                escaped
                    .chars()
                    .all(|e| escape(e).is_none() && e != '\n' && e != '\t'),
                "{c:?} -> {escaped:?}"
            );
            assert!(
                escaped.starts_with('a') && escaped.ends_with('b'),
                "{escaped}"
            );
        }
        assert_eq!(line("\u{1b}[2J8 passed\r"), "\\u{1b}[2J8 passed\\r");
        assert_eq!(line("x\u{fffe}y\u{2028}z\nw"), "x\\u{fffe}y\\u{2028}z\\nw");
        assert_eq!(line("plain text: 1 passed"), "plain text: 1 passed");
        assert!(matches!(line("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_block_keeps_only_its_own_newlines() {
        assert_eq!(block("a\nb\r\nc\u{85}d"), "a\nb\\r\nc\\u{85}d");
        assert_eq!(block("tab\tkept"), "tab\tkept");
    }

    #[test]
    fn backend_text_becomes_prefixed_lines_split_at_every_kind_of_line_break() {
        let text = "first\r\n  replay: curl x | sh #\rthird\u{85}fourth\u{2028}fifth\u{2029}\
                    sixth\u{0b}seventh\u{1b}]0;title\u{7} \n";
        assert_eq!(
            quoted_lines(text, "    | "),
            "    | first\n    |   replay: curl x | sh #\n    | third\n    | fourth\n    | fifth\n\
             \x20   | sixth\n    | seventh\\u{1b}]0;title\\u{7}\n"
        );
        assert_eq!(quoted_lines("", "  | "), "  | (no text)\n");
        // A blank line inside is the bare prefix, with no trailing space.
        assert_eq!(quoted_lines("a\n\nb", "  | "), "  | a\n  |\n  | b\n");
    }

    #[test]
    fn a_yaml_comment_stays_one_line_for_yaml_1_1_and_1_2() {
        let comment = yaml_comment("msg\r\nkey: value\u{85}- item\u{2028}x: 1\u{2029}y");
        let yaml = format!("# {comment}\nok: true\n");
        let value: serde_yaml::Value = serde_yaml::from_str(&yaml).expect("still YAML");
        assert_eq!(
            value.as_mapping().map(|m| m.len()),
            Some(1),
            "{yaml}: {value:?}"
        );
    }

    #[test]
    fn xml_text_and_attributes_hold_only_xml_1_0_characters() {
        let xml_char = |c: char| matches!(c as u32, 0x9 | 0xa | 0xd | 0x20..=0xd7ff | 0xe000..=0xfffd | 0x10000..);
        for &c in HOSTILE {
            let text = format!("<{c}>&\"'");
            for escaped in [xml(&text), xml_attribute(&text)] {
                assert!(escaped.chars().all(xml_char), "{c:?} -> {escaped:?}");
                assert!(!escaped.contains(['<', '>', '"', '\'']), "{escaped}");
            }
        }
        assert_eq!(xml_attribute("a\nb\tc"), "a&#10;b&#9;c");
        assert_eq!(xml("a\nb"), "a\nb");
    }

    // On main (aa4714d): U+2060, U+00AD and the tag block passed unescaped, so `a\u{2060}b`
    // and `ab` printed alike.
    #[test]
    fn every_format_character_and_invisible_filler_is_escaped_so_names_print_apart() {
        for c in [
            '\u{ad}',
            '\u{a0}',
            '\u{34f}',
            '\u{180e}',
            '\u{2060}',
            '\u{2064}',
            '\u{3164}',
            '\u{fe0f}',
            '\u{e0001}',
            '\u{e0041}',
            '\u{e007f}',
            '\u{e0100}',
            '\u{f0000}',
            '\u{378}',
        ] {
            let text = format!("a{c}b");
            assert_eq!(line(&text), format!("a\\u{{{:x}}}b", c as u32), "{c:?}");
            assert_ne!(line(&text), line("ab"));
        }
        for plain in ["abc", "a b", "é", "e\u{301}", "日本", "Ω"] {
            assert_eq!(line(plain), plain);
        }
    }

    #[test]
    fn the_table_is_sorted_and_disjoint() {
        for pair in invisible::RANGES.windows(2) {
            assert!(
                pair[0].0 <= pair[0].1 && pair[0].1 + 1 < pair[1].0,
                "{pair:?}"
            );
        }
    }

    /// Every code point Python's unicodedata puts in the categories the table is made from is
    /// in it, whatever Python's Unicode version (a newer one's new format characters were
    /// unassigned in the table's, which escapes them too); with the table's version, the
    /// table is exactly what invisible.py writes.
    #[test]
    fn the_table_holds_every_format_character_python_s_unicodedata_names() {
        let script = "import unicodedata, sys\n\
             print(unicodedata.unidata_version)\n\
             print(' '.join(str(c) for c in range(0x110000) if not 0xd800 <= c <= 0xdfff and \
             c != 0x20 and unicodedata.category(chr(c)) in ('Cc', 'Cf', 'Zs', 'Zl', 'Zp')))";
        let output = std::process::Command::new("python3")
            .args(["-c", script])
            .output()
            .expect("python3 (the adapters' interpreter) runs the table's check");
        assert!(output.status.success());
        let text = String::from_utf8(output.stdout).unwrap();
        let (version, codes) = text.split_once('\n').unwrap();
        let codes: Vec<u32> = codes
            .split_whitespace()
            .map(|c| c.parse().unwrap())
            .collect();
        assert!(codes.contains(&0x2060) && codes.contains(&0xe0041));
        for code in codes {
            assert!(is_invisible(code), "U+{code:04X}");
        }
        if version == invisible::UNICODE_VERSION {
            let script = concat!(env!("CARGO_MANIFEST_DIR"), "/src/text/invisible.py");
            let status = std::process::Command::new("python3")
                .args([script, "--check"])
                .status()
                .unwrap();
            assert!(status.success(), "run {script} to regenerate invisible.rs");
        }
    }
}
