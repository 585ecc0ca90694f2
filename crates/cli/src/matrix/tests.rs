//! The matrix command's tests: default and skipped columns, unavailable backends, lanes.

use super::*;
use dmlcts_harness::report::matrix::Matrix;

fn host(ready: fn() -> Vec<String>) -> Host {
    Host {
        program: "dmlcts",
        default_backends_file: PathBuf::from("/nonexistent/backends.yaml"),
        default_fuzz_out: PathBuf::from("cases/regressions"),
        directml: |_| None,
        directml_names: || vec![("directml".to_string(), "DirectML".to_string())],
        directml_ready: ready,
    }
}

#[test]
fn the_default_columns_are_every_listed_backend_with_each_directml_version_set_up() {
    let names = |wanted: Vec<Wanted>| -> Vec<(String, bool)> {
        wanted
            .into_iter()
            .map(|w| (w.name, w.unavailable.is_some()))
            .collect()
    };
    let host = host(|| vec!["directml@1.9.0".to_string(), "directml@1.15.4".to_string()]);
    assert_eq!(
        names(default_backends(&host, None).unwrap()),
        [
            ("cpu".to_string(), false),
            ("oracle".to_string(), false),
            ("wgpu".to_string(), false),
            ("directml@1.9.0".to_string(), false),
            ("directml@1.15.4".to_string(), false),
            ("cpu-process".to_string(), false),
            ("tract".to_string(), false),
        ]
    );
    // None set up: one column saying so, never a silent gap.
    let host = super::tests::host(Vec::new);
    let wanted = default_backends(&host, None).unwrap();
    let directml = wanted.iter().find(|w| w.name == "directml").unwrap();
    assert!(
        directml
            .unavailable
            .as_deref()
            .unwrap()
            .starts_with("no DirectML version is set up here"),
        "{directml:?}"
    );
}

#[derive(clap::Parser)]
struct Words {
    #[command(flatten)]
    args: MatrixArgs,
}

/// The doc cases on the oracle and on a backend that cannot start: the exit status.
fn status_with(words: &[&str], absent_named: bool) -> (i32, Matrix) {
    use clap::Parser;
    let args = Words::parse_from(["matrix", "--filter", "doc."].iter().chain(words)).args;
    let host = host(Vec::new);
    let wanted = [("oracle", true), ("absent", absent_named)].map(|(name, named)| Wanted {
        name: name.to_string(),
        named,
        unavailable: None,
    });
    let (matrix, verdict) = matrix_with(
        &args,
        "test",
        "dmlcts",
        &|request| match request.name.as_str() {
            "absent" => Err("cannot start here".to_string()),
            _ => resolve(&host, request),
        },
        &wanted,
        Corpus::embedded(),
        None,
    )
    .unwrap();
    (i32::from(crate::exit_status(&Ok(verdict))), matrix)
}

#[test]
fn a_backend_that_cannot_start_is_a_column_saying_why_and_fails_only_when_named_or_required() {
    let (status, matrix) = status_with(&[], false);
    assert_eq!(status, 0);
    assert_eq!(matrix.rows.len(), 8);
    assert_eq!(matrix.totals(0).passed, 8);
    assert_eq!(
        matrix.columns[1].unavailable.as_deref(),
        Some("cannot start here")
    );
    assert_eq!(matrix.totals(1).skipped, 8);
    assert_eq!(
        matrix.rows[0].cells[1].reason,
        "backend absent unavailable: cannot start here"
    );
    assert_eq!(status_with(&[], true).0, 1);
    assert_eq!(status_with(&["--require-all"], false).0, 1);
}

#[test]
fn skip_backend_leaves_out_exactly_the_named_default_columns_and_refuses_other_names() {
    let defaults = ["cpu", "oracle", "iree-vulkan", "iree-vulkan@swiftshader"].map(|name| Wanted {
        name: name.to_string(),
        named: false,
        unavailable: None,
    });
    let names = |skipped: &[&str]| {
        let skipped: Vec<String> = skipped.iter().map(|s| s.to_string()).collect();
        skip_backends(defaults.to_vec(), &skipped)
            .map(|kept| kept.into_iter().map(|w| w.name).collect::<Vec<_>>())
    };
    assert_eq!(
        names(&["iree-vulkan@swiftshader"]).unwrap(),
        ["cpu", "oracle", "iree-vulkan"]
    );
    assert_eq!(
        names(&[]).unwrap(),
        ["cpu", "oracle", "iree-vulkan", "iree-vulkan@swiftshader"]
    );
    match names(&["iree-vulkan@lavapipe"]) {
        Err(CommandError::Usage(message)) => assert_eq!(
            message,
            "--skip-backend iree-vulkan@lavapipe: not one of the default columns (cpu, \
             oracle, iree-vulkan, iree-vulkan@swiftshader)"
        ),
        other => panic!("{other:?}"),
    }
}

fn wants(names: &[&str]) -> Vec<Wanted> {
    (names.iter())
        .map(|name| Wanted {
            name: name.to_string(),
            named: true,
            unavailable: None,
        })
        .collect()
}

#[test]
fn columns_of_one_backend_share_a_lane_in_their_order() {
    let wanted = wants(&[
        "cpu",
        "wgpu",
        "directml@1.9.0",
        "directml@1.15.4",
        "iree-vulkan",
        "iree-cpu",
        "iree-vulkan@lavapipe25",
        "wgpu@swiftshader",
    ]);
    assert_eq!(
        lanes(&wanted),
        [vec![0], vec![1, 7], vec![2, 3], vec![4, 6], vec![5]]
    );
}

/// Which columns' backends exist at once: each is made when its column starts and dropped
/// when its run ends.
#[derive(Default)]
struct Alive {
    names: std::sync::Mutex<Vec<String>>,
    /// Every column started so far.
    started: std::sync::Mutex<Vec<String>>,
    changed: std::sync::Condvar,
    /// The most columns of one backend (the name before `@`) alive at once, and the most
    /// columns alive at once.
    most_of_one_backend: AtomicUsize,
    most: AtomicUsize,
}

impl Alive {
    fn born(&self, name: &str) {
        self.started.lock().unwrap().push(name.to_string());
        let mut names = self.names.lock().unwrap();
        names.push(name.to_string());
        let same = (names.iter())
            .filter(|n| base_name(n) == base_name(name))
            .count();
        self.most_of_one_backend.fetch_max(same, Ordering::SeqCst);
        self.most.fetch_max(names.len(), Ordering::SeqCst);
        self.changed.notify_all();
    }

    fn died(&self, name: &str) {
        let mut names = self.names.lock().unwrap();
        names.retain(|n| n != name);
    }

    /// Waits (at most 10 s) until `other`'s column has started.
    fn wait_for(&self, other: &str) {
        let names = self.names.lock().unwrap();
        let _ = self
            .changed
            .wait_timeout_while(names, Duration::from_secs(10), |_| {
                !self.started.lock().unwrap().iter().any(|n| n == other)
            })
            .unwrap();
    }
}

/// The oracle as a column's backend, alive from its column's start to its run's end; its
/// first compile waits for `partner`'s column to start.
struct Meeting<'a> {
    name: String,
    partner: Option<&'static str>,
    alive: &'a Alive,
    oracle: std::sync::Arc<dyn dmlcts_tensor::Backend>,
}

impl Drop for Meeting<'_> {
    fn drop(&mut self) {
        self.alive.died(&self.name);
    }
}

impl dmlcts_tensor::Backend for Meeting<'_> {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn feature_level(&self) -> FeatureLevel {
        self.oracle.feature_level()
    }
    fn compile(
        &self,
        op: &dmlcts_tensor::OperatorDesc,
    ) -> Result<Box<dyn dmlcts_tensor::CompiledOperator + '_>, dmlcts_tensor::CompileError> {
        if let Some(partner) = self.partner {
            self.alive.wait_for(partner);
        }
        self.oracle.compile(op)
    }
}

/// Runs the doc cases on columns `a@1`, `a@2` and `b` with `--jobs JOBS`; where they
/// `meet`, `a@1` waits for `b` to start and `b` for `a@1`, so both lanes must run at once.
/// Returns the matrix and the most columns of one backend, and in all, alive at once.
fn meeting_matrix(jobs: &str, meet: bool) -> (Matrix, usize, usize) {
    use clap::Parser;
    let args = Words::parse_from(["matrix", "--filter", "doc.", "--jobs", jobs]).args;
    let host = host(Vec::new);
    let alive: &'static Alive = Box::leak(Box::default());
    let resolver = |request: &BackendRequest| {
        let oracle = resolve(
            &host,
            &BackendRequest {
                name: "oracle".to_string(),
                ..request.clone()
            },
        )?;
        let partner = match request.name.as_str() {
            "a@1" if meet => Some("b"),
            "b" if meet => Some("a@1"),
            _ => None,
        };
        alive.born(&request.name);
        Ok(Resolved {
            backend: std::sync::Arc::new(Meeting {
                name: request.name.clone(),
                partner,
                alive,
                oracle: oracle.backend,
            }),
            at_level: None,
            not_ready: None,
        })
    };
    let wanted = wants(&["a@1", "a@2", "b"]);
    let (matrix, verdict) = matrix_with(
        &args,
        "test",
        "dmlcts",
        &resolver,
        &wanted,
        Corpus::embedded(),
        None,
    )
    .unwrap();
    assert_eq!(i32::from(crate::exit_status(&Ok(verdict))), 0);
    let most_of_one = alive.most_of_one_backend.load(Ordering::SeqCst);
    (matrix, most_of_one, alive.most.load(Ordering::SeqCst))
}

#[test]
fn with_two_jobs_two_lanes_run_at_once_but_never_two_columns_of_one_backend() {
    let (matrix, most_of_one, most) = meeting_matrix("2", true);
    assert_eq!((most_of_one, most), (1, 2));
    // The columns in the order asked, each with every doc case passed.
    let names: Vec<&str> = (matrix.columns.iter())
        .map(|c| c.backend.as_str())
        .collect();
    assert_eq!(names, ["a@1", "a@2", "b"]);
    for column in 0..3 {
        assert_eq!(matrix.totals(column).passed, 8);
    }
}

#[test]
fn with_one_job_the_columns_run_one_at_a_time() {
    let (_, most_of_one, most) = meeting_matrix("1", false);
    assert_eq!((most_of_one, most), (1, 1));
}

#[test]
fn expectations_files_are_named_by_the_backend_before_its_version() {
    assert_eq!(base_name("directml@1.15.4"), "directml");
    assert_eq!(base_name("onnxruntime"), "onnxruntime");
}
