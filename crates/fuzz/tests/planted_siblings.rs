//! Issue 39, item 1: sibling sequences, proved on planted cache-key bugs. The backend
//! (planted_siblings/backend.rs) reuses its last compile's plan or rejection when the next
//! compile's key equals the last one's, the key leaving out one field: a state bug that only
//! descriptors run back to back can meet. For each field kind, the embedded corpus catches it
//! through its sibling groups (and only there: the corpus without the sibling files passes),
//! and so does a 3,000-case campaign (seed 1, one job) through its sibling pairs.

#[path = "planted_siblings/backend.rs"]
mod backend;

use backend::{Bug, LastPlan};
use dmlcts_fuzz::cases::{Plan, case_strategy_at, case_tree};
use dmlcts_fuzz::strategies::siblings::{
    FIELD_KINDS, field_kind, is_sibling_index, pick, sibling_group,
};
use dmlcts_fuzz::{CampaignOptions, CampaignOutcome, CheckKind, run_campaign_at_levels};
use dmlcts_harness::session::{Session, SessionOptions};
use dmlcts_harness::{Case, Corpus, Status};
use dmlcts_tensor::{Backend, FeatureLevel};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// The names of the failed results of `cases`, run in order through one session on one
/// planted backend, each case at its own level (as `dmlcts conformance` runs a multi-level
/// backend: one process for the whole run).
fn failures(bug: Bug, cases: &[Case]) -> Vec<String> {
    let planted = LastPlan::new(bug);
    let first: Arc<dyn Backend> = Arc::new(planted.at(FeatureLevel::LATEST));
    let at_level = {
        let planted = planted.clone();
        Box::new(move |level| Arc::new(planted.at(level)) as Arc<dyn Backend>)
    };
    let session = Session::new(first, Some(at_level), SessionOptions::default());
    let report = session.run(cases, &[], &mut ());
    (report.results.into_iter())
        .filter(|r| r.status == Status::Failed)
        .map(|r| r.name)
        .collect()
}

/// The sibling groups each bug must fail (at least these; others may fail too).
fn groups_it_fails(bug: Bug) -> &'static [&'static str] {
    match bug {
        Bug::None => &[],
        Bug::InputStrides => &[
            "siblings.join.input_strides",
            "siblings.split.input_strides",
            "siblings.slice1.input_strides",
        ],
        Bug::OutputStrides => &[
            "siblings.join.output_strides",
            "siblings.split.output_strides",
            "siblings.slice1.output_strides",
        ],
        Bug::WindowOffsets => &["siblings.slice1.window_offsets"],
        Bug::WindowSizes => &["siblings.slice1.window_sizes"],
        Bug::WindowStrides => &["siblings.slice1.window_strides"],
        Bug::Sizes => &[
            "siblings.join.input_sizes",
            "siblings.join.output_sizes",
            "siblings.split.input_sizes",
            "siblings.split.output_sizes",
            "siblings.slice1.input_sizes",
            "siblings.slice1.output_sizes",
        ],
        Bug::Level => &[
            "siblings.join.feature_level",
            "siblings.split.feature_level",
            "siblings.slice1.feature_level",
        ],
        Bug::DataTypeBySize => &[
            "siblings.join.data_type_4_byte",
            "siblings.join.data_type_2_byte",
            "siblings.join.data_type_8_byte",
            "siblings.join.data_type_1_byte",
            "siblings.split.data_type_4_byte",
            "siblings.split.data_type_2_byte",
            "siblings.split.data_type_8_byte",
            "siblings.split.data_type_1_byte",
            "siblings.slice1.data_type_4_byte",
            "siblings.slice1.data_type_2_byte",
            "siblings.slice1.data_type_8_byte",
            "siblings.slice1.data_type_1_byte",
        ],
        Bug::TotalSize => &[
            "siblings.join.input_total_size",
            "siblings.join.output_total_size",
            "siblings.split.input_total_size",
            "siblings.split.output_total_size",
            "siblings.slice1.input_total_size",
            "siblings.slice1.output_total_size",
        ],
        Bug::Axis => &["siblings.join.axis", "siblings.split.axis"],
        Bug::TensorCount => &["siblings.join.input_count", "siblings.split.output_count"],
    }
}

#[test]
fn without_a_bug_the_last_plan_backend_passes_the_whole_corpus() {
    assert_eq!(
        failures(Bug::None, &Corpus::embedded().cases),
        Vec::<String>::new()
    );
}

/// Whether the corpus outside the sibling files may fail `name` for `bug`: adjacent cases
/// that happen to differ in its field alone (the doc example's reversed window after its
/// forward one; the buffer files' TotalTensorSizeInBytes at its minimum after one below
/// it). Every other bug passes everything outside the sibling groups.
fn fails_outside_the_groups(bug: Bug, name: &str) -> bool {
    match bug {
        Bug::WindowStrides => [
            "doc.slice1.example2_negative_strides",
            "edge.slice1.int8_short_rows_stride_minus_2",
        ]
        .contains(&name),
        Bug::TotalSize => {
            name.starts_with("buffers.")
                && name.contains(".total_size.")
                && name.ends_with(".at_minimum")
        }
        _ => false,
    }
}

/// The corpus fails the bug's sibling groups, and outside the sibling files only what
/// `failed_outside_the_groups` names (nothing, for all but the window strides).
fn assert_corpus_catches(bug: Bug) {
    let failed = failures(bug, &Corpus::embedded().cases);
    eprintln!("{bug:?}: {failed:?}");
    for group in groups_it_fails(bug) {
        assert!(failed.iter().any(|f| f == group), "{bug:?} passes {group}");
    }
    let unexplained: Vec<&String> = (failed.iter())
        .filter(|name| !name.starts_with("siblings.") && !fails_outside_the_groups(bug, name))
        .collect();
    assert_eq!(unexplained, Vec::<&String>::new(), "{bug:?}");
}

macro_rules! caught_by_the_corpus {
    ($($name:ident: $bug:expr;)*) => {$(
        #[test]
        fn $name() {
            assert_corpus_catches($bug);
        }
    )*};
}

caught_by_the_corpus! {
    the_corpus_catches_a_last_plan_key_without_input_strides: Bug::InputStrides;
    the_corpus_catches_a_last_plan_key_without_output_strides: Bug::OutputStrides;
    the_corpus_catches_a_last_plan_key_without_window_offsets: Bug::WindowOffsets;
    the_corpus_catches_a_last_plan_key_without_window_sizes: Bug::WindowSizes;
    the_corpus_catches_a_last_plan_key_without_window_strides: Bug::WindowStrides;
    the_corpus_catches_a_last_plan_key_without_sizes: Bug::Sizes;
    the_corpus_catches_a_last_plan_key_without_the_level: Bug::Level;
    the_corpus_catches_a_last_plan_key_by_element_size: Bug::DataTypeBySize;
    the_corpus_catches_a_last_plan_key_without_the_total_size: Bug::TotalSize;
    the_corpus_catches_a_last_plan_key_without_the_axis: Bug::Axis;
    the_corpus_catches_a_last_plan_key_without_the_tensor_count: Bug::TensorCount;
}

/// A 3,000-case campaign, seed 1, one job offering every level, as `dmlcts fuzz --cases 3000
/// --seed 1 --jobs 1` runs a multi-level backend.
fn campaign(bug: Bug) -> CampaignOutcome {
    campaign_with(bug, true)
}

fn campaign_with(bug: Bug, siblings: bool) -> CampaignOutcome {
    let planted = LastPlan::new(bug);
    let views: Vec<_> = FeatureLevel::ALL.iter().map(|&l| planted.at(l)).collect();
    let devices: Vec<&dyn Backend> = views.iter().map(|v| v as &dyn Backend).collect();
    let mut options = CampaignOptions::new("last-plan", 1);
    options.cases = Some(3000);
    options.shrink_time = Duration::from_secs(2);
    options.siblings = siblings;
    run_campaign_at_levels(&[devices], &options, |_| {})
}

#[test]
fn a_3000_case_campaign_makes_sibling_groups_of_every_field_kind_several_times() {
    let options = CampaignOptions::new("count", 1);
    let plan = Plan::new(&options, &FeatureLevel::ALL);
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    for index in (0..3000).filter(|&i| is_sibling_index(i)) {
        let recipe = plan.recipe(index);
        if recipe.large_element_size.is_some() {
            continue;
        }
        let strategy = case_strategy_at(options.op, options.mix, recipe);
        let a = case_tree(&strategy, options.seed, index).current();
        if let Some(group) = sibling_group(&a, pick(options.seed, index)) {
            *kinds
                .entry(field_kind(&group).unwrap().to_string())
                .or_default() += 1;
        }
    }
    eprintln!("{kinds:?}");
    for kind in FIELD_KINDS {
        assert!(
            kinds.get(kind).copied().unwrap_or(0) >= 3,
            "{kind}: {kinds:?}"
        );
    }
}

#[test]
fn without_a_bug_a_3000_case_campaign_finds_nothing_on_the_last_plan_backend() {
    let outcome = campaign(Bug::None);
    assert_eq!(outcome.cases_run, 3000);
    let found: Vec<&str> = outcome.buckets.iter().map(|b| b.id.as_str()).collect();
    assert_eq!(found, Vec::<&str>::new());
}

/// Whether the same campaign without sibling groups finds `bug`: Slice1's invariant compiles a
/// reversed copy right after the case (a sibling of sorts in its input strides), and two
/// consecutive generated cases rarely differ in one field.
fn found_without_groups(bug: Bug) -> bool {
    matches!(bug, Bug::InputStrides)
}

/// The campaign finds the bug, and without its sibling groups (`options.siblings = false`,
/// the same cases otherwise) finds nothing but where `found_without_groups`. A failing step
/// that fails the same way run alone right after is bucketed as a plain case; a last-plan
/// bug's does (its last plan is still the one it reused), so its buckets are mostly plain
/// ones; those that are a group's keep the group whole.
fn assert_campaign_catches(bug: Bug) {
    let without = campaign_with(bug, false);
    let found: Vec<&str> = without.new_buckets().map(|b| b.id.as_str()).collect();
    assert_eq!(
        !found.is_empty(),
        found_without_groups(bug),
        "{bug:?} without groups: {found:?}"
    );
    let outcome = campaign(bug);
    let new: Vec<&str> = outcome.new_buckets().map(|b| b.id.as_str()).collect();
    eprintln!("{bug:?}: {} cases run, new: {new:?}", outcome.cases_run);
    assert!(!new.is_empty(), "a 3,000-case campaign misses {bug:?}");
    for bucket in outcome
        .new_buckets()
        .filter(|b| b.id.starts_with("siblings."))
    {
        assert_eq!(bucket.case.steps.len(), 3, "{}: kept as a group", bucket.id);
    }
    let broken: Vec<&str> = (outcome.buckets.iter())
        .filter(|b| matches!(b.kind, CheckKind::Crash | CheckKind::GuardBand))
        .map(|b| b.id.as_str())
        .collect();
    assert_eq!(
        broken,
        Vec::<&str>::new(),
        "the planted backend itself is broken"
    );
}

macro_rules! caught_by_a_campaign {
    ($($name:ident: $bug:expr;)*) => {$(
        #[test]
        fn $name() {
            assert_campaign_catches($bug);
        }
    )*};
}

caught_by_a_campaign! {
    a_3000_case_campaign_catches_a_last_plan_key_without_input_strides: Bug::InputStrides;
    a_3000_case_campaign_catches_a_last_plan_key_without_output_strides: Bug::OutputStrides;
    a_3000_case_campaign_catches_a_last_plan_key_without_window_offsets: Bug::WindowOffsets;
    a_3000_case_campaign_catches_a_last_plan_key_without_window_sizes: Bug::WindowSizes;
    a_3000_case_campaign_catches_a_last_plan_key_without_window_strides: Bug::WindowStrides;
    a_3000_case_campaign_catches_a_last_plan_key_without_sizes: Bug::Sizes;
    a_3000_case_campaign_catches_a_last_plan_key_without_the_level: Bug::Level;
    a_3000_case_campaign_catches_a_last_plan_key_by_element_size: Bug::DataTypeBySize;
    a_3000_case_campaign_catches_a_last_plan_key_without_the_total_size: Bug::TotalSize;
    a_3000_case_campaign_catches_a_last_plan_key_without_the_axis: Bug::Axis;
    a_3000_case_campaign_catches_a_last_plan_key_without_the_tensor_count: Bug::TensorCount;
}
