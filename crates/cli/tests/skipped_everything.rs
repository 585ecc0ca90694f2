//! A conformance run in which an available backend skipped every case it could have run
//! fails; a run filtered to nothing and an unavailable backend do not trip it (the libtest
//! side: crates/harness/tests/skipped_everything.rs).

use clap::Parser;
use dmlcts_cli::ConformanceArgs;
use dmlcts_cli::backends::Resolved;
use dmlcts_cli::conformance::conformance_with;
use dmlcts_oracle::OracleBackend;
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, DataType, FeatureLevel, OperatorDesc,
};
use std::sync::Arc;

/// The oracle, claiming no data type at all (or, with `unavailable`, not available).
struct ClaimsNothing {
    oracle: OracleBackend,
    unavailable: bool,
}

impl Backend for ClaimsNothing {
    fn name(&self) -> String {
        "claims-nothing".to_string()
    }
    fn feature_level(&self) -> FeatureLevel {
        FeatureLevel::L4_1
    }
    fn data_types(&self) -> Vec<DataType> {
        Vec::new()
    }
    fn unavailable_reason(&self) -> Option<String> {
        self.unavailable.then(|| "no adapter".to_string())
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        self.oracle.compile(op)
    }
}

#[derive(Parser)]
struct Words {
    #[command(flatten)]
    args: ConformanceArgs,
}

fn conformance(words: &[&str], unavailable: bool) -> i32 {
    let args = Words::parse_from(std::iter::once("conformance").chain(words.iter().copied())).args;
    conformance_with(&args, "dmlcts", &|_| {
        Ok(Resolved::single(Arc::new(ClaimsNothing {
            oracle: OracleBackend::new(FeatureLevel::L4_1),
            unavailable,
        })))
    })
}

#[test]
fn a_conformance_run_where_the_backend_skips_everything_fails() {
    assert_eq!(conformance(&["--filter", "doc."], false), 1);
    assert_eq!(conformance(&["--filter", "no.such.case"], false), 0);
    assert_eq!(conformance(&["--filter", "doc."], true), 0);
}
