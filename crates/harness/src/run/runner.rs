//! The one path every case takes, whatever the entry point (libtest, `cargo xtask
//! conformance`, the fuzzer, a backend author's own tests):
//!
//! 1. the case's stored expectation is checked against the oracle at the case's level;
//! 2. skips: backend unavailable, data type not claimed, level above the claimed one;
//! 3. the backend must agree with the oracle on accept/reject at the running level, under its
//!    validation profile: a must-reject case it accepts where every broken rule is one it
//!    does not enforce is informational;
//! 4. accepted: the backend executes into guarded, sentinel-filled outputs; every addressed
//!    output byte must equal the oracle's, guard bands must be untouched, inputs unchanged.

use crate::corpus::data::{TensorData, logical_elements, too_large};
use crate::corpus::{Case, Expectation};
use crate::run::compare::{GUARD_BYTES, check_guard_bands, compare_output, guarded_buffer};
use dmlcts_oracle::{OracleOutput, execute, validate, validate_enforced};
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, FeatureLevel, OutputBinding, Rejected,
};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// The level to run at; the backend's claimed level when None.
    pub feature_level: Option<FeatureLevel>,
    /// Require rejection of what the tables do not support at the running level. Without
    /// it, a backend may accept such a descriptor, but must then execute it correctly.
    pub strict_level: bool,
    /// How the replay command starts: `cargo xtask` (the default) or `dmlcts`.
    pub program: Option<String>,
    /// The `--backend` name the replay command gives, where it is not the backend's own name
    /// (`directml@1.9.0` makes a backend named `directml`).
    pub backend_name: Option<String>,
    /// Appended to the replay command (e.g. `--cases path`), when the case file is not
    /// enough to find it.
    pub replay_hint: Option<String>,
    /// Rules this backend does not enforce besides those of its own validation profile
    /// (an expectations file's `not_enforced` entries that apply to it).
    pub not_enforced: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    Passed,
    Failed,
    Skipped,
    /// Failed, as the expectations file says it will.
    ExpectedFailure,
    /// Accepted a must-reject case whose every broken rule is one the backend does not
    /// enforce (its validation profile): reported, counted apart, never a failure.
    Informational,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Passed => "passed",
            Status::Failed => "failed",
            Status::Skipped => "skipped",
            Status::ExpectedFailure => "expected_failure",
            Status::Informational => "informational",
        }
    }
}

#[derive(Clone, Debug)]
pub struct CaseResult {
    pub name: String,
    pub file: String,
    pub line: usize,
    pub status: Status,
    /// One line: the skip reason, or the check that failed.
    pub reason: String,
    /// For failures: everything needed to act on it, ending with the replay command.
    pub details: String,
    /// Observations that are not failures (e.g. the backend wrote unaddressed bytes).
    pub notes: Vec<String>,
    pub duration: Duration,
    /// The case's own feature level (None: a case file that did not load).
    pub feature_level: Option<FeatureLevel>,
    /// The level it ran at: the device's, or `--feature-level`.
    pub run_level: Option<FeatureLevel>,
}

impl CaseResult {
    fn new(case: &Case) -> CaseResult {
        CaseResult {
            name: case.name.clone(),
            file: case.file.clone(),
            line: case.line,
            status: Status::Passed,
            reason: String::new(),
            details: String::new(),
            notes: Vec::new(),
            duration: Duration::ZERO,
            feature_level: Some(case.feature_level),
            run_level: None,
        }
    }

    /// The full failure report, as printed.
    pub fn failure_report(&self) -> String {
        format!(
            "FAIL {} ({}:{})\n  check: {}\n{}",
            self.name, self.file, self.line, self.reason, self.details
        )
    }
}

enum Outcome {
    Pass,
    Skip(String),
    Informational { reason: String, details: String },
    Fail { check: String, details: String },
}

fn fail(check: impl Into<String>, details: impl Into<String>) -> Outcome {
    Outcome::Fail {
        check: check.into(),
        details: details.into(),
    }
}

/// Runs one case on one backend.
pub fn run_case(backend: &dyn Backend, case: &Case, options: &RunOptions) -> CaseResult {
    let mut results = run_case_with_data_sets(backend, case, &[], options);
    results.swap_remove(0)
}

/// `run_case` for one descriptor and several data sets: the backend compiles the descriptor
/// once and executes it once per data set, each judged as `case` with its `inputs` replaced
/// by that data set. The first result is `case`'s own (with its own inputs), then one per
/// data set, in order, while they pass: the first failure (or skip) ends the list. A backend
/// that compiles slowly (a JIT, a compiler per module) is then checked on several inputs for
/// one compile, on the same path as every case.
pub fn run_case_with_data_sets(
    backend: &dyn Backend,
    case: &Case,
    data_sets: &[Vec<TensorData>],
    options: &RunOptions,
) -> Vec<CaseResult> {
    let started = Instant::now();
    let mut notes = Vec::new();
    let compiled = match corpus_skips_and_compile(backend, case, options, &mut notes) {
        Ok(compiled) => compiled,
        Err(outcome) => return vec![case_result(backend, case, options, outcome, notes, started)],
    };
    let outcome = execute_and_compare(case, compiled.as_ref(), &mut notes);
    let mut results = vec![case_result(backend, case, options, outcome, notes, started)];
    for inputs in data_sets {
        if results.last().is_some_and(|r| r.status != Status::Passed) {
            break;
        }
        let started = Instant::now();
        let mut again = case.clone();
        again.inputs = inputs.clone();
        // Stored expected values are for the case's own inputs.
        again.expected = vec![None; case.op.outputs().len()];
        let mut notes = Vec::new();
        let outcome = if again.inputs.len() == case.op.inputs().len() {
            execute_and_compare(&again, compiled.as_ref(), &mut notes)
        } else {
            fail(
                "corpus: bad input data",
                format!(
                    "  a data set of {} inputs for {} input tensors",
                    again.inputs.len(),
                    case.op.inputs().len()
                ),
            )
        };
        results.push(case_result(
            backend, &again, options, outcome, notes, started,
        ));
    }
    results
}

/// A case's result from its outcome: the status, the reason, and for a failure the details
/// ending with the replay command.
fn case_result(
    backend: &dyn Backend,
    case: &Case,
    options: &RunOptions,
    outcome: Outcome,
    notes: Vec<String>,
    started: Instant,
) -> CaseResult {
    let mut result = CaseResult::new(case);
    result.notes = notes;
    result.run_level = Some(
        options
            .feature_level
            .unwrap_or_else(|| backend.feature_level()),
    );
    match outcome {
        Outcome::Pass => {}
        Outcome::Skip(reason) => {
            result.status = Status::Skipped;
            result.reason = reason;
        }
        Outcome::Informational { reason, details } => {
            result.status = Status::Informational;
            result.reason = reason;
            result.details = details;
        }
        Outcome::Fail { check, details } => {
            result.status = Status::Failed;
            result.reason = check;
            let mut details = details;
            if !details.is_empty() && !details.ends_with('\n') {
                details.push('\n');
            }
            let _ = writeln!(
                details,
                "  replay: {}",
                replay_command(backend, case, options)
            );
            result.details = details;
        }
    }
    result.duration = started.elapsed();
    result
}

/// The command that runs just this case again, the same way.
pub fn replay_command(backend: &dyn Backend, case: &Case, options: &RunOptions) -> String {
    let mut command = format!(
        "{} conformance --backend {} --cases {} --filter {} --exact",
        options.program.as_deref().unwrap_or("cargo xtask"),
        shell_word(
            &options
                .backend_name
                .clone()
                .unwrap_or_else(|| backend.name())
        ),
        shell_word(&case.file),
        case.name
    );
    if let Some(level) = options.feature_level {
        let _ = write!(command, " --feature-level {level}");
    }
    if options.strict_level {
        command.push_str(" --strict-level");
    }
    if let Some(hint) = &options.replay_hint {
        let _ = write!(command, " {hint}");
    }
    command
}

/// Quotes a word for a POSIX shell when it needs it.
pub fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@+,".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Steps 1 to 3: the corpus check, the skips, and the verdict; the compiled operator when
/// the case goes on to execute, else the case's outcome.
fn corpus_skips_and_compile<'a>(
    backend: &'a dyn Backend,
    case: &Case,
    options: &RunOptions,
    notes: &mut Vec<String>,
) -> Result<Box<dyn CompiledOperator + 'a>, Outcome> {
    check_corpus_expectation(case)?;
    // Step 2, skips.
    if let Some(reason) = skip_reason(backend, case, options) {
        return Err(Outcome::Skip(reason));
    }
    let level = options
        .feature_level
        .unwrap_or_else(|| backend.feature_level());
    compile_and_judge(backend, case, options, level, notes)
}

/// Step 1, the corpus itself: the stored expectation must be the oracle's verdict.
fn check_corpus_expectation(case: &Case) -> Result<(), Outcome> {
    let stored_level = case.feature_level;
    match (validate(&case.op, stored_level), &case.expect) {
        (Ok(()), Expectation::Accept) => {}
        (Err(v), Expectation::Reject { rule }) if v.rule == *rule => {}
        (verdict, expect) => {
            let says = match expect {
                Expectation::Accept => "accepted".to_string(),
                Expectation::Reject { rule } => format!("rejected with {rule}"),
            };
            let oracle = match verdict {
                Ok(()) => "accepts it".to_string(),
                Err(v) => format!("rejects it: {v}"),
            };
            return Err(fail(
                "corpus: the case's expectation disagrees with the oracle",
                format!("  the case says {says} at {stored_level}; the oracle {oracle}"),
            ));
        }
    }
    Ok(())
}

/// Step 3 (after the skips), accept or reject as the oracle does at this level: the backend's
/// compiled operator when the case goes on to execute, or else the case's outcome.
fn compile_and_judge<'a>(
    backend: &'a dyn Backend,
    case: &Case,
    options: &RunOptions,
    level: FeatureLevel,
    notes: &mut Vec<String>,
) -> Result<Box<dyn CompiledOperator + 'a>, Outcome> {
    let verdict = validate(&case.op, level);
    let compiled = match catch_unwind(AssertUnwindSafe(|| backend.compile(&case.op))) {
        Err(panic) => {
            return Err(fail(
                "compile panicked",
                format!("  panic: {}", panic_message(panic.as_ref())),
            ));
        }
        Ok(compiled) => compiled,
    };
    let compiled = match compiled {
        Err(CompileError::Failed(message)) => {
            return Err(fail(
                "the backend failed",
                format!("  while compiling: {message}"),
            ));
        }
        Err(CompileError::Unsupported(reason)) => {
            return Err(Outcome::Skip(format!(
                "backend {}: {reason}",
                backend.name()
            )));
        }
        Err(CompileError::Rejected(rejected)) => Err(rejected),
        Ok(compiled) => Ok(compiled),
    };
    let compiled = match (verdict, compiled) {
        (Err(violation), Err(rejected)) => {
            note_rule_difference(&violation.rule, &rejected, notes);
            return Err(Outcome::Pass);
        }
        (Ok(()), Err(rejected)) => {
            return Err(fail(
                "rejected a valid descriptor",
                format!("  the backend said: {rejected}\n  the oracle accepts it at {level}"),
            ));
        }
        (Err(violation), Ok(compiled)) => {
            // Every rule the descriptor breaks, not only the first, decides: one the backend
            // enforces fails the case. A level table's rule is not enforced without
            // strict_level (the outputs are then checked).
            let profile = backend.validation_profile().without(&options.not_enforced);
            let beyond_level = |rule: &str| {
                !options.strict_level && dmlcts_oracle::spec::depends_on_feature_level(rule)
            };
            let broken = match validate_enforced(&case.op, level, |rule| {
                profile.enforces(rule) && !beyond_level(rule)
            }) {
                Err(enforced) => {
                    return Err(fail(
                        "accepted an invalid descriptor",
                        format!("  the oracle rejects it at {level}: {enforced}"),
                    ));
                }
                Ok(broken) => broken,
            };
            let by_profile: Vec<_> = broken
                .iter()
                .filter(|v| !profile.enforces(&v.rule))
                .collect();
            if let Some(first) = by_profile.first() {
                let mut details = String::new();
                for v in &by_profile {
                    let _ = writeln!(details, "  the oracle rejects it at {level}: {v}");
                }
                let _ = writeln!(details, "  the backend's validation profile: {profile}");
                return Err(Outcome::Informational {
                    reason: format!("accepted; DirectML rejects it: rule {}", first.rule),
                    details,
                });
            }
            notes.push(format!(
                "accepted beyond the level-{level} tables ({violation}); checking its outputs"
            ));
            compiled
        }
        (Ok(()), Ok(compiled)) => compiled,
    };
    Ok(compiled)
}

/// Step 4, execute and compare; sizes first, so nothing is allocated for a case too large.
fn execute_and_compare(
    case: &Case,
    compiled: &dyn CompiledOperator,
    notes: &mut Vec<String>,
) -> Outcome {
    let outputs = case.op.outputs();
    if let Some(reason) = case
        .op
        .inputs()
        .iter()
        .chain(&outputs)
        .find_map(|(field, desc)| too_large(field, desc))
    {
        return Outcome::Skip(reason);
    }
    let mut input_bytes = Vec::new();
    for ((field, desc), data) in case.op.inputs().iter().zip(&case.inputs) {
        match data.materialize(desc) {
            Ok(bytes) => input_bytes.push(bytes),
            Err(e) => return fail("corpus: bad input data", format!("  {field}: {e}")),
        }
    }
    let pristine_inputs = input_bytes.clone();
    let input_refs: Vec<&[u8]> = input_bytes.iter().map(Vec::as_slice).collect();
    let reference = match execute(&case.op, &input_refs) {
        Ok(outputs) => outputs,
        Err(e) => return Outcome::Skip(format!("the oracle cannot execute it here: {e}")),
    };
    if let Some(outcome) = check_stored_expected_values(case, &reference) {
        return outcome;
    }
    let mut buffers: Vec<Vec<u8>> = outputs
        .iter()
        .map(|(_, d)| guarded_buffer(d.total_tensor_size_in_bytes as usize))
        .collect();
    let mut bindings: Vec<OutputBinding<'_>> = buffers
        .iter_mut()
        .zip(&outputs)
        .map(|(buffer, (_, d))| OutputBinding {
            buffer,
            offset: GUARD_BYTES,
            size: d.total_tensor_size_in_bytes as usize,
        })
        .collect();
    let executed = catch_unwind(AssertUnwindSafe(|| {
        compiled.execute(&input_refs, &mut bindings)
    }));
    drop(bindings);
    match executed {
        Err(panic) => {
            return fail(
                "execute panicked",
                format!("  panic: {}", panic_message(panic.as_ref())),
            );
        }
        Ok(Err(message)) => return fail("execution failed", format!("  {message}")),
        Ok(Ok(())) => {}
    }

    let mut problems = Vec::new();
    let mut details = String::new();
    // The backend saw shared slices, but an unsafe or out-of-process one could still
    // have written through them.
    for ((field, _), (now, before)) in case
        .op
        .inputs()
        .iter()
        .zip(input_bytes.iter().zip(&pristine_inputs))
    {
        if now != before {
            problems.push("input modified");
            let _ = writeln!(details, "  {field}: the backend changed its input buffer");
        }
    }
    for (((field, desc), buffer), expected) in outputs.iter().zip(&buffers).zip(&reference) {
        let size = desc.total_tensor_size_in_bytes as usize;
        if let Some(message) = check_guard_bands(field, buffer, GUARD_BYTES, size) {
            problems.push("wrote outside the output");
            let _ = writeln!(details, "  {message}");
        }
        let inner = &buffer[GUARD_BYTES..GUARD_BYTES + size];
        if let Some(message) = compare_output(field, desc, expected, inner) {
            problems.push("output values");
            let _ = write!(details, "  {message}");
        }
        let holes_written = inner
            .iter()
            .enumerate()
            .filter(|&(i, &b)| {
                !expected.addressed[i] && b != crate::run::compare::sentinel_byte(GUARD_BYTES + i)
            })
            .count();
        if holes_written > 0 {
            notes.push(format!(
                "{field}: wrote {holes_written} unaddressed byte(s) inside TotalTensorSizeInBytes (allowed)"
            ));
        }
    }
    if problems.is_empty() {
        Outcome::Pass
    } else {
        problems.dedup();
        fail(problems.join(", "), details)
    }
}

/// The case's own `expected:` values must be what the oracle computes.
fn check_stored_expected_values(case: &Case, reference: &[OracleOutput]) -> Option<Outcome> {
    for (((field, desc), stored), computed) in
        case.op.outputs().iter().zip(&case.expected).zip(reference)
    {
        let Some(stored) = stored else { continue };
        let oracle_values = logical_elements(desc, &computed.bytes);
        if *stored != oracle_values {
            let mut stored_output = computed.clone();
            let strides = desc.effective_strides();
            for (coordinates, &bits) in dmlcts_tensor::Coordinates::new(&desc.sizes).zip(stored) {
                if let Some(offset) = desc.byte_offset(&coordinates, &strides) {
                    dmlcts_tensor::write_element(
                        &mut stored_output.bytes,
                        offset as usize,
                        desc.data_type,
                        bits,
                    );
                }
            }
            let diff =
                compare_output(field, desc, &stored_output, &computed.bytes).unwrap_or_default();
            return Some(fail(
                "corpus: the case's expected values disagree with the oracle",
                format!("  (- the case's expected values, + the oracle's)\n  {diff}"),
            ));
        }
    }
    None
}

/// Why a case does not run on this backend at this level, decided before running it.
pub fn skip_reason(backend: &dyn Backend, case: &Case, options: &RunOptions) -> Option<String> {
    if let Some(reason) = backend.unavailable_reason() {
        return Some(format!("backend {} unavailable: {reason}", backend.name()));
    }
    let claimed = backend.data_types();
    if let Some(dt) = case
        .data_types()
        .into_iter()
        .find(|dt| !claimed.contains(dt))
    {
        return Some(format!("backend {} does not claim {dt}", backend.name()));
    }
    level_skip_reason(backend, case, options)
}

/// Why a case lies outside the level this run is at, if it does. This is the run's choice,
/// not the backend's: every other skip (unavailable, a data type not claimed, unsupported)
/// is the backend's own.
fn level_skip_reason(backend: &dyn Backend, case: &Case, options: &RunOptions) -> Option<String> {
    let level = options
        .feature_level
        .unwrap_or_else(|| backend.feature_level());
    let stored_level = case.feature_level;
    if case.rejection_depends_on_level() {
        // A rejection by a feature-level table holds wherever that same table row applies.
        if !same_table_row(case, level, stored_level) {
            // One reason for all such cases, whichever table: a backend that exists at one
            // level only (real DirectML) gets one line, and the per-level breakdown says more.
            return Some(format!(
                "checks another level's feature-level table; running at {level}"
            ));
        }
    } else if level < stored_level {
        return Some(format!(
            "needs feature level {stored_level}; running at {level}"
        ));
    }
    None
}

/// Tallies what an available backend did with the cases within the running level, so that
/// a run in which it skipped every one of them fails instead of passing on nothing (a
/// backend whose `data_types()` is empty, or that calls everything unsupported). Cases
/// outside the level, an unavailable backend and a run that selected no case do not count.
#[derive(Debug, Default)]
pub struct SkipCheck {
    ran: usize,
    skipped: BTreeMap<String, usize>,
}

impl SkipCheck {
    /// Records one selected case: `skipped` is its skip reason, if it was skipped.
    pub fn record(
        &mut self,
        backend: &dyn Backend,
        case: &Case,
        options: &RunOptions,
        skipped: Option<&str>,
    ) {
        if backend.unavailable_reason().is_some()
            || level_skip_reason(backend, case, options).is_some()
        {
            return;
        }
        match skipped {
            None => self.ran += 1,
            Some(reason) => *self.skipped.entry(reason.to_string()).or_default() += 1,
        }
    }

    /// A case recorded as run that the backend then skipped (its compile said Unsupported).
    pub fn skipped_at_run_time(&mut self, reason: &str) {
        self.ran = self.ran.saturating_sub(1);
        *self.skipped.entry(reason.to_string()).or_default() += 1;
    }

    /// The run's failure, when the backend skipped every case it could have run.
    pub fn failure(&self, backend_name: &str) -> Option<String> {
        if self.ran > 0 {
            return None;
        }
        let total: usize = self.skipped.values().sum();
        let (reason, count) = self
            .skipped
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))?;
        Some(format!(
            "backend {backend_name} is available but skipped all {total} cases it could run \
             ({count} of them: {reason}); a run that tests nothing fails"
        ))
    }
}

fn same_table_row(case: &Case, a: FeatureLevel, b: FeatureLevel) -> bool {
    let kind = case.op.kind();
    let row = |level| dmlcts_oracle::spec::support_row(kind, level).map(|r| r.level.as_str());
    row(a) == row(b)
}

fn note_rule_difference(oracle_rule: &str, rejected: &Rejected, notes: &mut Vec<String>) {
    if let Some(rule) = &rejected.rule
        && rule != oracle_rule
    {
        notes.push(format!(
            "rejected with {rule}; the oracle's first broken rule is {oracle_rule}"
        ));
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic without a message)".to_string()
    }
}

/// Runs cases in order, calling `progress` after each.
pub fn run_cases(
    backend: &dyn Backend,
    cases: &[Case],
    options: &RunOptions,
    mut progress: impl FnMut(usize, usize, &CaseResult),
) -> Vec<CaseResult> {
    let mut results = Vec::with_capacity(cases.len());
    for (i, case) in cases.iter().enumerate() {
        let result = run_case(backend, case, options);
        progress(i + 1, cases.len(), &result);
        results.push(result);
    }
    results
}
