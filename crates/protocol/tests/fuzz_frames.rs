//! Fuzz target: the frame decoder, read as the client reads a server's stdout (`read_head`,
//! the declared payload sizes checked against what is expected, then `read_payloads`, or
//! `skip_payloads` for a refused frame), frame after frame until the stream ends or cannot be
//! trusted. Bytes of any kind, and valid frames whose bytes are then corrupted (lengths,
//! flipped bytes, cuts). Each stream must end in frames or a typed error (`Io`, `Malformed`,
//! `BadHeader`) with a bounded message: no panic, and nothing allocated past what the
//! checks allow (the declared sizes are checked before a payload byte is read).
//! `DMLCTS_FUZZ_INPUT_CASES=N` raises the 256 inputs per property (docs/guide/robustness.md).

use dmlcts_protocol::frame::{FrameError, read_head, write_frame};
use proptest::prelude::*;
use serde_json::{Value, json};
use std::io::Cursor;

fn config() -> ProptestConfig {
    let cases = std::env::var("DMLCTS_FUZZ_INPUT_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(256);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// At most four payloads of at most 1 MiB each, as a compile or execute reply might expect.
const LIMITS: [u64; 4] = [1 << 20; 4];

/// The property: frames, then a clean end or a typed error; at most one frame per 4 bytes.
fn decodes_or_fails_typed(bytes: &[u8]) -> Result<(), TestCaseError> {
    let mut reader = Cursor::new(bytes);
    for _ in 0..=bytes.len() / 4 {
        let head = match read_head(&mut reader) {
            Ok(None) => return Ok(()),
            Ok(Some(head)) => head,
            Err(e) => return typed(&e),
        };
        if head.check_payloads(&LIMITS).is_err() {
            if let Err(e) = head.skip_payloads(&mut reader) {
                prop_assert!(e.to_string().len() < 1024);
                return Ok(());
            }
            continue;
        }
        let declared: u64 = head.lengths.iter().sum();
        match head.read_payloads(&mut reader) {
            Ok(frame) => {
                let read: usize = frame.payloads.iter().map(Vec::len).sum();
                prop_assert_eq!(read as u64, declared);
                prop_assert!(frame.header.get("type").is_some_and(Value::is_string));
            }
            Err(e) => typed(&e)?,
        }
    }
    prop_assert!(false, "more frames than the bytes can hold");
    Ok(())
}

fn typed(e: &FrameError) -> Result<(), TestCaseError> {
    prop_assert!(matches!(
        e,
        FrameError::Io(_) | FrameError::Malformed(_) | FrameError::BadHeader(_)
    ));
    prop_assert!(e.to_string().len() < 4096, "{} bytes", e.to_string().len());
    Ok(())
}

fn header() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::from),
    ];
    let value = leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::btree_map("[a-z]{1,8}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    (
        prop_oneof![
            Just("hello"),
            Just("compile"),
            Just("execute"),
            Just("error")
        ],
        prop::collection::btree_map("[a-z_]{1,10}", value, 0..5),
    )
        .prop_map(|(kind, mut fields)| {
            fields.insert("type".to_string(), Value::from(kind));
            Value::Object(fields.into_iter().collect())
        })
}

/// Valid frames, then corruptions: a byte set, a 4-byte length written over, a cut.
fn corrupted_frames() -> impl Strategy<Value = Vec<u8>> {
    let frame = (
        header(),
        prop::collection::vec(prop::collection::vec(any::<u8>(), 0..64), 0..5),
    );
    let edit = (0usize..3, any::<prop::sample::Index>(), any::<u32>());
    (
        prop::collection::vec(frame, 1..4),
        prop::collection::vec(edit, 0..4),
    )
        .prop_map(|(frames, edits)| {
            let mut bytes = Vec::new();
            for (header, payloads) in &frames {
                let refs: Vec<&[u8]> = payloads.iter().map(Vec::as_slice).collect();
                write_frame(&mut bytes, header, &refs).unwrap();
            }
            for (kind, at, value) in edits {
                if bytes.is_empty() {
                    break;
                }
                let i = at.index(bytes.len());
                match kind {
                    0 => bytes[i] = value as u8,
                    1 => {
                        for (k, b) in value.to_le_bytes().into_iter().enumerate() {
                            if let Some(slot) = bytes.get_mut(i + k) {
                                *slot = b;
                            }
                        }
                    }
                    _ => bytes.truncate(i),
                }
            }
            bytes
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_bytes_decode_as_frames_or_a_typed_error(
        bytes in prop::collection::vec(any::<u8>(), 0..4096)
    ) {
        decodes_or_fails_typed(&bytes)?;
    }

    #[test]
    fn corrupted_frames_decode_as_frames_or_a_typed_error(bytes in corrupted_frames()) {
        decodes_or_fails_typed(&bytes)?;
    }
}
