//! A run session: the one loop that runs cases on a backend, and the one per-case step every
//! entry point takes (`dmlcts conformance`, `matrix`, `cargo xtask crosscheck`, the libtest
//! trials, the fuzzer's checks, the tests).
//!
//! A [`Session`] is made from what a run needs (the backend or a device per level, the level
//! choice, the expectations file, the replay recipe) and runs cases one [`Session::step`] at a
//! time. The step owns everything decided per case: the device and level it runs at, the
//! verdict (`run_case`: the corpus check, the skips, validation and the bytes), the
//! expectations file's word on it, its result id, and what it counts as for the run's
//! skipped-everything check. [`Session::run`] runs a list of cases and tells a [`Reporter`]
//! what happens ([`Event`]): the terminal text, the JSON and JUnit files, a matrix column and
//! a progress line are reporters that listen; nothing here prints.
//!
//! The step takes `&self`: libtest-mimic runs trials on several threads, each calling it.
//!
//! A backend's author can run the corpus in process with a session and a reporter of their
//! own (here the oracle stands in for the backend, and `()` hears nothing):
//!
//! ```
//! use dmlcts_harness::{Corpus, Session, SessionOptions};
//! use dmlcts_oracle::OracleBackend;
//! use dmlcts_tensor::FeatureLevel;
//! use std::sync::Arc;
//!
//! let corpus = Corpus::embedded();
//! let doc_cases: Vec<_> = corpus.cases.into_iter().filter(|c| c.name.starts_with("doc.")).collect();
//! let backend = Arc::new(OracleBackend::new(FeatureLevel::L4_1));
//! let session = Session::new(backend, None, SessionOptions::default());
//! let report = session.run(&doc_cases, &corpus.errors, &mut ());
//! assert_eq!((report.summary.passed, report.summary.failed), (8, 0));
//! ```

use crate::corpus::data::TensorData;
use crate::corpus::{Case, LoadError};
use crate::expectations::{Expectations, UNEXPECTED_PASS};
use crate::report::coverage::{Coverage, Reach};
use crate::report::{RunInfo, Summary};
use crate::run::group::run_group;
use crate::run::{
    CaseResult, DeviceFactory, Devices, ReplayRecipe, ResultIds, RunOptions, SkipCheck, Status,
    case_id, level_skip_reason, load_error_results, replay_command, run_case,
    run_case_with_data_sets, skip_reason,
};
use dmlcts_tensor::{Backend, FeatureLevel, ValidationProfile};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

/// What a run needs besides its backend.
#[derive(Clone, Debug, Default)]
pub struct SessionOptions {
    /// `--feature-level`: every case runs at this level on one device. None: each case at
    /// its own level where the backend can act at several, else at the backend's only level.
    pub feature_level: Option<FeatureLevel>,
    /// `--strict-level`: hold the backend to the running level's tables everywhere.
    pub strict_level: bool,
    /// The expectations file: its expected failures for this backend are applied to each
    /// result as it finishes, its `not_enforced` rules added to the backend's profile.
    pub expectations: Option<Expectations>,
    /// Rules the backend does not enforce besides its profile and the expectations file's
    /// (a campaign's, from its own options).
    pub not_enforced: Vec<String>,
    /// How failures' replay commands name the run. None: `cargo xtask conformance` in this
    /// repository's checkout.
    pub replay: Option<ReplayRecipe>,
}

/// What one step counts as for the run's skipped-everything check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Counted {
    /// The backend ran the case (whatever the verdict).
    Ran,
    /// The backend could not run it: a type it does not claim, `unsupported`, too large to
    /// hold here. The reason is the result's.
    SkippedByBackend(String),
    /// Outside the level this run is at, or the backend is unavailable: the run's choice,
    /// not counted either way.
    NotCounted,
}

/// One step's results: the case's own first, then one per further data set while they pass
/// (see `run_case_with_data_sets`); and what the case counts as.
#[derive(Debug)]
pub struct Step {
    pub results: Vec<CaseResult>,
    pub counted: Counted,
    /// The status `run_case` gave the case's own result, before the expectations file's word.
    pub judged: Status,
}

/// What happens in a run, as a reporter hears it.
pub enum Event<'e> {
    /// Before the first case: the backend, its device, the level choice, the profile.
    RunStarted {
        info: &'e RunInfo,
        /// How the cases' levels are chosen, in words.
        levels: &'e str,
        profile: &'e ValidationProfile,
        /// The cases about to run (load errors apart).
        cases: usize,
    },
    /// A case file or case that did not load: a failed result.
    LoadError(&'e CaseResult),
    /// A case finished: its result with the expectations file applied, and the status it had
    /// been judged before that.
    CaseFinished {
        result: &'e CaseResult,
        judged: Status,
    },
    /// The run is over: every result, and the run's own checks.
    RunFinished(&'e RunReport),
}

/// Listens to a run. The command line's text, the report files, a matrix column and a
/// progress line are reporters; so is `()`, which hears nothing.
pub trait Reporter {
    fn event(&mut self, event: &Event<'_>);
}

impl Reporter for () {
    fn event(&mut self, _: &Event<'_>) {}
}

impl<R: Reporter + ?Sized> Reporter for &mut R {
    fn event(&mut self, event: &Event<'_>) {
        (**self).event(event);
    }
}

/// Two reporters, each hearing every event, the first first.
impl<A: Reporter, B: Reporter> Reporter for (A, B) {
    fn event(&mut self, event: &Event<'_>) {
        self.0.event(event);
        self.1.event(event);
    }
}

/// A finished run: what every report is made from.
#[derive(Debug)]
pub struct RunReport {
    pub info: RunInfo,
    /// The load errors' results, then the cases', in order, expectations applied; then the
    /// run's own failure when the backend skipped every case it could run.
    pub results: Vec<CaseResult>,
    /// The cases that ran (load errors apart).
    pub cases: usize,
    /// The expectations file's entries for this backend naming no case that ran.
    pub stale: Vec<String>,
    /// Why the run fails although no case did: an available backend skipped every case it
    /// could run (its result is the last of `results`).
    pub skipped_everything: Option<String>,
    pub summary: Summary,
}

/// The id of the result that fails a run in which an available backend skipped every case.
pub(crate) const SKIPPED_EVERYTHING_ID: &str = "skipped-everything";

/// Runs cases on one backend: see the module's documentation.
pub struct Session<'a> {
    devices: Mutex<Devices<'a>>,
    info: RunInfo,
    levels: String,
    profile: ValidationProfile,
    /// The expectations file's `not_enforced` rules for this backend, and the session's own.
    not_enforced: Vec<String>,
    expectations: Option<Expectations>,
    replay: Option<ReplayRecipe>,
    tally: Mutex<Tally>,
}

/// What the steps leave for the run as a whole.
#[derive(Default)]
struct Tally {
    ids: ResultIds,
    skips: SkipCheck,
    /// What the cases covered, by assertion (each case's own result).
    coverage: Coverage,
}

impl<'a> Session<'a> {
    /// A session on `backend`, or with `at_level` on a device per level (the backend itself
    /// at its own level): pinned at `options.feature_level`, a device at each case's own level
    /// where `at_level` can make one, or else the backend's only level.
    pub fn new(
        backend: Arc<dyn Backend + 'a>,
        at_level: Option<DeviceFactory<'a>>,
        options: SessionOptions,
    ) -> Session<'a> {
        let strict_level = options.strict_level;
        let strict = if strict_level { " (strict)" } else { "" };
        let (levels, devices) = match (options.feature_level, at_level) {
            (Some(level), _) => (
                format!("feature level {level}{strict}"),
                Devices::pinned(backend.clone(), level, strict_level),
            ),
            (None, Some(at_level)) => (
                "each case at its own feature level".to_string(),
                Devices::per_case(at_level, strict_level),
            ),
            (None, None) => {
                let only = backend.clone();
                (
                    format!(
                        "feature level {}{strict} (the only level it offers)",
                        backend.feature_level()
                    ),
                    Devices::per_case(Box::new(move |_| only.clone()), strict_level),
                )
            }
        };
        let mut info = RunInfo {
            backend: backend.name(),
            device: backend.device(),
            implementation: backend.implementation(),
            feature_level: match options.feature_level {
                Some(level) => level.to_string(),
                None if levels.starts_with("each") => "each case's own".to_string(),
                None => backend.feature_level().to_string(),
            },
            strict_level,
            ..RunInfo::default()
        };
        // The expectations file's `not_enforced` entries for this backend add to its profile.
        let mut not_enforced: Vec<String> = (options.expectations.iter())
            .flat_map(|e| &e.not_enforced)
            .filter(|n| n.applies(&info.subject()))
            .flat_map(|n| n.rules.iter().cloned())
            .collect();
        not_enforced.extend(options.not_enforced);
        let profile = backend.validation_profile().without(&not_enforced);
        info.validation_profile = profile.name();
        let profile_name = info.validation_profile.clone();
        Session {
            devices: Mutex::new(devices),
            info,
            levels,
            profile,
            not_enforced,
            expectations: options.expectations,
            replay: options.replay,
            tally: Mutex::new(Tally {
                coverage: Coverage::new(&profile_name),
                ..Tally::default()
            }),
        }
    }

    /// A session on devices a caller holds, one per level (a campaign's job): each case on
    /// the one at its level, or else the first, as `Devices` chooses for the corpus. None
    /// without a device.
    pub fn on_devices(
        devices: &'a [&'a dyn Backend],
        options: SessionOptions,
    ) -> Option<Session<'a>> {
        let first = *devices.first()?;
        let pick = move |level: FeatureLevel| -> Arc<dyn Backend + 'a> {
            let device = (devices.iter())
                .find(|d| d.feature_level() == level)
                .unwrap_or(&first);
            Arc::new(*device)
        };
        Some(Session::new(Arc::new(first), Some(Box::new(pick)), options))
    }

    /// The run so far: the backend, its device, the level choice, the profile (the suite is
    /// the caller's to fill in).
    pub fn info(&self) -> &RunInfo {
        &self.info
    }

    /// The run's description, for the caller to complete before `run` (the suite, the time
    /// its backend took to start).
    pub fn info_mut(&mut self) -> &mut RunInfo {
        &mut self.info
    }

    /// How the cases' levels are chosen, in words.
    pub fn levels(&self) -> &str {
        &self.levels
    }

    /// The validation profile the run holds the backend to.
    pub fn profile(&self) -> &ValidationProfile {
        &self.profile
    }

    /// The device `case` runs on and the options it runs with: the level choice.
    pub fn device_for(&self, case: &Case) -> (Arc<dyn Backend + 'a>, RunOptions) {
        let (device, mut options) = lock(&self.devices).for_case(case);
        options.replay = self.replay.clone();
        options.not_enforced = self.not_enforced.clone();
        (device, options)
    }

    /// Why `case` will be skipped, known before running it (libtest marks it ignored).
    pub(crate) fn skip_reason(&self, case: &Case) -> Option<String> {
        let (device, options) = self.device_for(case);
        skip_reason(device.as_ref(), case, &options)
    }

    /// The per-case step: the case on its device at its level, judged, the expectations
    /// file applied, its id made unique in the run, counted for the skipped-everything check.
    pub fn step(&self, case: &Case) -> CaseResult {
        self.step_with_data_sets(case, &[]).results.swap_remove(0)
    }

    /// The step on the case's own inputs and then on each data set in turn, all on one
    /// compile (a campaign's data sets).
    /// A sibling group is one step: its steps back to back, each on the device at its own
    /// level, one result (data sets do not apply to it).
    pub fn step_with_data_sets(&self, case: &Case, data_sets: &[Vec<TensorData>]) -> Step {
        if case.is_group() {
            return self.step_group(case);
        }
        let (device, options) = self.device_for(case);
        let results = run_case_with_data_sets(device.as_ref(), case, data_sets, &options);
        let judged = results[0].status;
        // A case judged passed or informational got past the runner's skips, the level's
        // among them: only a failure or a skip needs the level looked at again (the runner's
        // own corpus check fails a case before its skips are decided).
        let judged_past_the_skips = matches!(judged, Status::Passed | Status::Informational);
        let counted = if !judged_past_the_skips
            && (device.unavailable_reason().is_some()
                || level_skip_reason(device.as_ref(), case, &options).is_some())
        {
            Counted::NotCounted
        } else if judged == Status::Skipped {
            Counted::SkippedByBackend(results[0].reason.clone())
        } else {
            Counted::Ran
        };
        self.tally_step(case, &[(case, None)], results, counted, judged)
    }

    /// A sibling group's step: it counts as run when every step ran, as outside the run's
    /// levels when one is, else as skipped by the backend when one was.
    fn step_group(&self, case: &Case) -> Step {
        let mut counted = Counted::Ran;
        let mut levels = Vec::with_capacity(case.steps.len());
        let result = run_group(
            case,
            &mut |step| {
                let (device, options) = self.device_for(step);
                let result = run_case(device.as_ref(), step, &options);
                levels.push(result.run_level);
                if device.unavailable_reason().is_some()
                    || level_skip_reason(device.as_ref(), step, &options).is_some()
                {
                    counted = Counted::NotCounted;
                } else if result.status == Status::Skipped && counted == Counted::Ran {
                    counted = Counted::SkippedByBackend(result.reason.clone());
                }
                result
            },
            &|| {
                let (device, options) = self.device_for(case);
                replay_command(device.as_ref(), case, &options)
            },
        );
        let judged = result.status;
        let covered: Vec<(&Case, Option<FeatureLevel>)> = (case.steps.iter())
            .zip(levels.into_iter().chain(std::iter::repeat(None)))
            .collect();
        self.tally_step(case, &covered, vec![result], counted, judged)
    }

    /// The run's bookkeeping for one step's results: the skipped-everything check, unique
    /// ids, the expectations file, the coverage of what `covered` (the case, or a group's
    /// steps) checks.
    fn tally_step(
        &self,
        case: &Case,
        covered: &[(&Case, Option<FeatureLevel>)],
        mut results: Vec<CaseResult>,
        counted: Counted,
        judged: Status,
    ) -> Step {
        let mut tally = lock(&self.tally);
        match &counted {
            Counted::Ran => tally.skips.ran(),
            Counted::SkippedByBackend(reason) => tally.skips.skipped(reason),
            Counted::NotCounted => {}
        }
        for result in &mut results {
            result.id = tally.ids.unique(case_id(case));
            if let Some(expectations) = &self.expectations {
                expectations.apply_to(&self.info.subject(), result);
                if result.reason == UNEXPECTED_PASS && result.replay.is_none() {
                    // The run's own replay command, which names the expectations file.
                    result.replay =
                        (self.replay.as_ref()).map(|r| r.for_case(&case.name, &case.file));
                }
            }
        }
        let reach = match &counted {
            Counted::Ran => Reach::Ran,
            Counted::SkippedByBackend(_) => Reach::Unsupported,
            Counted::NotCounted => Reach::OutsideLevels,
        };
        // The case's worst outcome over its data sets: a failure on any of them is a failure
        // of what the case checks.
        let own = &results[0];
        let worst = [Status::Failed, Status::ExpectedFailure]
            .into_iter()
            .find(|worst| results.iter().any(|r| r.status == *worst))
            .unwrap_or(own.status);
        for (covered, level) in covered {
            tally
                .coverage
                .record(covered, worst, reach, level.or(own.run_level));
        }
        Step {
            results,
            counted,
            judged,
        }
    }

    /// Counts a case the caller will not run, known to be skipped (libtest's ignored trials).
    pub(crate) fn count_skip(&self, case: &Case, reason: &str) {
        let (device, options) = self.device_for(case);
        if device.unavailable_reason().is_none()
            && level_skip_reason(device.as_ref(), case, &options).is_none()
        {
            lock(&self.tally).skips.skipped(reason);
        }
    }

    /// What the steps so far covered, by assertion.
    pub fn coverage(&self) -> Coverage {
        lock(&self.tally).coverage.clone()
    }

    /// Why the run fails although no case did: an available backend skipped every case it
    /// could have run.
    pub fn skipped_everything(&self) -> Option<String> {
        lock(&self.tally).skips.failure(&self.info.backend)
    }

    /// Runs `cases` in order, the load errors' results first, and tells `reporter` as it
    /// goes; the start-up (making devices) and the cases' time are measured apart.
    pub fn run(
        mut self,
        cases: &[Case],
        load_errors: &[LoadError],
        reporter: &mut dyn Reporter,
    ) -> RunReport {
        reporter.event(&Event::RunStarted {
            info: &self.info,
            levels: &self.levels,
            profile: &self.profile,
            cases: cases.len(),
        });
        let mut results = load_error_results(load_errors);
        for result in &mut results {
            if let Some(expectations) = &self.expectations {
                expectations.apply_to(&self.info.subject(), result);
            }
            reporter.event(&Event::LoadError(result));
        }
        let started = Instant::now();
        for case in cases {
            let step = self.step_with_data_sets(case, &[]);
            let judged = step.judged;
            for result in step.results {
                reporter.event(&Event::CaseFinished {
                    result: &result,
                    judged,
                });
                results.push(result);
            }
        }
        let startup = lock(&self.devices).startup();
        self.info.startup += startup;
        self.info.cases_time = started.elapsed().saturating_sub(startup);
        let stale = match &self.expectations {
            Some(expectations) => expectations.stale(&self.info.subject(), &results),
            None => Vec::new(),
        };
        let skipped_everything = self.skipped_everything();
        self.info.coverage = Some(self.coverage());
        if let Some(failure) = &skipped_everything {
            results.push(CaseResult::run_failure(
                SKIPPED_EVERYTHING_ID,
                &format!("run: backend {} tested nothing", self.info.backend),
                "the backend skipped every case it could run",
                &format!("  {failure}\n"),
            ));
        }
        let report = RunReport {
            summary: Summary::of(&results),
            info: self.info,
            results,
            cases: cases.len(),
            stale,
            skipped_everything,
        };
        reporter.event(&Event::RunFinished(&report));
        report
    }
}

/// A lock whose holder panicked is still good here: the tallies are counts, the devices a map.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
