//! The one path every case takes, whatever the entry point (libtest, `cargo xtask
//! conformance`, the fuzzer, a backend author's own tests):
//!
//! 1. the case's stored expectation is checked against the oracle at the case's level;
//! 2. skips: backend unavailable, data type not claimed, level above the claimed one, a
//!    must-reject case at a level whose tables reject it too;
//! 3. the backend must agree with the oracle on accept/reject at the running level, under its
//!    validation profile: a must-reject case it accepts where every broken rule is one it
//!    does not enforce is informational;
//! 4. accepted: the backend executes into guarded, sentinel-filled outputs; every addressed
//!    output byte must equal the oracle's, guard bands must be untouched, inputs unchanged.

use crate::corpus::data::{TensorData, logical_elements, too_large};
use crate::corpus::{Case, Expectation};
use crate::run::compare::{GUARD_BYTES, check_guard_bands, compare_output, guarded_buffer};
use crate::run::profile::{Stage, stage};
use crate::run::replay::{Replay, ReplayRecipe};
use crate::text;
use dmlcts_oracle::{OracleOutput, broken_rules, execute, validate, validate_enforced};
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, FeatureLevel, OutputBinding, Rejected,
};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

/// Bytes kept of any one text a backend hands back (an error, a panic, a reason, a rule) in a
/// result; the rest is counted, not kept. Out-of-process texts are already cut to 4 KiB
/// each, plus at most 40 KiB of the server's stderr; this bounds in-process backends too.
pub const MAX_BACKEND_TEXT_BYTES: usize = 64 << 10;

/// `text` cut to `MAX_BACKEND_TEXT_BYTES` (at a character boundary), with a count of the rest.
fn bounded(mut text: String) -> String {
    if text.len() > MAX_BACKEND_TEXT_BYTES {
        let end = (0..=MAX_BACKEND_TEXT_BYTES)
            .rev()
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        let dropped = text.len() - end;
        text.truncate(end);
        let _ = write!(text, " [... {dropped} more bytes not kept]");
    }
    text
}

#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// The level to run at; the backend's claimed level when None.
    pub feature_level: Option<FeatureLevel>,
    /// Require rejection of what the tables do not support at the running level. Without
    /// it, a backend may accept such a descriptor, but must then execute it correctly.
    pub strict_level: bool,
    /// How a failure's replay command names the case and the run. None: `cargo xtask
    /// conformance` in this repository's checkout, with the case's file and this run's level.
    pub replay: Option<ReplayRecipe>,
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
    /// What identifies this result in a run's reports, never its name (two case files may
    /// reuse a name, and a case may be named like a load error): `FILE:LINE` for a case
    /// (`#N` added where cases share a line, see `ResultIds`), `load-error:FILE:LINE` for a
    /// file or case that did not load, `run:...` for a check on the whole run.
    pub id: String,
    pub name: String,
    pub file: String,
    pub line: usize,
    pub status: Status,
    /// One line: the skip reason, or the check that failed.
    pub reason: String,
    /// For failures: everything needed to act on it (coordinates, values, the backend's own
    /// words as quoted `    | ` lines). The replay command is `replay`, apart.
    pub details: String,
    /// For failures: the command that runs this case alone again, the same way.
    pub replay: Option<Replay>,
    /// For failures and informational results: the operator's descriptor, compact, in the
    /// corpus format (`dmlcts show NAME` gives the whole case).
    pub descriptor: Option<String>,
    /// Observations that are not failures (e.g. the backend wrote unaddressed bytes).
    pub notes: Vec<String>,
    pub duration: Duration,
    /// The case's own feature level (None: a case file that did not load).
    pub feature_level: Option<FeatureLevel>,
    /// The level it ran at: the device's, or `--feature-level`.
    pub run_level: Option<FeatureLevel>,
}

/// A case's id before it is made unique in a run: `FILE:LINE`. The other namespaces are a
/// word and a colon (`load-error:`, `run:`): a relative path whose first part has a colon
/// (a file named `load-error:x.yaml`) is written `./PATH`, so no case's id is ever in one.
pub fn case_id(case: &Case) -> String {
    let first = case.file.split('/').next().unwrap_or("");
    if first.contains(':') {
        format!("./{}:{}", case.file, case.line)
    } else {
        format!("{}:{}", case.file, case.line)
    }
}

/// Makes ids unique within a run, in order: the second result with id `X` becomes `X#2`,
/// the third `X#3` (cases written on one line of a file share their `FILE:LINE`). Every
/// report of a run, and every column of a matrix, numbers the same cases the same way.
#[derive(Debug, Default)]
pub struct ResultIds {
    seen: HashMap<String, usize>,
}

impl ResultIds {
    pub fn unique(&mut self, id: String) -> String {
        // Looked up before inserting: a campaign's cases share one id, cloned only once.
        let count = match self.seen.get_mut(&id) {
            Some(count) => count,
            None => self.seen.entry(id.clone()).or_default(),
        };
        *count += 1;
        if *count == 1 {
            id
        } else {
            format!("{id}#{count}")
        }
    }
}

impl CaseResult {
    fn new(case: &Case) -> CaseResult {
        CaseResult {
            id: case_id(case),
            name: case.name.clone(),
            file: case.file.clone(),
            line: case.line,
            status: Status::Passed,
            reason: String::new(),
            details: String::new(),
            replay: None,
            descriptor: None,
            notes: Vec::new(),
            duration: Duration::ZERO,
            feature_level: Some(case.feature_level),
            run_level: None,
        }
    }

    /// A failure of the run as a whole (e.g. an available backend that skipped every case),
    /// as a result, so that every report counts it.
    pub fn run_failure(id: &str, name: &str, reason: &str, details: &str) -> CaseResult {
        CaseResult {
            id: format!("run:{id}"),
            name: name.to_string(),
            file: String::new(),
            line: 0,
            status: Status::Failed,
            reason: reason.to_string(),
            details: details.to_string(),
            replay: None,
            descriptor: None,
            notes: Vec::new(),
            duration: Duration::ZERO,
            feature_level: None,
            run_level: None,
        }
    }

    /// Where the result comes from, for people: `FILE:LINE`, or the id of a result that is
    /// no case's (a check on the whole run).
    pub fn location(&self) -> String {
        if self.file.is_empty() {
            self.id.clone()
        } else {
            format!("{}:{}", self.file, self.line)
        }
    }

    /// The full failure report, as printed: every text from a case file or a backend in it
    /// escaped (`text::line`, `text::block`), the backend's own words already quoted.
    pub fn failure_report(&self) -> String {
        let mut report = format!(
            "FAIL {} ({})\n  check: {}\n",
            text::line(&self.name),
            text::line(&self.location()),
            text::line(&self.reason)
        );
        if let Some(descriptor) = &self.descriptor {
            let _ = writeln!(report, "  case: {}", text::line(descriptor));
        }
        report.push_str(&text::block(&self.details));
        if !report.ends_with('\n') {
            report.push('\n');
        }
        if let Some(replay) = &self.replay {
            let _ = writeln!(report, "  replay: {}", text::line(&replay.render()));
        }
        report
    }
}

/// What judging one case decided: the value `case_result` turns into a `CaseResult`. A pass
/// is a verdict like any other, never an error.
enum Verdict {
    Pass,
    Skip(String),
    Informational { reason: String, details: String },
    Fail { check: String, details: String },
}

fn fail(check: impl Into<String>, details: impl Into<String>) -> Verdict {
    Verdict::Fail {
        check: check.into(),
        details: details.into(),
    }
}

/// Where judging stands after steps 1 to 3: the backend accepted the descriptor and the case
/// goes on to execute it, or the verdict is already reached (a skip, a rejection as the
/// oracle's, a failure, an informational acceptance).
enum Judged<'a> {
    Execute(Box<dyn CompiledOperator + 'a>),
    Decided(Verdict),
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
    if case.is_group() {
        // A group on this one backend (its steps at their own levels only where the backend
        // is at them; the session gives each step the device at its level). Data sets are
        // for one descriptor: a group has its own data on each step.
        let result = crate::run::group::run_group(
            case,
            &mut |step| run_case(backend, step, options),
            &|| replay_command(backend, case, options),
        );
        return vec![result];
    }
    let started = Instant::now();
    let mut notes = Vec::new();
    let compiled = match corpus_skips_and_compile(backend, case, options, &mut notes) {
        Judged::Execute(compiled) => compiled,
        Judged::Decided(verdict) => {
            return vec![case_result(backend, case, options, verdict, notes, started)];
        }
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

/// A case's result from its verdict: the status, the reason, and for a failure the details
/// ending with the replay command.
fn case_result(
    backend: &dyn Backend,
    case: &Case,
    options: &RunOptions,
    verdict: Verdict,
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
    match verdict {
        Verdict::Pass => {}
        Verdict::Skip(reason) => {
            result.status = Status::Skipped;
            result.reason = reason;
        }
        Verdict::Informational { reason, details } => {
            result.status = Status::Informational;
            result.reason = reason;
            result.details = details;
            result.descriptor = Some(crate::corpus::descriptor_flow(&case.op));
        }
        Verdict::Fail { check, details } => {
            result.status = Status::Failed;
            result.reason = check;
            result.details = details;
            result.descriptor = Some(crate::corpus::descriptor_flow(&case.op));
            result.replay = Some(replay_command(backend, case, options));
        }
    }
    result.duration = started.elapsed();
    result
}

/// The command that runs just this case again, the same way: from the run's recipe, or
/// else `cargo xtask conformance` in this repository with the case's file and level.
pub fn replay_command(backend: &dyn Backend, case: &Case, options: &RunOptions) -> Replay {
    match &options.replay {
        Some(recipe) => recipe.for_case(&case.name, &case.file),
        None => {
            let mut words = Vec::new();
            if let Some(level) = options.feature_level {
                words.extend(["--feature-level".to_string(), level.to_string()]);
            }
            if options.strict_level {
                words.push("--strict-level".to_string());
            }
            ReplayRecipe::Conformance {
                program: vec!["cargo".to_string(), "xtask".to_string()],
                backend: backend.name(),
                options: words,
                cases_from_files: true,
                env: Vec::new(),
            }
            .for_case(&case.name, &case.file)
        }
    }
}

/// A backend's words (a message, a panic, a rejection) under a line of the harness's own:
/// `  {intro}:` and then each of its lines quoted (`    | `), so that nothing it says can
/// pass for a line of the report (a fake `replay:`, a fake verdict).
/// What it says is cut to `MAX_BACKEND_TEXT_BYTES` first.
fn backend_said(intro: &str, said: &str) -> String {
    let said = bounded(said.to_string());
    format!("  {intro}:\n{}", text::quoted_lines(&said, "    | "))
}

/// Steps 1 to 3: the corpus check, the skips, and the verdict on the descriptor; the compiled
/// operator when the case goes on to execute.
fn corpus_skips_and_compile<'a>(
    backend: &'a dyn Backend,
    case: &Case,
    options: &RunOptions,
    notes: &mut Vec<String>,
) -> Judged<'a> {
    let validation = stage(Stage::OracleValidation);
    let at_stored_level = validate(&case.op, case.feature_level);
    if let Some(failure) = corpus_expectation_failure(case, &at_stored_level) {
        return Judged::Decided(failure);
    }
    // Step 2, skips.
    if let Some(reason) = skip_reason(backend, case, options) {
        return Judged::Decided(Verdict::Skip(reason));
    }
    let level = options
        .feature_level
        .unwrap_or_else(|| backend.feature_level());
    // The verdict at the running level: the one just taken where that is the case's own
    // level (a campaign's cases always run at theirs).
    let verdict = if level == case.feature_level {
        at_stored_level
    } else {
        validate(&case.op, level)
    };
    drop(validation);
    compile_and_judge(backend, case, options, level, verdict, notes)
}

/// Step 1, the corpus itself: the stored expectation must be the oracle's verdict; the
/// failure when it is not.
fn corpus_expectation_failure(
    case: &Case,
    at_stored_level: &Result<(), dmlcts_oracle::Violation>,
) -> Option<Verdict> {
    let stored_level = case.feature_level;
    match (at_stored_level, &case.expect) {
        (Ok(()), Expectation::Accept) => None,
        (Err(v), Expectation::Reject { rule }) if v.rule == *rule => None,
        (verdict, expect) => {
            let says = match expect {
                Expectation::Accept => "accepted".to_string(),
                Expectation::Reject { rule } => format!("rejected with {rule}"),
            };
            let oracle = match verdict {
                Ok(()) => "accepts it".to_string(),
                Err(v) => format!("rejects it: {v}"),
            };
            Some(fail(
                "corpus: the case's expectation disagrees with the oracle",
                format!("  the case says {says} at {stored_level}; the oracle {oracle}\n"),
            ))
        }
    }
}

/// Step 3 (after the skips), accept or reject as the oracle does at this level: the backend's
/// compiled operator when the case goes on to execute, or else the case's outcome.
fn compile_and_judge<'a>(
    backend: &'a dyn Backend,
    case: &Case,
    options: &RunOptions,
    level: FeatureLevel,
    verdict: Result<(), dmlcts_oracle::Violation>,
    notes: &mut Vec<String>,
) -> Judged<'a> {
    let compiled = match catch_unwind(AssertUnwindSafe(|| {
        let _backend = stage(Stage::Backend);
        backend.compile(&case.op)
    })) {
        Err(panic) => {
            return Judged::Decided(fail(
                "compile panicked",
                backend_said("the panic's message", &panic_message(panic.as_ref())),
            ));
        }
        Ok(compiled) => compiled,
    };
    let compiled = match compiled {
        Err(CompileError::Failed(message)) => {
            return Judged::Decided(fail(
                "the backend failed",
                backend_said("while compiling, the backend said", &message),
            ));
        }
        Err(CompileError::Unsupported(reason)) => {
            return Judged::Decided(Verdict::Skip(format!(
                "backend {}: {}",
                backend.name(),
                bounded(reason)
            )));
        }
        Err(CompileError::Rejected(rejected)) => Err(Rejected {
            rule: rejected.rule.map(bounded),
            message: bounded(rejected.message),
        }),
        Ok(compiled) => Ok(compiled),
    };
    let compiled = match (verdict, compiled) {
        (Err(violation), Err(rejected)) => {
            note_rule_difference(&violation.rule, &rejected, notes);
            return Judged::Decided(Verdict::Pass);
        }
        (Ok(()), Err(rejected)) => {
            return Judged::Decided(fail(
                "rejected a valid descriptor",
                format!(
                    "{}  the oracle accepts it at {level}\n",
                    backend_said("the backend rejected it", &rejected.to_string())
                ),
            ));
        }
        (Err(violation), Ok(compiled)) => {
            let _validation = stage(Stage::OracleValidation);
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
                    return Judged::Decided(fail(
                        "accepted an invalid descriptor",
                        format!("  the oracle rejects it at {level}: {enforced}\n"),
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
                return Judged::Decided(Verdict::Informational {
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
    Judged::Execute(compiled)
}

/// Step 4, execute and compare; sizes first, so nothing is allocated for a case too large.
/// The tensors' field names are looked up only to report a problem (naming them allocates).
fn execute_and_compare(
    case: &Case,
    compiled: &dyn CompiledOperator,
    notes: &mut Vec<String>,
) -> Verdict {
    let (inputs, outputs) = (case.op.input_tensors(), case.op.output_tensors());
    let input_field = |i: usize| case.op.inputs().swap_remove(i).0;
    let output_field = |i: usize| case.op.outputs().swap_remove(i).0;
    let named = |i: usize| match i.checked_sub(inputs.len()) {
        None => input_field(i),
        Some(i) => output_field(i),
    };
    if let Some(i) = (inputs.iter().chain(outputs)).position(|desc| too_large("", desc).is_some()) {
        let desc = inputs.iter().chain(outputs).nth(i).expect("found above");
        return Verdict::Skip(too_large(&named(i), desc).unwrap_or_default());
    }
    let largest = (inputs.iter().chain(outputs))
        .map(|desc| desc.total_tensor_size_in_bytes)
        .max()
        .unwrap_or(0);
    if let Some(reason) = crate::corpus::data::over_address_space(largest) {
        return Verdict::Skip(reason);
    }
    let making_inputs = stage(Stage::InputBytes);
    let mut input_bytes = Vec::with_capacity(inputs.len());
    for (i, (desc, data)) in inputs.iter().zip(&case.inputs).enumerate() {
        match data.materialize(desc) {
            Ok(bytes) => input_bytes.push(bytes),
            Err(e) => {
                return fail(
                    "corpus: bad input data",
                    format!("  {}: {e}\n", input_field(i)),
                );
            }
        }
    }
    drop(making_inputs);
    let comparison = stage(Stage::Comparison);
    let pristine_inputs = input_bytes.clone();
    let input_refs: Vec<&[u8]> = input_bytes.iter().map(Vec::as_slice).collect();
    let reference = {
        let _oracle = stage(Stage::OracleExecution);
        match execute(&case.op, &input_refs) {
            Ok(outputs) => outputs,
            Err(e) => return Verdict::Skip(format!("the oracle cannot execute it here: {e}")),
        }
    };
    if case.expected.iter().any(Option::is_some)
        && let Some(outcome) = check_stored_expected_values(case, &reference)
    {
        return outcome;
    }
    let mut buffers: Vec<Vec<u8>> = outputs
        .iter()
        .map(|d| guarded_buffer(d.total_tensor_size_in_bytes as usize))
        .collect();
    let mut bindings: Vec<OutputBinding<'_>> = buffers
        .iter_mut()
        .zip(outputs)
        .map(|(buffer, d)| OutputBinding {
            buffer,
            offset: GUARD_BYTES,
            size: d.total_tensor_size_in_bytes as usize,
        })
        .collect();
    let executed = catch_unwind(AssertUnwindSafe(|| {
        let _backend = stage(Stage::Backend);
        compiled.execute(&input_refs, &mut bindings)
    }));
    drop(bindings);
    match executed {
        Err(panic) => {
            return fail(
                "execute panicked",
                backend_said("the panic's message", &panic_message(panic.as_ref())),
            );
        }
        Ok(Err(message)) => {
            return fail(
                "execution failed",
                backend_said("the backend said", &message),
            );
        }
        Ok(Ok(())) => {}
    }

    let mut problems = Vec::new();
    let mut details = String::new();
    // The backend saw shared slices, but an unsafe or out-of-process one could still
    // have written through them.
    for (i, (now, before)) in input_bytes.iter().zip(&pristine_inputs).enumerate() {
        if now != before {
            problems.push("input modified");
            let _ = writeln!(
                details,
                "  {}: the backend changed its input buffer",
                input_field(i)
            );
        }
    }
    for (i, ((desc, buffer), expected)) in outputs.iter().zip(&buffers).zip(&reference).enumerate()
    {
        let size = desc.total_tensor_size_in_bytes as usize;
        let inner = &buffer[GUARD_BYTES..GUARD_BYTES + size];
        let guards_kept = check_guard_bands("", buffer, GUARD_BYTES, size).is_none();
        let values_match = compare_output("", desc, expected, inner).is_none();
        if !guards_kept || !values_match {
            let field = output_field(i);
            if let Some(message) = check_guard_bands(&field, buffer, GUARD_BYTES, size) {
                problems.push("wrote outside the output");
                let _ = writeln!(details, "  {message}");
            }
            if let Some(message) = compare_output(&field, desc, expected, inner) {
                problems.push("output values");
                let _ = write!(details, "  {message}");
            }
        }
        // Every byte addressed (a packed output, the usual case): no hole to look at. A fold
        // without early exit, which the compiler vectorizes (a large-tier output is megabytes).
        if (expected.addressed.iter()).fold(true, |all, &addressed| all & addressed) {
            continue;
        }
        let holes_written =
            crate::run::compare::holes_written(inner, &expected.addressed, GUARD_BYTES);
        if holes_written > 0 {
            notes.push(format!(
                "{}: wrote {holes_written} unaddressed byte(s) inside TotalTensorSizeInBytes (allowed)",
                output_field(i)
            ));
        }
    }
    drop(comparison);
    if problems.is_empty() {
        Verdict::Pass
    } else {
        problems.dedup();
        fail(problems.join(", "), details)
    }
}

/// The case's own `expected:` values must be what the oracle computes.
fn check_stored_expected_values(case: &Case, reference: &[OracleOutput]) -> Option<Verdict> {
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
pub fn level_skip_reason(
    backend: &dyn Backend,
    case: &Case,
    options: &RunOptions,
) -> Option<String> {
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
    }
    if let Some(reason) = not_alone_reason(case, level) {
        return Some(reason);
    }
    if !case.rejection_depends_on_level() && level < stored_level {
        return Some(format!(
            "needs feature level {stored_level}; running at {level}"
        ));
    }
    None
}

/// A must-reject case does not run where a level's table (or availability) rejects it too:
/// a backend rejecting it for that would pass without testing its rule. (Rules no table
/// decides break or hold at every level alike; the corpus integrity test keeps the corpus's
/// cases free of them.)
fn not_alone_reason(case: &Case, level: FeatureLevel) -> Option<String> {
    let Expectation::Reject { rule } = &case.expect else {
        return None;
    };
    let others: Vec<String> = broken_rules(&case.op, level)
        .into_iter()
        .map(|v| v.rule)
        .filter(|r| r != rule && dmlcts_oracle::spec::depends_on_feature_level(r))
        .collect();
    (!others.is_empty()).then(|| {
        format!(
            "breaks {} as well as {rule} at {level}; runs only where {rule} is broken alone",
            others.join(", ")
        )
    })
}

/// Tallies what an available backend did with the cases within the running level, so that
/// a run in which it skipped every one of them fails instead of passing on nothing (a
/// backend whose `data_types()` is empty, or that calls everything unsupported). Cases
/// outside the level, an unavailable backend and a run that selected no case do not count.
#[derive(Debug, Default)]
pub(crate) struct SkipCheck {
    ran: usize,
    skipped: BTreeMap<String, usize>,
}

impl SkipCheck {
    /// A case within the running level that the backend ran.
    pub(crate) fn ran(&mut self) {
        self.ran += 1;
    }

    /// A case within the running level that the backend skipped, for `reason`.
    pub(crate) fn skipped(&mut self, reason: &str) {
        *self.skipped.entry(reason.to_string()).or_default() += 1;
    }

    /// The run's failure, when the backend skipped every case it could have run.
    pub(crate) fn failure(&self, backend_name: &str) -> Option<String> {
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
        bounded(s.to_string())
    } else if let Some(s) = payload.downcast_ref::<String>() {
        bounded(s.clone())
    } else {
        "(a panic without a message)".to_string()
    }
}
