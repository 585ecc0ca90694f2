//! Value edges (cases/generated/values_*.yaml): for every data type, the values a staging type
//! would break, through every operator and every copy path.
//!
//! A backend that moves elements through a type other than their own (a double for 64-bit
//! integers, a 32-bit lane for 64-bit values that "fit", a float register for half floats, a
//! signed lane for unsigned values) changes some values and not others. The values here sit
//! at every boundary such a staging type has, on both sides:
//!
//! - floats: +0 and -0, the smallest and largest subnormals, the smallest normal, the largest
//!   finite, 1 and the next value up, infinities, and NaNs with quiet and signalling bits and
//!   payloads at the bottom, the top and in between, each with both signs;
//! - integers: 2^7, 2^8, 2^15, 2^16, 2^24, 2^31, 2^32, 2^53, 2^63 and 0, each minus one, itself
//!   and plus one, negated too, and the type's min and max with their neighbours, where the type
//!   holds them; each byte of the element alone at 0x7f, 0x80 and 0xff; every value of a
//!   one-byte type.
//!
//! Signed integer types come in two cases per path set: one whose tensors hold only the
//! negative values, one only the rest, so a backend that checks one side of a range before
//! narrowing (every value at most 2^31 - 1, say) meets a tensor that passes its check and still
//! does not fit.
//!
//! The paths: Split's outputs packed, padded and transposed (gathers from one input); Join's
//! inputs transposed, broadcast (a 0 stride) and packed into a padded output; Slice1 reading a
//! broadcast input backwards with a step of 2 into a transposed output. Every value goes
//! through every path, and each row holds them in a different order.

use super::case;
use crate::corpus::data::TensorData;
use crate::corpus::{Case, Expectation};
use dmlcts_oracle::validate;
use dmlcts_tensor::{
    DataType, FeatureLevel, JoinDesc, OperatorDesc, OperatorKind, Slice1Desc, SplitDesc, TensorDesc,
};

/// The edge values of `data_type`, as raw bits, each once, in a fixed order.
pub fn edge_values(data_type: DataType) -> Vec<u64> {
    let bits = 8 * data_type.element_size() as u32;
    let mut values = if data_type.is_float() {
        float_edges(data_type)
    } else {
        integer_edges(data_type)
    };
    let mut seen = std::collections::HashSet::new();
    values.retain(|&v| seen.insert(v));
    debug_assert!(values.iter().all(|&v| bits == 64 || v >> bits == 0));
    values
}

/// (exponent bits, mantissa bits) of a float type.
fn float_format(data_type: DataType) -> (u32, u32) {
    match data_type {
        DataType::Float16 => (5, 10),
        DataType::Float32 => (8, 23),
        _ => (11, 52),
    }
}

fn float_edges(data_type: DataType) -> Vec<u64> {
    let (e, m) = float_format(data_type);
    let width = 1 + e + m;
    let sign = 1u64 << (width - 1);
    let exponent = ((1u64 << e) - 1) << m;
    let mantissa = (1u64 << m) - 1;
    let quiet = 1u64 << (m - 1);
    let one = ((1u64 << (e - 1)) - 1) << m;
    let mut positive = vec![
        0,
        1,                                // the smallest subnormal
        2,                                // the next one
        quiet,                            // a subnormal with only the top mantissa bit
        mantissa,                         // the largest subnormal
        1 << m,                           // the smallest normal
        (1 << m) | 1,                     // just past it
        one,                              // 1
        one | 1,                          // 1 and one unit in the last place
        one | mantissa,                   // just below 2
        (exponent - (1 << m)) | mantissa, // the largest finite
        exponent - (1 << m),              // a power of two near the top
        exponent,                         // infinity
        exponent | quiet,                 // the default quiet NaN
        exponent | quiet | 1,             // quiet, payload 1
        exponent | quiet | (quiet >> 1),
        exponent | mantissa,         // quiet, every payload bit
        exponent | 1,                // signalling, payload 1
        exponent | (quiet >> 1),     // signalling, the top payload bit
        exponent | (quiet - 1),      // signalling, every payload bit
        exponent | (quiet >> 1) | 1, // signalling, both ends
    ];
    if data_type == DataType::Float64 {
        // Values a FLOAT32 staging type would round, flush or overflow.
        positive.extend([
            f64::from(f32::MAX).to_bits() + 1,
            f64::from(f32::MIN_POSITIVE).to_bits() - 1,
            1e-45f64.to_bits(),
            1e39f64.to_bits(),
            (9_007_199_254_740_993.0f64).to_bits(), // 2^53 + 2: 2^53 + 1 does not exist
        ]);
    }
    if data_type == DataType::Float32 {
        // 2^24 + 2 and a value a FLOAT16 staging type would overflow.
        positive.extend([
            u64::from(16_777_218.0f32.to_bits()),
            u64::from(65_520.0f32.to_bits()),
        ]);
    }
    let mut values = Vec::with_capacity(positive.len() * 2);
    for v in positive {
        values.push(v);
        values.push(v | sign);
    }
    values
}

/// The range of an integer type.
fn integer_range(data_type: DataType) -> (i128, i128) {
    let bits = 8 * data_type.element_size() as u32;
    if data_type.is_signed_integer() {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    }
}

fn integer_edges(data_type: DataType) -> Vec<u64> {
    let bytes = data_type.element_size() as u32;
    let (min, max) = integer_range(data_type);
    let mask = if bytes == 8 {
        u64::MAX
    } else {
        (1u64 << (8 * bytes)) - 1
    };
    let mut values: Vec<i128> = Vec::new();
    if bytes == 1 {
        values.extend(min..=max);
    }
    values.extend([
        0,
        1,
        -1,
        2,
        -2,
        min,
        min + 1,
        min + 2,
        max,
        max - 1,
        max - 2,
    ]);
    for k in [7, 8, 15, 16, 24, 31, 32, 53, 63] {
        let p = 1i128 << k;
        for v in [p - 1, p, p + 1] {
            values.extend([v, -v]);
        }
    }
    values.retain(|v| (min..=max).contains(v));
    let mut out: Vec<u64> = values.into_iter().map(|v| (v as u64) & mask).collect();
    // Each byte alone at 0x7f, 0x80 and 0xff, and every byte but one at 0xff.
    for byte in 0..bytes {
        for pattern in [0x7fu64, 0x80, 0xff] {
            out.push(pattern << (8 * byte));
        }
        out.push(mask & !(0xffu64 << (8 * byte)));
    }
    out
}

/// Whether `bits` of a signed integer type is negative.
fn negative(data_type: DataType, bits: u64) -> bool {
    let width = 8 * data_type.element_size() as u32;
    (bits >> (width - 1)) & 1 == 1
}

/// The value sets a type's cases carry: every value, or for signed integers each side alone;
/// and for 4- and 8-byte integers, each of those again with only the values a float staging
/// type takes for "safe" (a magnitude of at most 2^25 for a FLOAT32, 2^54 for a double, one
/// bit past their significands), so a backend that stages through the float only when every
/// value looks small enough meets 2^24 + 1 or 2^53 + 1 all the same.
fn value_sets(data_type: DataType) -> Vec<(String, Vec<u64>)> {
    let values = edge_values(data_type);
    let sides: Vec<(&str, Vec<u64>)> = if data_type.is_signed_integer() {
        let (below, rest): (Vec<u64>, Vec<u64>) =
            values.into_iter().partition(|&v| negative(data_type, v));
        vec![("negative", below), ("nonnegative", rest)]
    } else {
        vec![("all", values)]
    };
    let mut sets: Vec<(String, Vec<u64>)> = Vec::new();
    for (side, values) in sides {
        if let Some(k) = staging_magnitude(data_type) {
            let small: Vec<u64> = (values.iter().copied())
                .filter(|&v| magnitude(data_type, v) <= 1u128 << k)
                .collect();
            let name = match side {
                "all" => format!("within_2_{k}"),
                side => format!("{side}_within_2_{k}"),
            };
            sets.push((side.to_string(), values));
            sets.push((name, small));
        } else {
            sets.push((side.to_string(), values));
        }
    }
    sets
}

/// The power of two a float staging type is taken to hold integers of this type up to: 25
/// for 4-byte integers (FLOAT32), 54 for 8-byte ones (a double); none for the others.
fn staging_magnitude(data_type: DataType) -> Option<u32> {
    if data_type.is_float() {
        return None;
    }
    match data_type.element_size() {
        4 => Some(25),
        8 => Some(54),
        _ => None,
    }
}

/// The magnitude of an integer element's bits.
fn magnitude(data_type: DataType, bits: u64) -> u128 {
    let width = 8 * data_type.element_size() as u32;
    if data_type.is_signed_integer() && negative(data_type, bits) {
        let value = (bits << (64 - width)) as i64 >> (64 - width);
        i128::from(value).unsigned_abs()
    } else {
        u128::from(bits)
    }
}

fn strided(data_type: DataType, sizes: &[u32], strides: &[u32]) -> TensorDesc {
    TensorDesc::strided(data_type, sizes, Some(strides))
}

/// [1, 1, 2, n] with rows of n + 3 elements.
fn padded(data_type: DataType, n: u32) -> TensorDesc {
    strided(
        data_type,
        &[1, 1, 2, n],
        &[2 * (n + 3), 2 * (n + 3), n + 3, 1],
    )
}

/// [1, 1, 2, n], column-major.
fn transposed(data_type: DataType, n: u32) -> TensorDesc {
    strided(data_type, &[1, 1, 2, n], &[2 * n, 2 * n, 1, 2])
}

/// [1, 1, rows, n] reading one row of n elements for every row.
fn broadcast(data_type: DataType, rows: u32, n: u32) -> TensorDesc {
    strided(data_type, &[1, 1, rows, n], &[0, 0, 0, 1])
}

fn reversed(values: &[u64]) -> Vec<u64> {
    values.iter().rev().copied().collect()
}

/// The cases of one operator's file.
pub fn value_cases(kind: OperatorKind, file: &str) -> Vec<Case> {
    let mut cases = Vec::new();
    for data_type in DataType::ALL {
        let dt = data_type.name().to_ascii_lowercase();
        for (side, values) in value_sets(data_type) {
            let n = values.len() as u32;
            let rev = reversed(&values);
            let (paths, op, inputs) = match kind {
                OperatorKind::Split => {
                    // One input holding the values three times over; rows in opposite orders.
                    let row0: Vec<u64> = [&values[..], &values[..], &values[..]].concat();
                    let row1: Vec<u64> = [&rev[..], &values[..], &rev[..]].concat();
                    let op = OperatorDesc::Split(SplitDesc {
                        input_tensor: TensorDesc::packed(data_type, &[1, 1, 2, 3 * n]),
                        output_tensors: vec![
                            TensorDesc::packed(data_type, &[1, 1, 2, n]),
                            padded(data_type, n),
                            transposed(data_type, n),
                        ],
                        axis: 3,
                    });
                    let data = TensorData::Logical([row0, row1].concat());
                    ("outputs packed, padded and transposed", op, vec![data])
                }
                OperatorKind::Join => {
                    let output = strided(
                        data_type,
                        &[1, 1, 2, 3 * n],
                        &[2 * (3 * n + 5), 2 * (3 * n + 5), 3 * n + 5, 1],
                    );
                    let op = OperatorDesc::Join(JoinDesc {
                        input_tensors: vec![
                            transposed(data_type, n),
                            broadcast(data_type, 2, n),
                            TensorDesc::packed(data_type, &[1, 1, 2, n]),
                        ],
                        output_tensor: output,
                        axis: 3,
                    });
                    let inputs = vec![
                        TensorData::Logical([&values[..], &rev[..]].concat()),
                        TensorData::Logical([&values[..], &values[..]].concat()),
                        TensorData::Logical([&rev[..], &values[..]].concat()),
                    ];
                    (
                        "inputs transposed, broadcast and packed; output padded",
                        op,
                        inputs,
                    )
                }
                OperatorKind::Slice1 => {
                    let op = OperatorDesc::Slice1(Slice1Desc {
                        input_tensor: broadcast(data_type, 3, n),
                        output_tensor: transposed(data_type, n),
                        dimension_count: 4,
                        input_window_offsets: vec![0; 4],
                        input_window_sizes: vec![1, 1, 3, n],
                        input_window_strides: vec![1, 1, 2, -1],
                    });
                    let data =
                        TensorData::Logical([&values[..], &values[..], &values[..]].concat());
                    (
                        "a broadcast input read backwards with a step of 2; output transposed",
                        op,
                        vec![data],
                    )
                }
            };
            let name = format!("values.{kind}.{dt}.{side}");
            let description = format!(
                "{n} {side} edge values of {data_type}; {paths}",
                side = if side == "all" {
                    String::new()
                } else {
                    side.replace("_within_2_", ", at most 2^")
                        .replace("within_2_", "at most 2^")
                }
            )
            .replace("  ", " ");
            let level = FeatureLevel::ALL
                .into_iter()
                .find(|&level| validate(&op, level).is_ok())
                .unwrap_or_else(|| panic!("{name} is invalid at every level"));
            let mut case = case(name, file, description, level, op, Expectation::Accept);
            case.inputs = inputs;
            case.tags = vec!["generated".to_string(), "value-edges".to_string()];
            cases.push(case);
        }
    }
    cases
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_edges_hold_both_sides_of_every_boundary_the_type_holds() {
        let int64 = edge_values(DataType::Int64);
        for v in [
            (1i64 << 53) + 1,
            (1 << 53) - 1,
            -(1 << 31) - 1,
            i64::MIN,
            i64::MAX,
            1 << 32,
        ] {
            assert!(int64.contains(&(v as u64)), "{v}");
        }
        let uint64 = edge_values(DataType::Uint64);
        assert!(uint64.contains(&(1u64 << 63)) && uint64.contains(&u64::MAX));
        assert_eq!(edge_values(DataType::Uint8).len(), 256);
        let int16 = edge_values(DataType::Int16);
        assert!(int16.contains(&0x8000) && int16.contains(&0x7fff) && !int16.contains(&0x1_0000));
    }

    #[test]
    fn float_edges_hold_signed_zeros_subnormals_infinities_and_nan_payloads() {
        let f16 = edge_values(DataType::Float16);
        for bits in [
            0x0000, 0x8000, 0x0001, 0x03ff, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfdff,
        ] {
            assert!(f16.contains(&bits), "{bits:#x}");
        }
        let f32 = edge_values(DataType::Float32);
        assert!(f32.contains(&0x7f80_0001) && f32.contains(&0xffff_ffff));
    }

    #[test]
    fn signed_types_split_into_one_sided_sets() {
        let sets = value_sets(DataType::Int64);
        let names: Vec<&str> = sets.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(
            names,
            [
                "negative",
                "negative_within_2_54",
                "nonnegative",
                "nonnegative_within_2_54"
            ]
        );
        assert!(sets[0].1.iter().all(|&v| (v as i64) < 0));
        assert!(sets[2].1.iter().all(|&v| (v as i64) >= 0));
        assert!(sets[0].1.contains(&((-(1i64 << 31) - 1) as u64)));
    }

    #[test]
    fn wide_integers_have_sets_a_float_staging_takes_for_safe_that_it_still_breaks() {
        let within = |data_type, name: &str| {
            let sets = value_sets(data_type);
            (sets.into_iter().find(|(n, _)| n == name))
                .unwrap_or_else(|| panic!("{data_type} has no set {name}"))
                .1
        };
        let u64_small = within(DataType::Uint64, "within_2_54");
        assert!(u64_small.contains(&((1u64 << 53) + 1)));
        assert!(u64_small.iter().all(|&v| v <= 1 << 54));
        let i64_small = within(DataType::Int64, "negative_within_2_54");
        assert!(i64_small.contains(&((-(1i64 << 53) - 1) as u64)));
        assert!(
            i64_small
                .iter()
                .all(|&v| (v as i64) >= -(1i64 << 54) && (v as i64) < 0)
        );
        let u32_small = within(DataType::Uint32, "within_2_25");
        assert!(u32_small.contains(&((1u64 << 24) + 1)));
        assert!(u32_small.iter().all(|&v| v <= 1 << 25));
        assert_eq!(value_sets(DataType::Int16).len(), 2);
        assert_eq!(value_sets(DataType::Float64).len(), 1);
    }
}
