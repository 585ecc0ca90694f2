//! Everything the commands print goes through here rather than `println!`, which panics when
//! the reader has gone (`dmlcts conformance | head -c 600`). Once a stream cannot be written
//! (a closed pipe, EPIPE, or any other error), printing to it stops quietly; the run goes on,
//! writes its report files and exits with its true status. Also: where the human text goes
//! (stderr under `--json -`), its colour (`--color`, `NO_COLOR`), and plurals.

use std::fmt;
use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_GONE: AtomicBool = AtomicBool::new(false);
static STDERR_GONE: AtomicBool = AtomicBool::new(false);
/// `--json -`: stdout carries the JSON report alone; the human text goes to stderr.
static HUMAN_TO_STDERR: AtomicBool = AtomicBool::new(false);
/// Whether the human text is coloured (`--color`, `NO_COLOR`, a terminal).
static COLOR: AtomicBool = AtomicBool::new(false);

/// One line of the human text (the `say!` macro): on stdout, or on stderr once stdout is
/// kept for a report (`--json -`).
pub fn line(args: fmt::Arguments<'_>) {
    if HUMAN_TO_STDERR.load(Ordering::Relaxed) {
        error_line(args);
    } else {
        write_line(&mut io::stdout().lock(), args, &STDOUT_GONE);
    }
}

/// Keeps stdout for a report (`--json -`): the human text goes to stderr from now on.
pub fn human_text_to_stderr() {
    HUMAN_TO_STDERR.store(true, Ordering::Relaxed);
}

/// Whether the human text is on stderr (`--json -`).
pub fn human_text_on_stderr() -> bool {
    HUMAN_TO_STDERR.load(Ordering::Relaxed)
}

/// A report written to stdout (`--json -`), whole, as it is.
pub fn report_to_stdout(text: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    if !text.ends_with('\n') {
        out.write_all(b"\n")?;
    }
    out.flush()
}

/// `--color`: when the human text is coloured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless NO_COLOR is set (to anything but "") or TERM is dumb
    #[default]
    Auto,
    Always,
    Never,
}

/// Decides colour for the stream the human text goes to (call after `human_text_to_stderr`).
pub fn set_color(choice: ColorChoice) {
    let terminal = if human_text_on_stderr() {
        io::stderr().is_terminal()
    } else {
        io::stdout().is_terminal()
    };
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
    COLOR.store(colored(choice, terminal, no_color, dumb), Ordering::Relaxed);
}

fn colored(choice: ColorChoice, terminal: bool, no_color: bool, dumb: bool) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => terminal && !no_color && !dumb,
    }
}

/// A colour for `paint`.
#[derive(Clone, Copy, Debug)]
pub enum Paint {
    Red,
    Green,
    Yellow,
    Bold,
}

/// `text` in a colour, where the human text is coloured. `text` is the harness's own words
/// or already escaped (`dmlcts_harness::text`): no escape sequence but these reaches the
/// terminal.
pub fn paint(style: Paint, text: &str) -> String {
    if !COLOR.load(Ordering::Relaxed) || text.is_empty() {
        return text.to_string();
    }
    let code = match style {
        Paint::Red => "1;31",
        Paint::Green => "32",
        Paint::Yellow => "33",
        Paint::Bold => "1",
    };
    format!("\x1b[{code}m{text}\x1b[0m")
}

/// `1 case`, `2 cases`: a count and its noun.
pub fn count(n: usize, singular: &str, plural: &str) -> String {
    format!("{n} {}", if n == 1 { singular } else { plural })
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
    fn colour_on_a_terminal_unless_no_color_or_a_dumb_terminal_and_as_the_flag_says() {
        assert!(colored(ColorChoice::Auto, true, false, false));
        assert!(!colored(ColorChoice::Auto, false, false, false));
        assert!(!colored(ColorChoice::Auto, true, true, false));
        assert!(!colored(ColorChoice::Auto, true, false, true));
        assert!(colored(ColorChoice::Always, false, true, true));
        assert!(!colored(ColorChoice::Never, true, false, false));
    }

    #[test]
    fn counts_take_their_plural_from_the_number() {
        assert_eq!(count(1, "case", "cases"), "1 case");
        assert_eq!(count(0, "case", "cases"), "0 cases");
        assert_eq!(count(2, "failure", "failures"), "2 failures");
    }

    #[test]
    fn lines_end_with_a_newline() {
        let gone = AtomicBool::new(false);
        let mut bytes = Vec::new();
        write_line(&mut bytes, format_args!("{} passed", 3), &gone);
        assert_eq!(bytes, b"3 passed\n");
    }
}
