//! Fuzzed property runs: random valid and near-miss cases through the same runner as the
//! corpus, plus invariants checked on the backend alone (join of split is the identity;
//! Slice1 reversing every dimension twice is the identity). The first failure is shrunk by
//! proptest and saved as a corpus case that replays with `cargo xtask conformance --cases`.

use crate::case::{Case, Expectation, cases_to_yaml};
use crate::data::{logical_elements, seed_from_name};
use crate::runner::{RunOptions, Status, run_case};
use crate::strategies::{near_miss_case, valid_case};
use dmlcts_oracle::execute as oracle_execute;
use dmlcts_tensor::{
    Backend, JoinDesc, OperatorDesc, OperatorKind, OutputBinding, Slice1Desc, TensorDesc,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mix {
    /// 70% valid cases, 30% near misses.
    Both,
    ValidOnly,
    InvalidOnly,
}

#[derive(Clone, Debug)]
pub struct FuzzOptions {
    pub cases: u32,
    pub seed: u64,
    pub op: Option<OperatorKind>,
    pub mix: Mix,
    pub out_dir: PathBuf,
    /// Shown in the saved file and the replay command.
    pub backend_name: String,
}

/// The minimal failing case, where it was saved, and how to replay it.
#[derive(Clone, Debug)]
pub struct FuzzFailure {
    pub case: Case,
    pub report: String,
    pub path: PathBuf,
    pub replay: String,
}

#[derive(Clone, Debug)]
pub struct FuzzOutcome {
    /// Cases generated and checked before the first failure (or all of them).
    pub cases_run: u64,
    pub elapsed: Duration,
    pub failure: Option<FuzzFailure>,
    /// Why proptest gave up without a verdict (never expected: no case is rejected).
    pub aborted: Option<String>,
}

impl FuzzOutcome {
    pub fn cases_per_second(&self) -> f64 {
        self.cases_run as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// The case strategy for the options.
pub fn case_strategy(op: Option<OperatorKind>, mix: Mix) -> BoxedStrategy<Case> {
    match mix {
        Mix::ValidOnly => valid_case(op).boxed(),
        Mix::InvalidOnly => near_miss_case(op).boxed(),
        Mix::Both => prop_oneof![7 => valid_case(op), 3 => near_miss_case(op)].boxed(),
    }
}

/// A check's failure: the report, and the case that shows it when replayed (the case
/// itself, or the derived one an invariant ran).
pub struct CheckFailure {
    pub report: String,
    pub case: Box<Case>,
}

/// Everything the fuzzer checks on one case.
pub fn check_case(backend: &dyn Backend, case: &Case) -> Result<(), CheckFailure> {
    let result = run_case(backend, case, &RunOptions::default());
    if result.status == Status::Failed {
        return Err(CheckFailure {
            report: result.failure_report(),
            case: Box::new(case.clone()),
        });
    }
    if result.status != Status::Passed || case.expect != Expectation::Accept {
        return Ok(());
    }
    match &case.op {
        OperatorDesc::Split(_) => join_of_split_is_identity(backend, case),
        OperatorDesc::Slice1(_) => reversing_twice_is_identity(backend, case),
        OperatorDesc::Join(_) => Ok(()),
    }
}

/// Executes on the backend into plain buffers of exactly TotalTensorSizeInBytes.
fn run_plain(
    backend: &dyn Backend,
    op: &OperatorDesc,
    inputs: &[&[u8]],
) -> Result<Vec<Vec<u8>>, String> {
    let compiled = backend.compile(op).map_err(|r| format!("rejected: {r}"))?;
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
    Ok(outputs)
}

fn invariant_failure(name: &str, invariant: &str, derived: Case, detail: String) -> CheckFailure {
    CheckFailure {
        report: format!("FAIL {name}\n  check: invariant: {invariant}\n  {detail}\n"),
        case: Box::new(derived),
    }
}

fn derived_case(name: String, op: OperatorDesc, inputs: Vec<Vec<u8>>) -> Case {
    crate::strategies::case_for(&name, op, 0).with_inputs(inputs)
}

fn join_of_split_is_identity(backend: &dyn Backend, case: &Case) -> Result<(), CheckFailure> {
    let OperatorDesc::Split(split) = &case.op else {
        return Ok(());
    };
    let input_desc = &split.input_tensor;
    let Ok(input) = case.inputs[0].materialize(input_desc) else {
        return Ok(());
    };
    let Ok(pieces) = run_plain(backend, &case.op, &[&input]) else {
        return Ok(());
    };
    // The split's input may broadcast, which an output may not: join into a packed tensor.
    let whole = TensorDesc::packed(input_desc.data_type, &input_desc.sizes);
    let join = OperatorDesc::Join(JoinDesc {
        input_tensors: split.output_tensors.clone(),
        output_tensor: whole.clone(),
        axis: split.axis,
    });
    let piece_refs: Vec<&[u8]> = pieces.iter().map(Vec::as_slice).collect();
    let derived = || {
        derived_case(
            format!("{}.join_of_split", case.name),
            join.clone(),
            pieces.clone(),
        )
    };
    match run_plain(backend, &join, &piece_refs) {
        Err(e) => Err(invariant_failure(
            &case.name,
            "join of split is the identity",
            derived(),
            format!("the join failed: {e}"),
        )),
        Ok(joined) => {
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
    let invariant = "Slice1 reversing every dimension twice is the identity";
    let once = run_plain(backend, &first, &[&input]).map_err(|e| {
        invariant_failure(
            &case.name,
            invariant,
            derived_case(
                format!("{}.reverse", case.name),
                first.clone(),
                vec![input.clone()],
            ),
            e,
        )
    })?;
    let second = reverse(&packed);
    let twice = run_plain(backend, &second, &[&once[0]]).map_err(|e| {
        invariant_failure(
            &case.name,
            invariant,
            derived_case(
                format!("{}.reverse_again", case.name),
                second.clone(),
                vec![once[0].clone()],
            ),
            e,
        )
    })?;
    if logical_elements(&packed, &twice[0]) == logical_elements(input_desc, &input) {
        return Ok(());
    }
    // Whichever reversal disagrees with the oracle is the case to keep.
    let first_is_right = oracle_execute(&first, &[&input]).is_ok_and(|r| {
        logical_elements(&packed, &r[0].bytes) == logical_elements(&packed, &once[0])
    });
    let derived = if first_is_right {
        derived_case(
            format!("{}.reverse_again", case.name),
            second,
            vec![once[0].clone()],
        )
    } else {
        derived_case(format!("{}.reverse", case.name), first, vec![input])
    };
    Err(invariant_failure(
        &case.name,
        invariant,
        derived,
        "reversing twice did not give back the input".to_string(),
    ))
}

/// Runs the fuzzer. `progress(cases_so_far, elapsed)` is called about once a second.
pub fn fuzz(
    backend: &dyn Backend,
    options: &FuzzOptions,
    mut progress: impl FnMut(u64, Duration),
) -> FuzzOutcome {
    let config = Config {
        cases: options.cases,
        failure_persistence: None,
        // Enough to reach a small case; more only polishes seeds and indices.
        max_shrink_iters: 4096,
        ..Config::default()
    };
    let mut seed = [0u8; 32];
    seed[..8].copy_from_slice(&options.seed.to_le_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let strategy = case_strategy(options.op, options.mix);
    let started = Instant::now();
    let checked = Cell::new(0u64);
    let first_failure_at = Cell::new(None::<u64>);
    let last_report = Cell::new(Instant::now());
    let progress = RefCell::new(&mut progress);
    let result = runner.run(&strategy, |case| {
        if first_failure_at.get().is_none() {
            checked.set(checked.get() + 1);
        }
        if last_report.get().elapsed() >= Duration::from_secs(1) {
            last_report.set(Instant::now());
            (progress.borrow_mut())(checked.get(), started.elapsed());
        }
        match check_case(backend, &case) {
            Ok(()) => Ok(()),
            Err(failure) => {
                if first_failure_at.get().is_none() {
                    first_failure_at.set(Some(checked.get()));
                }
                Err(TestCaseError::fail(failure.report))
            }
        }
    });
    let elapsed = started.elapsed();
    let (failure, aborted) = match result {
        Ok(()) => (None, None),
        Err(TestError::Abort(reason)) => (None, Some(reason.to_string())),
        Err(TestError::Fail(_, minimal)) => (Some(save_failure(backend, options, minimal)), None),
    };
    FuzzOutcome {
        cases_run: first_failure_at.get().unwrap_or(checked.get()),
        elapsed,
        failure,
        aborted,
    }
}

/// Re-checks the minimal case and writes the case that shows the failure.
fn save_failure(backend: &dyn Backend, options: &FuzzOptions, minimal: Case) -> FuzzFailure {
    let (report, mut case) = match check_case(backend, &minimal) {
        // The in-memory case has no file to replay; the saved file's replay is given instead.
        Err(failure) => (
            failure
                .report
                .lines()
                .filter(|l| !l.trim_start().starts_with("replay:"))
                .collect::<Vec<_>>()
                .join("\n"),
            *failure.case,
        ),
        Ok(()) => (
            "the shrunk case passed when re-checked (a nondeterministic backend?)".to_string(),
            minimal,
        ),
    };
    let text = cases_to_yaml(std::slice::from_ref(&case));
    let id = seed_from_name(&text) & 0xffff_ffff;
    let backend: String = options
        .backend_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    case.name = format!("regression.{backend}.{}.{id:08x}", case.op.kind());
    case.description = Some(format!(
        "found by cargo xtask fuzz --backend {} --seed {}",
        options.backend_name, options.seed
    ));
    case.tags = vec!["regression".to_string()];
    // Stored expected values make the file readable; the oracle recomputes them anyway.
    if case.expect == Expectation::Accept
        && let Ok(inputs) = materialize_all(&case)
    {
        let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
        if let Ok(outputs) = oracle_execute(&case.op, &refs) {
            case.expected = case
                .op
                .outputs()
                .iter()
                .zip(&outputs)
                .map(|((_, d), o)| Some(logical_elements(d, &o.bytes)))
                .collect();
        }
    }
    let path = options.out_dir.join(format!("{}.yaml", case.name));
    let header = format!(
        "# A minimal failing case, shrunk by proptest and saved by `cargo xtask fuzz`.\n\
         # What failed when it was found:\n{}\n",
        report
            .lines()
            .map(|l| format!("#   {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let body = header + &cases_to_yaml(std::slice::from_ref(&case));
    let written =
        std::fs::create_dir_all(&options.out_dir).and_then(|()| std::fs::write(&path, body));
    let replay = format!(
        "cargo xtask conformance --backend {} --cases {}",
        options.backend_name,
        path.display()
    );
    FuzzFailure {
        case,
        report: match written {
            Ok(()) => report,
            Err(e) => format!("{report}\n(could not write {}: {e})", path.display()),
        },
        path,
        replay,
    }
}

fn materialize_all(case: &Case) -> Result<Vec<Vec<u8>>, String> {
    case.op
        .inputs()
        .iter()
        .zip(&case.inputs)
        .map(|((_, d), data)| data.materialize(d))
        .collect()
}

/// The folder regressions go to by default.
pub fn default_out_dir(root: &Path) -> PathBuf {
    root.join("cases").join("regressions")
}
