//! How a campaign saves its buckets' cases: a link, a FIFO or a hard link at a bucket's file
//! name is replaced, never written through or waited on; each bucket's file is written once;
//! a report's line breaks of every kind stay in the header's comment; one campaign at a time
//! holds a folder. Each test failed on main (see each one's comment for how).

#![cfg(unix)]

use dmlcts_backend_cpu::CpuBackend;
use dmlcts_fuzz::replay::shell_word;
use dmlcts_fuzz::save::OutFolderLock;
use dmlcts_fuzz::{CampaignOptions, CampaignOutcome, Mix, run_campaign};
use dmlcts_harness::Corpus;
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, FeatureLevel, OperatorDesc, OperatorKind, Rejected,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

/// The CPU backend, except that it rejects every Join, with `message`.
struct RejectsJoins {
    real: CpuBackend,
    message: String,
}

impl Backend for RejectsJoins {
    fn name(&self) -> String {
        "rejects-joins".into()
    }
    fn feature_level(&self) -> FeatureLevel {
        FeatureLevel::L4_1
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        match op {
            OperatorDesc::Join(_) => Err(CompileError::Rejected(Rejected {
                rule: None,
                message: self.message.clone(),
            })),
            _ => self.real.compile(op),
        }
    }
}

fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dmlcts-saving-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Valid Joins only, seed 11: every case fails (two buckets: one input, several).
fn options(out: &Path, cases: u64) -> CampaignOptions {
    let mut options = CampaignOptions::new("rejects-joins", 11);
    options.cases = Some(cases);
    options.op = Some(OperatorKind::Join);
    options.mix = Mix::ValidOnly;
    options.shrink_time = Duration::from_secs(5);
    options.out_dir = Some(out.to_path_buf());
    options
}

/// Runs the campaign on another thread: a save that waits on a FIFO fails the test instead of
/// hanging it.
fn campaign_within_two_minutes(options: CampaignOptions, message: &str) -> CampaignOutcome {
    let (send, receive) = mpsc::channel();
    let message = message.to_string();
    std::thread::spawn(move || {
        let backend = RejectsJoins {
            real: CpuBackend::new(),
            message,
        };
        let _ = send.send(run_campaign(&[&backend], &options, |_| {}));
    });
    receive
        .recv_timeout(Duration::from_secs(120))
        .expect("the campaign did not end within two minutes")
}

/// The first bucket's file name, from a first campaign into a folder of its own.
fn bucket_file_name() -> String {
    let dir = fresh_dir("names");
    let outcome = campaign_within_two_minutes(options(&dir, 20), "no joins");
    let name = format!("{}.yaml", outcome.buckets[0].id);
    std::fs::remove_dir_all(&dir).unwrap();
    name
}

// On main: the link was followed and its target overwritten with the case; the FIFO made the
// save wait forever for a reader; the hard link's other name got the case too (the file was
// truncated and written in place, which is also what a kill -9 left at 0 bytes).
#[test]
fn a_link_a_fifo_or_a_hard_link_at_a_buckets_name_is_replaced_never_written_through() {
    let name = bucket_file_name();
    let outside = fresh_dir("outside");
    let target = outside.join("authorized_keys");
    std::fs::write(&target, "ssh-ed25519 AAAA untouched\n").unwrap();

    let linked = fresh_dir("linked");
    std::os::unix::fs::symlink(&target, linked.join(&name)).unwrap();
    let fifo = fresh_dir("fifo");
    let status = std::process::Command::new("mkfifo")
        .arg(fifo.join(&name))
        .status()
        .expect("mkfifo (coreutils)");
    assert!(status.success());
    let hard = fresh_dir("hard");
    std::fs::hard_link(&target, hard.join(&name)).unwrap();

    for dir in [&linked, &fifo, &hard] {
        let outcome = campaign_within_two_minutes(options(dir, 20), "no joins");
        let saved = outcome.buckets[0].saved.as_ref().expect("saved");
        assert_eq!(
            saved,
            &dir.join(&name),
            "the same seed, the same first bucket"
        );
        assert!(std::fs::symlink_metadata(saved).unwrap().is_file());
        let corpus = Corpus::load_path(saved);
        assert!(corpus.errors.is_empty(), "{:?}", corpus.errors);
        assert_eq!(corpus.cases.len(), 1);
        assert_eq!(
            std::fs::read_to_string(&target).unwrap(),
            "ssh-ed25519 AAAA untouched\n"
        );
    }
}

// On main: saved when found, then saved again at the end with the final hit count.
#[test]
fn a_buckets_file_is_written_once() {
    let dir = fresh_dir("once");
    let mut seen: BTreeMap<PathBuf, String> = BTreeMap::new();
    let backend = RejectsJoins {
        real: CpuBackend::new(),
        message: "no joins".into(),
    };
    let options = options(&dir, 300);
    // The last progress call comes after every case and before the campaign returns.
    let outcome = run_campaign(&[&backend], &options, |_| {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            if let Ok(text) = std::fs::read_to_string(entry.path()) {
                seen.entry(entry.path()).or_insert(text);
            }
        }
    });
    assert!(outcome.buckets[0].count > 1, "{:?}", outcome.buckets);
    let saved = outcome.buckets[0].saved.clone().unwrap();
    assert_eq!(
        seen.get(&saved),
        Some(&std::fs::read_to_string(&saved).unwrap())
    );
}

// On main: a CR, NEL or LS in the backend's message ended the `#` comment, and the rest of
// the line became YAML: the saved case no longer loaded, while the campaign said it was saved.
#[test]
fn line_breaks_of_every_kind_in_a_report_stay_in_the_comment() {
    let dir = fresh_dir("breaks");
    let message = "a\rcases: []\u{85}cases: []\u{2028}cases: [] \u{2029}x\u{1b}[2J";
    let outcome = campaign_within_two_minutes(options(&dir, 5), message);
    let saved = outcome.buckets[0].saved.as_ref().expect("saved");
    let corpus = Corpus::load_path(saved);
    assert!(corpus.errors.is_empty(), "{:?}", corpus.errors);
    assert_eq!(corpus.cases.len(), 1);
    let text = std::fs::read_to_string(saved).unwrap();
    // The runner quotes a backend's text a line at a time, each of its line breaks starting
    // a new quoted line, which the saved file keeps inside its comment.
    assert!(
        text.contains(
            "#       | a\n#       | cases: []\n#       | cases: []\n#       | cases: []\n\
             #       | x\\u{1b}[2J\n"
        ),
        "{text}"
    );
}

#[test]
fn one_campaign_at_a_time_holds_a_folder() {
    let dir = fresh_dir("lock");
    let first = OutFolderLock::acquire(&dir).unwrap();
    assert_eq!(
        OutFolderLock::acquire(&dir).unwrap_err(),
        format!(
            "another fuzz campaign is saving into {} (it holds the folder's lock); give this \
             one its own --out",
            dir.display()
        )
    );
    drop(first);
    OutFolderLock::acquire(&dir).unwrap();
    // A folder that cannot be made is found before anything runs.
    std::fs::write(dir.join("file"), "").unwrap();
    assert_eq!(
        OutFolderLock::acquire(&dir.join("file/out")).unwrap_err(),
        format!("{} exists and is not a folder", dir.join("file").display())
    );
}

// On main: a library caller's campaign (a backend author's test) saved cases whose header said
// "Saved by `cargo xtask fuzz`" and whose replay was `cargo xtask conformance --backend ...`,
// which exists only in this repository.
#[test]
fn an_in_process_campaign_names_its_caller_and_replays_with_cargo_test() {
    let dir = fresh_dir("in-process");
    let outcome = campaign_within_two_minutes(options(&dir, 20), "no joins");
    let bucket = &outcome.buckets[0];
    let saved = bucket.saved.as_ref().expect("saved");
    let case = Corpus::load_path(saved).cases.remove(0);
    // This test binary is `saving` of the package `dmlcts-fuzz`, run by cargo.
    let expected = format!(
        "DMLCTS_CASES={} cargo test -p dmlcts-fuzz -- {} --exact",
        shell_word(&saved.display().to_string()),
        case.name
    );
    assert_eq!(bucket.replay.as_ref().unwrap().render(), expected);
    let text = std::fs::read_to_string(saved).unwrap();
    assert!(
        text.starts_with(&format!(
            "# Saved by an in-process campaign in dmlcts-fuzz's test saving: the minimal case \
             of bucket {}\n",
            bucket.id
        )),
        "{text}"
    );
    assert!(text.contains(&format!("# replay: {expected}\n")), "{text}");
    assert!(!text.contains("xtask"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}
