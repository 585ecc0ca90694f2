//! A complete in-process dmlcts backend: DML_SPLIT, DML_JOIN and DML_SLICE1 as strided block
//! copies, the way a backend author's crate implements [`dmlcts_tensor::Backend`].
//!
//! - validation: [`dmlcts_oracle::validate`] at the device's feature level (DirectML's
//!   rules, with their rule ids), so the backend is `Strict` and acts at every level;
//! - execution: [`dmlcts_tensor::copy_plan`] gives each output's pieces (block copies in
//!   output coordinates), and [`CompiledCopy`] moves their elements, a contiguous run at a
//!   time, writing only inside each output's binding.
//!
//! Its tests are what an author copies: `tests/dmlcts.rs` runs the whole corpus as libtest
//! tests (`cargo test -p dmlcts-example-backend --test dmlcts`), and `tests/campaign.rs` runs
//! an in-process fuzz campaign with [`dmlcts_fuzz::run_campaign`](../dmlcts_fuzz/fn.run_campaign.html)
//! and shows it find a planted bug. README.md has the `[profile]` settings to copy.

use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, FeatureLevel, OperatorDesc, OutputBinding,
    OutputPieces, Rejected, copy_plan, merge_dimensions,
};

/// The backend, as a device at one feature level.
pub struct ExampleBackend {
    level: FeatureLevel,
}

impl ExampleBackend {
    /// A device at `level`: it rejects what that level's tables do not list.
    pub fn at_level(level: FeatureLevel) -> ExampleBackend {
        ExampleBackend { level }
    }
}

impl Backend for ExampleBackend {
    fn name(&self) -> String {
        "example".to_string()
    }

    fn feature_level(&self) -> FeatureLevel {
        self.level
    }

    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        dmlcts_oracle::validate(op, self.level).map_err(Rejected::from)?;
        Ok(Box::new(CompiledCopy {
            outputs: copy_plan(op),
            element_size: op.outputs()[0].1.data_type.element_size(),
        }))
    }
}

/// A validated operator: the pieces of each output, and the element size.
pub struct CompiledCopy {
    outputs: Vec<OutputPieces>,
    element_size: usize,
}

impl CompiledOperator for CompiledCopy {
    fn execute(&self, inputs: &[&[u8]], outputs: &mut [OutputBinding<'_>]) -> Result<(), String> {
        for (plan, binding) in self.outputs.iter().zip(outputs.iter_mut()) {
            let out = binding.bytes_mut();
            for piece in &plan.pieces {
                let input = inputs.get(piece.input).ok_or("no such input")?;
                // (size, source stride, destination stride), outermost first; the last is
                // the run copied at once when both sides are contiguous in it.
                let dims = merge_dimensions(&piece.sizes, &piece.src_strides, &plan.strides);
                let (run, src_step, dst_step) = dims[dims.len() - 1];
                let outer = &dims[..dims.len() - 1];
                let mut index = vec![0u64; outer.len()];
                loop {
                    let mut src = piece.src_base;
                    let mut dst = plan.dst_base(piece);
                    for (&i, &(_, s, d)) in index.iter().zip(outer) {
                        src += i as i64 * s;
                        dst += i as i64 * d;
                    }
                    if src_step == 1 && dst_step == 1 {
                        copy(input, src, out, dst, self.element_size, run as usize)?;
                    } else {
                        for k in 0..run as i64 {
                            let (s, d) = (src + k * src_step, dst + k * dst_step);
                            copy(input, s, out, d, self.element_size, 1)?;
                        }
                    }
                    // The next outer index, innermost fastest; done after the last.
                    let Some(dim) = (0..outer.len()).rev().find(|&d| index[d] + 1 < outer[d].0)
                    else {
                        break;
                    };
                    index[dim] += 1;
                    index[dim + 1..].iter_mut().for_each(|i| *i = 0);
                }
            }
        }
        Ok(())
    }
}

/// Copies `count` elements of `size` bytes from element `src` of `input` to element `dst` of
/// `out`; refuses a range outside either buffer (a wrong plan), never panics.
fn copy(
    input: &[u8],
    src: i64,
    out: &mut [u8],
    dst: i64,
    size: usize,
    count: usize,
) -> Result<(), String> {
    let bytes = |at: i64| -> Option<std::ops::Range<usize>> {
        let start = usize::try_from(at).ok()?.checked_mul(size)?;
        Some(start..start.checked_add(count.checked_mul(size)?)?)
    };
    let (from, to) = (bytes(src), bytes(dst));
    match (
        from.and_then(|r| input.get(r)),
        to.and_then(|r| out.get_mut(r)),
    ) {
        (Some(from), Some(to)) => {
            to.copy_from_slice(from);
            Ok(())
        }
        _ => Err(format!(
            "a copy of {count} elements from {src} to {dst} is out of bounds"
        )),
    }
}
