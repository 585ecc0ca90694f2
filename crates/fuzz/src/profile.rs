//! A campaign's profile (`CampaignOptions::profile`): where its time went, by stage of a case
//! (`dmlcts_harness::run::profile`) and by tier (ordinary valid cases, the large tier, near
//! misses). Each job keeps its own and they are added together at its end.

use dmlcts_harness::run::profile::StageTimes;

/// The tiers a campaign's cases come in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tier {
    /// Valid cases within the size limits of ordinary cases.
    Small,
    /// The large tier: valid cases past 2^20 elements (`cases::LARGE_TIER_EVERY`).
    Large,
    /// Near misses: descriptors that break one rule.
    NearMiss,
}

impl Tier {
    pub const ALL: [Tier; 3] = [Tier::Small, Tier::Large, Tier::NearMiss];

    pub fn name(self) -> &'static str {
        match self {
            Tier::Small => "small",
            Tier::Large => "large",
            Tier::NearMiss => "near miss",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Cases and their time by stage, per tier.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CampaignProfile {
    tiers: [(u64, StageTimes); 3],
}

impl CampaignProfile {
    pub(crate) fn add_case(&mut self, tier: Tier, times: &StageTimes) {
        let (cases, total) = &mut self.tiers[tier.index()];
        *cases += 1;
        total.add(times);
    }

    pub(crate) fn merge(&mut self, other: &CampaignProfile) {
        for ((cases, times), (their_cases, their_times)) in self.tiers.iter_mut().zip(&other.tiers)
        {
            *cases += their_cases;
            times.add(their_times);
        }
    }

    /// The descriptors of a tier, and their time by stage.
    pub fn tier(&self, tier: Tier) -> (u64, StageTimes) {
        self.tiers[tier.index()]
    }

    /// Every tier together.
    pub fn all(&self) -> (u64, StageTimes) {
        let mut all = (0, StageTimes::default());
        for (cases, times) in &self.tiers {
            all.0 += cases;
            all.1.add(times);
        }
        all
    }
}
