//! Replay commands: the command that runs one case again, the same way, built from data (its
//! words) and rendered for the shell it is printed for (a POSIX shell; on Windows, cmd; or
//! PowerShell, `Shell`) with every word quoted where it needs it. Nothing is
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

    /// The command line for this system's shell (`Shell::HOST`).
    pub fn render(&self) -> String {
        self.render_for(Shell::HOST)
    }

    /// The command line for `shell`: its settings then its words, each quoted for that shell.
    pub fn render_for(&self, shell: Shell) -> String {
        match shell {
            Shell::Posix => self.render_posix(),
            Shell::Cmd => {
                let mut line = String::new();
                for (name, value) in &self.env {
                    line.push_str(&format!("set {}& ", cmd_escape(&format!("{name}={value}"))));
                }
                let words: Vec<String> = self.words.iter().map(|w| cmd_word(w)).collect();
                line + &words.join(" ")
            }
            Shell::PowerShell => {
                let mut line = String::new();
                for (name, value) in &self.env {
                    line.push_str(&format!(
                        "${{env:{}}} = {}; ",
                        name.replace('}', "`}"),
                        powershell_quote(value)
                    ));
                }
                let words: Vec<String> = self.words.iter().map(|w| powershell_word(w)).collect();
                match words.first() {
                    // A quoted program is a string to PowerShell until `&` calls it.
                    Some(first) if first.starts_with('\'') => line + "& " + &words.join(" "),
                    _ => line + &words.join(" "),
                }
            }
        }
    }

    /// The command line for a POSIX shell: `NAME=value ... word ...`, each word quoted where
    /// it needs it. Settings whose names a shell cannot assign go through `env`.
    fn render_posix(&self) -> String {
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

/// The shells a replay command is printed for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shell {
    /// sh, bash, zsh: `shell_word`.
    Posix,
    /// Windows' cmd: each word quoted as Windows programs split their command line
    /// (`argv_word`), then cmd's own characters escaped with `^` (`cmd_escape`).
    Cmd,
    /// PowerShell: single quotes, `''` for a quote; `& ` before a quoted program.
    PowerShell,
}

impl Shell {
    /// The shell commands are printed for on this system: cmd on Windows, else a POSIX one.
    pub const HOST: Shell = if cfg!(windows) {
        Shell::Cmd
    } else {
        Shell::Posix
    };
}

/// Quotes a word as Windows programs split their command line (the C runtime's rules, which
/// Rust's std follows too): words with a space, a tab or a quote, and empty words, go in
/// double quotes, with `\"` for a quote and the backslashes before a quote (or the closing
/// one) doubled. The word a server command is given on Windows, where no shell reads it.
pub(crate) fn argv_word(word: &str) -> String {
    if !word.is_empty() && !word.contains([' ', '\t', '\n', '\x0b', '"']) {
        return word.to_string();
    }
    let mut quoted = String::from('"');
    let mut backslashes = 0;
    for c in word.chars() {
        match c {
            '\\' => backslashes += 1,
            '"' => {
                quoted.push_str(&"\\".repeat(2 * backslashes + 1));
                quoted.push('"');
                backslashes = 0;
            }
            _ => {
                quoted.push_str(&"\\".repeat(backslashes));
                quoted.push(c);
                backslashes = 0;
            }
        }
    }
    quoted.push_str(&"\\".repeat(2 * backslashes));
    quoted.push('"');
    quoted
}

/// cmd's special characters escaped with `^`, quotes included, so that cmd never enters its
/// quoted state and passes every character on as written (`%` too: `^%` stops expansion on a
/// command line).
fn cmd_escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if "^&|<>()%!\"".contains(c) {
            escaped.push('^');
        }
        escaped.push(c);
    }
    escaped
}

/// A word for cmd: `argv_word`, then `cmd_escape`.
fn cmd_word(word: &str) -> String {
    cmd_escape(&argv_word(word))
}

/// A PowerShell string literal in single quotes (nothing inside is special but the quote).
fn powershell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// A word for PowerShell: plain (letters, digits, `-_./:\\=+`) or single-quoted.
fn powershell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:\\=+".contains(c));
    if plain {
        word.to_string()
    } else {
        powershell_quote(word)
    }
}

/// The word of a server command on this system: `argv_word` on Windows (no shell reads it
/// there), `shell_word` elsewhere.
pub fn command_word(word: &str) -> String {
    if cfg!(windows) {
        argv_word(word)
    } else {
        shell_word(word)
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

    /// Splits a command line as the C runtime does (the rules `argv_word` quotes for), to
    /// check that each word comes back whole.
    fn crt_split(line: &str) -> Vec<String> {
        let mut words = Vec::new();
        let mut chars = line.chars().peekable();
        loop {
            while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
                chars.next();
            }
            if chars.peek().is_none() {
                return words;
            }
            let (mut word, mut quoted, mut backslashes) = (String::new(), false, 0usize);
            while let Some(&c) = chars.peek() {
                if !quoted && (c == ' ' || c == '\t') {
                    break;
                }
                chars.next();
                match c {
                    '\\' => backslashes += 1,
                    '"' => {
                        word.push_str(&"\\".repeat(backslashes / 2));
                        if backslashes % 2 == 1 {
                            word.push('"');
                        } else {
                            quoted = !quoted;
                        }
                        backslashes = 0;
                    }
                    _ => {
                        word.push_str(&"\\".repeat(backslashes));
                        backslashes = 0;
                        word.push(c);
                    }
                }
            }
            word.push_str(&"\\".repeat(backslashes));
            words.push(word);
        }
    }

    /// What cmd does to a line without quotes of its own: drops each `^` and keeps the
    /// character after it; an unescaped special character would be cmd's (an error here).
    fn cmd_unescape(line: &str) -> Result<String, char> {
        let mut out = String::new();
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match c {
                '^' => out.extend(chars.next()),
                '&' | '|' | '<' | '>' | '(' | ')' | '%' | '!' | '"' => return Err(c),
                _ => out.push(c),
            }
        }
        Ok(out)
    }

    const HOSTILE: [&str; 9] = [
        "doc.split.example1_axis2",
        "",
        "a b",
        "say \"hi\"",
        "C:\\Program Files\\dmlcts\\",
        "back\\\\\"slash",
        "100% & calc.exe | more > x < y",
        "^caret (paren) !bang!",
        "it's $env:PATH `tick`",
    ];

    #[test]
    fn every_word_quoted_for_cmd_comes_back_whole_through_cmd_and_the_c_runtime() {
        for word in HOSTILE {
            let line = cmd_word(word);
            let seen =
                cmd_unescape(&line).unwrap_or_else(|c| panic!("{word:?}: bare {c:?} in {line}"));
            assert_eq!(crt_split(&seen), [word], "{word:?} as {line}");
            // argv_word alone (a server command, no shell) splits back the same.
            assert_eq!(crt_split(&argv_word(word)), [word], "{word:?}");
        }
        assert_eq!(
            cmd_word("doc.split.example1_axis2"),
            "doc.split.example1_axis2"
        );
        assert_eq!(cmd_word("a b"), "^\"a b^\"");
        assert_eq!(cmd_word("100%"), "100^%");
    }

    #[test]
    fn a_replay_for_cmd_sets_its_settings_with_set_and_escapes_them() {
        let replay = Replay::new(["C:\\dmlcts\\dmlcts.exe", "conformance", "--filter", "a&b"])
            .with_env(vec![("DMLCTS_X".to_string(), "1 %PATH%".to_string())]);
        assert_eq!(
            replay.render_for(Shell::Cmd),
            "set DMLCTS_X=1 ^%PATH^%& C:\\dmlcts\\dmlcts.exe conformance --filter a^&b"
        );
    }

    #[test]
    fn a_replay_for_powershell_single_quotes_and_calls_a_quoted_program() {
        let replay = Replay::new([
            "C:\\Program Files\\dmlcts.exe",
            "--filter",
            "it's $x",
            "a,b",
        ])
        .with_env(vec![("DMLCTS_X".to_string(), "o'k".to_string())]);
        assert_eq!(
            replay.render_for(Shell::PowerShell),
            "${env:DMLCTS_X} = 'o''k'; & 'C:\\Program Files\\dmlcts.exe' --filter 'it''s $x' 'a,b'"
        );
        assert_eq!(
            Replay::new(["dmlcts.exe", "--filter", "x.y"]).render_for(Shell::PowerShell),
            "dmlcts.exe --filter x.y"
        );
    }

    #[test]
    fn the_host_shell_is_cmd_on_windows_and_posix_elsewhere() {
        let replay = Replay::new(["dmlcts", "a b"]);
        let expected = if cfg!(windows) {
            "dmlcts ^\"a b^\""
        } else {
            "dmlcts 'a b'"
        };
        assert_eq!(replay.render(), expected);
    }

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
