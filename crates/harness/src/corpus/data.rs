//! Tensor data in case files: nested lists as the pages print them, flat lists, or a
//! generator; and turning it into the bytes a backend receives.

use dmlcts_tensor::{
    BitPatternRng, Coordinates, DataType, ElementLiteral, TensorDesc, encode_element,
    fill_random_bits, iota_element, read_element, write_element,
};

/// Byte the harness puts in input bytes that no element addresses (stride holes, padding).
pub(crate) const INPUT_HOLE_BYTE: u8 = 0xEE;

/// The largest tensor (TotalTensorSizeInBytes) the runner materializes: 128 MiB, twice the
/// 64 MiB the largest corpus cases are meant to reach. A case with a bigger input or output is skipped, not failed,
/// and is found before anything is allocated for it. A case's peak memory is about six times
/// its largest tensor (input, its pristine copy, the oracle's output and mask, the guarded
/// output, and a protocol backend's copies), so this keeps one case under 1 GB.
pub(crate) const MAX_TENSOR_BYTES: u64 = 128 << 20;

/// Why a tensor is too large to materialize here, if it is.
pub fn too_large(field: &str, desc: &TensorDesc) -> Option<String> {
    let total = desc.total_tensor_size_in_bytes;
    (total > MAX_TENSOR_BYTES).then(|| {
        format!(
            "{field}: {total} bytes is more than this runner materializes ({MAX_TENSOR_BYTES} bytes, 128 MiB)"
        )
    })
}

/// What running a case costs in memory, in multiples of its largest tensor (see
/// `MAX_TENSOR_BYTES`): its input and the pristine copy, the oracle's output and mask, the
/// guarded output, a protocol backend's copies.
pub(crate) const CASE_COST_FACTOR: u64 = 6;

/// Tensors up to this size are not checked against the address space left: a case of them
/// costs at most 6 times 16 MiB.
const CHECKED_FROM_BYTES: u64 = 16 << 20;

/// Why a case whose largest tensor is `largest` bytes cannot run in the address space this
/// process has left under its limit (RLIMIT_AS: `prlimit --as`, `ulimit -v`), if it cannot:
/// its cost (`CASE_COST_FACTOR` times `largest`) is compared with the limit less what is
/// mapped now, before anything is allocated, so the case is skipped with the reason instead
/// of the run aborting on an allocation. Linux only (/proc/self/limits and status); no
/// limit, no check.
pub(crate) fn over_address_space(largest: u64) -> Option<String> {
    if largest <= CHECKED_FROM_BYTES {
        return None;
    }
    let limit = proc_field("/proc/self/limits", "Max address space")?;
    let mapped = proc_field("/proc/self/status", "VmSize:")? * 1024;
    let need = largest.saturating_mul(CASE_COST_FACTOR);
    let left = limit.saturating_sub(mapped);
    (need > left).then(|| {
        format!(
            "a case whose largest tensor is {largest} bytes needs about {need} bytes \
             ({CASE_COST_FACTOR} times it), and this process's address-space limit \
             ({limit} bytes) leaves {left}"
        )
    })
}

/// The first number after `key` on the line that starts with it (`unlimited`: None).
fn proc_field(file: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    line[key.len()..].split_whitespace().next()?.parse().ok()
}

/// Where an input's bytes come from.
#[derive(Clone, Debug, PartialEq)]
pub enum TensorData {
    /// One element per coordinate, in row-major order, as raw bits.
    Logical(Vec<u64>),
    /// Consecutive values start, start + step, ... in every element slot of the buffer.
    Iota { start: i64, step: i64 },
    /// Seeded random bit patterns in every element slot.
    Random { seed: u64 },
    /// The same bits in every element slot.
    Fill { bits: u64 },
    /// The buffer itself (from the fuzzer or a backend author's own code).
    Bytes(Vec<u8>),
}

impl TensorData {
    /// The TotalTensorSizeInBytes bytes of a tensor holding this data.
    pub fn materialize(&self, desc: &TensorDesc) -> Result<Vec<u8>, String> {
        if let Some(reason) = too_large("the tensor", desc) {
            return Err(reason);
        }
        let total = desc.total_tensor_size_in_bytes as usize;
        let data_type = desc.data_type;
        let size = data_type.element_size();
        let slots = total / size;
        let mut bytes = vec![INPUT_HOLE_BYTE; total];
        match self {
            TensorData::Bytes(given) => {
                if given.len() != total {
                    return Err(format!(
                        "{} bytes given for a tensor of {total} bytes",
                        given.len()
                    ));
                }
                bytes.copy_from_slice(given);
            }
            TensorData::Random { seed } => fill_random_bits(data_type, &mut bytes, *seed),
            TensorData::Fill { bits } => {
                for slot in 0..slots {
                    write_element(&mut bytes, slot * size, data_type, *bits);
                }
            }
            TensorData::Iota { start, step } => {
                for slot in 0..slots {
                    let value = start.wrapping_add(step.wrapping_mul(slot as i64));
                    write_element(
                        &mut bytes,
                        slot * size,
                        data_type,
                        iota_element(data_type, value),
                    );
                }
            }
            TensorData::Logical(values) => {
                let count = desc.element_count();
                if values.len() as u128 != count {
                    return Err(format!(
                        "{} values given for {count} elements",
                        values.len()
                    ));
                }
                let strides = desc.effective_strides();
                // Coordinates that share an address (broadcast strides) must agree. Which
                // slots were written is one bit each (the value is in `bytes` itself): 1/8 of
                // a byte per buffer byte at most, never more than the buffer (the list of
                // written slots this replaces took 24 bytes per slot, 3 GiB for a 128 MiB
                // UINT8 buffer holding one listed value).
                let mut written = vec![0u64; slots.div_ceil(64).max(1)];
                let mut walk = Coordinates::new(&desc.sizes);
                let mut n = 0usize;
                while let Some(coordinates) = walk.advance() {
                    let offset = desc
                        .byte_offset(coordinates, &strides)
                        .filter(|&o| o as usize + size <= total)
                        .ok_or_else(|| format!("element {coordinates:?} lies outside the buffer"))?
                        as usize;
                    let bits = values[n];
                    if offset.is_multiple_of(size) {
                        let slot = offset / size;
                        let (word, bit) = (slot / 64, 1u64 << (slot % 64));
                        if written[word] & bit != 0 {
                            let before = read_element(&bytes, offset, data_type);
                            let mut this = [0u8; 8];
                            write_element(&mut this, 0, data_type, bits);
                            if before != read_element(&this, 0, data_type) {
                                let first = first_at(desc, &strides, offset).unwrap_or(0);
                                return Err(format!(
                                    "values {first} and {n} share an address (strides {strides:?}) but differ; \
                                     use a generator for broadcast inputs"
                                ));
                            }
                        }
                        written[word] |= bit;
                    }
                    write_element(&mut bytes, offset, data_type, bits);
                    n += 1;
                }
            }
        }
        Ok(bytes)
    }
}

/// The row-major index of the first element at byte `offset` (for a message).
fn first_at(desc: &TensorDesc, strides: &[u64], offset: usize) -> Option<usize> {
    let mut walk = Coordinates::new(&desc.sizes);
    let mut n = 0;
    while let Some(c) = walk.advance() {
        if desc.byte_offset(c, strides) == Some(offset as u64) {
            return Some(n);
        }
        n += 1;
    }
    None
}

/// Reads the logical elements of a tensor from its bytes, in row-major order.
pub fn logical_elements(desc: &TensorDesc, bytes: &[u8]) -> Vec<u64> {
    let strides = desc.effective_strides();
    let mut values = Vec::with_capacity(desc.element_count().min(1 << 20) as usize);
    let mut walk = Coordinates::new(&desc.sizes);
    while let Some(c) = walk.advance() {
        let value = desc
            .byte_offset(c, &strides)
            .and_then(|o| dmlcts_tensor::read_element(bytes, o as usize, desc.data_type));
        values.push(value.unwrap_or(0));
    }
    values
}

/// Parses a `data:` or `expected:` node: a (nested) list of values or a generator mapping.
/// `default_seed` seeds `{generate: random}` when no seed is given.
pub(crate) fn parse_data(
    node: &serde_yaml::Value,
    data_type: DataType,
    sizes: &[u32],
    default_seed: u64,
) -> Result<TensorData, String> {
    match node {
        serde_yaml::Value::Sequence(_) => {
            let mut values = Vec::new();
            let shape = list_shape(node, data_type, &mut values)?;
            let count: u128 = sizes.iter().map(|&s| u128::from(s)).product();
            let flat_and_complete = shape.len() == 1 && values.len() as u128 == count;
            if shape != sizes && !flat_and_complete {
                return Err(if shape.len() == 1 {
                    format!(
                        "{} values for sizes {sizes:?} ({count} elements)",
                        values.len()
                    )
                } else {
                    format!("nested list has shape {shape:?} but sizes are {sizes:?}")
                });
            }
            Ok(TensorData::Logical(values))
        }
        serde_yaml::Value::Mapping(map) => parse_generator(map, data_type, default_seed),
        other => Err(format!(
            "expected a list of values or a generator mapping, found {}",
            describe(other)
        )),
    }
}

/// Flattens a nested list into `values` and returns its shape. Every sub-list at one depth
/// must have the same length.
fn list_shape(
    node: &serde_yaml::Value,
    data_type: DataType,
    values: &mut Vec<u64>,
) -> Result<Vec<u32>, String> {
    let serde_yaml::Value::Sequence(items) = node else {
        let index = values.len();
        let bits = element(node, data_type).map_err(|e| format!("values[{index}]: {e}"))?;
        values.push(bits);
        return Ok(Vec::new());
    };
    let mut inner: Option<Vec<u32>> = None;
    for item in items {
        let shape = list_shape(item, data_type, values)?;
        match &inner {
            None => inner = Some(shape),
            Some(previous) if *previous != shape => {
                return Err(format!(
                    "ragged nested list: sub-lists of shapes {previous:?} and {shape:?}"
                ));
            }
            Some(_) => {}
        }
    }
    let mut shape = vec![items.len() as u32];
    shape.extend(inner.unwrap_or_default());
    Ok(shape)
}

/// One value: a YAML number, or a string (`nan`, `inf`, `-0.0`, `0x7e01`, ...).
fn element(node: &serde_yaml::Value, data_type: DataType) -> Result<u64, String> {
    let literal = match node {
        serde_yaml::Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                ElementLiteral::Integer(i.into())
            } else if let Some(u) = n.as_u64() {
                ElementLiteral::Integer(u.into())
            } else {
                ElementLiteral::Float(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        serde_yaml::Value::String(s) => ElementLiteral::Text(s.clone()),
        other => return Err(format!("expected a number, found {}", describe(other))),
    };
    encode_element(data_type, &literal)
}

fn parse_generator(
    map: &serde_yaml::Mapping,
    data_type: DataType,
    default_seed: u64,
) -> Result<TensorData, String> {
    let mut kind = None;
    let mut start = 0i64;
    let mut step = 1i64;
    let mut seed = default_seed;
    let mut value = None;
    for (key, node) in map {
        let key = key.as_str().unwrap_or("");
        let int = |name: &str| {
            node.as_i64()
                .ok_or_else(|| format!("`{name}` must be an integer, found {}", describe(node)))
        };
        match key {
            "generate" => kind = node.as_str().map(str::to_string),
            "start" => start = int("start")?,
            "step" => step = int("step")?,
            "seed" => {
                seed = node.as_u64().ok_or_else(|| {
                    format!(
                        "`seed` must be an unsigned integer, found {}",
                        describe(node)
                    )
                })?
            }
            "value" => value = Some(element(node, data_type).map_err(|e| format!("`value`: {e}"))?),
            other => {
                return Err(format!(
                    "unknown generator field `{other}` (expected generate, start, step, seed or value)"
                ));
            }
        }
    }
    match kind.as_deref() {
        Some("iota") => Ok(TensorData::Iota { start, step }),
        Some("random") => Ok(TensorData::Random { seed }),
        Some("fill") => Ok(TensorData::Fill {
            bits: value.ok_or("`generate: fill` needs a `value`")?,
        }),
        Some(other) => Err(format!(
            "unknown generator `{other}` (expected iota, random or fill)"
        )),
        None => Err("a generator mapping needs `generate: iota | random | fill`".to_string()),
    }
}

fn describe(node: &serde_yaml::Value) -> String {
    match node {
        serde_yaml::Value::Null => "nothing".to_string(),
        serde_yaml::Value::Bool(b) => format!("the boolean {b}"),
        serde_yaml::Value::Number(n) => format!("the number {n}"),
        serde_yaml::Value::String(s) => format!("the string {s:?}"),
        serde_yaml::Value::Sequence(_) => "a list".to_string(),
        serde_yaml::Value::Mapping(_) => "a mapping".to_string(),
        serde_yaml::Value::Tagged(t) => format!("a value tagged {}", t.tag),
    }
}

/// A seed derived from a name, so cases without an explicit seed are still reproducible.
pub(crate) fn seed_from_name(name: &str) -> u64 {
    // FNV-1a, then one splitmix step to spread it.
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for byte in name.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    BitPatternRng::new(hash).next_u64()
}

/// Quotes unquoted hexadecimal tokens (`0x7e01`) so YAML keeps them as text: YAML 1.1 would
/// read them as integers, and a FLOAT16 bit pattern would silently become the value 32257.
/// Only whole tokens outside quotes and comments change; line numbers stay the same.
pub(crate) fn quote_hex_literals(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.split_inclusive('\n') {
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        let mut quote: Option<char> = None;
        while i < chars.len() {
            let c = chars[i];
            if let Some(q) = quote {
                out.push(c);
                if c == q {
                    quote = None;
                }
                i += 1;
                continue;
            }
            let at_boundary =
                i == 0 || matches!(chars[i - 1], ' ' | '\t' | '[' | ',' | '{' | ':' | '-');
            if c == '#' && (i == 0 || chars[i - 1].is_whitespace()) {
                out.extend(&chars[i..]);
                break;
            }
            if c == '\'' || c == '"' {
                quote = Some(c);
                out.push(c);
                i += 1;
                continue;
            }
            if at_boundary && c == '0' && matches!(chars.get(i + 1), Some('x' | 'X')) {
                let mut end = i + 2;
                while end < chars.len() && (chars[end].is_ascii_hexdigit() || chars[end] == '_') {
                    end += 1;
                }
                let closes = end == chars.len()
                    || matches!(chars[end], ' ' | '\t' | ',' | ']' | '}' | '\n' | '\r' | '#');
                if end > i + 2 && closes {
                    out.push('"');
                    out.extend(&chars[i..end]);
                    out.push('"');
                    i = end;
                    continue;
                }
            }
            out.push(c);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_tokens_are_quoted_and_nothing_else_changes() {
        let text = "data: [0x7e01, 1, \"0x2\", '0x3', 0x10] # 0x11\nname: a0x5\nseed: 0xzz\n";
        let quoted = quote_hex_literals(text);
        assert_eq!(
            quoted,
            "data: [\"0x7e01\", 1, \"0x2\", '0x3', \"0x10\"] # 0x11\nname: a0x5\nseed: 0xzz\n"
        );
        assert_eq!(quoted.lines().count(), text.lines().count());
    }

    #[test]
    fn nested_lists_must_match_the_sizes() {
        let node: serde_yaml::Value = serde_yaml::from_str("[[[[1, 2], [3, 4]]]]").unwrap();
        let data = parse_data(&node, DataType::Float32, &[1, 1, 2, 2], 0).unwrap();
        assert_eq!(
            data,
            TensorData::Logical(vec![0x3f80_0000, 0x4000_0000, 0x4040_0000, 0x4080_0000])
        );
        let err = parse_data(&node, DataType::Float32, &[1, 2, 2], 0).unwrap_err();
        assert!(
            err.contains("shape [1, 1, 2, 2] but sizes are [1, 2, 2]"),
            "{err}"
        );
        let flat: serde_yaml::Value = serde_yaml::from_str("[1, 2, 3]").unwrap();
        assert!(parse_data(&flat, DataType::Int8, &[1, 1, 2, 2], 0).is_err());
        let ragged: serde_yaml::Value = serde_yaml::from_str("[[1, 2], [3]]").unwrap();
        assert!(
            parse_data(&ragged, DataType::Int8, &[2, 2], 0)
                .unwrap_err()
                .contains("ragged")
        );
    }

    #[test]
    fn values_out_of_range_name_their_position() {
        let node: serde_yaml::Value = serde_yaml::from_str("[1, 2, 300]").unwrap();
        let err = parse_data(&node, DataType::Uint8, &[3], 0).unwrap_err();
        assert_eq!(err, "values[2]: 300 is out of range for UINT8 (0 to 255)");
    }

    #[test]
    fn broadcast_inputs_must_be_consistent() {
        let desc = TensorDesc::strided(DataType::Int16, &[2, 2], Some(&[0, 1]));
        assert!(
            TensorData::Logical(vec![1, 2, 1, 2])
                .materialize(&desc)
                .is_ok()
        );
        let err = TensorData::Logical(vec![1, 2, 3, 2])
            .materialize(&desc)
            .unwrap_err();
        assert!(err.contains("share an address"), "{err}");
    }

    #[test]
    fn generators_fill_every_slot() {
        let desc = TensorDesc::packed(DataType::Uint8, &[3]);
        let bytes = TensorData::Iota {
            start: 254,
            step: 1,
        }
        .materialize(&desc)
        .unwrap();
        assert_eq!(bytes, vec![254, 255, 0, 1]);
    }
}
