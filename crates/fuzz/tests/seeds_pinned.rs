//! A seed's cases are fixed: the saved cases of a seed (and every replay command naming a seed
//! and a case index) must keep meaning the same cases, whatever the harness does to run them
//! faster. This pins the first cases of two seeds at the default mix, as a campaign of the CPU
//! backend at every level makes them: their descriptors, levels, expectations, names and input
//! bytes, in one digest per seed.
//!
//! A change to the generator that is meant to change the cases updates the constants below,
//! once, on purpose (and says so in its commit); anything else that moves them is a bug.

use dmlcts_fuzz::CampaignOptions;
use dmlcts_fuzz::cases::{Plan, case_strategy_at, case_tree, data_seeds};
use dmlcts_fuzz::strategies::siblings;
use dmlcts_harness::{Case, cases_to_yaml};
use dmlcts_tensor::FeatureLevel;
use std::collections::HashMap;

/// Cases pinned per seed: enough to pass through two large-tier cases (indices 375 and 1125)
/// and every level group many times.
const PINNED_CASES: u64 = 2000;

/// Inputs up to this many bytes are digested byte by byte; larger ones (the large tier's) by
/// their length and a sample of their bytes, which keeps the test quick.
const FULLY_DIGESTED_INPUT_BYTES: usize = 1 << 16;

/// FNV-1a, 64 bits: stable across Rust releases (`DefaultHasher` is not promised to be).
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// The digest of a seed's first `PINNED_CASES` cases: each case's canonical form (the corpus
/// format `cases_to_yaml` writes, which names its random inputs' seeds; a sibling group's
/// with every step), its materialized input bytes (every step's), and the seeds of its further
/// data sets.
fn digest_of_seed(seed: u64) -> u64 {
    let options = CampaignOptions::new("cpu", seed);
    let plan = Plan::new(&options, &FeatureLevel::ALL);
    let mut strategies = HashMap::new();
    let mut digest = Fnv::new();
    for index in 0..PINNED_CASES {
        let recipe = plan.recipe(index);
        let strategy = strategies
            .entry(recipe)
            .or_insert_with(|| case_strategy_at(options.op, options.mix, recipe));
        let case = case_tree(strategy, seed, index).current();
        // The sibling group a campaign builds around this case, where it builds one.
        let grouped = siblings::is_sibling_index(index) && recipe.large_element_size.is_none();
        let case = if grouped {
            siblings::sibling_group(&case, siblings::pick(seed, index)).unwrap_or(case)
        } else {
            case
        };
        digest.write(cases_to_yaml(std::slice::from_ref(&case)).as_bytes());
        let steps: Vec<&Case> = if case.steps.is_empty() {
            vec![&case]
        } else {
            case.steps.iter().collect()
        };
        for step in steps {
            digest_inputs(&mut digest, step);
        }
        for data_seed in data_seeds(&case, 8) {
            digest.write(&data_seed.to_le_bytes());
        }
    }
    digest.0
}

/// A case's materialized input bytes (or why they cannot be made).
fn digest_inputs(digest: &mut Fnv, case: &Case) {
    for ((_, desc), data) in case.op.inputs().iter().zip(&case.inputs) {
        // A near miss's input may be too large to hold: its reason is what is pinned then.
        let bytes = match data.materialize(desc) {
            Ok(bytes) => bytes,
            Err(reason) => {
                digest.write(reason.as_bytes());
                continue;
            }
        };
        digest.write(&(bytes.len() as u64).to_le_bytes());
        if bytes.len() <= FULLY_DIGESTED_INPUT_BYTES {
            digest.write(&bytes);
        } else {
            bytes.iter().step_by(4099).for_each(|b| digest.write(&[*b]));
        }
    }
}

#[test]
fn a_seeds_cases_do_not_change() {
    let digests = [(1, digest_of_seed(1)), (7, digest_of_seed(7))];
    assert_eq!(
        digests,
        [
            (1, 14_510_379_775_050_975_578),
            (7, 8_791_353_059_676_791_702)
        ],
        "the cases seeds 1 and 7 make changed (see this file's header)"
    );
}
