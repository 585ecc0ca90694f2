//! What a run keeps of a backend's words. Every text a server sends (an error message, a
//! reason, a rule, its name and device) is cut to a bound with a count of what was not kept,
//! so that a backend that answers every case with megabytes of text costs kilobytes per
//! result.

use serde_json::Value;
use std::io::{self, Write};

/// Bytes kept of one text a server sends; the rest is counted, not kept.
pub const MAX_TEXT_BYTES: usize = 4096;

/// `text` whole when it fits in `max` bytes; else its first bytes (up to a character
/// boundary) and a count of the rest.
pub fn bounded(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{} [... {} more bytes not kept]",
        &text[..end],
        text.len() - end
    )
}

/// A JSON value as compact text, at most `MAX_TEXT_BYTES` of it kept (the whole value is
/// never built as text).
pub fn bounded_json(value: &Value) -> String {
    let mut writer = BoundedWriter::default();
    let _ = serde_json::to_writer(&mut writer, value);
    let kept = String::from_utf8_lossy(&writer.kept).into_owned();
    if writer.dropped == 0 {
        kept
    } else {
        let kept = kept.trim_end_matches('\u{FFFD}');
        format!("{kept} [... {} more bytes not kept]", writer.dropped)
    }
}

/// Keeps the first `MAX_TEXT_BYTES` written; counts the rest.
#[derive(Default)]
struct BoundedWriter {
    kept: Vec<u8>,
    dropped: u64,
}

impl Write for BoundedWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let room = MAX_TEXT_BYTES
            .saturating_sub(self.kept.len())
            .min(bytes.len());
        self.kept.extend_from_slice(&bytes[..room]);
        self.dropped += (bytes.len() - room) as u64;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_long_text_keeps_its_first_bytes_and_counts_the_rest() {
        assert_eq!(bounded("short", 8), "short");
        assert_eq!(bounded("abcdefghij", 4), "abcd [... 6 more bytes not kept]");
        // Never inside a character: "é" is two bytes.
        assert_eq!(bounded("aé", 2), "a [... 2 more bytes not kept]");
        let huge = "x".repeat(15 << 20);
        let cut = bounded(&huge, MAX_TEXT_BYTES);
        assert_eq!(
            cut,
            format!(
                "{} [... {} more bytes not kept]",
                "x".repeat(MAX_TEXT_BYTES),
                (15 << 20) - MAX_TEXT_BYTES
            )
        );
    }

    #[test]
    fn a_long_json_value_keeps_its_first_bytes_and_counts_the_rest() {
        assert_eq!(bounded_json(&json!({"type": "x"})), r#"{"type":"x"}"#);
        let value = json!({"message": "y".repeat(10_000)});
        let text = bounded_json(&value);
        let whole = serde_json::to_string(&value).unwrap();
        assert_eq!(
            text,
            format!(
                "{} [... {} more bytes not kept]",
                &whole[..MAX_TEXT_BYTES],
                whole.len() - MAX_TEXT_BYTES
            )
        );
    }
}
