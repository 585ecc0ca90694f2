//! A backend around the oracle that keeps the plan (or the rejection) of its last compile and
//! reuses it when the next compile's key equals the last one's: a one-entry "same as last
//! time" cache, as a backend process keeps across requests. The planted bug is a key that
//! leaves out one field. Only descriptors run back to back can meet such a cache, so it shows
//! what sibling sequences add: a corpus of the same pairs, not adjacent, passes it.

use dmlcts_oracle::{broken_rules, execute};
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, DataType, FeatureLevel, OperatorDesc, OutputBinding,
    Rejected, TensorDesc,
};
use std::sync::{Arc, Mutex};

/// The field the key leaves out (`None`: the key is the whole descriptor and the level).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bug {
    None,
    InputStrides,
    OutputStrides,
    WindowOffsets,
    WindowSizes,
    WindowStrides,
    /// Every tensor's sizes.
    Sizes,
    Level,
    /// Each data type by its element size (FLOAT32, INT32, UINT32 share).
    DataTypeBySize,
    /// Every tensor's TotalTensorSizeInBytes.
    TotalSize,
    Axis,
    /// Split's outputs and Join's inputs listed once per run of equal descriptors.
    TensorCount,
}

impl Bug {
    #[allow(dead_code)]
    pub const ALL: [Bug; 11] = [
        Bug::InputStrides,
        Bug::OutputStrides,
        Bug::WindowOffsets,
        Bug::WindowSizes,
        Bug::WindowStrides,
        Bug::Sizes,
        Bug::Level,
        Bug::DataTypeBySize,
        Bug::TotalSize,
        Bug::Axis,
        Bug::TensorCount,
    ];
}

#[derive(Clone)]
enum Verdict {
    Accepted(OperatorDesc),
    Rejected(String),
}

/// The backend process: its bug and its last compile's key and verdict.
pub struct LastPlan {
    bug: Bug,
    last: Mutex<Option<(String, Verdict)>>,
}

/// The process acting at one level.
pub struct View {
    shared: Arc<LastPlan>,
    level: FeatureLevel,
}

impl LastPlan {
    pub fn new(bug: Bug) -> Arc<LastPlan> {
        Arc::new(LastPlan {
            bug,
            last: Mutex::new(None),
        })
    }

    pub fn at(self: &Arc<LastPlan>, level: FeatureLevel) -> View {
        View {
            shared: self.clone(),
            level,
        }
    }
}

fn tensors_mut(op: &mut OperatorDesc) -> (Vec<&mut TensorDesc>, Vec<&mut TensorDesc>) {
    match op {
        OperatorDesc::Split(d) => (
            vec![&mut d.input_tensor],
            d.output_tensors.iter_mut().collect(),
        ),
        OperatorDesc::Join(d) => (
            d.input_tensors.iter_mut().collect(),
            vec![&mut d.output_tensor],
        ),
        OperatorDesc::Slice1(d) => (vec![&mut d.input_tensor], vec![&mut d.output_tensor]),
    }
}

fn by_size(data_type: DataType) -> DataType {
    match data_type.element_size() {
        1 => DataType::Uint8,
        2 => DataType::Uint16,
        4 => DataType::Uint32,
        _ => DataType::Uint64,
    }
}

/// The key: the descriptor and level, less what the bug leaves out.
fn key(bug: Bug, op: &OperatorDesc, level: FeatureLevel) -> String {
    let mut op = op.clone();
    let mut level = Some(level);
    {
        let (inputs, outputs) = tensors_mut(&mut op);
        let mut all: Vec<&mut TensorDesc> = inputs.into_iter().chain(outputs).collect();
        for t in &mut all {
            match bug {
                Bug::Sizes => t.sizes.clear(),
                Bug::DataTypeBySize => t.data_type = by_size(t.data_type),
                Bug::TotalSize => t.total_tensor_size_in_bytes = 0,
                _ => {}
            }
        }
    }
    match (bug, &mut op) {
        (Bug::InputStrides, op) => tensors_mut(op).0.into_iter().for_each(|t| t.strides = None),
        (Bug::OutputStrides, op) => tensors_mut(op).1.into_iter().for_each(|t| t.strides = None),
        (Bug::WindowOffsets, OperatorDesc::Slice1(d)) => d.input_window_offsets.clear(),
        (Bug::WindowSizes, OperatorDesc::Slice1(d)) => d.input_window_sizes.clear(),
        (Bug::WindowStrides, OperatorDesc::Slice1(d)) => d.input_window_strides.clear(),
        (Bug::Level, _) => level = None,
        (Bug::Axis, OperatorDesc::Split(d)) => d.axis = 0,
        (Bug::Axis, OperatorDesc::Join(d)) => d.axis = 0,
        (Bug::TensorCount, OperatorDesc::Split(d)) => d.output_tensors.dedup(),
        (Bug::TensorCount, OperatorDesc::Join(d)) => d.input_tensors.dedup(),
        _ => {}
    }
    format!("{op:?} at {level:?}")
}

impl Backend for View {
    fn name(&self) -> String {
        "last-plan".to_string()
    }
    fn feature_level(&self) -> FeatureLevel {
        self.level
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        let key = key(self.shared.bug, op, self.level);
        let mut last = self.shared.last.lock().unwrap_or_else(|e| e.into_inner());
        let verdict = match last.as_ref() {
            Some((last_key, verdict)) if *last_key == key => verdict.clone(),
            _ => match broken_rules(op, self.level).first() {
                Some(v) => Verdict::Rejected(v.to_string()),
                None => Verdict::Accepted(op.clone()),
            },
        };
        *last = Some((key, verdict.clone()));
        match verdict {
            Verdict::Rejected(message) => Err(CompileError::Rejected(Rejected {
                rule: None,
                message,
            })),
            Verdict::Accepted(plan) => Ok(Box::new(Compiled { plan })),
        }
    }
}

struct Compiled {
    /// The descriptor it was compiled for (the last one's, on a hit).
    plan: OperatorDesc,
}

impl CompiledOperator for Compiled {
    fn execute(&self, inputs: &[&[u8]], outputs: &mut [OutputBinding<'_>]) -> Result<(), String> {
        let plan = &self.plan;
        if inputs.len() != plan.inputs().len() || outputs.len() != plan.outputs().len() {
            return Err("last-plan: the plan has another tensor count".to_string());
        }
        // The buffers as the plan expects them: cut or padded with zeros.
        let sized: Vec<Vec<u8>> = (plan.inputs().iter().zip(inputs))
            .map(|((_, t), bytes)| {
                let mut buffer = bytes.to_vec();
                buffer.resize(t.total_tensor_size_in_bytes as usize, 0);
                buffer
            })
            .collect();
        let refs: Vec<&[u8]> = sized.iter().map(Vec::as_slice).collect();
        let results = execute(plan, &refs).map_err(|e| format!("last-plan: {e:?}"))?;
        for (binding, result) in outputs.iter_mut().zip(&results) {
            result.write_addressed_into(binding.bytes_mut());
        }
        Ok(())
    }
}
