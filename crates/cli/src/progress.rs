//! The progress line of a run, on stderr: rewritten in place on a terminal, printed every few
//! seconds otherwise (CI logs).

use dmlcts_harness::report::Summary;
use dmlcts_harness::{CaseResult, Status};
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

pub struct Progress {
    total: usize,
    done: usize,
    summary: Summary,
    terminal: bool,
    last: Instant,
    shown: bool,
}

impl Progress {
    pub fn new(total: usize) -> Progress {
        Progress {
            total,
            done: 0,
            summary: Summary::default(),
            terminal: std::io::stderr().is_terminal(),
            last: Instant::now(),
            shown: false,
        }
    }

    pub fn update(&mut self, result: &CaseResult) {
        self.done += 1;
        match result.status {
            Status::Passed => self.summary.passed += 1,
            Status::Failed => self.summary.failed += 1,
            Status::Skipped => self.summary.skipped += 1,
            Status::ExpectedFailure => self.summary.expected_failures += 1,
            Status::Informational => self.summary.informational += 1,
        }
        let interval = if self.terminal {
            Duration::from_millis(100)
        } else {
            Duration::from_secs(5)
        };
        if self.last.elapsed() >= interval || (self.done == self.total && self.terminal) {
            self.last = Instant::now();
            let line = format!("[{}/{}] {}", self.done, self.total, self.summary.line());
            let mut err = std::io::stderr();
            if self.terminal {
                let _ = write!(err, "\r{line}\x1b[K");
                self.shown = true;
            } else {
                let _ = writeln!(err, "{line}");
            }
            let _ = err.flush();
        }
    }

    /// Takes the progress line off a terminal before other text is printed.
    pub fn clear(&mut self) {
        if self.terminal && self.shown {
            let _ = write!(std::io::stderr(), "\r\x1b[K");
            self.shown = false;
        }
    }
}
