//! Writing cases back out in the corpus format (gen-cases, the fuzzer's saved cases, `show`),
//! and an operator's descriptor on one line (failures carry it).

use super::data::TensorData;
use super::{Case, Expectation};
use dmlcts_tensor::{DataType, OperatorDesc, TensorDesc, format_element};
use std::fmt;

/// Writes cases in the corpus format, one file's worth, in the compact style of the
/// hand-written files. Every value is written so it loads back to the same bits.
pub fn cases_to_yaml(cases: &[Case]) -> String {
    let mut out = String::from("cases:\n");
    for (i, case) in cases.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        write_case(&mut out, case);
    }
    out
}

fn write_case(out: &mut String, case: &Case) {
    use std::fmt::Write as _;
    let _ = writeln!(out, "  - name: {}", scalar(&case.name));
    if let Some(description) = &case.description {
        let _ = writeln!(out, "    description: {}", scalar(description));
    }
    if !case.tags.is_empty() {
        let tags: Vec<String> = case.tags.iter().map(|t| scalar(t)).collect();
        let _ = writeln!(out, "    tags: [{}]", tags.join(", "));
    }
    if case.is_group() {
        // Each step as a case of its own, four columns in, named without the group's prefix.
        let _ = writeln!(out, "    steps:");
        let prefix = format!("{}/", case.name);
        for step in &case.steps {
            let mut own = step.clone();
            own.name = step
                .name
                .strip_prefix(&prefix)
                .unwrap_or(&step.name)
                .to_string();
            let mut text = String::new();
            write_case(&mut text, &own);
            for line in text.lines() {
                let _ = writeln!(out, "    {line}");
            }
        }
        return;
    }
    let _ = writeln!(out, "    feature_level: \"{}\"", case.feature_level);
    if let Expectation::Reject { rule } = &case.expect {
        let _ = writeln!(out, "    reject: {}", scalar(rule));
    }
    let mut inputs = case.inputs.iter();
    let mut expected = case.expected.iter();
    let mut input = |desc: &TensorDesc| tensor_flow(desc, inputs.next(), None);
    let mut output =
        |desc: &TensorDesc| tensor_flow(desc, None, expected.next().and_then(Option::as_ref));
    match &case.op {
        OperatorDesc::Split(d) => {
            let _ = writeln!(out, "    split:\n      axis: {}", d.axis);
            let _ = writeln!(out, "      input: {}", input(&d.input_tensor));
            write_list(
                out,
                "outputs",
                d.output_tensors.iter().map(&mut output).collect(),
            );
        }
        OperatorDesc::Join(d) => {
            let _ = writeln!(out, "    join:\n      axis: {}", d.axis);
            write_list(
                out,
                "inputs",
                d.input_tensors.iter().map(&mut input).collect(),
            );
            let _ = writeln!(out, "      output: {}", output(&d.output_tensor));
        }
        OperatorDesc::Slice1(d) => {
            let _ = writeln!(out, "    slice1:");
            if d.dimension_count as usize != d.input_window_offsets.len() {
                let _ = writeln!(out, "      dimension_count: {}", d.dimension_count);
            }
            let _ = writeln!(
                out,
                "      input_window_offsets: {}",
                flow_list(&d.input_window_offsets)
            );
            let _ = writeln!(
                out,
                "      input_window_sizes: {}",
                flow_list(&d.input_window_sizes)
            );
            let _ = writeln!(
                out,
                "      input_window_strides: {}",
                flow_list(&d.input_window_strides)
            );
            let _ = writeln!(out, "      input: {}", input(&d.input_tensor));
            let _ = writeln!(out, "      output: {}", output(&d.output_tensor));
        }
    }
}

/// An operator's descriptor on one line, in the corpus format (flow style) without data:
/// `{split: {axis: 2, input: {data_type: FLOAT32, sizes: [1, 1, 4, 2]}, outputs: [...]}}`.
/// Failures carry it; pasted under `- name: X` with a `feature_level`, it is a case.
pub fn descriptor_flow(op: &OperatorDesc) -> String {
    let tensor = |desc: &TensorDesc| tensor_flow(desc, None, None);
    let list = |descs: &[TensorDesc]| {
        let items: Vec<String> = descs.iter().map(tensor).collect();
        format!("[{}]", items.join(", "))
    };
    match op {
        OperatorDesc::Split(d) => format!(
            "{{split: {{axis: {}, input: {}, outputs: {}}}}}",
            d.axis,
            tensor(&d.input_tensor),
            list(&d.output_tensors)
        ),
        OperatorDesc::Join(d) => format!(
            "{{join: {{axis: {}, inputs: {}, output: {}}}}}",
            d.axis,
            list(&d.input_tensors),
            tensor(&d.output_tensor)
        ),
        OperatorDesc::Slice1(d) => {
            let count = if d.dimension_count as usize != d.input_window_offsets.len() {
                format!("dimension_count: {}, ", d.dimension_count)
            } else {
                String::new()
            };
            format!(
                "{{slice1: {{{count}input_window_offsets: {}, input_window_sizes: {}, \
                 input_window_strides: {}, input: {}, output: {}}}}}",
                flow_list(&d.input_window_offsets),
                flow_list(&d.input_window_sizes),
                flow_list(&d.input_window_strides),
                tensor(&d.input_tensor),
                tensor(&d.output_tensor)
            )
        }
    }
}

fn write_list(out: &mut String, key: &str, items: Vec<String>) {
    use std::fmt::Write as _;
    if items.is_empty() {
        let _ = writeln!(out, "      {key}: []");
        return;
    }
    let _ = writeln!(out, "      {key}:");
    for item in items {
        let _ = writeln!(out, "        - {item}");
    }
}

fn flow_list<T: fmt::Display>(values: &[T]) -> String {
    let items: Vec<String> = values.iter().map(T::to_string).collect();
    format!("[{}]", items.join(", "))
}

/// `{data_type: FLOAT32, sizes: [1, 2], data: [...]}`
fn tensor_flow(
    desc: &TensorDesc,
    data: Option<&TensorData>,
    expected: Option<&Vec<u64>>,
) -> String {
    let mut fields = vec![
        format!("data_type: {}", desc.data_type.name()),
        format!("sizes: {}", flow_list(&desc.sizes)),
    ];
    if let Some(strides) = &desc.strides {
        fields.push(format!("strides: {}", flow_list(strides)));
    }
    if u128::from(desc.total_tensor_size_in_bytes) != desc.minimum_size_in_bytes() {
        fields.push(format!(
            "total_tensor_size_in_bytes: {}",
            desc.total_tensor_size_in_bytes
        ));
    }
    if let Some(data) = data {
        let text = match data {
            TensorData::Logical(values) => values_flow(desc.data_type, values),
            TensorData::Bytes(bytes) => values_flow(
                desc.data_type,
                &crate::corpus::data::logical_elements(desc, bytes),
            ),
            TensorData::Iota { start, step } => {
                format!("{{generate: iota, start: {start}, step: {step}}}")
            }
            TensorData::Random { seed } => format!("{{generate: random, seed: {seed}}}"),
            TensorData::Fill { bits } => {
                format!(
                    "{{generate: fill, value: {}}}",
                    element_text(desc.data_type, *bits)
                )
            }
        };
        fields.push(format!("data: {text}"));
    }
    if let Some(values) = expected {
        fields.push(format!("expected: {}", values_flow(desc.data_type, values)));
    }
    format!("{{{}}}", fields.join(", "))
}

fn values_flow(data_type: DataType, values: &[u64]) -> String {
    let items: Vec<String> = values.iter().map(|&v| element_text(data_type, v)).collect();
    format!("[{}]", items.join(", "))
}

/// The value's text, unquoted when YAML reads it back to the same bits, quoted otherwise.
fn element_text(data_type: DataType, bits: u64) -> String {
    let text = format_element(data_type, bits);
    let read_back =
        serde_yaml::from_str::<serde_yaml::Value>(&crate::corpus::data::quote_hex_literals(&text))
            .ok()
            .and_then(|node| {
                crate::corpus::data::parse_data(
                    &serde_yaml::Value::Sequence(vec![node]),
                    data_type,
                    &[1],
                    0,
                )
                .ok()
            });
    if read_back == Some(TensorData::Logical(vec![bits])) {
        text
    } else {
        format!("\"{text}\"")
    }
}

/// A YAML scalar for a name or description: plain when that is safe, quoted otherwise.
fn scalar(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/'))
        && !text.starts_with(['-', '.'])
        && serde_yaml::from_str::<serde_yaml::Value>(text).is_ok_and(|v| v.as_str() == Some(text));
    if plain {
        text.to_string()
    } else {
        serde_json::to_string(text).unwrap_or_else(|_| format!("{text:?}"))
    }
}
