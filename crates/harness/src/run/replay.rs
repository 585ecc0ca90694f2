//! Replay commands: the command that runs one case again, the same way, built from data (its
//! words) and rendered for a POSIX shell with every word quoted where it needs it. Nothing is
//! ever parsed back out of a failure's text, so no text from a backend or a case file can
//! become a command: a case's name is one word, whatever it holds.

use std::fmt;

/// A command as words, with the environment settings it runs under.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Replay {
    /// `NAME=value` settings before the command (e.g. the `DMLCTS_*` ones that shaped the run).
    pub env: Vec<(String, String)>,
    /// The program and its arguments, one word each, unquoted.
    pub words: Vec<String>,
}

impl Replay {
    pub fn new(words: impl IntoIterator<Item = impl Into<String>>) -> Replay {
        Replay {
            env: Vec::new(),
            words: words.into_iter().map(Into::into).collect(),
        }
    }

    /// Appends words.
    pub fn args(mut self, words: impl IntoIterator<Item = impl Into<String>>) -> Replay {
        self.words.extend(words.into_iter().map(Into::into));
        self
    }

    /// Sets the environment settings.
    pub fn with_env(mut self, env: Vec<(String, String)>) -> Replay {
        self.env = env;
        self
    }

    /// The command line for a POSIX shell: `NAME=value ... word ...`, each word quoted where
    /// it needs it. Settings whose names a shell cannot assign go through `env`.
    pub fn render(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        if self.env.iter().any(|(name, _)| !is_shell_name(name)) {
            parts.push("env".to_string());
        }
        for (name, value) in &self.env {
            if is_shell_name(name) {
                parts.push(format!("{name}={}", shell_word(value)));
            } else {
                parts.push(shell_word(&format!("{name}={value}")));
            }
        }
        parts.extend(self.words.iter().map(|w| shell_word(w)));
        parts.join(" ")
    }
}

impl fmt::Display for Replay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}

/// Whether a shell can assign `name` (`NAME=value command`).
fn is_shell_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Quotes a word for a POSIX shell when it needs it: single quotes, inside which nothing is
/// special, and `'\''` for a single quote. Plain words (letters, digits, `-_./:=@+,%`) stay as
/// they are. The one quoting function of the suite: replay commands, server commands.
pub fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@+,%".contains(c))
        // `=` in a first word would make it an assignment; `~` never appears in a plain word.
        && !word.starts_with('=');
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// An option and its value as words: `--filter NAME`, or `--filter=NAME` where the value
/// starts with `-` (as two words, a parser would take it for an option).
pub fn option_words(option: &str, value: &str) -> Vec<String> {
    if value.starts_with('-') {
        vec![format!("{option}={value}")]
    } else {
        vec![option.to_string(), value.to_string()]
    }
}

/// The words that make a libtest binary (libtest's or libtest-mimic's) run the test named
/// `name` alone: `NAME --exact`, or `--exact -- NAME` where the name starts with `-` (after
/// `--`, nothing is an option).
pub fn libtest_filter_words(name: &str) -> Vec<String> {
    if name.starts_with('-') {
        vec!["--exact".to_string(), "--".to_string(), name.to_string()]
    } else {
        vec![name.to_string(), "--exact".to_string()]
    }
}

/// The `DMLCTS_*` settings of this process, sorted: they shape a run (an adapter, a Vulkan
/// driver, extra case files), so a replay repeats them.
pub fn dmlcts_env() -> Vec<(String, String)> {
    let mut settings: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .filter(|(name, _)| name.starts_with("DMLCTS_"))
        .collect();
    settings.sort();
    settings
}

/// How a run names one of its cases in a replay command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplayRecipe {
    /// `PROGRAM... conformance --backend NAME OPTIONS... [--cases FILE] --filter CASE --exact`:
    /// `options` are the words of every option that shaped the run (`--process-timeout 3`,
    /// `--expectations FILE`, ...); `--cases` names the case's own file when the run's cases
    /// came from files the user gave (the embedded corpus needs none).
    Conformance {
        program: Vec<String>,
        backend: String,
        options: Vec<String>,
        cases_from_files: bool,
        env: Vec<(String, String)>,
    },
    /// A libtest target: `cargo test -p PACKAGE --test TARGET -- CASE --exact`, or, where
    /// the target is not known, the test binary itself with `CASE --exact`.
    Libtest {
        target: Option<LibtestTarget>,
        program: String,
        env: Vec<(String, String)>,
    },
}

/// A libtest target as cargo names it: its package and its test target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LibtestTarget {
    pub package: String,
    pub test: String,
}

impl LibtestTarget {
    /// The target this test binary was built as, from cargo's `CARGO_PKG_NAME` (cargo and
    /// nextest set it when they run a test binary) and the binary's name (`corpus-<hash>`).
    pub fn of_this_process() -> Option<LibtestTarget> {
        let package = std::env::var("CARGO_PKG_NAME").ok()?;
        let exe = std::env::current_exe().ok()?;
        let stem = exe.file_stem()?.to_str()?;
        Some(LibtestTarget {
            package,
            test: test_target_of(stem).to_string(),
        })
    }
}

/// This process's program as a path (a test binary where cargo did not start it).
pub fn this_program() -> String {
    std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "TEST-BINARY".to_string())
}

/// `corpus-0123456789abcdef` -> `corpus`: cargo appends a 16-hex-digit hash to a test binary.
fn test_target_of(stem: &str) -> &str {
    match stem.rsplit_once('-') {
        Some((name, hash)) if hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()) => {
            name
        }
        _ => stem,
    }
}

impl ReplayRecipe {
    /// The recipe of a libtest target in this process: the `cargo test` command that reruns a
    /// case in the crate it runs in, with this process's `DMLCTS_*` settings.
    pub fn libtest(target: Option<LibtestTarget>) -> ReplayRecipe {
        ReplayRecipe::Libtest {
            target: target.or_else(LibtestTarget::of_this_process),
            program: this_program(),
            env: dmlcts_env(),
        }
    }

    /// The command that runs the case named `name` (from `file`) alone again.
    pub fn for_case(&self, name: &str, file: &str) -> Replay {
        match self {
            ReplayRecipe::Conformance {
                program,
                backend,
                options,
                cases_from_files,
                env,
            } => {
                let mut replay = Replay::new(program.iter().cloned())
                    .args(["conformance", "--backend", backend])
                    .args(options.iter().cloned());
                if *cases_from_files {
                    replay = replay.args(option_words("--cases", file));
                }
                replay
                    .args(option_words("--filter", name))
                    .args(["--exact"])
                    .with_env(env.clone())
            }
            ReplayRecipe::Libtest {
                target,
                program,
                env,
            } => match target {
                Some(target) => Replay::new(["cargo", "test", "-p", &target.package, "--test"])
                    .args([target.test.as_str(), "--"])
                    .args(libtest_filter_words(name))
                    .with_env(env.clone()),
                None => Replay::new([program.as_str()])
                    .args(libtest_filter_words(name))
                    .with_env(env.clone()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_words_stay_and_every_other_word_is_single_quoted() {
        assert_eq!(
            shell_word("doc.split.example1_axis2"),
            "doc.split.example1_axis2"
        );
        assert_eq!(shell_word("directml@1.9.0"), "directml@1.9.0");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
        assert_eq!(shell_word("=x"), "'=x'");
        assert_eq!(shell_word("~"), "'~'");
        assert_eq!(
            shell_word("inject$(touch${IFS}pwned)"),
            "'inject$(touch${IFS}pwned)'"
        );
    }

    #[test]
    fn a_replay_renders_its_settings_then_its_words() {
        let replay = Replay::new(["dmlcts", "conformance", "--filter", "a b"])
            .with_env(vec![("DMLCTS_X".to_string(), "v w".to_string())]);
        assert_eq!(
            replay.render(),
            "DMLCTS_X='v w' dmlcts conformance --filter 'a b'"
        );
        let odd = Replay::new(["p"]).with_env(vec![("DMLCTS_A-B".to_string(), "1".to_string())]);
        assert_eq!(odd.render(), "env DMLCTS_A-B=1 p");
    }

    #[test]
    fn cargo_s_hash_is_taken_off_a_test_binary_s_name() {
        assert_eq!(test_target_of("corpus-0123456789abcdef"), "corpus");
        assert_eq!(test_target_of("my_corpus-0123456789abcdef"), "my_corpus");
        assert_eq!(test_target_of("corpus"), "corpus");
        assert_eq!(test_target_of("corpus-main"), "corpus-main");
    }

    #[test]
    fn this_test_binary_knows_its_package_and_target() {
        // cargo test sets CARGO_PKG_NAME when it runs a test binary; the unit tests of a
        // library are the target named after the library.
        if std::env::var_os("CARGO_PKG_NAME").is_some() {
            assert_eq!(
                LibtestTarget::of_this_process(),
                Some(LibtestTarget {
                    package: "dmlcts-harness".to_string(),
                    test: "dmlcts_harness".to_string(),
                })
            );
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_hostile_case_name_is_one_word_when_the_replay_runs_in_a_shell() {
        // A fake program that prints its words, one per line, in place of dmlcts.
        let dir = std::env::temp_dir().join(format!("dmlcts-replay-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let names = [
            "inject$(touch${IFS}pwned)",
            "inject`touch pwned`",
            "a'; touch pwned; echo '",
            "a\"$(touch pwned)\"",
            "x\ntouch pwned",
            "--filter",
            "* ?",
        ];
        for name in names {
            let recipe = ReplayRecipe::Conformance {
                program: vec!["printf".to_string(), "%s\\n".to_string()],
                backend: "b;touch pwned".to_string(),
                options: vec!["--process-timeout".to_string(), "3".to_string()],
                cases_from_files: true,
                env: vec![("DMLCTS_X".to_string(), "$(touch pwned)".to_string())],
            };
            let replay = recipe.for_case(name, "my cases/$(touch pwned).yaml");
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(replay.render())
                .current_dir(&dir)
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", replay.render());
            assert!(!dir.join("pwned").exists(), "{}", replay.render());
            let words: Vec<String> = String::from_utf8(out.stdout)
                .unwrap()
                .strip_suffix('\n')
                .unwrap()
                .split('\n')
                .map(str::to_string)
                .collect();
            // printf joins the words with newlines: the name's own newline splits it in two.
            assert_eq!(words.join("\n"), replay.words[2..].join("\n"), "{name}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    // On main (aa4714d): `--filter -x --exact` (the option parser takes `-x` for an option)
    // and `-- -x --exact` (libtest's likewise).
    #[test]
    fn a_name_starting_with_a_dash_is_never_taken_for_an_option() {
        assert_eq!(option_words("--filter", "-x"), ["--filter=-x"]);
        assert_eq!(option_words("--filter", "x"), ["--filter", "x"]);
        for name in ["-x", "--help", "--exact", "-", "plain"] {
            let mut words = vec!["binary".to_string()];
            words.extend(libtest_filter_words(name));
            let parsed = libtest_mimic::Arguments::from_iter(words.clone());
            assert_eq!(parsed.filter.as_deref(), Some(name), "{words:?}");
            assert!(parsed.exact, "{words:?}");
            assert!(!parsed.list, "{words:?}");
        }
        let recipe = ReplayRecipe::Libtest {
            target: None,
            program: "t".to_string(),
            env: Vec::new(),
        };
        assert_eq!(recipe.for_case("-x", "f").render(), "t --exact -- -x");
    }
}
