//! The vocabulary every dmlcts crate speaks: DirectML data types and feature levels,
//! buffer tensor descriptions (modelled on `DML_BUFFER_TENSOR_DESC`), tensors as raw
//! little-endian bytes, the three operator descriptors, and the `Backend` trait that
//! implementations under test provide.

mod backend;
mod copy_plan;
mod data_type;
mod desc;
mod feature_level;
mod ops;
mod profile;
mod random;
mod values;

pub use backend::{Backend, CompileError, CompiledOperator, OutputBinding, Rejected};
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
