//! The matrix page in a real browser: a matrix of more than 1,200 rows from real runs (the
//! oracle and the CPU backend over the corpus and 400 fuzzer-made cases; a values-only CPU
//! backend wrapped to corrupt some outputs, for failing and informational cells; and a backend
//! that cannot start) is written as HTML and loaded in headless Chromium (Debian's
//! `chromium`); the DOM after the page's script has run is checked: the script's recount of
//! every column against the totals row, failing cells' links to their replay commands, hover
//! titles, the groups, and the row filters. A screenshot is kept in target/matrix-page.png.
//!
//! Without Chromium the test is ignored with the reason, unless DMLCTS_REQUIRE_CHROMIUM=1
//! (CI installs it and sets that): then it fails.

use clap::Parser;
use dmlcts_backend_cpu::CpuBackend;
use dmlcts_cli::Host;
use dmlcts_cli::{MatrixArgs, Wanted, matrix_with};
use dmlcts_cli::{Resolved, resolve};
use dmlcts_fuzz::campaign::case_tree;
use dmlcts_fuzz::{Mix, case_strategy};
use dmlcts_harness::Corpus;
use dmlcts_harness::report::matrix::{Matrix, STATUSES};
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, FeatureLevel, OperatorDesc, OutputBinding,
    ValidationProfile,
};
use libtest_mimic::{Arguments, Failed, Trial};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";

fn main() {
    let args = Arguments::from_args();
    let chromium = std::env::var_os("DMLCTS_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(CHROMIUM));
    let missing = (!chromium.is_file()).then(|| {
        format!(
            "no Chromium at {} (Debian: apt-get install chromium; or set DMLCTS_CHROMIUM)",
            chromium.display()
        )
    });
    if let Some(reason) = &missing {
        if std::env::var("DMLCTS_REQUIRE_CHROMIUM").as_deref() == Ok("1") {
            eprintln!("DMLCTS_REQUIRE_CHROMIUM=1 but {reason}");
            std::process::exit(1);
        }
        eprintln!("the matrix page's browser test is skipped: {reason}");
    }
    let trial = Trial::test(
        "the_matrix_page_of_1200_rows_in_headless_chromium_shows_what_the_runs_gave",
        move || browser_test(&chromium),
    )
    .with_ignored_flag(missing.is_some());
    libtest_mimic::run(&args, vec![trial]).exit();
}

/// The CPU backend, but every 40th descriptor (by hash) gets its first output byte flipped,
/// and, declaring the values-only profile, it accepts every descriptor (the must-reject cases
/// are informational).
struct Corrupting(CpuBackend);

/// What it compiles a descriptor it should have rejected to: nothing happens.
struct Nothing;

impl CompiledOperator for Nothing {
    fn execute(&self, _: &[&[u8]], _: &mut [OutputBinding<'_>]) -> Result<(), String> {
        Ok(())
    }
}

fn corrupted(op: &OperatorDesc) -> bool {
    let mut hasher = DefaultHasher::new();
    format!("{op:?}").hash(&mut hasher);
    hasher.finish().is_multiple_of(40)
}

struct Flipping<'a> {
    inner: Box<dyn CompiledOperator + 'a>,
}

impl CompiledOperator for Flipping<'_> {
    fn execute(&self, inputs: &[&[u8]], outputs: &mut [OutputBinding<'_>]) -> Result<(), String> {
        self.inner.execute(inputs, outputs)?;
        if let Some(binding) = outputs.iter_mut().find(|b| b.size > 0) {
            binding.buffer[binding.offset] ^= 0x5a;
        }
        Ok(())
    }
}

impl Backend for Corrupting {
    fn name(&self) -> String {
        "corrupting".to_string()
    }
    fn feature_level(&self) -> FeatureLevel {
        self.0.feature_level()
    }
    fn validation_profile(&self) -> ValidationProfile {
        ValidationProfile::ValuesOnly
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        let inner = match self.0.compile(op) {
            Err(CompileError::Rejected(_)) => return Ok(Box::new(Nothing)),
            other => other?,
        };
        if corrupted(op) {
            Ok(Box::new(Flipping { inner }))
        } else {
            Ok(inner)
        }
    }
}

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

/// The corpus and 400 fuzzer-made cases (valid and near misses), as `cases/fuzz/...`.
fn cases() -> Corpus {
    let mut corpus = Corpus::embedded();
    let strategy = case_strategy(None, Mix::Both);
    for i in 0..400 {
        let mut case = case_tree(&strategy, 2026, i).current();
        case.name = format!("fuzz.seed-2026.{i}");
        case.file = "cases/fuzz/seed-2026.yaml".to_string();
        case.line = 1 + i as usize;
        corpus.cases.push(case);
    }
    corpus
}

#[derive(Parser)]
struct Words {
    #[command(flatten)]
    args: MatrixArgs,
}

fn build_matrix() -> (Matrix, i32) {
    let host = host();
    let wanted: Vec<Wanted> = ["oracle", "cpu", "corrupting", "absent"]
        .into_iter()
        .map(|name| Wanted {
            name: name.to_string(),
            named: true,
            unavailable: None,
        })
        .collect();
    let args = Words::try_parse_from(["matrix"]).expect("no options").args;
    matrix_with(
        &args,
        "dmlcts matrix (the browser test)",
        "dmlcts",
        &|request| match request.name.as_str() {
            "corrupting" => Ok(Resolved::per_level(
                Arc::new(Corrupting(CpuBackend::at_level(FeatureLevel::L4_1))),
                |level| Arc::new(Corrupting(CpuBackend::at_level(level))),
            )),
            "absent" => Err("no such device here".to_string()),
            _ => resolve(&host, request),
        },
        &wanted,
        cases(),
        None,
    )
    .map(|(matrix, verdict)| (matrix, i32::from(dmlcts_cli::exit_status(&Ok(verdict)))))
    .expect("the matrix selects cases")
}

/// Runs Chromium headless on the page with `extra` options; returns its stdout. Killed after
/// two minutes.
fn chromium(binary: &Path, extra: &[&str], url: &str) -> Result<String, Failed> {
    let profile = tempdir("profile");
    let mut child = Command::new(binary)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let out = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap_or_default());
    let err = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err("chromium ran for more than 2 minutes".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = out.join().unwrap_or_default();
    let err = err.join().unwrap_or_default();
    let _ = std::fs::remove_dir_all(&profile);
    if !status.success() {
        return Err(format!("chromium exited with {status}:\n{err}").into());
    }
    Ok(out)
}

fn tempdir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "dmlcts-matrix-page-{}-{what}-{:?}",
        std::process::id(),
        Instant::now()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// The start tag of the element with this id, and the text up to its end tag.
fn element<'a>(dom: &'a str, id: &str) -> Option<&'a str> {
    let at = dom.find(&format!(" id=\"{id}\""))?;
    let start = dom[..at].rfind('<')?;
    let tag: String = dom[start + 1..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect();
    let end = dom[at..].find(&format!("</{tag}>"))? + at;
    Some(&dom[start..end])
}

fn attribute<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let at = tag[..tag.find('>')?].find(&key)? + key.len();
    Some(&tag[at..at + tag[at..].find('"')?])
}

/// Chromium's serialization of text in an attribute value or element.
fn html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\u{a0}', "&nbsp;")
}

fn check(condition: bool, what: impl FnOnce() -> String) -> Result<(), Failed> {
    if condition {
        Ok(())
    } else {
        Err(what().into())
    }
}

fn browser_test(binary: &Path) -> Result<(), Failed> {
    let (matrix, status) = build_matrix();
    check(status == 1, || format!("exit status {status}, not 1"))?;
    check(matrix.rows.len() >= 1200, || {
        format!("{} rows", matrix.rows.len())
    })?;
    let dir = tempdir("page");
    let page = dir.join("matrix.html");
    std::fs::write(&page, matrix.to_html()).map_err(|e| e.to_string())?;
    let url = format!("file://{}", page.display());
    let dom = chromium(binary, &["--dump-dom"], &url)?;

    // The page's script ran to its end.
    check(dom.contains("<body data-ready=\"1\">"), || {
        "the script did not finish".to_string()
    })?;
    // Every row made it through the browser's parser, in its group.
    check(
        dom.matches("<tr class=\"case").count() == matrix.rows.len(),
        || {
            format!(
                "{} case rows in the DOM",
                dom.matches("<tr class=\"case").count()
            )
        },
    )?;
    let groups = matrix.groups();
    check(
        dom.matches("<tbody class=\"group\"").count() == groups.len(),
        || "group count".to_string(),
    )?;
    for (i, (group, members)) in groups.iter().enumerate() {
        let body = element(&dom, &format!("g{i}")).ok_or("a group is missing")?;
        check(
            attribute(body, "data-group") == Some(html(group).as_str()),
            || format!("group {i}: {body:.200}"),
        )?;
        check(
            body.matches("<tr class=\"case").count() == members.len(),
            || format!("group {group}: rows"),
        )?;
    }
    // The totals row: as the matrix counts them, and as the script recounts the cells.
    let thead = &dom[dom.find("<tr class=\"totals\">").ok_or("no totals row")?..];
    let cells: Vec<&str> = thead
        .split("<td ")
        .skip(1)
        .take(matrix.columns.len())
        .collect();
    check(cells.len() == matrix.columns.len(), || {
        "totals cells".into()
    })?;
    for (i, cell) in cells.iter().enumerate() {
        let cell = format!("<td {cell}");
        let totals = matrix.totals(i);
        let stated = [
            totals.passed,
            totals.failed,
            totals.expected_failures,
            totals.informational,
            totals.skipped,
        ]
        .map(|n| n.to_string())
        .join(",");
        check(attribute(&cell, "data-counted") == Some(&stated), || {
            format!("column {i}: {cell:.300} against {stated}")
        })?;
        check(!cell.contains("mismatch"), || {
            format!("column {i}: mismatch")
        })?;
        for (status, _, _) in STATUSES {
            let key = match status.name() {
                "expected_failure" => "expected-failures",
                other => other,
            };
            check(attribute(&cell, &format!("data-{key}")).is_some(), || {
                format!("column {i} lacks data-{key}")
            })?;
        }
    }
    let column = |name: &str| matrix.columns.iter().position(|c| c.backend == name);
    let (oracle, cpu, corrupting, absent) = (
        column("oracle").ok_or("no oracle column")?,
        column("cpu").ok_or("no cpu column")?,
        column("corrupting").ok_or("no corrupting column")?,
        column("absent").ok_or("no absent column")?,
    );
    for clean in [oracle, cpu] {
        check(matrix.totals(clean).failed == 0, || {
            format!(
                "{}: {}",
                matrix.columns[clean].backend,
                matrix.totals(clean).line()
            )
        })?;
        check(matrix.totals(clean).passed > 1000, || "few passes".into())?;
    }
    let failed = matrix.totals(corrupting).failed;
    check(failed >= 5, || format!("only {failed} corrupted cases"))?;
    let informational = matrix.totals(corrupting).informational;
    check(informational >= 100, || {
        format!("only {informational} informational cells")
    })?;
    check(matrix.columns[corrupting].profile == "values-only", || {
        matrix.columns[corrupting].profile.clone()
    })?;
    check(matrix.totals(absent).skipped == matrix.rows.len(), || {
        "absent: every cell skipped".into()
    })?;

    // Every failing cell links to its entry, which holds its replay command.
    let mut links = 0;
    for (r, row) in matrix.rows.iter().enumerate() {
        let tr = element(&dom, &format!("r{r}")).ok_or("a row is missing")?;
        let tds: Vec<&str> = tr.split("<td ").skip(1).collect();
        check(tds.len() == matrix.columns.len(), || {
            format!("row {r}: cells")
        })?;
        // The hover title of the absent backend's cell.
        check(
            attribute(&format!("<td {}", tds[absent]), "title")
                == Some("absent: skipped: backend absent unavailable: no such device here"),
            || format!("row {r}: {:.200}", tds[absent]),
        )?;
        let cell = &row.cells[corrupting];
        let td = format!("<td {}", tds[corrupting]);
        if cell.status.map(|s| s.name()) == Some("informational") {
            check(
                attribute(&td, "title").is_some_and(|t| {
                    t.starts_with("corrupting: informational: accepted; DirectML rejects it: rule ")
                }) && td.contains(">i</td>"),
                || format!("row {r}: {td:.300}"),
            )?;
        }
        if cell.status.map(|s| s.name()) != Some("failed") {
            continue;
        }
        check(
            attribute(&td, "title")
                == Some(html(&format!("corrupting: failed: {}", cell.reason)).as_str()),
            || format!("row {r}: title of {td:.300}"),
        )?;
        let href = td
            .split("<a href=\"#")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .ok_or_else(|| format!("row {r}: a failing cell without a link: {td:.300}"))?;
        let entry = element(&dom, href).ok_or_else(|| format!("no #{href} in the page"))?;
        let replay = cell.replay.as_ref().ok_or("a failure without replay")?;
        // The replay's words (the DMLCTS_* settings of this run go before them).
        let words = replay.words.join(" ");
        check(
            words.starts_with("dmlcts conformance --backend corrupting ")
                && replay.words.ends_with(&[
                    "--filter".to_string(),
                    row.name.clone(),
                    "--exact".to_string(),
                ]),
            || words.clone(),
        )?;
        check(
            entry.contains(&format!("<code>{}</code>", html(&replay.render()))),
            || format!("#{href}: {entry:.500}"),
        )?;
        check(entry.contains(&format!("href=\"#r{r}\"")), || {
            format!("#{href} does not link back to its row")
        })?;
        links += 1;
    }
    check(links == failed, || {
        format!("{links} links for {failed} failures")
    })?;

    // The filter, from the address: only the rows with a failing cell stay.
    let filtered = chromium(binary, &["--dump-dom"], &format!("{url}?show=failing"))?;
    let failing_rows = matrix
        .rows
        .iter()
        .filter(|r| {
            r.cells
                .iter()
                .any(|c| c.status.map(|s| s.name()) == Some("failed"))
        })
        .count();
    check(
        filtered.contains(&format!("data-visible-rows=\"{failing_rows}\"")),
        || format!("?show=failing: {failing_rows} rows expected"),
    )?;
    check(
        filtered.matches("<tr class=\"case np nd nf\"").count() == failing_rows
            && filtered.matches("<tr class=\"case np nd hidden\"").count()
                + filtered.matches("<tr class=\"case np hidden\"").count()
                + filtered.matches("<tr class=\"case hidden\"").count()
                == matrix.rows.len() - failing_rows,
        || "?show=failing hid the wrong rows".to_string(),
    )?;

    // Rows with a failing, expected-failure or informational cell (not only skips).
    let differ = chromium(binary, &["--dump-dom"], &format!("{url}?show=differ"))?;
    let differing = (matrix.rows.iter())
        .filter(|r| {
            (r.cells.iter()).any(|c| {
                !matches!(
                    c.status.map(|s| s.name()),
                    Some("passed" | "skipped") | None
                )
            })
        })
        .count();
    check(
        differing > failing_rows && differ.contains(&format!("data-visible-rows=\"{differing}\"")),
        || format!("?show=differ: {differing} rows expected"),
    )?;

    // A screenshot, to look at (target/matrix-page.png).
    let shot = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/matrix-page.png");
    let _ = std::fs::remove_file(&shot);
    chromium(
        binary,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1400,900",
        ],
        &url,
    )?;
    let png = std::fs::read(&shot).map_err(|e| format!("{}: {e}", shot.display()))?;
    check(png.starts_with(b"\x89PNG") && png.len() > 10_000, || {
        "not a screenshot".to_string()
    })?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
