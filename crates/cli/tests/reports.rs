//! What the reports say, against the run: one identity per result (the matrix counts what
//! `conformance` counts, for the same input, whatever the cases are named), every text from a
//! case file or a backend escaped where it is written (a terminal, JUnit's XML 1.0), the suite
//! and corpus named, and the command line's conventions (exit statuses, `--list`'s count,
//! `--json -`, colour, plurals, `--verbose`, `show`).

use clap::Parser;
use dmlcts_cli::conformance_with;
use dmlcts_cli::{ConformanceArgs, Host, resolve};
use dmlcts_cli::{MatrixArgs, Wanted, matrix_with};
use dmlcts_harness::{Corpus, cases_to_yaml};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn host() -> Host {
    Host {
        program: "dmlcts",
        default_backends_file: PathBuf::from("/nonexistent/backends.yaml"),
        default_fuzz_out: std::env::temp_dir(),
        directml: |_| None,
        directml_names: Vec::new,
        directml_ready: Vec::new,
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dmlcts-reports-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn dmlcts_in(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dmlcts"));
    command.args(args).current_dir(dir).env_remove("NO_COLOR");
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("run dmlcts")
}

fn dmlcts(args: &[&str]) -> Output {
    dmlcts_in(&std::env::temp_dir(), args, &[])
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn embedded(name: &str) -> dmlcts_harness::Case {
    Corpus::embedded()
        .cases
        .into_iter()
        .find(|c| c.name == name)
        .unwrap()
}

#[derive(Parser)]
struct ConformanceWords {
    #[command(flatten)]
    args: ConformanceArgs,
}

#[derive(Parser)]
struct MatrixWords {
    #[command(flatten)]
    args: MatrixArgs,
}

/// Today's hostile folder: two files that reuse a case name, a case named
/// `load:<a file that fails to load>`, and that file.
fn hostile_folder() -> PathBuf {
    let dir = temp_dir("identity");
    let mut a = embedded("doc.split.example1_axis2");
    a.name = "dup".to_string();
    std::fs::write(dir.join("a.yaml"), cases_to_yaml(&[a.clone()])).unwrap();
    std::fs::write(dir.join("b.yaml"), cases_to_yaml(&[a.clone()])).unwrap();
    let mut c = a;
    c.name = format!("load:{}", dir.join("d_broken.yaml").display());
    std::fs::write(dir.join("c.yaml"), cases_to_yaml(&[c])).unwrap();
    std::fs::write(dir.join("d_broken.yaml"), "cases: [ {name: x\n").unwrap();
    dir
}

#[test]
fn the_matrix_counts_what_conformance_counts_when_names_are_reused_or_look_like_load_errors() {
    let dir = hostile_folder();
    let folder = dir.to_str().unwrap();
    let json = dir.join("report.json");
    let host = host();
    let args = ConformanceWords::parse_from([
        "conformance",
        "--backend",
        "oracle",
        "--cases",
        folder,
        "--json",
        json.to_str().unwrap(),
    ])
    .args;
    let status = conformance_with(&args, "dmlcts", &|request| resolve(&host, request));
    assert_eq!(status, Ok(dmlcts_cli::Verdict::Failed));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let summary = &report["summary"];
    // The loader makes each of them a load error (the second `dup`, whose name then runs in
    // neither file; the name starting with `load:`; the broken file): three failures, and
    // the matrix must count the same.
    assert_eq!(
        (summary["passed"].as_u64(), summary["failed"].as_u64()),
        (Some(0), Some(3))
    );
    // Every entry is keyed by its own id.
    let ids: Vec<&str> = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");

    let args = MatrixWords::parse_from(["matrix", "--cases", folder]).args;
    let wanted = [Wanted {
        name: "oracle".to_string(),
        named: true,
        unavailable: None,
    }];
    let (matrix, status) = matrix_with(
        &args,
        "test",
        "dmlcts",
        &|request| resolve(&host, request),
        &wanted,
        Corpus::load_paths(&[&dir]),
        None,
    )
    .unwrap();
    assert_eq!(
        status,
        dmlcts_cli::Verdict::Failed,
        "the matrix must fail where conformance fails"
    );
    let totals = matrix.totals(0);
    assert_eq!(
        (
            totals.passed,
            totals.failed,
            totals.skipped,
            totals.expected_failures,
            totals.informational
        ),
        (
            summary["passed"].as_u64().unwrap() as usize,
            summary["failed"].as_u64().unwrap() as usize,
            summary["skipped"].as_u64().unwrap() as usize,
            summary["expected_failures"].as_u64().unwrap() as usize,
            summary["informational"].as_u64().unwrap() as usize,
        )
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A minimal XML 1.0 well-formedness check: only XML characters, balanced tags, quoted
/// attribute values without `<`, and only the predefined or numeric entities.
fn well_formed(xml: &str) -> Result<(), String> {
    if let Some(c) = xml.chars().find(
        |&c| !matches!(c as u32, 0x9 | 0xa | 0xd | 0x20..=0xd7ff | 0xe000..=0xfffd | 0x10000..),
    ) {
        return Err(format!("{c:?} is no XML 1.0 character"));
    }
    for (at, _) in xml.match_indices('&') {
        let entity = &xml[at..xml[at..].find(';').map_or(xml.len(), |e| at + e + 1)];
        let ok = matches!(entity, "&amp;" | "&lt;" | "&gt;" | "&quot;" | "&apos;")
            || entity
                .strip_prefix("&#")
                .and_then(|n| n.strip_suffix(';'))
                .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()));
        if !ok {
            return Err(format!("entity {entity:?}"));
        }
    }
    let body = xml
        .strip_prefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
        .ok_or("no prolog")?;
    let mut stack: Vec<String> = Vec::new();
    let mut rest = body;
    while let Some(open) = rest.find('<') {
        if rest[..open].contains('>') {
            return Err(format!("a stray > before {:.80}", &rest[open..]));
        }
        let tag_end = rest[open..].find('>').ok_or("an unclosed tag")? + open;
        let tag = &rest[open + 1..tag_end];
        if tag.contains('<') {
            return Err(format!("< inside a tag: {tag:.80}"));
        }
        if tag.matches('"').count() % 2 != 0 {
            return Err(format!("unbalanced quotes: {tag:.80}"));
        }
        if let Some(name) = tag.strip_prefix('/') {
            if stack.pop().as_deref() != Some(name) {
                return Err(format!("</{name}> closes nothing open"));
            }
        } else if !tag.ends_with('/') {
            let name = tag.split_whitespace().next().unwrap_or_default();
            stack.push(name.to_string());
        }
        rest = &rest[tag_end + 1..];
    }
    if stack.is_empty() {
        Ok(())
    } else {
        Err(format!("unclosed: {stack:?}"))
    }
}

#[test]
fn hostile_case_names_reach_neither_the_terminal_nor_the_junit_file_raw() {
    let dir = temp_dir("names");
    // A name YAML loads (ESC, U+FFFE) whose case fails (its stored values are wrong), and a
    // name the loader refuses (a CR, U+2028: whitespace), which is a load error named by it.
    let mut wrong = embedded("doc.split.example1_axis2");
    wrong.name = "WRONG".to_string();
    wrong.expected = vec![Some(vec![0x4000_0000; 4]), None];
    let mut refused = embedded("doc.split.example1_axis2");
    refused.name = "REFUSED".to_string();
    // YAML's own escapes: the characters themselves are not allowed in a YAML stream.
    let yaml = (cases_to_yaml(&[wrong]) + &cases_to_yaml(&[refused]).replacen("cases:\n", "\n", 1))
        .replace("WRONG", r#""x\e[2K8_passed,_0_failed\uFFFE\e]0;t\a""#)
        .replace("REFUSED", r#""y\r0_failed\u2028""#);
    std::fs::write(dir.join("names.yaml"), yaml).unwrap();
    let out = dmlcts_in(
        &dir,
        &[
            "conformance",
            "--cases",
            "names.yaml",
            "--junit",
            "r.xml",
            "--verbose",
        ],
        &[],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    for bad in ['\u{1b}', '\r', '\u{7}', '\u{2028}', '\u{fffe}'] {
        assert!(!stdout.contains(bad), "{bad:?} in {stdout:?}");
    }
    assert_eq!(
        stdout.lines().last(),
        Some("0 passed, 2 failed, 0 skipped"),
        "{stdout}"
    );
    assert!(
        stdout
            .contains("FAIL x\\u{1b}[2K8_passed,_0_failed\\u{fffe}\\u{1b}]0;t\\u{7} (names.yaml:"),
        "{stdout}"
    );
    let xml = std::fs::read_to_string(dir.join("r.xml")).unwrap();
    well_formed(&xml)
        .map_err(|e| format!("{e}\n{xml}"))
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_xml_check_itself_rejects_what_main_wrote() {
    // What the JUnit writer on main wrote for a U+FFFE in a name: not XML 1.0.
    let old = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<a name=\"x\u{fffe}\"/>\n";
    assert!(well_formed(old).is_err());
    assert!(
        well_formed("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<a b=\"&#10;\"><c/></a>\n")
            .is_ok()
    );
    assert!(well_formed("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<a><c></a>\n").is_err());
}

#[test]
fn a_filter_that_selects_nothing_is_exit_status_2_saying_what_was_looked_for() {
    // A folder of its own, so an `--out` created by an earlier, broken build cannot hide one.
    let dir = temp_dir("nothing");
    for (args, message) in [
        (
            &["conformance", "--filter", "doc.splt"][..],
            "error: no case name contains `doc.splt` among the",
        ),
        (
            &["conformance", "--filter", "doc.split", "--exact"][..],
            "error: no case name equals `doc.split` among the",
        ),
        (
            &["conformance", "--filter", "nothing", "--list"][..],
            "error: no case name contains `nothing` among the",
        ),
        (
            &[
                "matrix",
                "--backend",
                "cpu",
                "--filter",
                "nothing",
                "--out",
                "never",
            ][..],
            "error: no case name contains `nothing` among the",
        ),
    ] {
        let out = dmlcts_in(&dir, args, &[]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.starts_with(message), "{args:?}: {stderr}");
        assert!(stderr.contains("cases of the embedded corpus"), "{stderr}");
        assert_eq!(text(&out.stdout), "", "{args:?}");
    }
    assert!(!dir.join("never").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn list_ends_with_its_count() {
    let out = dmlcts(&["conformance", "--list", "--filter", "doc.split"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    assert_eq!(lines[2], "2 cases");
    let out = dmlcts(&[
        "conformance",
        "--list",
        "--filter",
        "doc.split.example1_axis2",
        "--exact",
    ]);
    assert_eq!(text(&out.stdout).lines().last(), Some("1 case"));
}

#[test]
fn one_case_is_one_case_and_verbose_lines_name_their_level_without_trailing_spaces() {
    let out = dmlcts(&[
        "conformance",
        "--filter",
        "doc.split.example1_axis2",
        "--exact",
        "--verbose",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.lines().next().unwrap().ends_with(", 1 case"),
        "{stdout}"
    );
    assert!(stdout.contains("; 1 case ran in "), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l == "passed doc.split.example1_axis2 (at 1_0)"),
        "{stdout}"
    );
    assert!(!stdout.lines().any(|l| l.ends_with(' ')), "{stdout:?}");
}

#[test]
fn json_dash_is_the_json_report_alone_on_stdout() {
    let out = dmlcts(&["conformance", "--filter", "doc.", "--json", "-"]);
    assert!(out.status.success());
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON alone");
    assert_eq!(report["summary"]["passed"], 8);
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("dmlcts conformance: backend cpu"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().last(), Some("8 passed, 0 failed, 0 skipped"));
}

#[test]
fn colour_as_the_flag_says_and_never_under_no_color_or_off_a_terminal() {
    let dir = std::env::temp_dir();
    let args = ["conformance", "--filter", "doc."];
    let plain = dmlcts_in(&dir, &args, &[]);
    assert!(!text(&plain.stdout).contains('\u{1b}'));
    let always = dmlcts_in(
        &dir,
        &[&args[..], &["--color", "always"]].concat(),
        &[("NO_COLOR", "1")],
    );
    assert_eq!(
        text(&always.stdout).lines().last(),
        Some("\u{1b}[32m8 passed, 0 failed, 0 skipped\u{1b}[0m")
    );
    let never = dmlcts_in(&dir, &[&args[..], &["--color", "never"]].concat(), &[]);
    assert!(!text(&never.stdout).contains('\u{1b}'));
    let auto = dmlcts_in(
        &dir,
        &[&args[..], &["--color", "auto"]].concat(),
        &[("NO_COLOR", "1")],
    );
    assert!(!text(&auto.stdout).contains('\u{1b}'));
}

#[test]
fn the_header_the_json_and_the_junit_name_the_suite_its_commit_and_the_corpus() {
    let dir = temp_dir("suite");
    let out = dmlcts_in(
        &dir,
        &[
            "conformance",
            "--filter",
            "doc.",
            "--json",
            "r.json",
            "--junit",
            "r.xml",
        ],
        &[],
    );
    assert!(out.status.success());
    let (digest, files) = dmlcts_harness::corpus::digest::embedded();
    let version = env!("CARGO_PKG_VERSION");
    let commit = dmlcts_cli::COMMIT;
    let name = match commit {
        Some(commit) => format!("dmlcts {version} (commit {})", &commit[..12]),
        None => format!("dmlcts {version}"),
    };
    assert_eq!(
        text(&out.stdout).lines().nth(1),
        Some(format!("suite: {name}, corpus {digest} ({files} files)").as_str())
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("r.json")).unwrap()).unwrap();
    assert_eq!(
        report["suite"],
        serde_json::json!({
            "name": "dmlcts",
            "version": version,
            "commit": commit,
            "corpus": {"digest": digest, "files": files},
        })
    );
    let xml = std::fs::read_to_string(dir.join("r.xml")).unwrap();
    assert!(
        xml.contains(&format!(
            "<property name=\"dmlcts.version\" value=\"{version}\"/>"
        )),
        "{xml}"
    );
    assert!(
        xml.contains(&format!(
            "<property name=\"dmlcts.corpus_digest\" value=\"{digest}\"/>"
        )),
        "{xml}"
    );
    if let Some(commit) = commit {
        assert!(
            xml.contains(&format!(
                "<property name=\"dmlcts.commit\" value=\"{commit}\"/>"
            )),
            "{xml}"
        );
    }
    // The digest is over the bytes loaded: other files, another digest.
    let mut case = embedded("doc.split.example1_axis2");
    case.name = "mine".to_string();
    std::fs::write(dir.join("mine.yaml"), cases_to_yaml(&[case])).unwrap();
    let out = dmlcts_in(
        &dir,
        &["conformance", "--cases", "mine.yaml", "--json", "-"],
        &[],
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["suite"]["corpus"]["files"], 1);
    let mut loaded = dmlcts_harness::corpus::digest::CorpusDigest::default();
    loaded.add(&std::fs::read(dir.join("mine.yaml")).unwrap());
    assert_eq!(report["suite"]["corpus"]["digest"], loaded.text());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn show_prints_a_case_outside_the_checkout_and_an_unknown_name_is_exit_status_2() {
    let out = dmlcts(&["show", "doc.split.example1_axis2"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.starts_with(
            "# doc.split.example1_axis2 (cases/doc/split.yaml:3, the embedded corpus)\n\
             # inputs as values; expected: the outputs the oracle computes\ncases:\n  - name: doc.split.example1_axis2\n"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("      axis: 2\n"), "{stdout}");
    assert!(stdout.contains("expected: ["), "{stdout}");
    let out = dmlcts(&["show", "doc.split"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("error: no case named `doc.split` among the ")
            && stderr.contains("names that contain it: doc.split.example1_axis2"),
        "{stderr}"
    );
}

// On main (aa4714d): the case in `load-error:b.yaml` at line 3 had the id of b.yaml's load
// error at line 3 (`load-error:b.yaml:3`): conformance counted 1 failed, the matrix 0.
#[test]
fn a_case_file_whose_path_starts_like_a_load_error_id_gets_a_case_id_and_the_counts_agree() {
    let dir = temp_dir("namespace");
    // The page's split examples, the first case at line 3; b.yaml fails to load at line 3.
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../cases/doc/split.yaml");
    std::fs::copy(doc, dir.join("load-error:b.yaml")).unwrap();
    std::fs::write(dir.join("b.yaml"), "cases:\n  - name: x\n    bogus: 1\n").unwrap();
    let cases = ["--cases", "b.yaml", "--cases", "load-error:b.yaml"];
    let output = dmlcts_in(
        &dir,
        &[
            &["conformance", "--backend", "oracle", "--json", "r.json"][..],
            &cases,
        ]
        .concat(),
        &[],
    );
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("r.json")).unwrap()).unwrap();
    let ids: Vec<&str> = (report["cases"].as_array().unwrap().iter())
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids[..2], ["load-error:b.yaml:3", "./load-error:b.yaml:3"]);
    let summary = &report["summary"];
    assert_eq!(summary["failed"].as_u64(), Some(1));
    assert_eq!(summary["passed"].as_u64(), Some(ids.len() as u64 - 1));

    let output = dmlcts_in(
        &dir,
        &[&["matrix", "--backend", "oracle", "--out", "m"][..], &cases].concat(),
        &[],
    );
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let matrix: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("m/matrix.json")).unwrap()).unwrap();
    let totals = &matrix["columns"][0]["totals"];
    assert_eq!(
        (totals["passed"].as_u64(), totals["failed"].as_u64()),
        (summary["passed"].as_u64(), summary["failed"].as_u64()),
        "{totals}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

// On main (aa4714d): `--filter -dash --exact`, which the command's parser refused (`-d` is
// no option), and `--cases -cases.yaml` likewise.
#[test]
fn a_replay_command_for_a_name_and_a_file_starting_with_a_dash_runs_that_case() {
    let dir = temp_dir("dash");
    let mut case = embedded("doc.split.example1_axis2");
    case.name = "-dash".to_string();
    std::fs::write(dir.join("-cases.yaml"), cases_to_yaml(&[case])).unwrap();
    let args =
        ConformanceWords::parse_from(["conformance", "--backend", "oracle", "--cases=-cases.yaml"])
            .args;
    let replay = args
        .replay_recipe(env!("CARGO_BIN_EXE_dmlcts"))
        .for_case("-dash", "-cases.yaml");
    let output = Command::new("sh")
        .arg("-c")
        .arg(replay.render())
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}: {}",
        replay.render(),
        text(&output.stderr)
    );
    assert!(
        text(&output.stdout).ends_with("\n1 passed, 0 failed, 0 skipped\n"),
        "{}",
        text(&output.stdout)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
