//! Everything the commands print goes through here rather than `println!`, which panics when
//! the reader has gone (`dmlcts conformance | head -c 600`). Once a stream cannot be written
//! (a closed pipe, EPIPE, or any other error), printing to it stops quietly; the run goes on,
//! writes its report files and exits with its true status.

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_GONE: AtomicBool = AtomicBool::new(false);
static STDERR_GONE: AtomicBool = AtomicBool::new(false);

/// One line on stdout (the `say!` macro).
pub fn line(args: fmt::Arguments<'_>) {
    write_line(&mut io::stdout().lock(), args, &STDOUT_GONE);
}

/// One line on stderr (the `say_err!` macro).
pub fn error_line(args: fmt::Arguments<'_>) {
    write_line(&mut io::stderr().lock(), args, &STDERR_GONE);
}

/// Whether stdout has stopped taking output.
pub fn stdout_gone() -> bool {
    STDOUT_GONE.load(Ordering::Relaxed)
}

fn write_line(stream: &mut impl Write, args: fmt::Arguments<'_>, gone: &AtomicBool) {
    if gone.load(Ordering::Relaxed) {
        return;
    }
    let written = stream
        .write_fmt(args)
        .and_then(|()| stream.write_all(b"\n"))
        .and_then(|()| stream.flush());
    if written.is_err() {
        gone.store(true, Ordering::Relaxed);
    }
}

/// `println!` that stops quietly when stdout is gone.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::out::line(format_args!($($arg)*))
    };
}

/// `eprintln!` that stops quietly when stderr is gone.
#[macro_export]
macro_rules! say_err {
    ($($arg:tt)*) => {
        $crate::out::error_line(format_args!($($arg)*))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream whose reader has gone.
    struct ClosedPipe {
        attempts: usize,
    }

    impl Write for ClosedPipe {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            self.attempts += 1;
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_pipe_stops_the_printing_after_one_try_without_a_panic() {
        let gone = AtomicBool::new(false);
        let mut pipe = ClosedPipe { attempts: 0 };
        write_line(&mut pipe, format_args!("first"), &gone);
        write_line(&mut pipe, format_args!("second"), &gone);
        assert!(gone.load(Ordering::Relaxed));
        assert_eq!(pipe.attempts, 1);
    }

    #[test]
    fn lines_end_with_a_newline() {
        let gone = AtomicBool::new(false);
        let mut bytes = Vec::new();
        write_line(&mut bytes, format_args!("{} passed", 3), &gone);
        assert_eq!(bytes, b"3 passed\n");
    }
}
