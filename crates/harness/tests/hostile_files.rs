//! Case folders and files a user hands in, built as an attacker would: links out of the folder
//! to secrets, links to the folder itself, FIFOs and devices named like case files, files
//! past the size bound, small files of aliases that expand to gigabytes, expectations files
//! nested 100,000 deep, case names that reuse another's or pass for a load error. Each test
//! failed on main before these bounds (see each one's comment for how).

#![cfg(unix)]

use dmlcts_harness::Corpus;
use dmlcts_harness::expectations::Expectations;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dmlcts-hostile-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn case_text(name: &str) -> String {
    format!(
        "cases:\n  - name: {name}\n    split:\n      axis: 0\n      input: {{data_type: UINT8, \
         sizes: [3], data: [1, 2, 3]}}\n      outputs: [{{data_type: UINT8, sizes: [3]}}]\n"
    )
}

fn names(corpus: &Corpus) -> Vec<&str> {
    corpus.cases.iter().map(|c| c.name.as_str()).collect()
}

/// Loads on another thread and gives up after a minute: a walk that hangs fails the test
/// instead of hanging it.
fn load_within_a_minute(paths: Vec<PathBuf>) -> Corpus {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = send.send(Corpus::load_paths(&paths));
    });
    receive
        .recv_timeout(Duration::from_secs(60))
        .expect("loading did not end within a minute")
}

const KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY-----\n\
    b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n\
    QyNTUxOQAAACDxSECRETSECRETSECRETSECRETSECRETSECRETSECRETSEAAAAJg==\n\
    -----END OPENSSH PRIVATE KEY-----\n";
const CREDENTIALS: &str = "https://octocat:ghp_SECRETTOKEN0123456789@github.com\n";

/// Secret files outside the case folder: a key, a credentials line, a short password.
fn secrets() -> (PathBuf, [PathBuf; 3]) {
    let home = fresh_dir("home");
    let key = home.join("id_ed25519");
    let credentials = home.join(".git-credentials");
    let password = home.join("password");
    std::fs::write(&key, KEY).unwrap();
    std::fs::write(&credentials, CREDENTIALS).unwrap();
    std::fs::write(&password, "hunter2\n").unwrap();
    (home, [key, credentials, password])
}

fn assert_quotes_no_secret(corpus: &Corpus) {
    let everything = format!("{corpus:?}");
    for secret in [
        "b3BlbnNz", "SECRET", "OPENSSH", "ghp_", "octocat", "hunter2",
    ] {
        assert!(
            !everything.contains(secret),
            "`{secret}` leaked: {everything}"
        );
    }
}

// On main, the key and the credentials were each copied into a load error ("invalid type:
// string \"-----BEGIN OPENSSH PRIVATE KEY----- b3Bl...\"") and from there to stdout, JUnit,
// JSON and the matrix page.
#[test]
fn a_folder_walk_follows_no_link_so_a_linked_secret_is_never_read() {
    let (_home, [key, credentials, password]) = secrets();
    let dir = fresh_dir("linked-secrets");
    std::fs::write(dir.join("good.yaml"), case_text("good")).unwrap();
    symlink(&key, dir.join("key.yaml")).unwrap();
    symlink(&credentials, dir.join("credentials.yml")).unwrap();
    symlink(&password, dir.join("password.yaml")).unwrap();
    let corpus = Corpus::load_path(&dir);
    assert_eq!(names(&corpus), ["good"]);
    assert!(corpus.errors.is_empty(), "{:?}", corpus.errors);
    assert_quotes_no_secret(&corpus);
    let mut skipped: Vec<String> = corpus.skipped.iter().map(|s| s.to_string()).collect();
    skipped.sort();
    let why = "a symbolic link (to a file): folders are walked without following links; name \
               it with --cases to load it";
    assert_eq!(
        skipped,
        ["credentials.yml", "key.yaml", "password.yaml"]
            .map(|f| format!("{}: {why}", dir.join(f).display()))
    );
}

// On main: the same leak, through a path named on the command line.
#[test]
fn a_file_that_is_not_yaml_named_directly_is_refused_without_being_quoted() {
    let (_home, files) = secrets();
    for file in files {
        let corpus = Corpus::load_path(&file);
        assert!(corpus.cases.is_empty());
        assert_quotes_no_secret(&corpus);
        assert_eq!(
            corpus.errors[0].to_string(),
            format!(
                "{}:1: invalid type: a string, expected a YAML mapping with `cases:` (a case file)",
                file.display()
            )
        );
    }
}

// On main: an exponential walk (dir/l1/l2/l1/... until the kernel's 40-link limit), which
// did not end within the minute.
#[test]
fn two_links_to_the_folder_itself_do_not_make_the_walk_exponential() {
    let dir = fresh_dir("two-links");
    std::fs::write(dir.join("a.yaml"), case_text("a")).unwrap();
    symlink(".", dir.join("l1")).unwrap();
    symlink(".", dir.join("l2")).unwrap();
    let corpus = load_within_a_minute(vec![dir.clone()]);
    assert_eq!(names(&corpus), ["a"]);
    assert!(corpus.errors.is_empty(), "{:?}", corpus.errors);
    assert_eq!(corpus.skipped.len(), 2, "{:?}", corpus.skipped);
    assert!(
        corpus.skipped[0]
            .message
            .starts_with("a symbolic link (to a folder)")
    );
}

// On main: a.yaml loaded 40 times (dir/a.yaml, dir/self/a.yaml, dir/self/self/a.yaml, ...),
// 39 of them duplicate-name errors; a hard link and a file named twice loaded twice.
#[test]
fn each_file_loads_once_however_many_ways_it_is_reached() {
    let dir = fresh_dir("self-link");
    std::fs::write(dir.join("a.yaml"), case_text("a")).unwrap();
    symlink(".", dir.join("self")).unwrap();
    let corpus = Corpus::load_path(&dir);
    assert_eq!(names(&corpus), ["a"]);
    assert!(corpus.errors.is_empty(), "{:?}", corpus.errors);
    std::fs::hard_link(dir.join("a.yaml"), dir.join("b.yaml")).unwrap();
    let corpus = Corpus::load_paths(&[dir.clone(), dir.join("a.yaml"), dir.join("b.yaml")]);
    assert_eq!(names(&corpus), ["a"]);
    assert!(corpus.errors.is_empty(), "{:?}", corpus.errors);
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo (coreutils)");
    assert!(status.success());
}

// On main: both loads waited forever for a writer on the FIFO.
#[test]
fn a_fifo_named_like_a_case_file_is_skipped_in_a_folder_and_refused_when_named() {
    let dir = fresh_dir("fifo");
    std::fs::write(dir.join("a.yaml"), case_text("a")).unwrap();
    let fifo = dir.join("x.yaml");
    mkfifo(&fifo);
    let corpus = load_within_a_minute(vec![dir.clone()]);
    assert_eq!(names(&corpus), ["a"]);
    assert!(corpus.errors.is_empty(), "{:?}", corpus.errors);
    assert_eq!(
        corpus.skipped[0].to_string(),
        format!("{}: a FIFO, not a regular file: not read", fifo.display())
    );
    let corpus = load_within_a_minute(vec![fifo.clone()]);
    assert_eq!(
        corpus.errors[0].to_string(),
        format!(
            "{}: a FIFO, not a regular file: not read (only regular files are)",
            fifo.display()
        )
    );
}

// On main: /dev/zero was read until memory ran out (do not run that on a shared machine
// without `ulimit -v`).
#[test]
fn a_device_is_refused_before_a_byte_is_read() {
    let corpus = load_within_a_minute(vec![PathBuf::from("/dev/zero")]);
    assert_eq!(
        corpus.errors[0].to_string(),
        "/dev/zero: a character device, not a regular file: not read (only regular files are)"
    );
    let dir = fresh_dir("device");
    symlink("/dev/zero", dir.join("zero.yaml")).unwrap();
    let corpus = load_within_a_minute(vec![dir.clone()]);
    assert!(corpus.errors.is_empty() && corpus.cases.is_empty());
    assert_eq!(corpus.skipped.len(), 1, "{:?}", corpus.skipped);
}

// On main: read and parsed whole (a 40 MB case file peaked at 4 GB).
#[test]
fn a_case_file_past_32_mib_is_refused_before_it_is_read() {
    let dir = fresh_dir("big");
    let path = dir.join("big.yaml");
    let mut text = case_text("big");
    let comment = format!("# {}\n", "x".repeat(1022));
    while text.len() <= 32 << 20 {
        text.push_str(&comment);
    }
    std::fs::write(&path, &text).unwrap();
    let corpus = Corpus::load_path(&path);
    assert!(corpus.cases.is_empty());
    assert_eq!(
        corpus.errors[0].to_string(),
        format!(
            "{}: {} bytes, more than the bound for case files (33554432 bytes, 32 MiB): not \
             read",
            path.display(),
            text.len()
        )
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A data list of `count` aliases of a list of `count` zeros: about 3.5 bytes per element
/// written, `count * count` elements once expanded.
fn alias_bomb(count: usize) -> String {
    let zeros = vec!["0"; count].join(", ");
    let aliases = vec!["*z"; count].join(", ");
    format!(
        "cases:\n  - name: bomb\n    split:\n      axis: 0\n      input:\n        data_type: \
         UINT8\n        sizes: [1]\n        data: [&z [{zeros}],\n          {aliases}]\n      \
         outputs: [{{data_type: UINT8, sizes: [1]}}]\n"
    )
}

// On main: serde_yaml's repetition limit (100 jumps per event) let this through, and the
// 350 KB file expanded to 2.5e9 values: tens of gigabytes, until memory ran out (do not run
// that without `ulimit -v`).
#[test]
fn a_small_case_file_of_aliases_expanding_to_gigabytes_is_refused_within_its_budget() {
    let text = alias_bomb(50_000);
    assert!(text.len() < 400_000);
    let mut corpus = Corpus::default();
    corpus.add_text("cases/bomb.yaml", &text);
    assert!(corpus.cases.is_empty());
    assert_eq!(
        corpus.errors[0].to_string(),
        "cases/bomb.yaml:9: its aliases expand to more than 4194304 YAML nodes, the bound for \
         case files (the first alias is on this line): not parsed"
    );
    // Aliases within the budget are fine.
    let mut corpus = Corpus::default();
    corpus.add_text(
        "cases/aliases.yaml",
        &case_text("a").replace("data: [1, 2, 3]", "data: [&one 1, *one, *one]"),
    );
    assert!(corpus.errors.is_empty(), "{:?}", corpus.errors);
    assert_eq!(corpus.cases.len(), 1);
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

// On main: the same expansion through `versions:`, which is read as a YAML value first.
#[test]
fn an_expectations_file_of_aliases_is_refused_within_its_budget() {
    let dir = fresh_dir("expectations-bomb");
    let zeros = vec!["\"1.0\""; 20_000].join(", ");
    let aliases = vec!["*v"; 20_000].join(", ");
    let path = write(
        &dir,
        "bomb.yaml",
        &format!(
            "expected_failures:\n  - backend: x\n    case: y\n    reason: z\n    versions: [&v \
             [{zeros}],\n      {aliases}]\n"
        ),
    );
    let error = Expectations::load(&path).unwrap_err();
    assert_eq!(
        error,
        format!(
            "{}:6: its aliases expand to more than 65536 YAML nodes, the bound for \
             expectations files (the first alias is on this line): not parsed",
            path.display()
        )
    );
}

// On main: 30 s in the parser before any error.
#[test]
fn an_expectations_file_100000_brackets_deep_fails_at_once_with_its_line() {
    let dir = fresh_dir("expectations-deep");
    let path = write(
        &dir,
        "deep.yaml",
        &format!(
            "expected_failures:\n  - backend: {}{}\n",
            "[".repeat(100_000),
            "]".repeat(100_000)
        ),
    );
    let started = Instant::now();
    let error = Expectations::load(&path).unwrap_err();
    // Milliseconds; the bound is loose for a shared machine and a debug build.
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(
        error,
        format!(
            "{}:2: nested more than 64 levels deep (open brackets plus indentation); \
             expectations files need about 8",
            path.display()
        )
    );
}

#[test]
fn an_expectations_file_that_is_not_one_names_its_file_line_and_field() {
    let dir = fresh_dir("expectations-typo");
    let path = write(
        &dir,
        "typo.yaml",
        "expected_failures:\n  - backend: x\n    case: y\n    reson: z\n",
    );
    assert_eq!(
        Expectations::load(&path).unwrap_err(),
        format!(
            "{}:4: expected_failures[0]: unknown field `reson`, expected one of `backend`, \
             `implementation`, `device`, `versions`, `adapter`, `case`, `reason`",
            path.display()
        )
    );
    let fifo = dir.join("fifo.yaml");
    mkfifo(&fifo);
    assert_eq!(
        Expectations::load(&fifo).unwrap_err(),
        format!(
            "{}: a FIFO, not a regular file: not read (only regular files are)",
            fifo.display()
        )
    );
    let (_home, [key, ..]) = secrets();
    let error = Expectations::load(&key).unwrap_err();
    assert!(!error.contains("OPENSSH"), "{error}");
}

// On main: the first `dup` ran (and passed), so the matrix, which keys its rows by name,
// showed the load error's row passed.
#[test]
fn a_name_defined_in_two_files_is_an_error_at_both_and_neither_case_runs() {
    let dir = fresh_dir("duplicates");
    write(&dir, "a.yaml", &case_text("dup"));
    write(
        &dir,
        "b.yaml",
        &case_text("dup").replace("[1, 2, 3]", "[4, 5, 6]"),
    );
    let corpus = Corpus::load_path(&dir);
    assert!(corpus.cases.is_empty(), "{:?}", names(&corpus));
    assert_eq!(
        corpus
            .errors
            .iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>(),
        [format!(
            "{}:2: case `dup`: duplicate case name (first defined at {}:2); no case of this \
             name runs",
            dir.join("b.yaml").display(),
            dir.join("a.yaml").display()
        )]
    );
}

// On main: a case named like a broken file's load error loaded and passed, and took the
// load error's row in the matrix.
#[test]
fn a_case_cannot_take_a_load_errors_name() {
    let dir = fresh_dir("load-name");
    let broken = write(&dir, "broken.yaml", "cases: [\n");
    let name = format!("load:{}", broken.display());
    write(&dir, "impostor.yaml", &case_text(&name));
    let corpus = Corpus::load_path(&dir);
    assert!(corpus.cases.is_empty(), "{:?}", names(&corpus));
    assert_eq!(corpus.errors.len(), 2, "{:?}", corpus.errors);
    assert_eq!(
        corpus.errors[1].message,
        format!(
            "name: `{name}` starts with `load:`, which reports keep for files that could not be \
             loaded"
        )
    );
}

// On main: an escape sequence in a name reached the terminal and every report raw.
#[test]
fn a_case_name_with_control_characters_is_refused_and_quoted_escaped() {
    let mut corpus = Corpus::default();
    corpus.add_text("cases/esc.yaml", &case_text("\"a\\e[2Jb\""));
    assert!(corpus.cases.is_empty());
    assert_eq!(
        corpus.errors[0].to_string(),
        "cases/esc.yaml:2: case `a\\u{1b}[2Jb`: name: `a\\u{1b}[2Jb` must contain no control \
         characters, line breaks, non-characters, direction overrides or invisible characters \
         (format characters, spaces, unassigned code points)"
    );
}

// On main (aa4714d): `a\u{2060}b`, `a\u{ad}b` and `ab` followed by tag characters all loaded,
// and printed as `ab`, like the case `ab` itself.
#[test]
fn names_that_would_print_alike_through_an_invisible_character_do_not_load() {
    let mut corpus = Corpus::default();
    corpus.add_text("cases/plain.yaml", &case_text("ab"));
    for (file, name, shown) in [
        ("cases/wj.yaml", "\"a\\u2060b\"", "a\\u{2060}b"),
        ("cases/shy.yaml", "\"a\\u00adb\"", "a\\u{ad}b"),
        ("cases/tag.yaml", "\"ab\\U000E0041\"", "ab\\u{e0041}"),
    ] {
        corpus.add_text(file, &case_text(name));
        let error = corpus.errors.last().unwrap().to_string();
        assert!(
            error.starts_with(&format!(
                "{file}:2: case `{shown}`: name: `{shown}` must contain"
            )),
            "{error}"
        );
    }
    assert_eq!(names(&corpus), ["ab"]);
    assert_eq!(corpus.errors.len(), 3);
}

// On main: a `%TAG` directive got past "no tags outside the core schema" (it renames `!!`).
#[test]
fn a_tag_directive_is_refused_with_its_line() {
    let mut corpus = Corpus::default();
    let text = format!("%TAG !! tag:example.com,2000:\n---\n{}", case_text("a"));
    corpus.add_text("cases/tag.yaml", &text);
    assert!(corpus.cases.is_empty());
    assert_eq!(
        corpus.errors[0].to_string(),
        "cases/tag.yaml:1: a `%TAG` directive (it renames YAML's tags; case files use no \
         tags): not parsed"
    );
}

// On main: each of these files' whole text was quoted in the error.
#[test]
fn a_file_that_is_not_a_case_file_is_described_never_quoted() {
    let dir = fresh_dir("not-case-files");
    for (text, what) in [
        ("123456\n", "a number"),
        ("0.123456789\n", "a number"),
        ("- hunter2\n- swordfish\n", "a list"),
        ("true\n", "a boolean"),
        ("\"quoted: secret\"\n", "a string"),
    ] {
        let path = write(&dir, "f.yaml", text);
        let corpus = Corpus::load_path(&path);
        let error = corpus.errors[0].to_string();
        assert_eq!(
            error,
            format!(
                "{}:1: invalid type: {what}, expected a YAML mapping with `cases:` (a case file)",
                path.display()
            )
        );
    }
}

// Found by the case-file fuzz target (on main, aa4714d): the parser (YAML 1.1) ends a line at
// U+2028, editors do not, so the lines of every later error were off by one per separator.
#[test]
fn a_yaml_1_1_line_break_is_refused_at_its_line() {
    let mut corpus = Corpus::default();
    let text = case_text("a").replace("split:", "split:\u{2028}");
    corpus.add_text("cases/ls.yaml", &text);
    assert!(corpus.cases.is_empty());
    assert_eq!(
        corpus.errors[0].to_string(),
        "cases/ls.yaml:3: a U+2028 line break (YAML 1.1 ends a line there, editors do not; \
         write `\\u2028` in a double-quoted string): not parsed"
    );
}
