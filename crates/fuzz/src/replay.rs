//! The replay commands a campaign prints and saves, built from the harness's words
//! ([`Replay`], [`ReplayRecipe`]: one quoting function for the whole suite): the command that
//! runs a saved case again, and the one that repeats the campaign. Both carry every setting
//! that shaped the run: the `DMLCTS_*` environment, the program, and the options' words.

use crate::check::Mix;
use crate::options::CampaignOptions;
pub use dmlcts_harness::run::replay::{
    LibtestTarget, Replay, ReplayRecipe, dmlcts_env, libtest_filter_words, shell_word, this_program,
};

/// The command that runs the case saved in `file` (named `name`) alone again, the way the
/// campaign ran it: `PROGRAM conformance --backend NAME OPTIONS... --cases FILE --filter NAME
/// --exact`, with the campaign's `DMLCTS_*` settings. The case carries its level.
pub fn saved_case_replay(options: &CampaignOptions, name: &str, file: &str) -> Replay {
    if options.program.is_empty() {
        return in_process_case_replay(options, name, file);
    }
    let mut words = options.run_options.clone();
    if let Some(level) = options.pinned_level {
        words.extend(["--feature-level".to_string(), level.to_string()]);
    }
    let recipe = ReplayRecipe::Conformance {
        program: program_words(options),
        backend: options.backend_name.clone(),
        options: words,
        cases_from_files: true,
        env: options.env.clone(),
    };
    recipe.for_case(name, file)
}

/// The command that repeats a campaign: the same cases (`jobs` does not change them). A
/// campaign stopped by `--time` is repeated by the case indices it ran (`ran`: its
/// descriptors, indices `k` of its shard for `k < ran`, which `--cases ran * N` selects), so
/// the repeat runs the same cases whatever the machine.
pub fn campaign_replay(options: &CampaignOptions, jobs: usize, ran: Option<u64>) -> Replay {
    if options.program.is_empty() {
        // The campaign is the caller's own test, seed and all: running that test repeats it.
        return match LibtestTarget::of_this_process() {
            Some(t) => Replay::new(["cargo", "test", "-p", &t.package, "--test", &t.test]),
            None => Replay::new([this_program()]),
        }
        .with_env(options.env.clone());
    }
    let mut words = program_words(options);
    words.extend([
        "fuzz".to_string(),
        "--backend".to_string(),
        options.backend_name.clone(),
        "--seed".to_string(),
        options.seed.to_string(),
    ]);
    words.extend(options.run_options.iter().cloned());
    let mut arg = |flag: &str, value: String| words.extend([flag.to_string(), value]);
    match (options.cases, options.time, ran) {
        // Stopped by the clock: the indices it reached.
        (_, Some(_), Some(ran)) => arg("--cases", (ran * options.shard.count).to_string()),
        (Some(cases), _, _) => arg("--cases", cases.to_string()),
        (None, Some(time), None) => arg("--time", time.as_secs_f64().to_string()),
        (None, None, _) => {}
    }
    if let Some(op) = options.op {
        arg("--op", op.to_string());
    }
    if let Some(level) = options.pinned_level {
        arg("--feature-level", level.to_string());
    }
    if options.data_sets > 1 {
        arg("--data-sets", options.data_sets.to_string());
    }
    match options.mix {
        Mix::ValidOnly => words.push("--valid-only".to_string()),
        Mix::InvalidOnly => words.push("--invalid-only".to_string()),
        Mix::Both => {}
    }
    if options.shard.count > 1 {
        words.extend([
            "--shard".to_string(),
            format!("{}/{}", options.shard.index, options.shard.count),
        ]);
    }
    if jobs > 1 {
        words.extend(["--jobs".to_string(), jobs.to_string()]);
    }
    Replay::new(words).with_env(options.env.clone())
}

/// The program's words (`cargo xtask` is two), split as the conformance command's recipe
/// splits them.
fn program_words(options: &CampaignOptions) -> Vec<String> {
    options
        .program
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// A case saved by a campaign in the caller's own process (a backend author's test): the
/// package's libtest targets run it with `DMLCTS_CASES` naming its file, `cargo test -p
/// PACKAGE -- NAME --exact` (every target of the package gets the filter; the one built on
/// `dmlcts_harness::libtest_main*` runs the case, the others run nothing). Outside cargo, the
/// test binary itself.
fn in_process_case_replay(options: &CampaignOptions, name: &str, file: &str) -> Replay {
    let mut env = vec![("DMLCTS_CASES".to_string(), file.to_string())];
    env.extend(
        (options.env.iter())
            .filter(|(key, _)| key != "DMLCTS_CASES")
            .cloned(),
    );
    match LibtestTarget::of_this_process() {
        Some(t) => Replay::new(["cargo", "test", "-p", &t.package, "--"]),
        None => Replay::new([this_program()]),
    }
    .args(libtest_filter_words(name))
    .with_env(env)
}

/// What saved headers and descriptions say ran the campaign: `dmlcts fuzz`, `cargo xtask
/// fuzz`, or the caller's test.
pub fn campaign_runner(options: &CampaignOptions) -> String {
    if !options.program.is_empty() {
        return format!("`{} fuzz`", options.program);
    }
    match LibtestTarget::of_this_process() {
        Some(t) => format!("an in-process campaign in {}'s test {}", t.package, t.test),
        None => format!("an in-process campaign in {}", this_program()),
    }
}
