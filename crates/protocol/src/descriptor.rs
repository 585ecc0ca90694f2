//! Operator descriptors as JSON, with the field names of the case format (cases/README.md):
//!
//! ```json
//! {"split": {"axis": 2,
//!            "input": {"data_type": "FLOAT32", "sizes": [1, 1, 6, 2], "strides": null,
//!                      "total_tensor_size_in_bytes": 48},
//!            "outputs": [ ... ]}}
//! ```
//!
//! `strides` and `total_tensor_size_in_bytes` are always written (null strides: packed).

use dmlcts_tensor::{DataType, JoinDesc, OperatorDesc, Slice1Desc, SplitDesc, TensorDesc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Tensor {
    data_type: String,
    sizes: Vec<u32>,
    #[serde(default)]
    strides: Option<Vec<u32>>,
    total_tensor_size_in_bytes: u64,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
enum Operator {
    Split {
        axis: u32,
        input: Tensor,
        outputs: Vec<Tensor>,
    },
    Join {
        axis: u32,
        inputs: Vec<Tensor>,
        output: Tensor,
    },
    Slice1 {
        dimension_count: u32,
        input_window_offsets: Vec<u32>,
        input_window_sizes: Vec<u32>,
        input_window_strides: Vec<i32>,
        input: Tensor,
        output: Tensor,
    },
}

fn tensor(desc: &TensorDesc) -> Tensor {
    Tensor {
        data_type: desc.data_type.name().to_string(),
        sizes: desc.sizes.clone(),
        strides: desc.strides.clone(),
        total_tensor_size_in_bytes: desc.total_tensor_size_in_bytes,
    }
}

fn desc(tensor: &Tensor) -> Result<TensorDesc, String> {
    let data_type = DataType::from_name(&tensor.data_type)
        .ok_or_else(|| format!("unknown data type `{}`", tensor.data_type))?;
    Ok(TensorDesc {
        data_type,
        sizes: tensor.sizes.clone(),
        strides: tensor.strides.clone(),
        total_tensor_size_in_bytes: tensor.total_tensor_size_in_bytes,
    })
}

pub fn to_json(op: &OperatorDesc) -> Value {
    let operator = match op {
        OperatorDesc::Split(d) => Operator::Split {
            axis: d.axis,
            input: tensor(&d.input_tensor),
            outputs: d.output_tensors.iter().map(tensor).collect(),
        },
        OperatorDesc::Join(d) => Operator::Join {
            axis: d.axis,
            inputs: d.input_tensors.iter().map(tensor).collect(),
            output: tensor(&d.output_tensor),
        },
        OperatorDesc::Slice1(d) => Operator::Slice1 {
            dimension_count: d.dimension_count,
            input_window_offsets: d.input_window_offsets.clone(),
            input_window_sizes: d.input_window_sizes.clone(),
            input_window_strides: d.input_window_strides.clone(),
            input: tensor(&d.input_tensor),
            output: tensor(&d.output_tensor),
        },
    };
    serde_json::to_value(operator).unwrap_or(Value::Null)
}

pub fn from_json(value: &Value) -> Result<OperatorDesc, String> {
    let operator: Operator =
        serde_json::from_value(value.clone()).map_err(|e| format!("bad operator: {e}"))?;
    Ok(match operator {
        Operator::Split {
            axis,
            input,
            outputs,
        } => OperatorDesc::Split(SplitDesc {
            input_tensor: desc(&input)?,
            output_tensors: outputs.iter().map(desc).collect::<Result<_, _>>()?,
            axis,
        }),
        Operator::Join {
            axis,
            inputs,
            output,
        } => OperatorDesc::Join(JoinDesc {
            input_tensors: inputs.iter().map(desc).collect::<Result<_, _>>()?,
            output_tensor: desc(&output)?,
            axis,
        }),
        Operator::Slice1 {
            dimension_count,
            input_window_offsets,
            input_window_sizes,
            input_window_strides,
            input,
            output,
        } => OperatorDesc::Slice1(Slice1Desc {
            input_tensor: desc(&input)?,
            output_tensor: desc(&output)?,
            dimension_count,
            input_window_offsets,
            input_window_sizes,
            input_window_strides,
        }),
    })
}
