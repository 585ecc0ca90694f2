//! Which device runs a case, and how strictly: the session's level choice (every entry point
//! takes it through `Session::step`), so a case means the same everywhere.

use crate::corpus::Case;
use crate::run::RunOptions;
use dmlcts_tensor::{Backend, FeatureLevel};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Makes a device at a level: a backend that can act at several levels returns one at that
/// level; one that exists at one level only returns itself, at its own.
pub type DeviceFactory<'a> = Box<dyn Fn(FeatureLevel) -> Arc<dyn Backend + 'a> + Send + 'a>;

pub struct Devices<'a> {
    make: DeviceFactory<'a>,
    made: BTreeMap<FeatureLevel, Arc<dyn Backend + 'a>>,
    /// `--feature-level`: every case runs at this level.
    pinned: Option<FeatureLevel>,
    strict_level: bool,
    startup: Duration,
}

impl<'a> Devices<'a> {
    /// A device at each case's own level, made on first use. A device at the case's level is
    /// held strictly to it (it must reject what that level's tables do not list, so the table
    /// cases run); a device at another level runs the case at its own level, strictly only
    /// with `strict_level`.
    pub fn per_case(make: DeviceFactory<'a>, strict_level: bool) -> Devices<'a> {
        Devices {
            make,
            made: BTreeMap::new(),
            pinned: None,
            strict_level,
            startup: Duration::ZERO,
        }
    }

    /// One device, every case run at `level` (`--feature-level`).
    pub fn pinned(
        device: Arc<dyn Backend + 'a>,
        level: FeatureLevel,
        strict_level: bool,
    ) -> Devices<'a> {
        let mut devices = Devices::per_case(Box::new(move |_| device.clone()), strict_level);
        devices.pinned = Some(level);
        devices
    }

    /// The device for `case`, and the options to run it with.
    pub fn for_case(&mut self, case: &Case) -> (Arc<dyn Backend + 'a>, RunOptions) {
        let level = self.pinned.unwrap_or(case.feature_level);
        let device = match self.made.get(&level) {
            Some(device) => device.clone(),
            None => {
                let started = Instant::now();
                let device = (self.make)(level);
                self.startup += started.elapsed();
                self.made.insert(level, device.clone());
                device
            }
        };
        let options = RunOptions {
            feature_level: self.pinned,
            strict_level: self.strict_level
                || (self.pinned.is_none() && device.feature_level() == case.feature_level),
            ..RunOptions::default()
        };
        (device, options)
    }

    /// Time spent making devices: the backend's start-up, not the cases'.
    pub fn startup(&self) -> Duration {
        self.startup
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::Corpus;
    use dmlcts_oracle::OracleBackend;
    use std::sync::Mutex;

    fn case_at(level: FeatureLevel) -> Case {
        Corpus::embedded()
            .cases
            .into_iter()
            .find(|c| c.feature_level == level)
            .expect("a case at that level")
    }

    #[test]
    fn a_device_is_made_once_per_level_and_held_strictly_to_its_level() {
        let asked = Mutex::new(Vec::new());
        let mut devices = Devices::per_case(
            Box::new(|level| {
                asked.lock().unwrap().push(level);
                Arc::new(OracleBackend::new(level)) as Arc<dyn Backend>
            }),
            false,
        );
        for level in [FeatureLevel::L2_1, FeatureLevel::L1_0, FeatureLevel::L2_1] {
            let (device, options) = devices.for_case(&case_at(level));
            assert_eq!(device.feature_level(), level);
            assert_eq!(options.feature_level, None);
            assert!(options.strict_level);
        }
        drop(devices);
        assert_eq!(
            *asked.lock().unwrap(),
            [FeatureLevel::L2_1, FeatureLevel::L1_0]
        );
    }

    #[test]
    fn a_device_at_another_level_is_strict_only_when_asked() {
        let only: Arc<dyn Backend> = Arc::new(OracleBackend::new(FeatureLevel::L4_1));
        for strict in [false, true] {
            let only = only.clone();
            let mut devices = Devices::per_case(Box::new(move |_| only.clone()), strict);
            let (device, options) = devices.for_case(&case_at(FeatureLevel::L1_0));
            assert_eq!(device.feature_level(), FeatureLevel::L4_1);
            assert_eq!(options.strict_level, strict);
            let (_, options) = devices.for_case(&case_at(FeatureLevel::L4_1));
            assert!(options.strict_level);
        }
    }

    #[test]
    fn a_pinned_level_runs_every_case_there_with_the_strictness_asked() {
        let device: Arc<dyn Backend> = Arc::new(OracleBackend::new(FeatureLevel::L2_1));
        let mut devices = Devices::pinned(device, FeatureLevel::L2_1, false);
        for level in [FeatureLevel::L2_1, FeatureLevel::L4_1] {
            let (device, options) = devices.for_case(&case_at(level));
            assert_eq!(device.feature_level(), FeatureLevel::L2_1);
            assert_eq!(options.feature_level, Some(FeatureLevel::L2_1));
            assert!(!options.strict_level);
        }
    }
}
