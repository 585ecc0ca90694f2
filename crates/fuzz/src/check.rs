//! What the fuzzer checks on one case: the harness's runner (the same path as the corpus), on
//! the case's own inputs and on further data sets for one compile, plus invariants checked on
//! the backend alone for valid cases (join of split is the identity; Slice1 reversing every
//! dimension twice is the identity), where the derived descriptor is valid at the case's level.

use crate::signature::CheckKind;
use crate::strategies::{case_at, random_inputs};
use dmlcts_harness::corpus::data::{TensorData, logical_elements, too_large};
use dmlcts_harness::run::profile::Stage;
use dmlcts_harness::session::{Counted, Session, SessionOptions};
use dmlcts_harness::{Case, Expectation, Status};
use dmlcts_oracle::{execute as oracle_execute, validate};
use dmlcts_tensor::{
    Backend, CompileError, JoinDesc, OperatorDesc, OutputBinding, Slice1Desc, TensorDesc,
};

use std::sync::Arc;

/// Which cases a campaign generates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mix {
    /// 70% valid cases, 30% near misses.
    Both,
    ValidOnly,
    InvalidOnly,
}

/// A check's failure: the report, and the case that shows it when replayed (the case
/// itself, with the data set that failed, or the derived one an invariant ran).
pub struct CheckFailure {
    pub kind: CheckKind,
    pub report: String,
    pub case: Box<Case>,
    /// The seed of the data set that failed, when not the case's own inputs: its descriptor,
    /// shrunk, is run with inputs from this seed.
    pub data_seed: Option<u64>,
}

/// A check that did not fail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Checked {
    /// Passed.
    Passed,
    /// Not run, for this reason: the backend cannot run the descriptor (`unsupported`, a
    /// type it does not claim), or the runner cannot here (too large to hold). A case outside
    /// the level it is judged at is the campaign's own choice and counts as `Passed`, as the
    /// conformance runner leaves it out of its skipped-everything check.
    Skipped { reason: String },
    /// A must-reject case the backend accepted, breaking only rules it does not enforce (its
    /// validation profile, or the expectations file's `not_enforced`): `rule` is the first.
    Informational { rule: String, report: String },
}

/// A session on one device (the campaign chose it for the case's level): a case at the
/// device's own level is held strictly to it, as `Devices` does for the corpus; `not_enforced`
/// is the expectations file's rules for this backend.
fn session_on<'a>(backend: &'a dyn Backend, not_enforced: &[String]) -> Session<'a> {
    Session::new(
        Arc::new(backend),
        None,
        SessionOptions {
            not_enforced: not_enforced.to_vec(),
            ..SessionOptions::default()
        },
    )
}

/// Everything the fuzzer checks on one case. `not_enforced`: rules the expectations file
/// says this backend does not enforce, besides its own validation profile.
pub fn check_case(
    backend: &dyn Backend,
    case: &Case,
    not_enforced: &[String],
) -> Result<Checked, CheckFailure> {
    check_case_data_sets(backend, case, &[], not_enforced).0
}

/// `check_case` on the case's own inputs and then on a data set per seed in `data_seeds`,
/// all on one compile of its descriptor; and how many data sets were checked (each counts
/// as a case). The invariants run on its own inputs.
pub fn check_case_data_sets(
    backend: &dyn Backend,
    case: &Case,
    data_seeds: &[u64],
    not_enforced: &[String],
) -> (Result<Checked, CheckFailure>, u64) {
    check_in_session(&session_on(backend, not_enforced), case, data_seeds)
}

/// The checks of one case through the session's step (the corpus's path): its device and
/// level, the verdict on each data set, what it counts as; then the invariants on the device.
pub(crate) fn check_in_session(
    session: &Session<'_>,
    case: &Case,
    data_seeds: &[u64],
) -> (Result<Checked, CheckFailure>, u64) {
    let generation = dmlcts_harness::run::profile::stage(Stage::Generation);
    let data_sets: Vec<Vec<TensorData>> = data_seeds
        .iter()
        .map(|&seed| random_inputs(&case.op, seed))
        .collect();
    drop(generation);
    let step = session.step_with_data_sets(case, &data_sets);
    let results = step.results;
    let checked = results.len() as u64;
    if case.is_group()
        && let Some(failed) = results.first().filter(|r| r.status == Status::Failed)
    {
        return (Err(group_failure(session, case, failed)), checked);
    }
    if let Some((k, failed)) =
        (results.iter().enumerate()).find(|(_, r)| r.status == Status::Failed)
    {
        let mut failing = case.clone();
        let data_seed = k.checked_sub(1).map(|k| data_seeds[k]);
        if let Some(k) = k.checked_sub(1) {
            failing.inputs = data_sets[k].clone();
        }
        let failure = CheckFailure {
            kind: CheckKind::of(failed),
            report: failed.failure_report(),
            case: Box::new(failing),
            data_seed,
        };
        return (Err(failure), checked);
    }
    let result = &results[0];
    if result.status == Status::Informational {
        let rule = result
            .reason
            .rsplit_once("rule ")
            .map(|(_, rule)| rule.to_string())
            .unwrap_or_default();
        let report = format!(
            "INFORMATIONAL {}\n  {}\n{}",
            result.name, result.reason, result.details
        );
        return (Ok(Checked::Informational { rule, report }), checked);
    }
    if let Counted::SkippedByBackend(reason) = step.counted {
        return (Ok(Checked::Skipped { reason }), checked);
    }
    // A sibling group's checks are its steps' (the invariants are for one descriptor).
    if result.status != Status::Passed || case.expect != Expectation::Accept || case.is_group() {
        return (Ok(Checked::Passed), checked);
    }
    let (device, _) = session.device_for(case);
    let _invariants = dmlcts_harness::run::profile::stage(Stage::Invariants);
    (invariants(session, device.as_ref(), case), checked)
}

/// The invariants run on cases up to this many elements: the large tier's cases (past 2^20)
/// are checked by the runner alone, as the invariants would double their cost for what the
/// large tier's Join and Slice1 cases check directly.
/// A sibling group's failure: the group's own, unless its failing step fails the same way
/// run alone right after, which makes it that step's failure as a plain case (a bug of one
/// descriptor, bucketed and known as such), not one of state across the group.
fn group_failure(
    session: &Session<'_>,
    group: &Case,
    failed: &dmlcts_harness::CaseResult,
) -> CheckFailure {
    let kind = CheckKind::of(failed);
    let step = (0..group.steps.len())
        .find(|i| failed.reason.starts_with(&format!("step {} of ", i + 1)))
        .map(|i| &group.steps[i]);
    if let Some(step) = step {
        let alone = session.step(step);
        if alone.status == Status::Failed && CheckKind::of(&alone) == kind {
            return CheckFailure {
                kind,
                report: alone.failure_report(),
                case: Box::new(step.clone()),
                data_seed: None,
            };
        }
    }
    CheckFailure {
        kind,
        report: failed.failure_report(),
        case: Box::new(group.clone()),
        data_seed: None,
    }
}

const INVARIANT_MAX_ELEMENTS: u128 = 1 << 20;

/// The invariants of a valid case that passed, on the device it ran on.
fn invariants(
    session: &Session<'_>,
    backend: &dyn Backend,
    case: &Case,
) -> Result<Checked, CheckFailure> {
    let tensors = case
        .op
        .input_tensors()
        .iter()
        .chain(case.op.output_tensors());
    if tensors.map(|t| t.element_count()).max() > Some(INVARIANT_MAX_ELEMENTS) {
        return Ok(Checked::Passed);
    }
    let invariant = match &case.op {
        OperatorDesc::Split(_) => join_of_split_is_identity(backend, case),
        OperatorDesc::Slice1(_) => reversing_twice_is_identity(backend, case),
        OperatorDesc::Join(_) => Ok(()),
    };
    // The derived case the backend got wrong, run as a case of its own: its failure is the
    // real one (wrong values of a reversal, a rejected join), so it buckets with the same bug
    // found directly.
    invariant.map(|()| Checked::Passed).map_err(|failure| {
        let rerun = session.step(&failure.case);
        if rerun.status == Status::Failed {
            CheckFailure {
                kind: CheckKind::of(&rerun),
                report: format!("{}{}", failure.report, rerun.failure_report()),
                case: failure.case,
                data_seed: None,
            }
        } else {
            failure
        }
    })
}

/// A panic anywhere in the checks (the invariants call the backend directly) is a crash.
pub(crate) fn checked(
    session: &Session<'_>,
    case: &Case,
    data_seeds: &[u64],
) -> (Result<Checked, CheckFailure>, u64) {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        check_in_session(session, case, data_seeds)
    })) {
        Ok(result) => result,
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(no message)".to_string());
            let failure = CheckFailure {
                kind: CheckKind::Crash,
                report: format!(
                    "FAIL {}\n  check: panicked\n  panic: {message}\n",
                    case.name
                ),
                case: Box::new(case.clone()),
                data_seed: None,
            };
            (Err(failure), 1)
        }
    }
}

/// Runs `op` on the backend into plain buffers of exactly TotalTensorSizeInBytes. `Ok(None)`:
/// the backend says it cannot run it (`unsupported`), so an invariant that needs it goes
/// unchecked; a case a backend cannot run is never a failure.
fn run_plain(
    backend: &dyn Backend,
    op: &OperatorDesc,
    inputs: &[&[u8]],
) -> Result<Option<Vec<Vec<u8>>>, String> {
    let compiled = match backend.compile(op) {
        Ok(compiled) => compiled,
        Err(CompileError::Unsupported(_)) => return Ok(None),
        Err(r) => return Err(format!("rejected: {r}")),
    };
    let mut outputs: Vec<Vec<u8>> = op
        .outputs()
        .iter()
        .map(|(_, d)| vec![0u8; d.total_tensor_size_in_bytes as usize])
        .collect();
    let mut bindings: Vec<OutputBinding<'_>> = outputs
        .iter_mut()
        .map(|b| OutputBinding::whole(b))
        .collect();
    compiled.execute(inputs, &mut bindings)?;
    Ok(Some(outputs))
}

fn invariant_failure(name: &str, invariant: &str, derived: Case, detail: String) -> CheckFailure {
    CheckFailure {
        kind: CheckKind::Invariant,
        report: format!("FAIL {name}\n  check: invariant: {invariant}\n  {detail}\n"),
        case: Box::new(derived),
        data_seed: None,
    }
}

/// A derived case, at the level of the case it comes from.
fn derived_case(case: &Case, suffix: &str, op: OperatorDesc, inputs: Vec<Vec<u8>>) -> Case {
    let name = format!("{}.{suffix}", case.name);
    case_at(&name, op, 0, case.feature_level).with_inputs(inputs)
}

/// Whether an invariant's derived descriptor is worth running: valid at the case's level (a
/// Join of a 2-D Split does not exist at 3_0) and small enough for plain buffers.
fn derivable(case: &Case, derived: &OperatorDesc) -> bool {
    validate(derived, case.feature_level).is_ok()
        && (derived.inputs().iter().chain(&derived.outputs()))
            .all(|(field, t)| too_large(field, t).is_none())
}

fn join_of_split_is_identity(backend: &dyn Backend, case: &Case) -> Result<(), CheckFailure> {
    let OperatorDesc::Split(split) = &case.op else {
        return Ok(());
    };
    let input_desc = &split.input_tensor;
    // The split's input may broadcast, which an output may not: join into a packed tensor.
    let whole = TensorDesc::packed(input_desc.data_type, &input_desc.sizes);
    let join = OperatorDesc::Join(JoinDesc {
        input_tensors: split.output_tensors.clone(),
        output_tensor: whole.clone(),
        axis: split.axis,
    });
    if !derivable(case, &join) {
        return Ok(());
    }
    let Ok(input) = case.inputs[0].materialize(input_desc) else {
        return Ok(());
    };
    let Ok(Some(pieces)) = run_plain(backend, &case.op, &[&input]) else {
        return Ok(());
    };
    let piece_refs: Vec<&[u8]> = pieces.iter().map(Vec::as_slice).collect();
    let derived = || derived_case(case, "join_of_split", join.clone(), pieces.clone());
    match run_plain(backend, &join, &piece_refs) {
        Err(e) => Err(invariant_failure(
            &case.name,
            "join of split is the identity",
            derived(),
            format!("the join failed: {e}"),
        )),
        Ok(None) => Ok(()),
        Ok(Some(joined)) => {
            if logical_elements(&whole, &joined[0]) == logical_elements(input_desc, &input) {
                Ok(())
            } else {
                Err(invariant_failure(
                    &case.name,
                    "join of split is the identity",
                    derived(),
                    "joining the split's outputs did not give back its input".to_string(),
                ))
            }
        }
    }
}

fn reversing_twice_is_identity(backend: &dyn Backend, case: &Case) -> Result<(), CheckFailure> {
    let OperatorDesc::Slice1(slice) = &case.op else {
        return Ok(());
    };
    let input_desc = &slice.input_tensor;
    let Ok(input) = case.inputs[0].materialize(input_desc) else {
        return Ok(());
    };
    let dims = input_desc.sizes.len();
    let packed = TensorDesc::packed(input_desc.data_type, &input_desc.sizes);
    let reverse = |from: &TensorDesc| {
        OperatorDesc::Slice1(Slice1Desc {
            input_tensor: from.clone(),
            output_tensor: packed.clone(),
            dimension_count: dims as u32,
            input_window_offsets: vec![0; dims],
            input_window_sizes: input_desc.sizes.clone(),
            input_window_strides: vec![-1; dims],
        })
    };
    let first = reverse(input_desc);
    if !derivable(case, &first) {
        return Ok(());
    }
    let invariant = "Slice1 reversing every dimension twice is the identity";
    let Some(once) = run_plain(backend, &first, &[&input]).map_err(|e| {
        invariant_failure(
            &case.name,
            invariant,
            derived_case(case, "reverse", first.clone(), vec![input.clone()]),
            e,
        )
    })?
    else {
        return Ok(());
    };
    let second = reverse(&packed);
    let Some(twice) = run_plain(backend, &second, &[&once[0]]).map_err(|e| {
        invariant_failure(
            &case.name,
            invariant,
            derived_case(case, "reverse_again", second.clone(), vec![once[0].clone()]),
            e,
        )
    })?
    else {
        return Ok(());
    };
    if logical_elements(&packed, &twice[0]) == logical_elements(input_desc, &input) {
        return Ok(());
    }
    // Whichever reversal disagrees with the oracle is the case to keep.
    let first_is_right = oracle_execute(&first, &[&input]).is_ok_and(|r| {
        logical_elements(&packed, &r[0].bytes) == logical_elements(&packed, &once[0])
    });
    let derived = if first_is_right {
        derived_case(case, "reverse_again", second, vec![once[0].clone()])
    } else {
        derived_case(case, "reverse", first, vec![input])
    };
    Err(invariant_failure(
        &case.name,
        invariant,
        derived,
        "reversing twice did not give back the input".to_string(),
    ))
}

pub fn materialize_all(case: &Case) -> Result<Vec<Vec<u8>>, String> {
    case.op
        .inputs()
        .iter()
        .zip(&case.inputs)
        .map(|((_, d), data)| data.materialize(d))
        .collect()
}
