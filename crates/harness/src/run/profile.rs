//! Where a thread's time goes, by stage of a case (generation, input bytes, the oracle's
//! validation and execution, the backend, comparison, the invariants, bookkeeping), for `cargo
//! xtask bench --fuzz`'s campaign profile. Off unless a thread turns it on: the runner and the
//! campaign mark their stages with `stage`, which then costs one thread-local flag read.
//!
//! The time between two marks goes to the stage that was current: a stage lasts until the
//! guard `stage` returns is dropped, and time not inside any stage is bookkeeping. Each
//! thread keeps its own clock and totals (jobs share nothing); the caller takes them with
//! `finish_case` (per case) and `stop` (at the job's end) and merges them.

use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

/// The stages of a case, as the profile reports them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stage {
    /// Making the case: its recipe, value tree and descriptor (a fuzz campaign's; the corpus's
    /// cases are read, not made).
    Generation,
    /// Making the case's input bytes from its data (seeded random bits, or listed values).
    InputBytes,
    /// The oracle's validation: the case's expectation, the skips, the verdict at the level.
    OracleValidation,
    /// The oracle computing the expected outputs.
    OracleExecution,
    /// The backend compiling and executing the case.
    Backend,
    /// Guarded output buffers, the byte comparison, guard bands, inputs unchanged.
    Comparison,
    /// The invariants the fuzzer checks on valid cases (backend runs, derived descriptors).
    Invariants,
    /// Everything else: results, ids, tallies, coverage, counters, buckets.
    Bookkeeping,
}

impl Stage {
    pub const ALL: [Stage; 8] = [
        Stage::Generation,
        Stage::InputBytes,
        Stage::OracleValidation,
        Stage::OracleExecution,
        Stage::Backend,
        Stage::Comparison,
        Stage::Invariants,
        Stage::Bookkeeping,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Stage::Generation => "generation",
            Stage::InputBytes => "input bytes",
            Stage::OracleValidation => "oracle validation",
            Stage::OracleExecution => "oracle execution",
            Stage::Backend => "backend",
            Stage::Comparison => "comparison",
            Stage::Invariants => "invariants",
            Stage::Bookkeeping => "bookkeeping",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Time per stage.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StageTimes(pub [Duration; Stage::ALL.len()]);

impl StageTimes {
    pub fn of(&self, stage: Stage) -> Duration {
        self.0[stage.index()]
    }

    pub fn total(&self) -> Duration {
        self.0.iter().sum()
    }

    pub fn add(&mut self, other: &StageTimes) {
        for (mine, theirs) in self.0.iter_mut().zip(other.0) {
            *mine += theirs;
        }
    }
}

/// A thread's clock: the current stage, since when, and the time of the case so far.
struct Clock {
    current: Stage,
    since: Instant,
    case: StageTimes,
}

impl Clock {
    /// Charges the time since the last mark to the current stage, and makes `next` current.
    fn switch(&mut self, next: Stage) -> Stage {
        let now = Instant::now();
        self.case.0[self.current.index()] += now - self.since;
        self.since = now;
        std::mem::replace(&mut self.current, next)
    }
}

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
    static CLOCK: RefCell<Option<Clock>> = const { RefCell::new(None) };
}

/// Turns this thread's profile on, in bookkeeping.
pub fn start() {
    CLOCK.with(|clock| {
        *clock.borrow_mut() = Some(Clock {
            current: Stage::Bookkeeping,
            since: Instant::now(),
            case: StageTimes::default(),
        })
    });
    ON.with(|on| on.set(true));
}

/// Turns this thread's profile off.
pub fn stop() {
    ON.with(|on| on.set(false));
    CLOCK.with(|clock| *clock.borrow_mut() = None);
}

/// The time of the case since the last `finish_case` (or `start`), by stage; its totals start
/// again from zero. None when the profile is off.
pub fn finish_case() -> Option<StageTimes> {
    if !ON.with(Cell::get) {
        return None;
    }
    CLOCK.with(|clock| {
        let mut clock = clock.borrow_mut();
        let clock = clock.as_mut()?;
        let current = clock.current;
        clock.switch(current);
        Some(std::mem::take(&mut clock.case))
    })
}

/// Marks `stage` as current until the guard is dropped (then the stage before it is again).
#[must_use = "the stage lasts until the guard is dropped"]
pub fn stage(stage: Stage) -> StageGuard {
    if !ON.with(Cell::get) {
        return StageGuard { before: None };
    }
    let before = CLOCK.with(|clock| clock.borrow_mut().as_mut().map(|c| c.switch(stage)));
    StageGuard { before }
}

/// Ends a stage when dropped: see `stage`.
pub struct StageGuard {
    before: Option<Stage>,
}

impl Drop for StageGuard {
    fn drop(&mut self) {
        if let Some(before) = self.before {
            CLOCK.with(|clock| {
                if let Some(clock) = clock.borrow_mut().as_mut() {
                    clock.switch(before);
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_goes_to_the_innermost_stage_and_off_costs_nothing() {
        assert!(finish_case().is_none());
        {
            let _off = stage(Stage::Backend);
        }
        start();
        {
            let _backend = stage(Stage::Backend);
            std::thread::sleep(Duration::from_millis(2));
            let _comparison = stage(Stage::Comparison);
            std::thread::sleep(Duration::from_millis(2));
        }
        let times = finish_case().expect("on");
        assert!(times.of(Stage::Backend) >= Duration::from_millis(2));
        assert!(times.of(Stage::Comparison) >= Duration::from_millis(2));
        assert_eq!(times.of(Stage::Generation), Duration::ZERO);
        assert_eq!(
            finish_case().expect("on").of(Stage::Backend),
            Duration::ZERO
        );
        stop();
        assert!(finish_case().is_none());
    }
}
