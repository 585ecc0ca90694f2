//! The CPU backend against the oracle on random descriptors: every data type, 1 to 8
//! dimensions, padded, permuted, broadcast and holey layouts, negative window strides.
//! The runner compares every addressed byte, the guard bands and the inputs.

use dmlcts_backend_cpu::CpuBackend;
use dmlcts_fuzz::strategies::{near_miss_case, valid_case};
use dmlcts_harness::{RunOptions, Status, run_case};
use proptest::prelude::*;

proptest! {
    #[test]
    fn cpu_backend_equals_the_oracle_byte_for_byte_on_valid_descriptors(case in valid_case(None)) {
        let result = run_case(&CpuBackend::new(), &case, &RunOptions::default());
        prop_assert_eq!(result.status, Status::Passed, "{}", result.failure_report());
    }

    #[test]
    fn cpu_backend_split_across_threads_equals_the_oracle(case in valid_case(None), threads in 2usize..5) {
        let backend = CpuBackend::new().with_threads(threads).with_parallel_threshold(0);
        let result = run_case(&backend, &case, &RunOptions::default());
        prop_assert_eq!(result.status, Status::Passed, "{}", result.failure_report());
    }

    #[test]
    fn cpu_backend_accepts_and_rejects_what_the_oracle_does(case in near_miss_case(None)) {
        let result = run_case(&CpuBackend::new(), &case, &RunOptions::default());
        prop_assert_ne!(result.status, Status::Failed, "{}", result.failure_report());
    }
}
