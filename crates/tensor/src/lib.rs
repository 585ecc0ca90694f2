//! The vocabulary every dmlcts crate speaks: DirectML data types and feature levels,
//! buffer tensor descriptions (modelled on `DML_BUFFER_TENSOR_DESC`), tensors as raw
//! little-endian bytes, the three operator descriptors, and the `Backend` trait that
//! implementations under test provide.
//!
//! # Writing a backend
//!
//! An implementation under test is a [`Backend`]: its [`name`](Backend::name), the
//! [`FeatureLevel`] it claims, the [`DataType`]s it claims, its [`ValidationProfile`], and
//! [`compile`](Backend::compile), which takes an [`OperatorDesc`] (a
//! [`SplitDesc`], [`JoinDesc`] or [`Slice1Desc`], field for field as in directml.h) and
//! either refuses it ([`CompileError::Rejected`], DirectML's `E_INVALIDARG`; the harness
//! checks the verdict against the oracle's), skips it ([`CompileError::Unsupported`]: valid,
//! but not runnable here) or returns a [`CompiledOperator`]. Its
//! [`execute`](CompiledOperator::execute) gets each input's bytes (exactly its
//! TotalTensorSizeInBytes, laid out by its strides) and an [`OutputBinding`] per output: a
//! range inside a larger buffer, like a `DML_BUFFER_BINDING`; writing outside the range
//! fails the case (the harness fills the rest with sentinels and checks them).
//!
//! A backend that handles Join of packed tensors only, and says so for everything else:
//!
//! ```
//! use dmlcts_tensor::{
//!     Backend, CompileError, CompiledOperator, DataType, FeatureLevel, JoinDesc, OperatorDesc,
//!     OutputBinding, TensorDesc,
//! };
//!
//! struct PackedJoin;
//!
//! struct Concatenate;
//!
//! impl CompiledOperator for Concatenate {
//!     fn execute(&self, inputs: &[&[u8]], outputs: &mut [OutputBinding<'_>]) -> Result<(), String> {
//!         // Packed tensors joined along axis 0: the inputs' bytes, one after another.
//!         let out = outputs[0].bytes_mut();
//!         let mut at = 0;
//!         for input in inputs {
//!             out.get_mut(at..at + input.len()).ok_or("output too small")?.copy_from_slice(input);
//!             at += input.len();
//!         }
//!         Ok(())
//!     }
//! }
//!
//! impl Backend for PackedJoin {
//!     fn name(&self) -> String {
//!         "packed-join".to_string()
//!     }
//!
//!     fn feature_level(&self) -> FeatureLevel {
//!         FeatureLevel::L4_1
//!     }
//!
//!     fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
//!         match op {
//!             OperatorDesc::Join(join)
//!                 if join.axis == 0
//!                     && join.input_tensors.iter().all(|t| t.strides.is_none())
//!                     && join.output_tensor.strides.is_none() =>
//!             {
//!                 Ok(Box::new(Concatenate))
//!             }
//!             // A real backend validates here (dmlcts_oracle::validate gives DirectML's
//!             // verdict and rule id) and runs every valid descriptor.
//!             _ => Err(CompileError::Unsupported("only packed joins along axis 0".into())),
//!         }
//!     }
//! }
//!
//! let a = TensorDesc::packed(DataType::Uint8, &[1, 2]);
//! let b = TensorDesc::packed(DataType::Uint8, &[3, 2]);
//! let op = OperatorDesc::Join(JoinDesc {
//!     input_tensors: vec![a, b],
//!     output_tensor: TensorDesc::packed(DataType::Uint8, &[4, 2]),
//!     axis: 0,
//! });
//! let compiled = PackedJoin.compile(&op).unwrap();
//! let mut buffer = vec![0u8; 8];
//! compiled
//!     .execute(&[&[1, 2], &[3, 4, 5, 6, 7, 8]], &mut [OutputBinding::whole(&mut buffer)])
//!     .unwrap();
//! assert_eq!(buffer, [1, 2, 3, 4, 5, 6, 7, 8]);
//! ```
//!
//! Then run the corpus on it from a test target of your crate (`dmlcts_harness::libtest_main`,
//! one libtest test per case) and fuzz it in process (`dmlcts_fuzz::run_campaign`). A complete
//! backend that passes the whole corpus, with both, is the workspace's `examples/rust-backend`
//! crate; the guide's "Testing your backend" chapter (docs/guide/backend-authors.md) has the
//! rest, and the protocol (docs/backend-protocol.md) the same contract for other languages.

mod backend;
mod copy_plan;
mod data_type;
mod desc;
mod feature_level;
mod ops;
mod profile;
mod random;
mod values;

pub use backend::{
    AdapterInfo, Backend, CompileError, CompiledOperator, Implementation, OutputBinding, Rejected,
    vendor_name,
};
pub use copy_plan::{OutputPieces, Piece, copy_plan, merge_dimensions};
pub use data_type::DataType;
pub use desc::{Coordinates, TensorDesc, calc_buffer_tensor_size};
pub use feature_level::FeatureLevel;
pub use ops::{JoinDesc, OperatorDesc, OperatorKind, Slice1Desc, SplitDesc};
pub use profile::ValidationProfile;
pub use random::{BitPatternRng, fill_random_bits};
pub use values::{
    ElementLiteral, encode_element, format_element, iota_element, parse_element_text, read_element,
    write_element,
};
