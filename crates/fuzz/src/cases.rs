//! Which cases a campaign runs, and how case `i` is made: its recipe (the level it is judged
//! at, and whether it is in the large tier) and its value tree both come from the campaign
//! seed and `i` alone, so a case is the same wherever (and in whichever job or shard) it runs.
//!
//! Levels: the offered levels are grouped by the tables that hold at them (levels where every
//! operator's tables are the same are one group), a group is picked from the seed, then a level
//! in it; so each table row gets its share of cases however many levels share it. Large tier:
//! every `LARGE_TIER_EVERY` indices, the middle one is a valid case past 2^20 elements, its
//! element size cycling 1, 2, 4, 8 bytes (at a level whose tables list such a type).

use crate::check::Mix;
use crate::options::CampaignOptions;
use crate::strategies::{
    Tables, case_for, kinds_at, near_miss_case, near_miss_case_at, valid_case, valid_case_at,
};
use dmlcts_harness::Case;
use dmlcts_harness::corpus::data::TensorData;
use dmlcts_tensor::{FeatureLevel, OperatorDesc, OperatorKind};
use proptest::prelude::*;
use proptest::strategy::{BoxedStrategy, Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// One case in this many (the middle one of each run) is in the large tier: 4 in 3,000 cases,
/// one of each element size.
pub const LARGE_TIER_EVERY: u64 = 750;
/// The large tier's element sizes, in the order the scheduled cases cycle through them.
pub const LARGE_TIER_ELEMENT_SIZES: [usize; 4] = [1, 2, 4, 8];

/// The seed of case `index` of a campaign (splitmix64 of both).
pub fn case_seed(seed: u64, index: u64) -> u64 {
    mix(seed ^ mix(index))
}

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// What case `index` is drawn from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Recipe {
    /// The level it is generated for and judged at.
    pub level: FeatureLevel,
    /// The large tier, with tensors of this many bytes per element.
    pub large_element_size: Option<usize>,
}

/// The offered levels, grouped by the tables that hold at them, in order.
pub fn level_groups(levels: &[FeatureLevel]) -> Vec<Vec<FeatureLevel>> {
    let tables = |level| -> Vec<(bool, Vec<usize>, Vec<dmlcts_tensor::DataType>)> {
        OperatorKind::ALL
            .into_iter()
            .map(|kind| {
                let t = Tables::of(kind, level);
                (t.available, t.dims.collect(), t.data_types)
            })
            .collect()
    };
    let mut sorted = levels.to_vec();
    sorted.sort();
    sorted.dedup();
    let mut groups: Vec<Vec<FeatureLevel>> = Vec::new();
    for level in sorted {
        match groups.last_mut() {
            Some(group) if tables(group[0]) == tables(level) => group.push(level),
            _ => groups.push(vec![level]),
        }
    }
    groups
}

/// How a campaign picks each case's recipe from the levels it runs at: the level groups to
/// pick from for an ordinary case and for a large one of each element size, worked out once.
#[derive(Clone, Debug)]
pub struct Plan {
    seed: u64,
    mix: Mix,
    ordinary: Vec<Vec<FeatureLevel>>,
    /// Per `LARGE_TIER_ELEMENT_SIZES` entry: the size used and the groups that list it.
    large: [Option<(usize, Vec<Vec<FeatureLevel>>)>; 4],
}

impl Plan {
    pub fn new(options: &CampaignOptions, levels: &[FeatureLevel]) -> Plan {
        let op = options.op;
        let valid_at = |level: FeatureLevel| !kinds_at(op, level).is_empty();
        let sized_at = |level: FeatureLevel, size: usize| {
            kinds_at(op, level)
                .into_iter()
                .any(|k| !Tables::of(k, level).data_types_of_size(size).is_empty())
        };
        let among = |keep: &dyn Fn(FeatureLevel) -> bool| {
            let kept: Vec<FeatureLevel> = levels.iter().copied().filter(|&l| keep(l)).collect();
            level_groups(if kept.is_empty() { levels } else { &kept })
        };
        // A valid-only campaign picks among levels with a valid case.
        let ordinary = match options.mix {
            Mix::ValidOnly => among(&valid_at),
            _ => level_groups(levels),
        };
        // A large case takes a level that lists its element size (or, where none does, the
        // first size one lists).
        let large = LARGE_TIER_ELEMENT_SIZES.map(|size| {
            let size = std::iter::once(size)
                .chain(LARGE_TIER_ELEMENT_SIZES)
                .find(|&s| levels.iter().any(|&l| sized_at(l, s)))?;
            Some((size, among(&|l| sized_at(l, size))))
        });
        Plan {
            seed: options.seed,
            mix: options.mix,
            ordinary,
            large,
        }
    }

    /// The recipe of case `index`: its level from the seed, and the large tier by schedule.
    pub fn recipe(&self, index: u64) -> Recipe {
        let h = case_seed(self.seed ^ 0x6c65_7665_6c73, index);
        let scheduled =
            self.mix != Mix::InvalidOnly && index % LARGE_TIER_EVERY == LARGE_TIER_EVERY / 2;
        let large = scheduled
            .then(|| self.large[(index / LARGE_TIER_EVERY) as usize % 4].as_ref())
            .flatten();
        let groups = large.map_or(&self.ordinary, |(_, groups)| groups);
        let level = match groups.len() {
            0 => FeatureLevel::L4_1,
            n => {
                let group = &groups[(h % n as u64) as usize];
                group[((h >> 32) % group.len() as u64) as usize]
            }
        };
        Recipe {
            level,
            large_element_size: large.map(|(size, _)| *size),
        }
    }
}

/// The recipe of case `index` (`Plan::recipe`, for one case).
pub fn recipe(options: &CampaignOptions, levels: &[FeatureLevel], index: u64) -> Recipe {
    Plan::new(options, levels).recipe(index)
}

/// The cases of a recipe: valid ones and near misses in the campaign's mix (valid only, in the
/// large tier), judged at its level. Where no operator asked for exists at that level, near
/// misses only (of `operator.introduced_at_level`).
pub fn case_strategy_at(op: Option<OperatorKind>, mix: Mix, recipe: Recipe) -> BoxedStrategy<Case> {
    let valid = valid_case_at(op, recipe.level, recipe.large_element_size);
    let near = || near_miss_case_at(op, recipe.level);
    match (mix, valid) {
        (_, Some(valid)) if recipe.large_element_size.is_some() => valid,
        (Mix::ValidOnly, Some(valid)) => valid,
        (Mix::Both, Some(valid)) => prop_oneof![7 => valid, 3 => near()].boxed(),
        _ => near(),
    }
}

/// The cases of a campaign that runs at one backend's own level, without levels: valid cases
/// and near misses within the 4_1 tables, each at the lowest level where the oracle agrees.
pub fn case_strategy(op: Option<OperatorKind>, mix: Mix) -> BoxedStrategy<Case> {
    match mix {
        Mix::ValidOnly => valid_case(op).boxed(),
        Mix::InvalidOnly => near_miss_case(op).boxed(),
        Mix::Both => prop_oneof![7 => valid_case(op), 3 => near_miss_case(op)].boxed(),
    }
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
        Err(reason) => Box::new(proptest::strategy::Just(case_for(
            &format!("fuzz.unbuildable: {reason}"),
            OperatorDesc::Join(dmlcts_tensor::JoinDesc {
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

/// The seeds of a case's other data sets (`count - 1` of them; its own inputs are the first):
/// from the seed of its own random inputs, so they are as deterministic as the case.
pub fn data_seeds(case: &Case, count: usize) -> Vec<u64> {
    let own = match case.inputs.first() {
        Some(TensorData::Random { seed }) => *seed,
        _ => 0,
    };
    (1..count as u64).map(|k| case_seed(own, k)).collect()
}

/// The case indices a campaign (or shard) runs, in order: for tests and tools.
pub fn case_indices(options: &CampaignOptions) -> impl Iterator<Item = u64> + '_ {
    (0u64..)
        .map(|k| options.shard.index + k * options.shard.count)
        .take_while(|&i| options.cases.is_none_or(|c| i < c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_group_by_the_tables_that_hold_at_them() {
        let groups = level_groups(&FeatureLevel::ALL);
        let firsts: Vec<String> = groups.iter().map(|g| g[0].to_string()).collect();
        assert_eq!(firsts, ["1_0", "2_1", "3_0", "4_1"]);
        assert_eq!(groups[0], [FeatureLevel::L1_0, FeatureLevel::L2_0]);
    }

    #[test]
    fn every_element_size_reaches_the_large_tier_within_four_runs_of_the_schedule() {
        let plan = Plan::new(&CampaignOptions::new("t", 1), &FeatureLevel::ALL);
        let sizes: Vec<Option<usize>> = (0..3000)
            .map(|i| plan.recipe(i))
            .filter_map(|r| r.large_element_size.map(|s| (s, r.level)))
            .map(|(s, level)| {
                assert!(level >= FeatureLevel::L2_1 || s != 1);
                assert!(level >= FeatureLevel::L4_1 || s != 8);
                Some(s)
            })
            .collect();
        assert_eq!(sizes, [Some(1), Some(2), Some(4), Some(8)]);
    }
}
