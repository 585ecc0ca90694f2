//! The schedule of a measurement: the settling read before each timed batch, the rounds that
//! interleave every method, and the figures taken from them (medians with [min-max], per-round
//! ratios, the best copy of each round).

use super::references::Reference;
use std::time::{Duration, Instant};

/// Bytes read before each timed batch: more than this machine's caches can keep of the
/// previous method's writes (lscpu here: 4 MiB of L2 per core, a shared L3 that reports
/// 480 MiB but is shared with other guests), so every method starts from the same state.
const SETTLE_BYTES: usize = 512 << 20;

/// Reads a large buffer of its own, so that the dirty cache lines a method leaves behind are
/// written back before the next method's clock starts, not during it. Without it each method
/// paid for its predecessor's writes: in a rotation of a fixed list the predecessor is always
/// the same method (the backend always ran after ndarray's cached stores, the two-thread
/// non-temporal copy after the one-thread one, which leaves nothing dirty).
pub(super) struct Settle {
    buffer: Vec<u64>,
}

impl Settle {
    pub(super) fn new() -> Settle {
        let mut buffer = vec![0u64; SETTLE_BYTES / 8];
        // Distinct values: pages of one repeated value may be merged by a hypervisor.
        for (i, word) in buffer.iter_mut().enumerate() {
            *word = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
        Settle { buffer }
    }

    pub(super) fn run(&self) {
        let sum = self.buffer.iter().fold(0u64, |a, &w| a.wrapping_add(w));
        std::hint::black_box(sum);
    }
}

/// How a method's calls are timed in a round.
#[derive(Clone, Copy)]
pub(super) enum Batch {
    /// This many calls in a row, timed together after one settling read (small sizes: the
    /// caches are meant to be warm after the first call).
    Calls(usize),
    /// For each method, enough calls to last about this long in all (timed on a warm-up
    /// call; at most `MAX_CALLS`), each after its own settling read, and interleaved with the
    /// other methods' calls: pass p of a round runs call p of every method that makes that
    /// many. One 4 ms call on a shared VM is at the mercy of a descheduled thread or a
    /// neighbour's burst; interleaving spreads such moments over every method alike.
    Interleaved(Duration),
}

const MAX_CALLS: usize = 8;

/// Every method once (warm-up: first touch of every page), then `runs` rounds of every
/// method's calls (`batch`), each after `settle`. Round r starts with method r (mod the
/// count), so no method is always first in a round. Seconds per call, per method, per round.
pub(super) fn rounds(
    methods: &mut [&mut dyn FnMut()],
    runs: usize,
    batch: Batch,
    settle: &Settle,
) -> Vec<Vec<f64>> {
    for method in methods.iter_mut() {
        method();
    }
    let count = methods.len();
    let mut times = vec![Vec::with_capacity(runs); count];
    let time = |method: &mut dyn FnMut(), calls: usize| {
        let start = Instant::now();
        for _ in 0..calls {
            method();
        }
        start.elapsed().as_secs_f64()
    };
    match batch {
        Batch::Calls(calls) => {
            for round in 0..runs {
                for j in 0..count {
                    let k = (round + j) % count;
                    settle.run();
                    times[k].push(time(&mut *methods[k], calls) / calls as f64);
                }
            }
        }
        Batch::Interleaved(wanted) => {
            let calls: Vec<usize> = methods
                .iter_mut()
                .map(|method| {
                    let once = time(&mut **method, 1).max(1e-9);
                    ((wanted.as_secs_f64() / once).ceil() as usize).clamp(1, MAX_CALLS)
                })
                .collect();
            let passes = calls.iter().copied().max().unwrap_or(1);
            for round in 0..runs {
                let mut spent = vec![0.0; count];
                for pass in 0..passes {
                    for j in 0..count {
                        let k = (round + j) % count;
                        if pass < calls[k] {
                            settle.run();
                            spent[k] += time(&mut *methods[k], 1);
                        }
                    }
                }
                for k in 0..count {
                    times[k].push(spent[k] / calls[k] as f64);
                }
            }
        }
    }
    times
}

/// The calls of the 64 MiB workloads: about 12 ms of each method a round (three of the
/// backend's), interleaved.
pub(super) const LARGE_BATCH: Batch = Batch::Interleaved(Duration::from_millis(12));

/// Per round, the fastest of the reference methods' times.
pub(super) fn best_per_round(times: &[Vec<f64>]) -> Vec<f64> {
    (0..times[0].len())
        .map(|r| times.iter().map(|t| t[r]).fold(f64::INFINITY, f64::min))
        .collect()
}

/// The reference that was fastest in the most rounds.
pub(super) fn usual_best(references: &[Reference], times: &[Vec<f64>]) -> &'static str {
    let mut wins = vec![0usize; references.len()];
    let fastest_in = |r: usize| {
        (0..references.len())
            .min_by(|&a, &b| times[a][r].total_cmp(&times[b][r]))
            .unwrap_or(0)
    };
    for fastest in (0..times[0].len()).map(fastest_in) {
        wins[fastest] += 1;
    }
    let most = (0..references.len()).max_by_key(|&k| wins[k]).unwrap_or(0);
    references[most].name()
}

/// Median [min-max] of the per-round ratios `reference / ours` (times), i.e. our speed over
/// the reference's.
pub(super) fn ratios(reference: &[f64], ours: &[f64]) -> (f64, f64, f64) {
    spread(reference.iter().zip(ours).map(|(r, o)| r / o).collect())
}

pub(super) fn rate(bytes: usize, seconds: &[f64]) -> (f64, f64, f64) {
    let (median, fastest, slowest) = spread(seconds.to_vec());
    (
        bytes as f64 / median / 1e9,
        bytes as f64 / slowest / 1e9,
        bytes as f64 / fastest / 1e9,
    )
}

/// Median, minimum and maximum.
pub(super) fn spread(mut values: Vec<f64>) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    (
        values[values.len() / 2],
        values[0],
        values[values.len() - 1],
    )
}

pub(super) fn gbps(bytes: usize, time: Duration) -> f64 {
    bytes as f64 / time.as_secs_f64() / 1e9
}
