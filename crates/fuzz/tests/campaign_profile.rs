//! A profiled campaign (`CampaignOptions::profile`, `cargo xtask bench --fuzz`'s table) puts
//! each stage's time in its own row: the value trees in `generation`, the input bytes in
//! `input bytes`, and so on, per tier. This is what tells a value tree's cost from a large
//! tensor's bytes.

use dmlcts_backend_cpu::CpuBackend;
use dmlcts_fuzz::profile::Tier;
use dmlcts_fuzz::{CampaignOptions, run_campaign_at_levels};
use dmlcts_harness::run::profile::Stage;
use dmlcts_tensor::{Backend, FeatureLevel};
use std::time::Duration;

#[test]
fn each_stage_of_a_profiled_campaign_is_timed_in_its_own_row() {
    let devices: Vec<CpuBackend> = (FeatureLevel::ALL.into_iter())
        .map(CpuBackend::at_level)
        .collect();
    let job: Vec<&dyn Backend> = devices.iter().map(|d| d as &dyn Backend).collect();
    let mut options = CampaignOptions::new("cpu", 7);
    // Through index 375, the first large-tier case (`cases::LARGE_TIER_EVERY`).
    options.cases = Some(400);
    options.profile = true;
    let outcome = run_campaign_at_levels(&[job], &options, |_| {});
    let profile = outcome.profile.expect("profiled");
    let (large, large_times) = profile.tier(Tier::Large);
    let (small, small_times) = profile.tier(Tier::Small);
    let (near, near_times) = profile.tier(Tier::NearMiss);
    assert_eq!((large, small + near), (1, 399));
    // The large case's megabytes of input bits are input bytes, not generation: its value
    // tree is as small as any other case's.
    assert!(
        large_times.of(Stage::InputBytes) > 4 * large_times.of(Stage::Generation),
        "{large_times:?}"
    );
    for times in [small_times, near_times] {
        assert!(times.of(Stage::Generation) > Duration::ZERO, "{times:?}");
    }
    assert!(small_times.of(Stage::InputBytes) > Duration::ZERO);
    assert!(small_times.of(Stage::OracleExecution) > Duration::ZERO);
    assert!(small_times.of(Stage::Backend) > Duration::ZERO);
}
