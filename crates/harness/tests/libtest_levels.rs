//! The libtest entry for backends that act at every level: a device made for a case's level
//! must report that level, so a factory that ignores the level cannot pass the lower levels'
//! table cases at its own level; and a backend with an empty name fails the run.

use dmlcts_harness::{libtest_run, libtest_run_at_each_level};
use dmlcts_oracle::OracleBackend;
use dmlcts_tensor::{Backend, CompileError, CompiledOperator, FeatureLevel, OperatorDesc};
use libtest_mimic::Arguments;

/// The table case at 1_0 that the tables reject for FLOAT64 alone (a 4-dimensional Join): a
/// device at 4_1 accepts it.
const AT_1_0_REJECTED: &str = "levels.join.at_1_0.float64";

fn args(filter: &str) -> Arguments {
    Arguments::from_iter(["corpus", "--quiet", "--test-threads", "1", filter])
}

#[test]
fn a_factory_that_ignores_the_level_fails_at_each_level_and_passes_as_made() {
    let ignores_level =
        |_: FeatureLevel| -> Box<dyn Backend> { Box::new(OracleBackend::new(FeatureLevel::L4_1)) };
    assert_eq!(
        libtest_run_at_each_level(&args(AT_1_0_REJECTED), &ignores_level),
        Err("1 test(s) failed".to_string())
    );
    // Run as made, the device at 4_1 runs it at its own level, where accepting is allowed.
    assert_eq!(libtest_run(&args(AT_1_0_REJECTED), &ignores_level), Ok(()));
}

#[test]
fn a_factory_that_honours_the_level_passes_at_each_level() {
    let honours_level =
        |level: FeatureLevel| -> Box<dyn Backend> { Box::new(OracleBackend::new(level)) };
    for filter in [AT_1_0_REJECTED, "doc."] {
        assert_eq!(
            libtest_run_at_each_level(&args(filter), &honours_level),
            Ok(())
        );
    }
}

/// The oracle under an empty name.
struct Nameless(OracleBackend);

impl Backend for Nameless {
    fn name(&self) -> String {
        String::new()
    }
    fn feature_level(&self) -> FeatureLevel {
        self.0.feature_level()
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        self.0.compile(op)
    }
}

#[test]
fn a_backend_with_an_empty_name_fails_the_run() {
    let nameless =
        |level: FeatureLevel| -> Box<dyn Backend> { Box::new(Nameless(OracleBackend::new(level))) };
    let expected = Err(
        "the backend's name() is empty: reports, expectations files and findings name a backend by it"
            .to_string(),
    );
    assert_eq!(libtest_run(&args("doc."), &nameless), expected);
    assert_eq!(
        libtest_run_at_each_level(&args("doc."), &nameless),
        expected
    );
    // Filtered to nothing, there is nothing to name.
    assert_eq!(libtest_run(&args("no.such.case"), &nameless), Ok(()));
}
