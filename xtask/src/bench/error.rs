//! Why `cargo xtask bench` failed: one line each, said by main.rs, which picks the exit status.

use std::fmt;

#[derive(Debug)]
pub enum BenchError {
    /// `--backend wgpu` found no adapter it can use: why.
    WgpuUnavailable(String),
    /// The JSON report could not be written.
    WriteJson { path: String, error: std::io::Error },
    /// `--fuzz`: in some round the clean campaign found a bucket, or the buggy one none
    /// (each such round's line said so as it ran).
    PlantedBugMissed,
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BenchError::WgpuUnavailable(reason) => {
                write!(f, "bench: the wgpu backend is unavailable: {reason}")
            }
            BenchError::WriteJson { path, error } => {
                write!(f, "error: cannot write {path}: {error}")
            }
            BenchError::PlantedBugMissed => write!(
                f,
                "error: the campaigns' buckets were not what the planted bugs make (the rounds above)"
            ),
        }
    }
}
