//! `cargo xtask bench --fuzz`'s campaign profile: the campaign (CPU backend at every
//! level, 20,000 cases, seed 7, one job, the default mix) with the campaign's profile on, once
//! per round; where the processor time of a case goes, by stage and by tier, as µs per case
//! and as a share of the tier's time. The stages are timed inside the job's thread (so they
//! count only its turns on a shared machine, less the moments it is preempted mid-stage); the
//! process's own processor time for the campaign is printed beside them.

use super::report::range_json;
use super::rounds::spread;
use dmlcts_backend_cpu::CpuBackend;
use dmlcts_fuzz::profile::{CampaignProfile, Tier};
use dmlcts_fuzz::{CampaignOptions, run_campaign_at_levels};
use dmlcts_harness::run::profile::{Stage, StageTimes};
use dmlcts_tensor::{Backend, FeatureLevel};

/// The measurement: `cargo xtask fuzz --backend cpu --cases 20000 --seed 7`.
const PROFILE_CASES: u64 = 20_000;
const PROFILE_SEED: u64 = 7;

/// One profiled campaign: its profile, its cases per second and the processor time it took.
fn profiled_campaign() -> (CampaignProfile, f64, Option<f64>) {
    let devices: Vec<CpuBackend> = FeatureLevel::ALL
        .into_iter()
        .map(CpuBackend::at_level)
        .collect();
    let job: Vec<&dyn Backend> = devices.iter().map(|d| d as &dyn Backend).collect();
    let mut options = CampaignOptions::new("cpu", PROFILE_SEED);
    options.cases = Some(PROFILE_CASES);
    options.profile = true;
    let before = processor_seconds();
    let outcome = run_campaign_at_levels(&[job], &options, |_| {});
    let used = processor_seconds()
        .zip(before)
        .map(|(after, before)| after - before);
    let profile = outcome.profile.clone().unwrap_or_default();
    (profile, outcome.rate(), used)
}

fn micros_per_case(times: &StageTimes, stage: Option<Stage>, cases: u64) -> f64 {
    let time = stage.map_or(times.total(), |s| times.of(s));
    time.as_secs_f64() * 1e6 / cases.max(1) as f64
}

/// The profile table: a row per stage (and the total), per tier µs per case and share.
pub(super) fn bench_profile(runs: usize) -> serde_json::Value {
    println!(
        "\ncampaign profile: {PROFILE_CASES} cases, seed {PROFILE_SEED}, CPU backend at every \
         level, 1 job, default mix; {runs} round(s), the median round by total time"
    );
    let mut rounds: Vec<(CampaignProfile, f64, Option<f64>)> =
        (0..runs).map(|_| profiled_campaign()).collect();
    let rates = spread(rounds.iter().map(|r| r.1).collect());
    let processor: Vec<f64> = rounds.iter().filter_map(|r| r.2).collect();
    rounds.sort_by_key(|round| round.0.all().1.total());
    let (profile, _, _) = &rounds[rounds.len() / 2];
    let columns: Vec<(&str, (u64, StageTimes))> = Tier::ALL
        .into_iter()
        .map(|tier| (tier.name(), profile.tier(tier)))
        .chain([("all", profile.all())])
        .collect();
    print!("{:20}", "µs per case (share)");
    for (name, (cases, _)) in &columns {
        print!(" {:>24}", format!("{name} ({cases} cases)"));
    }
    println!();
    let stages: Vec<Option<Stage>> = Stage::ALL.into_iter().map(Some).chain([None]).collect();
    let mut json_stages = Vec::new();
    for stage in stages {
        print!("{:20}", stage.map_or("total", Stage::name));
        let mut json_tiers = serde_json::Map::new();
        for (name, (cases, times)) in &columns {
            let micros = micros_per_case(times, stage, *cases);
            let share = micros / micros_per_case(times, None, *cases).max(1e-12);
            print!(" {:>24}", format!("{micros:.1} ({:.0}%)", share * 100.0));
            json_tiers.insert(
                name.to_string(),
                serde_json::json!({"micros_per_case": micros, "share": share}),
            );
        }
        println!();
        json_stages.push(serde_json::json!({
            "stage": stage.map_or("total", Stage::name),
            "tiers": json_tiers,
        }));
    }
    let total_micros = micros_per_case(&profile.all().1, None, profile.all().0);
    let processor_micros = (!processor.is_empty()).then(|| {
        let (median, min, max) = spread(processor);
        let per_case = |s: f64| s * 1e6 / PROFILE_CASES as f64;
        (per_case(median), per_case(min), per_case(max))
    });
    println!(
        "cases/s (profiled) {:.0} [{:.0}-{:.0}]; the process's processor time per case {}; \
         the stages' total {total_micros:.1} µs",
        rates.0,
        rates.1,
        rates.2,
        processor_micros.map_or("-".to_string(), |p| format!(
            "{:.1} [{:.1}-{:.1}] µs",
            p.0, p.1, p.2
        )),
    );
    let tier_cases: serde_json::Map<String, serde_json::Value> = columns
        .iter()
        .map(|(name, (cases, _))| (name.to_string(), serde_json::json!(cases)))
        .collect();
    serde_json::json!({
        "cases": PROFILE_CASES,
        "seed": PROFILE_SEED,
        "rounds": runs,
        "cases_per_tier": tier_cases,
        "stages": json_stages,
        "cases_per_second": range_json(rates),
        "processor_micros_per_case": processor_micros.map(range_json),
    })
}

/// The processor time this process has used, in seconds (user and system, every thread), from
/// /proc/self/stat; None where there is no such file.
pub(super) fn processor_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}
