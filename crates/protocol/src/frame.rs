//! Frames: `u32 LE header length | header (UTF-8 JSON object) | payload 0 | payload 1 | ...`,
//! where the header's `"payloads"` array gives each payload's byte length.

use crate::bounds::bounded_json;
use serde_json::Value;
use std::io::{self, Read, Write};

/// Headers larger than this are refused (a garbage length must not allocate gigabytes).
pub const MAX_HEADER_BYTES: u32 = 16 << 20;
/// Payloads larger than this are refused.
pub const MAX_PAYLOAD_BYTES: u64 = 2 << 30;
/// Headers holding more JSON values than this are refused before they are parsed (parsed,
/// each value takes tens of bytes: a 16 MiB header of tiny values would take gigabytes).
pub const MAX_HEADER_ITEMS: usize = 1 << 18;

#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    pub header: Value,
    pub payloads: Vec<Vec<u8>>,
}

impl Frame {
    pub fn new(header: Value) -> Frame {
        Frame {
            header,
            payloads: Vec::new(),
        }
    }

    /// The header's `"type"`, or "" when missing.
    pub fn kind(&self) -> &str {
        self.header
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    pub fn id(&self) -> Option<u64> {
        self.header.get("id").and_then(Value::as_u64)
    }
}

/// Why a frame could not be read.
#[derive(Debug)]
pub enum FrameError {
    /// The stream failed or ended inside a frame.
    Io(io::Error),
    /// The bytes are not a frame: the stream cannot be trusted any further.
    Malformed(String),
    /// A well-framed header that is not a JSON object: the stream is still in step.
    BadHeader(String),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::Io(e) => write!(f, "{e}"),
            FrameError::Malformed(m) => write!(f, "malformed frame: {m}"),
            FrameError::BadHeader(m) => write!(f, "bad header: {m}"),
        }
    }
}

/// Writes one frame. The header's `"payloads"` entry is set from `payloads`.
pub fn write_frame(writer: &mut impl Write, header: &Value, payloads: &[&[u8]]) -> io::Result<()> {
    let mut header = header.clone();
    if let Value::Object(map) = &mut header {
        map.insert(
            "payloads".to_string(),
            Value::Array(
                payloads
                    .iter()
                    .map(|p| Value::from(p.len() as u64))
                    .collect(),
            ),
        );
    }
    let text = serde_json::to_vec(&header).map_err(io::Error::other)?;
    writer.write_all(&(text.len() as u32).to_le_bytes())?;
    writer.write_all(&text)?;
    for payload in payloads {
        writer.write_all(payload)?;
    }
    writer.flush()
}

/// Reads one frame; `Ok(None)` on a clean end of stream before a frame starts. Its payloads
/// are read whatever their lengths (up to `MAX_PAYLOAD_BYTES` each): a reader that knows
/// what sizes to expect reads the head first (`read_head`) and checks them
/// (`Head::check_payloads`) before reading any.
pub fn read_frame(reader: &mut impl Read) -> Result<Option<Frame>, FrameError> {
    match read_head(reader)? {
        None => Ok(None),
        Some(head) => head.read_payloads(reader).map(Some),
    }
}

/// A frame whose header has been read and whose payloads have not.
#[derive(Debug)]
pub struct Head {
    pub header: Value,
    /// The payloads' byte lengths, as the header declares them.
    pub lengths: Vec<u64>,
}

/// Reads a frame's length and header, and the payload lengths it declares; `Ok(None)` on a
/// clean end of stream before a frame starts.
pub fn read_head(reader: &mut impl Read) -> Result<Option<Head>, FrameError> {
    let mut length = [0u8; 4];
    match read_exact_or_eof(reader, &mut length) {
        Ok(false) => return Ok(None),
        Ok(true) => {}
        Err(e) => return Err(FrameError::Io(e)),
    }
    let length = u32::from_le_bytes(length);
    if length > MAX_HEADER_BYTES {
        return Err(FrameError::Malformed(format!(
            "header length {length} is over the limit of {MAX_HEADER_BYTES}"
        )));
    }
    let mut text = vec![0u8; length as usize];
    reader.read_exact(&mut text).map_err(FrameError::Io)?;
    if json_items_over(&text, MAX_HEADER_ITEMS) {
        return Err(FrameError::Malformed(format!(
            "the header holds more than {MAX_HEADER_ITEMS} JSON values"
        )));
    }
    let header: Value = serde_json::from_slice(&text)
        .map_err(|e| FrameError::Malformed(format!("header is not JSON: {e}")))?;
    drop(text);
    let lengths: Vec<u64> = match header.get("payloads") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_u64()
                    .filter(|&n| n <= MAX_PAYLOAD_BYTES)
                    .ok_or_else(|| {
                        FrameError::Malformed(format!("bad payload length {}", bounded_json(v)))
                    })
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(FrameError::Malformed(format!(
                "\"payloads\" must be an array of lengths, found {}",
                bounded_json(other)
            )));
        }
    };
    Ok(Some(Head { header, lengths }))
}

impl Head {
    /// The header's `"type"`, or "" when missing.
    pub fn kind(&self) -> &str {
        self.header
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// Whether the declared payloads fit `limits`: at most `limits.len()` of them, payload
    /// `i` at most `limits[i]` bytes. Checked before any payload byte is read, so a length
    /// that is claimed (and even sent) costs no allocation.
    pub fn check_payloads(&self, limits: &[u64]) -> Result<(), String> {
        if self.lengths.len() > limits.len() {
            return Err(format!(
                "{} payloads declared; at most {} expected",
                self.lengths.len(),
                limits.len()
            ));
        }
        match self
            .lengths
            .iter()
            .zip(limits)
            .enumerate()
            .find(|(_, (length, limit))| length > limit)
        {
            Some((i, (length, limit))) => Err(format!(
                "payload {i} declared as {length} bytes; at most {limit} expected"
            )),
            None => Ok(()),
        }
    }

    /// Reads the payloads; a header that is not a JSON object with a string `"type"` is then
    /// a `BadHeader` (the stream is still in step).
    pub fn read_payloads(self, reader: &mut impl Read) -> Result<Frame, FrameError> {
        let mut payloads = Vec::with_capacity(self.lengths.len());
        for &n in &self.lengths {
            payloads.push(read_payload(reader, n).map_err(FrameError::Io)?);
        }
        if !self.header.is_object() || self.header.get("type").and_then(Value::as_str).is_none() {
            return Err(FrameError::BadHeader(format!(
                "a header must be a JSON object with a string \"type\", found {}",
                bounded_json(&self.header)
            )));
        }
        Ok(Frame {
            header: self.header,
            payloads,
        })
    }

    /// Reads the payloads' bytes and keeps none of them, so that the stream stays in step
    /// after a frame is refused.
    pub fn skip_payloads(&self, reader: &mut impl Read) -> io::Result<()> {
        for &n in &self.lengths {
            let skipped = io::copy(&mut reader.by_ref().take(n), &mut io::sink())?;
            if skipped < n {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the stream ended inside a frame",
                ));
            }
        }
        Ok(())
    }
}

/// Whether JSON text holds more than `limit` values, counted cheaply before parsing (each
/// `[`, `{` and `,` outside strings starts one): a header of a million tiny values would
/// take far more memory parsed than as text.
fn json_items_over(text: &[u8], limit: usize) -> bool {
    let mut count = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &byte in text {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match byte {
                b'"' => in_string = true,
                b'[' | b'{' | b',' => {
                    count += 1;
                    if count > limit {
                        return true;
                    }
                }
                _ => {}
            }
        }
    }
    false
}

/// Reads `n` bytes into a buffer that grows as they arrive (from 1 MiB, doubling), so a
/// length that is claimed but never sent costs no large allocation.
fn read_payload(reader: &mut impl Read, n: u64) -> io::Result<Vec<u8>> {
    let n = usize::try_from(n).map_err(io::Error::other)?;
    let mut payload = Vec::new();
    while payload.len() < n {
        let start = payload.len();
        let step = start.max(1 << 20).min(n - start);
        payload.reserve_exact(step);
        payload.resize(start + step, 0);
        reader.read_exact(&mut payload[start..])?;
    }
    Ok(payload)
}

/// Fills `buffer`; false when the stream ended before its first byte.
fn read_exact_or_eof(reader: &mut impl Read, buffer: &mut [u8]) -> io::Result<bool> {
    let mut filled = 0;
    while filled < buffer.len() {
        match reader.read(&mut buffer[filled..]) {
            Ok(0) if filled == 0 => return Ok(false),
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the stream ended inside a frame",
                ));
            }
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn frames_round_trip_with_payloads() {
        let mut bytes = Vec::new();
        write_frame(
            &mut bytes,
            &json!({"type": "execute", "id": 3}),
            &[b"abc", b""],
        )
        .unwrap();
        let frame = read_frame(&mut bytes.as_slice()).unwrap().unwrap();
        assert_eq!(frame.kind(), "execute");
        assert_eq!(frame.id(), Some(3));
        assert_eq!(frame.payloads, vec![b"abc".to_vec(), Vec::new()]);
        // Payloads past the first growth step arrive whole.
        let big: Vec<u8> = (0..(3 << 20) + 5).map(|i| (i % 251) as u8).collect();
        let mut bytes_big = Vec::new();
        write_frame(&mut bytes_big, &json!({"type": "executed"}), &[&big]).unwrap();
        let frame = read_frame(&mut bytes_big.as_slice()).unwrap().unwrap();
        assert_eq!(frame.payloads, vec![big]);
        assert!(read_frame(&mut &bytes[bytes.len()..]).unwrap().is_none());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic_or_a_huge_allocation() {
        let garbage = [0xffu8, 0xff, 0xff, 0xff, 1, 2, 3];
        assert!(matches!(
            read_frame(&mut garbage.as_slice()),
            Err(FrameError::Malformed(_))
        ));
        let mut bytes = Vec::new();
        let header = br#"{"type":"x","payloads":[99999999999]}"#;
        bytes.extend((header.len() as u32).to_le_bytes());
        bytes.extend(header);
        assert!(matches!(
            read_frame(&mut bytes.as_slice()),
            Err(FrameError::Malformed(_))
        ));
        // A large length claimed but not sent: an I/O error after the bytes that came.
        let mut claimed = Vec::new();
        let header = br#"{"type":"x","payloads":[2000000000]}"#;
        claimed.extend((header.len() as u32).to_le_bytes());
        claimed.extend(header);
        claimed.extend([7u8; 100]);
        assert!(matches!(
            read_frame(&mut claimed.as_slice()),
            Err(FrameError::Io(e)) if e.kind() == io::ErrorKind::UnexpectedEof
        ));
        let truncated = [5u8, 0, 0, 0, b'{'];
        assert!(matches!(
            read_frame(&mut truncated.as_slice()),
            Err(FrameError::Io(_))
        ));
        let mut no_type = Vec::new();
        no_type.extend(2u32.to_le_bytes());
        no_type.extend(b"[]");
        assert!(matches!(
            read_frame(&mut no_type.as_slice()),
            Err(FrameError::BadHeader(_))
        ));
    }

    /// A frame's bytes: its header as given (not re-serialized), then the payloads.
    fn raw_frame(header: &str, payloads: &[&[u8]]) -> Vec<u8> {
        let mut bytes = (header.len() as u32).to_le_bytes().to_vec();
        bytes.extend(header.as_bytes());
        for payload in payloads {
            bytes.extend(*payload);
        }
        bytes
    }

    #[test]
    fn declared_payloads_are_checked_against_limits_before_any_is_read() {
        // A 2 GiB payload declared, none of it sent: the head alone is read and refused.
        let bytes = raw_frame(r#"{"type":"executed","id":1,"payloads":[2147483648]}"#, &[]);
        let head = read_head(&mut bytes.as_slice()).unwrap().unwrap();
        assert_eq!(head.lengths, [2 << 30]);
        assert_eq!(
            head.check_payloads(&[48]),
            Err("payload 0 declared as 2147483648 bytes; at most 48 expected".to_string())
        );
        let bytes = raw_frame(r#"{"type":"executed","payloads":[0,0,0]}"#, &[]);
        let head = read_head(&mut bytes.as_slice()).unwrap().unwrap();
        assert_eq!(
            head.check_payloads(&[8, 8]),
            Err("3 payloads declared; at most 2 expected".to_string())
        );
        assert_eq!(head.check_payloads(&[0, 0, 0, 0]), Ok(()));
    }

    #[test]
    fn skipped_payloads_leave_the_stream_in_step() {
        let mut bytes = raw_frame(
            r#"{"type":"execute","payloads":[5,3]}"#,
            &[b"abcde", b"fgh"],
        );
        bytes.extend(raw_frame(r#"{"type":"next"}"#, &[]));
        let mut reader = bytes.as_slice();
        let head = read_head(&mut reader).unwrap().unwrap();
        head.skip_payloads(&mut reader).unwrap();
        assert_eq!(read_frame(&mut reader).unwrap().unwrap().kind(), "next");
        // Declared and not sent: the end of the stream, not a hang or an allocation.
        let bytes = raw_frame(r#"{"type":"execute","payloads":[2147483648]}"#, &[b"xy"]);
        let mut reader = bytes.as_slice();
        let head = read_head(&mut reader).unwrap().unwrap();
        let error = head.skip_payloads(&mut reader).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn a_header_of_too_many_values_is_refused_before_it_is_parsed() {
        let many = format!(r#"{{"type":"x","v":[{}0]}}"#, "0,".repeat(MAX_HEADER_ITEMS));
        let bytes = raw_frame(&many, &[]);
        match read_head(&mut bytes.as_slice()) {
            Err(FrameError::Malformed(m)) => {
                assert_eq!(m, "the header holds more than 262144 JSON values")
            }
            other => panic!("{other:?}"),
        }
        // Commas and brackets inside strings (escaped quotes too) are text, not values.
        let text = format!(
            r#"{{"type":"x","message":"\"{}"}}"#,
            ",[{".repeat(MAX_HEADER_ITEMS)
        );
        let bytes = raw_frame(&text, &[]);
        let frame = read_frame(&mut bytes.as_slice()).unwrap().unwrap();
        assert_eq!(
            frame.header["message"].as_str().map(str::len),
            Some(3 * MAX_HEADER_ITEMS + 1)
        );
    }
}
