//! `cargo xtask bench`: the CPU backend's throughput on 64 MiB tensors, next to the machine's
//! reference copies of the same bytes (memcpy on one thread, memcpy over every core in large
//! disjoint parts, and the same two with non-temporal stores; the fastest in each round is
//! "the best copy"), ndarray doing the same work, and the oracle, all in one process; then a
//! size-scaling table (4 KiB to 256 MiB) for the contiguous Join and the reversed Slice1.
//! GB/s = (bytes read + bytes written) / time. The reference copies of a workload move the
//! backend's own buffers (its inputs into its outputs, byte for byte), so they touch the same
//! memory. Methods run interleaved, round by round, each after a read that settles the caches;
//! each ratio is reported as the median with [min-max] of its per-round ratios.
//!
//! The files: `workloads` (the descriptors, their inputs, ndarray's same work), `references`
//! (the reference copies between the backend's own buffers), `rounds` (the settling read, the
//! interleaved rounds, the figures taken from them), `cpu` (the CPU backend's bench),
//! `report` (its table and JSON report), `scaling` (the size-scaling table), `wgpu`
//! (`--backend wgpu`) and `fuzz` (`--fuzz`: a campaign's speed with a planted bug, next to the
//! clean campaign).

mod cpu;
mod fuzz;
mod references;
mod report;
mod rounds;
mod scaling;
mod wgpu;
mod workloads;

use dmlcts_tensor::DataType;
use workloads::Workload;

struct Options {
    backend: String,
    adapter: Option<String>,
    runs: usize,
    oracle: bool,
    json: Option<String>,
    filter: Option<String>,
    fuzz: bool,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        backend: "cpu".to_string(),
        adapter: None,
        runs: 5,
        oracle: true,
        json: None,
        filter: None,
        fuzz: false,
    };
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let mut value = || iter.next().cloned().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--runs" => {
                options.runs = value()?.parse().map_err(|_| "--runs takes a number")?;
                options.runs = options.runs.max(1);
            }
            "--no-oracle" => options.oracle = false,
            "--fuzz" => options.fuzz = true,
            "--json" => options.json = Some(value()?),
            "--filter" => options.filter = Some(value()?),
            "--backend" => {
                let name = value()?;
                if name != "cpu" && name != "wgpu" {
                    return Err(format!("bench supports --backend cpu or wgpu (got {name})"));
                }
                options.backend = name;
            }
            "--adapter" => options.adapter = Some(value()?),
            other => return Err(format!("unknown option `{other}`")),
        }
    }
    Ok(options)
}

impl Options {
    /// Whether `--filter` leaves out the row named `label`.
    fn filtered_out(&self, label: &str) -> bool {
        self.filter
            .as_ref()
            .is_some_and(|f| !label.contains(f.as_str()))
    }

    /// The 64 MiB table's rows `--filter` lets through, in table order: each workload in
    /// FLOAT32, FLOAT16 and UINT8.
    fn selected_rows(&self) -> Vec<(Workload, DataType)> {
        [DataType::Float32, DataType::Float16, DataType::Uint8]
            .into_iter()
            .flat_map(|data_type| Workload::ALL.into_iter().map(move |w| (w, data_type)))
            .filter(|(workload, data_type)| {
                !self.filtered_out(&format!("{} {}", workload.name(), data_type))
            })
            .collect()
    }
}

pub fn bench_main(args: &[String]) -> i32 {
    let options = match parse(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!(
                "error: {e}\nusage: cargo xtask bench [--runs N] [--no-oracle] [--json FILE] [--filter TEXT]\n       cargo xtask bench --fuzz [--runs N] [--json FILE]"
            );
            return 2;
        }
    };
    if options.fuzz {
        return fuzz::bench_fuzz(&options);
    }
    if options.backend == "wgpu" {
        return wgpu::bench_wgpu(&options);
    }
    cpu::bench_cpu(&options)
}
