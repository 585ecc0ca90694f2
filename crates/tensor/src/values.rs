//! Element values as bit patterns: reading and writing them in little-endian bytes, and
//! converting them to and from the text people write in case files and read in reports.
//!
//! An element is carried as a `u64` holding its raw bits (zero-extended), so NaN payloads,
//! -0.0 and subnormals survive every step unchanged.

use crate::DataType;
use half::f16;

/// Reads the element at `offset` (in bytes) as raw bits, or None when it does not fit.
// Inline, with a fixed-size copy per element size: the oracle and the harness read and write
// every element through these, and a copy of a run-time length is a call to memcpy.
#[inline]
pub fn read_element(bytes: &[u8], offset: usize, data_type: DataType) -> Option<u64> {
    let size = data_type.element_size();
    let slice = bytes.get(offset..offset.checked_add(size)?)?;
    Some(match size {
        1 => u64::from(slice[0]),
        2 => u64::from(u16::from_le_bytes([slice[0], slice[1]])),
        4 => u64::from(u32::from_le_bytes([slice[0], slice[1], slice[2], slice[3]])),
        _ => {
            let mut raw = [0u8; 8];
            raw.copy_from_slice(&slice[..8]);
            u64::from_le_bytes(raw)
        }
    })
}

/// Writes raw bits as one element at `offset`; returns false (writing nothing) when it
/// does not fit.
#[inline]
pub fn write_element(bytes: &mut [u8], offset: usize, data_type: DataType, bits: u64) -> bool {
    let size = data_type.element_size();
    let Some(end) = offset.checked_add(size) else {
        return false;
    };
    match bytes.get_mut(offset..end) {
        Some(slice) => {
            let all = bits.to_le_bytes();
            match size {
                1 => slice[0] = all[0],
                2 => slice.copy_from_slice(&all[..2]),
                4 => slice.copy_from_slice(&all[..4]),
                _ => slice.copy_from_slice(&all[..8]),
            }
            true
        }
        None => false,
    }
}

/// The value as a person reads it, in a form `parse_element_text` reads back to the same
/// bits: integers in decimal, finite floats in the shortest decimal that round-trips,
/// `inf`/`-inf`, `-0.0`, and NaNs as their exact bit pattern (`0x7fc00000`).
pub fn format_element(data_type: DataType, bits: u64) -> String {
    match data_type {
        DataType::Uint8 | DataType::Uint16 | DataType::Uint32 | DataType::Uint64 => {
            bits.to_string()
        }
        DataType::Int8 => (bits as u8 as i8).to_string(),
        DataType::Int16 => (bits as u16 as i16).to_string(),
        DataType::Int32 => (bits as u32 as i32).to_string(),
        DataType::Int64 => (bits as i64).to_string(),
        DataType::Float16 => {
            let value = f16::from_bits(bits as u16);
            if value.is_nan() {
                format!("0x{:04x}", bits as u16)
            } else {
                format_float(f64::from(value.to_f32()), value.to_f32().to_string())
            }
        }
        DataType::Float32 => {
            let value = f32::from_bits(bits as u32);
            if value.is_nan() {
                format!("0x{:08x}", bits as u32)
            } else {
                format_float(f64::from(value), value.to_string())
            }
        }
        DataType::Float64 => {
            let value = f64::from_bits(bits);
            if value.is_nan() {
                format!("0x{bits:016x}")
            } else {
                format_float(value, value.to_string())
            }
        }
    }
}

fn format_float(value: f64, shortest: String) -> String {
    let magnitude = value.abs();
    if value.is_finite() && magnitude != 0.0 && !(1e-5..1e16).contains(&magnitude) {
        // Shortest digits in exponent form, e.g. 5.9604645e-8, instead of 40 zeros.
        return exponent_form(&shortest);
    }
    if value.is_infinite() {
        if value > 0.0 { "inf" } else { "-inf" }.to_string()
    } else if value == 0.0 && value.is_sign_negative() {
        // "-0" would read back as the integer 0 in YAML.
        "-0.0".to_string()
    } else {
        shortest
    }
}

/// Rewrites the shortest decimal digits of `plain` (no exponent) as `d.ddde-N` / `d.ddde+N`.
fn exponent_form(plain: &str) -> String {
    let (sign, digits) = match plain.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", plain),
    };
    let (int_part, frac_part) = digits.split_once('.').unwrap_or((digits, ""));
    let all: String = format!("{int_part}{frac_part}");
    let Some(first) = all.find(|c: char| c != '0') else {
        return plain.to_string();
    };
    let exponent = int_part.len() as i64 - 1 - first as i64;
    let significant = all[first..].trim_end_matches('0');
    let (lead, rest) = significant.split_at(1);
    let mantissa = if rest.is_empty() {
        format!("{lead}.0")
    } else {
        format!("{lead}.{rest}")
    };
    format!(
        "{sign}{mantissa}e{}{}",
        if exponent < 0 { "-" } else { "+" },
        exponent.abs()
    )
}

/// A value as written: a YAML integer, a YAML float, or a string.
#[derive(Clone, Debug, PartialEq)]
pub enum ElementLiteral {
    Integer(i128),
    Float(f64),
    Text(String),
}

/// Parses a textual value: a decimal number, `nan`, `inf`, `-inf`, `-0.0`, or an exact bit
/// pattern `0x...` (which must fit the element's width).
pub fn parse_element_text(data_type: DataType, text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let lower = trimmed.to_ascii_lowercase();
    if let Some(hex) = lower.strip_prefix("0x") {
        let digits: String = hex.chars().filter(|&c| c != '_').collect();
        let bits = u64::from_str_radix(&digits, 16)
            .map_err(|_| format!("`{trimmed}` is not a valid hexadecimal bit pattern"))?;
        let width = data_type.element_size() * 8;
        if width < 64 && bits >> width != 0 {
            return Err(format!(
                "bit pattern `{trimmed}` does not fit in {width} bits ({data_type})"
            ));
        }
        return Ok(bits);
    }
    if data_type.is_float() {
        let value = match lower.as_str() {
            "nan" | ".nan" => f64::NAN,
            "inf" | "+inf" | ".inf" | "+.inf" | "infinity" => f64::INFINITY,
            "-inf" | "-.inf" | "-infinity" => f64::NEG_INFINITY,
            _ => lower
                .parse::<f64>()
                .map_err(|_| format!("`{trimmed}` is not a number for {data_type}"))?,
        };
        return Ok(float_bits(data_type, value));
    }
    let value: i128 = lower
        .parse()
        .map_err(|_| format!("`{trimmed}` is not an integer for {data_type}"))?;
    integer_bits(data_type, value)
}

/// Encodes a literal as the element's bits. Floats round to nearest; integers must be in
/// range for the data type (no silent wrapping); a float given for an integer type must be
/// integral.
pub fn encode_element(data_type: DataType, literal: &ElementLiteral) -> Result<u64, String> {
    match literal {
        ElementLiteral::Text(text) => parse_element_text(data_type, text),
        ElementLiteral::Integer(value) => {
            if data_type.is_float() {
                Ok(float_bits(data_type, *value as f64))
            } else {
                integer_bits(data_type, *value)
            }
        }
        ElementLiteral::Float(value) => {
            if data_type.is_float() {
                Ok(float_bits(data_type, *value))
            } else if value.fract() == 0.0 && value.is_finite() && value.abs() < 1e38 {
                integer_bits(data_type, *value as i128)
            } else {
                Err(format!("{value} is not an integer for {data_type}"))
            }
        }
    }
}

fn float_bits(data_type: DataType, value: f64) -> u64 {
    match data_type {
        DataType::Float16 => u64::from(f16::from_f64(value).to_bits()),
        DataType::Float32 => u64::from((value as f32).to_bits()),
        _ => value.to_bits(),
    }
}

fn integer_bits(data_type: DataType, value: i128) -> Result<u64, String> {
    let (min, max): (i128, i128) = match data_type {
        DataType::Uint8 => (0, u8::MAX.into()),
        DataType::Uint16 => (0, u16::MAX.into()),
        DataType::Uint32 => (0, u32::MAX.into()),
        DataType::Uint64 => (0, u64::MAX.into()),
        DataType::Int8 => (i8::MIN.into(), i8::MAX.into()),
        DataType::Int16 => (i16::MIN.into(), i16::MAX.into()),
        DataType::Int32 => (i32::MIN.into(), i32::MAX.into()),
        DataType::Int64 => (i64::MIN.into(), i64::MAX.into()),
        _ => return Ok(float_bits(data_type, value as f64)),
    };
    if value < min || value > max {
        return Err(format!(
            "{value} is out of range for {data_type} ({min} to {max})"
        ));
    }
    let width = data_type.element_size() * 8;
    let mask = if width == 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    Ok((value as i64 as u64) & mask)
}

/// The value `index` converted to the data type, wrapping for integers: used by the
/// `iota` generator.
pub fn iota_element(data_type: DataType, value: i64) -> u64 {
    if data_type.is_float() {
        float_bits(data_type, value as f64)
    } else {
        let width = data_type.element_size() * 8;
        let mask = if width == 64 {
            u64::MAX
        } else {
            (1u64 << width) - 1
        };
        (value as u64) & mask
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips_exact_bits() {
        let samples: &[(DataType, u64)] = &[
            (DataType::Float16, 0x7e01),      // NaN with payload
            (DataType::Float16, 0x0001),      // smallest subnormal
            (DataType::Float32, 0x7f7f_ffff), // largest finite
            (DataType::Float64, 0x0000_0000_0000_0001),
            (DataType::Float16, 0x8000),      // -0.0
            (DataType::Float16, 0x7c00),      // inf
            (DataType::Float32, 0xffc0_0123), // negative NaN with payload
            (DataType::Float32, 0x3f80_0000), // 1.0
            (DataType::Float32, 0x0000_0001),
            (DataType::Float64, 0x7ff0_0000_0000_0001),
            (DataType::Float64, 0x8000_0000_0000_0000),
            (DataType::Int8, 0x80),
            (DataType::Int64, 0x8000_0000_0000_0000),
            (DataType::Uint64, u64::MAX),
        ];
        for &(dt, bits) in samples {
            let text = format_element(dt, bits);
            assert_eq!(parse_element_text(dt, &text), Ok(bits), "{dt} {text}");
        }
    }

    #[test]
    fn tiny_and_huge_floats_use_exponent_form() {
        assert_eq!(format_element(DataType::Float16, 0x0001), "5.9604645e-8");
        assert_eq!(
            format_element(DataType::Float32, 0x7f7f_ffff),
            "3.4028235e+38"
        );
        assert_eq!(format_element(DataType::Float64, 1), "5.0e-324");
        assert_eq!(format_element(DataType::Float32, 0x3f80_0000), "1");
        assert_eq!(format_element(DataType::Float32, 0xbfc0_0000), "-1.5");
    }

    #[test]
    fn integers_out_of_range_are_errors_not_wraps() {
        assert!(encode_element(DataType::Uint8, &ElementLiteral::Integer(256)).is_err());
        assert!(encode_element(DataType::Int8, &ElementLiteral::Integer(-129)).is_err());
        assert_eq!(
            encode_element(DataType::Int8, &ElementLiteral::Integer(-1)),
            Ok(0xff)
        );
        assert!(encode_element(DataType::Int32, &ElementLiteral::Float(1.5)).is_err());
        assert!(parse_element_text(DataType::Uint16, "0x10000").is_err());
        assert!(parse_element_text(DataType::Uint16, "0xzz").is_err());
    }

    #[test]
    fn elements_read_and_write_little_endian() {
        let mut bytes = vec![0u8; 6];
        assert!(write_element(&mut bytes, 2, DataType::Uint32, 0x0403_0201));
        assert_eq!(bytes, vec![0, 0, 1, 2, 3, 4]);
        assert_eq!(read_element(&bytes, 2, DataType::Uint16), Some(0x0201));
        assert!(!write_element(&mut bytes, 4, DataType::Uint32, 1));
        assert_eq!(read_element(&bytes, usize::MAX, DataType::Uint8), None);
    }
}
