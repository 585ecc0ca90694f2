//! How a command ends: a verdict on what it ran, or the error that kept it from running. The
//! exit status and the printed error come from here alone ([`finish`]), which each binary's
//! `main` calls once.

use crate::out::{Paint, paint};
use dmlcts_harness::text::Block;
use std::process::ExitCode;

/// What a command that did its job concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing failed: exit status 0.
    Passed,
    /// A case, a check of the whole run or a campaign's finding failed: exit status 1. What
    /// failed has been printed.
    Failed,
}

impl Verdict {
    /// `Failed` when `failed`, else `Passed`.
    pub fn failed_if(failed: bool) -> Verdict {
        if failed {
            Verdict::Failed
        } else {
            Verdict::Passed
        }
    }
}

/// Why a command could not do its job: exit status 2, with the message `finish` prints.
#[derive(Debug, PartialEq, Eq)]
pub enum CommandError {
    /// The command line asks for what cannot be done (a filter that selects nothing, two
    /// reports on stdout).
    Usage(String),
    /// A file the user handed in cannot be used (an expectations file, a backends file, a
    /// case or report file to read).
    Input(String),
    /// The backend cannot be made or cannot start.
    Backend(String),
    /// A report or saved file cannot be written.
    Output(String),
    /// The command already said why (e.g. its last words went with the run's summary);
    /// nothing more to print.
    Said,
}

impl CommandError {
    /// The message, as printed after `error: `.
    pub fn message(&self) -> Option<&str> {
        match self {
            CommandError::Usage(m)
            | CommandError::Input(m)
            | CommandError::Backend(m)
            | CommandError::Output(m) => Some(m),
            CommandError::Said => None,
        }
    }
}

/// What every command returns.
pub type CommandResult = Result<Verdict, CommandError>;

/// The exit status of a command's result: 0 passed, 1 failed, 2 could not run.
pub fn exit_status(result: &CommandResult) -> u8 {
    match result {
        Ok(Verdict::Passed) => 0,
        Ok(Verdict::Failed) => 1,
        Err(_) => 2,
    }
}

/// Ends a command: prints its error, if it has one, and gives the exit status.
pub fn finish(result: CommandResult) -> ExitCode {
    if let Err(error) = &result
        && let Some(message) = error.message()
    {
        crate::say_err!("{} {}", paint(Paint::Red, "error:"), Block(message));
    }
    ExitCode::from(exit_status(&result))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passed_is_0_failed_1_and_every_error_2() {
        assert_eq!(exit_status(&Ok(Verdict::Passed)), 0);
        assert_eq!(exit_status(&Ok(Verdict::Failed)), 1);
        for error in [
            CommandError::Usage("u".into()),
            CommandError::Input("i".into()),
            CommandError::Backend("b".into()),
            CommandError::Output("o".into()),
            CommandError::Said,
        ] {
            assert_eq!(exit_status(&Err(error)), 2);
        }
    }
}
