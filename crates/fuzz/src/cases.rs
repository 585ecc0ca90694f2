//! Which cases a campaign runs, and how case `i` is made: from its own RNG, seeded from the
//! campaign seed and `i` alone, so a case is the same wherever (and in whichever job) it runs.

use crate::options::CampaignOptions;
use dmlcts_harness::Case;
use proptest::strategy::{BoxedStrategy, Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// The seed of case `index` of a campaign (splitmix64 of both).
pub fn case_seed(seed: u64, index: u64) -> u64 {
    fn mix(mut z: u64) -> u64 {
        z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    mix(seed ^ mix(index))
}

/// The value tree of case `index`: the same for a seed and index wherever it runs.
pub fn case_tree(
    strategy: &BoxedStrategy<Case>,
    seed: u64,
    index: u64,
) -> Box<dyn ValueTree<Value = Case>> {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&case_seed(seed, index).to_le_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    match strategy.new_tree(&mut runner) {
        Ok(tree) => Box::new(tree),
        // The strategies filter nothing, so this cannot happen; a case that says so fails.
        Err(reason) => Box::new(proptest::strategy::Just(crate::strategies::case_for(
            &format!("fuzz.unbuildable: {reason}"),
            dmlcts_tensor::OperatorDesc::Join(dmlcts_tensor::JoinDesc {
                input_tensors: Vec::new(),
                output_tensor: dmlcts_tensor::TensorDesc::packed(
                    dmlcts_tensor::DataType::Uint8,
                    &[1],
                ),
                axis: 0,
            }),
            0,
        ))),
    }
}

/// The case indices a campaign (or shard) runs, in order: for tests and tools.
pub fn case_indices(options: &CampaignOptions) -> impl Iterator<Item = u64> + '_ {
    (0u64..)
        .map(|k| options.shard.index + k * options.shard.count)
        .take_while(|&i| options.cases.is_none_or(|c| i < c))
}
