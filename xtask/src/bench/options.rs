//! `cargo xtask bench`'s command line, and the rows of the 64 MiB table it selects.

use super::workloads::Workload;
use clap::{ArgAction, Args, ValueEnum};
use dmlcts_tensor::DataType;

/// `cargo xtask bench [--runs N] [--no-oracle] [--json FILE] [--filter TEXT] [--threads N]
/// [--backend cpu|wgpu] [--adapter TEXT]`, or `cargo xtask bench --fuzz [--runs N] [--json
/// FILE]`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Rounds of each measurement (0 counts as 1)
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = at_least_one)]
    pub runs: usize,
    /// Leave the oracle out (its column of seconds)
    #[arg(long = "no-oracle", action = ArgAction::SetFalse)]
    pub oracle: bool,
    /// Also write the figures to FILE as JSON
    #[arg(long, value_name = "FILE", allow_hyphen_values = true)]
    pub json: Option<String>,
    /// Only the rows whose label contains TEXT: "WORKLOAD TYPE" in the 64 MiB table (e.g.
    /// "join 4, axis 0 FLOAT32"), "scaling WORKLOAD TYPE SIZE" in the scaling table; with
    /// --fuzz, the parts whose name contains TEXT ("profile", a planted bug's name, "data sets")
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    pub filter: Option<String>,
    /// The backend measured
    #[arg(long, value_enum, default_value_t = Backend::Cpu)]
    pub backend: Backend,
    /// With --backend wgpu: the adapter whose name contains TEXT
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    pub adapter: Option<String>,
    /// Threads for the CPU backend and the parallel reference copies (default: every core;
    /// 1 leaves out the parallel copies). On a machine shared with other work, one thread
    /// keeps a descheduled helper thread out of every timing
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    pub threads: Option<usize>,
    /// Fuzz campaigns' speed with a planted bug, next to the clean campaign (CPU backend;
    /// --runs and --json apply)
    #[arg(long)]
    pub fuzz: bool,
}

/// The backends `bench` measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    Cpu,
    Wgpu,
}

/// `--runs`, `--threads`: a count, at least 1 (0 is taken as 1).
fn at_least_one(text: &str) -> Result<usize, String> {
    text.parse::<usize>()
        .map(|n| n.max(1))
        .map_err(|_| "expected a number".to_string())
}

impl BenchArgs {
    /// Whether `--filter` leaves out the row named `label`.
    pub(super) fn filtered_out(&self, label: &str) -> bool {
        self.filter
            .as_ref()
            .is_some_and(|f| !label.contains(f.as_str()))
    }

    /// The 64 MiB table's rows `--filter` lets through, in table order: each workload in
    /// FLOAT32, FLOAT16 and UINT8.
    pub(super) fn selected_rows(&self) -> Vec<(Workload, DataType)> {
        [DataType::Float32, DataType::Float16, DataType::Uint8]
            .into_iter()
            .flat_map(|data_type| Workload::ALL.into_iter().map(move |w| (w, data_type)))
            .filter(|(workload, data_type)| {
                !self.filtered_out(&format!("{} {}", workload.name(), data_type))
            })
            .collect()
    }
}
