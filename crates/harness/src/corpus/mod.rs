//! The case corpus: one case (`case`), the YAML format (`format`, documented in
//! cases/README.md) and the cheap pass before the parser (`scan`), tensor data and seeded
//! inputs (`data`), loading from files, folders or the copy embedded in this crate (`load`),
//! writing cases back out (`write`), the generated parts of the corpus (`generate`), and the
//! digest that names a loaded corpus (`digest`).

mod case;
pub mod data;
pub mod digest;
mod format;
pub mod generate;
mod load;
mod scan;
mod write;

pub use case::{Case, Expectation, LoadError};
pub use load::Corpus;
pub use write::{cases_to_yaml, descriptor_flow};
