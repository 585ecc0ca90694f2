//! The case corpus: one case (`case`), the YAML format (`format`, documented in
//! cases/README.md) and the cheap pass before the parser (`scan`), tensor data and seeded
//! inputs (`data`), loading from files, folders or the copy embedded in this crate (`load`),
//! writing cases back out (`write`), the generated parts of the corpus (`generate`), and the
//! digest that names a loaded corpus (`digest`); what each case checks (`assertions`, derived
//! from its descriptor). `read` reads any file a user hands in (case,
//! expectations and backends files): regular files only, size-bounded, YAML within a node
//! budget, messages bounded.

pub mod assertions;
mod case;
pub mod data;
pub mod digest;
mod format;
pub mod generate;
mod load;
pub mod read;
mod scan;
mod write;

pub use case::{Case, Expectation, LoadError};
pub use format::LOAD_ERROR_PREFIX;
pub use load::{Corpus, MAX_FOLDER_DEPTH};
pub use write::{cases_to_yaml, descriptor_flow};
