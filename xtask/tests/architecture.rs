//! The invariants ARCHITECTURE.md states, each held by a test here that reads the sources (or,
//! for the public surfaces, a list checked in beside this file). A failure names the file and
//! line that breaks the invariant.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask is inside the workspace")
        .to_path_buf()
}

/// Every `.rs` file under `dir` (relative to the root), sorted.
fn rust_files(dir: &str) -> Vec<PathBuf> {
    fn walk(path: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(path) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&root().join(dir), &mut out);
    out.sort();
    out
}

/// The source files of the product, tests and test-only modules aside: every crate's `src/`
/// and xtask's.
fn product_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(root().join("crates")).unwrap().flatten() {
        files.extend(rust_files(&format!(
            "crates/{}/src",
            entry.file_name().to_string_lossy()
        )));
    }
    files.extend(rust_files("xtask/src"));
    files.extend(rust_files("examples/rust-backend/src"));
    files
}

/// A file's lines up to its `#[cfg(test)]` module (test code may do what the product may not),
/// numbered from 1, comments dropped.
fn product_lines(path: &Path) -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        let code = line.split("//").next().unwrap_or("");
        lines.push((i + 1, code.to_string()));
    }
    lines
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Where any of `needles` occurs in product code, outside the files `allowed` (relative paths).
fn occurrences(needles: &[&str], allowed: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for file in product_files() {
        let name = relative(&file);
        if allowed.contains(&name.as_str()) {
            continue;
        }
        for (n, line) in product_lines(&file) {
            if needles.iter().any(|needle| line.contains(needle)) {
                found.push(format!("{name}:{n}: {}", line.trim()));
            }
        }
    }
    found
}

#[test]
fn only_the_session_s_step_runs_a_case_on_a_backend() {
    // The judging function is defined in the runner; the session's step is its one caller in
    // the product. The findings record checks a recorded case on the oracle alone.
    let found = occurrences(
        &["run_case(", "run_case_with_data_sets("],
        &[
            "crates/harness/src/run/runner.rs",
            "crates/harness/src/session.rs",
            "crates/harness/src/report/findings.rs",
        ],
    );
    assert!(
        found.is_empty(),
        "cases are run through Session::step alone:\n{}",
        found.join("\n")
    );
}

#[test]
fn no_function_returns_err_for_a_pass() {
    let found = occurrences(&["Err(Verdict::Pass", "Err(Outcome::Pass", "::Pass)"], &[]);
    let found: Vec<_> = (found.into_iter())
        .filter(|line| line.contains("Err("))
        .collect();
    assert!(found.is_empty(), "a pass is a value:\n{}", found.join("\n"));
}

#[test]
fn outside_the_binaries_main_and_the_libtest_entry_point_nothing_exits_the_process() {
    // The deliberately broken server's exits are its faults.
    let found = occurrences(
        &["process::exit(", "process::abort("],
        &[
            "crates/harness/src/run/libtest.rs",
            "crates/protocol/src/bin/dmlcts-broken-server.rs",
        ],
    );
    assert!(
        found.is_empty(),
        "each binary's main decides its exit status once (a typed error turned into a status):\n{}",
        found.join("\n")
    );
    // libtest's exit is in one function, the entry point's.
    let libtest = root().join("crates/harness/src/run/libtest.rs");
    let exits: Vec<_> = (product_lines(&libtest).into_iter())
        .filter(|(_, line)| line.contains("process::exit("))
        .collect();
    assert_eq!(exits.len(), 2, "exit_with's two statuses: {exits:?}");
}

#[test]
fn every_binary_decides_its_exit_status_in_main() {
    let mut mains = vec![
        root().join("crates/cli/src/main.rs"),
        root().join("xtask/src/main.rs"),
    ];
    for entry in std::fs::read_dir(root().join("crates")).unwrap().flatten() {
        mains.extend(rust_files(&format!(
            "crates/{}/src/bin",
            entry.file_name().to_string_lossy()
        )));
    }
    let mut wrong = Vec::new();
    for main in &mains {
        let name = relative(main);
        if name.ends_with("dmlcts-broken-server.rs") {
            continue;
        }
        let text = std::fs::read_to_string(main).unwrap();
        if !text.contains("fn main() -> ExitCode")
            && !text.contains("fn main() -> std::process::ExitCode")
        {
            wrong.push(format!("{name}: main does not return its ExitCode"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_harness_prints_only_through_reporters() {
    // Its one exception, named: the libtest entry point's last line before it exits.
    let mut found = Vec::new();
    for file in rust_files("crates/harness/src") {
        let name = relative(&file);
        for (n, line) in product_lines(&file) {
            let prints = [
                "println!(",
                "eprintln!(",
                "print!(",
                "eprint!(",
                "stdout()",
                "stderr()",
            ]
            .iter()
            .any(|p| line.contains(p));
            if prints
                && !(name == "crates/harness/src/run/libtest.rs"
                    && line.contains("eprintln!(\"error: {message}\")"))
            {
                found.push(format!("{name}:{n}: {}", line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "the harness tells reporters (session::Reporter); it prints nothing itself:\n{}",
        found.join("\n")
    );
}

#[test]
fn no_crate_reaches_into_the_command_crate_s_modules() {
    // The `dmlcts` package's modules are private: other crates use its root items (the
    // documented entry points), never `dmlcts_cli::module::item`.
    let mut found = Vec::new();
    let mut files = product_files();
    for dir in ["xtask/tests", "crates/cli/tests"] {
        files.extend(rust_files(dir));
    }
    for file in files {
        let name = relative(&file);
        if name.starts_with("crates/cli/src/") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let line = line.split("//").next().unwrap_or("");
            if let Some(at) = line.find("dmlcts_cli::") {
                let rest = &line[at + "dmlcts_cli::".len()..];
                let word: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let is_module = word.chars().next().is_some_and(|c| c.is_lowercase())
                    && rest[word.len()..].starts_with("::");
                if is_module {
                    found.push(format!("{name}:{}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
    // And only the xtask depends on the command crate.
    let mut dependents = Vec::new();
    for entry in std::fs::read_dir(root().join("crates")).unwrap().flatten() {
        let manifest = entry.path().join("Cargo.toml");
        let text = std::fs::read_to_string(&manifest).unwrap_or_default();
        if entry.file_name() != "cli" && text.contains("dmlcts-cli") {
            dependents.push(relative(&manifest));
        }
    }
    assert!(dependents.is_empty(), "{dependents:?}");
}

/// The public items of a crate: each publicly reachable module's top-level `pub` items and
/// `pub use` names, and its exported macros, as `module::path::Name`.
fn public_items(krate: &str) -> BTreeSet<String> {
    fn walk(modpath: &[String], file: &Path, out: &mut BTreeSet<String>) {
        let text = std::fs::read_to_string(file).unwrap();
        let text = text.split("\n#[cfg(test)]\nmod tests").next().unwrap_or("");
        let prefix = modpath.join("::");
        let mut lines = text.lines().peekable();
        let mut exported_macro = false;
        while let Some(line) = lines.next() {
            if line.starts_with("#[macro_export]") {
                exported_macro = true;
                continue;
            }
            if let Some(rest) = line.strip_prefix("macro_rules! ") {
                if exported_macro {
                    out.insert(format!("{prefix}::{}!", rest.trim_end_matches(" {")));
                }
                exported_macro = false;
                continue;
            }
            if !line.starts_with('#') {
                exported_macro = false;
            }
            if let Some(rest) = line.strip_prefix("pub mod ") {
                let name = rest.trim_end_matches(';').trim_end_matches(" {");
                out.insert(format!("{prefix}::{name}"));
                let dir = if file.ends_with("lib.rs") || file.ends_with("mod.rs") {
                    file.parent().unwrap().to_path_buf()
                } else {
                    file.with_extension("")
                };
                let child = [
                    dir.join(format!("{name}.rs")),
                    dir.join(name).join("mod.rs"),
                ]
                .into_iter()
                .find(|p| p.exists());
                if let Some(child) = child {
                    let mut path = modpath.to_vec();
                    path.push(name.to_string());
                    walk(&path, &child, out);
                }
                continue;
            }
            if let Some(rest) = line.strip_prefix("pub use ") {
                let mut statement = rest.to_string();
                while !statement.contains(';') {
                    match lines.next() {
                        Some(more) => statement.push_str(more),
                        None => break,
                    }
                }
                let statement = statement.trim_end_matches(';');
                let names = match statement.split_once('{') {
                    Some((_, list)) => list.trim_end_matches('}').to_string(),
                    None => statement.rsplit("::").next().unwrap_or("").to_string(),
                };
                for name in names.split(',') {
                    let name = name.split(" as ").last().unwrap_or("").trim();
                    if !name.is_empty() {
                        out.insert(format!("{prefix}::{name}"));
                    }
                }
                continue;
            }
            for kind in ["fn", "struct", "enum", "trait", "const", "static", "type"] {
                if let Some(rest) = line.strip_prefix(&format!("pub {kind} ")) {
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    out.insert(format!("{prefix}::{name}"));
                }
            }
        }
    }
    let mut out = BTreeSet::new();
    let name = format!("dmlcts_{krate}");
    walk(
        &[name],
        &root().join(format!("crates/{krate}/src/lib.rs")),
        &mut out,
    );
    out
}

/// Compares a crate's public items with its list in xtask/tests/public-api/; with
/// `DMLCTS_BLESS=1` writes the list instead (a new public item is a deliberate change).
fn check_public_items(krate: &str) {
    let listed_file = root().join(format!("xtask/tests/public-api/{krate}.txt"));
    let items: Vec<String> = public_items(krate).into_iter().collect();
    let text = items.join("\n") + "\n";
    if std::env::var_os("DMLCTS_BLESS").is_some() {
        std::fs::create_dir_all(listed_file.parent().unwrap()).unwrap();
        std::fs::write(&listed_file, &text).unwrap();
        return;
    }
    let listed = std::fs::read_to_string(&listed_file).unwrap_or_default();
    let listed: BTreeSet<&str> = listed.lines().collect();
    let now: BTreeSet<&str> = items.iter().map(String::as_str).collect();
    let added: Vec<_> = now.difference(&listed).collect();
    let removed: Vec<_> = listed.difference(&now).collect();
    assert!(
        added.is_empty() && removed.is_empty(),
        "the public items of {krate} changed: new {added:?}, gone {removed:?}. A public item is \
         for authors or the other crates; make it pub(crate) otherwise, or, deliberately, list \
         it in {} (DMLCTS_BLESS=1 cargo test -p xtask --test architecture)",
        relative(&listed_file)
    );
}

#[test]
fn the_public_items_of_harness_are_the_listed_ones() {
    check_public_items("harness");
}

#[test]
fn the_public_items_of_cli_are_the_listed_ones() {
    check_public_items("cli");
}

/// A manifest's `[dependencies]` on the workspace's own crates (`dmlcts...` and the
/// `dmlcts-cli` alias of package `dmlcts`), by package name; one under
/// `[target.'cfg(X)'.dependencies]` as `NAME (X)`.
fn own_dependencies(manifest: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(manifest).unwrap();
    let mut section: Option<String> = None;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if line.starts_with('[') {
            let header = line.trim();
            section = if header == "[dependencies]" {
                Some(String::new())
            } else {
                (header.strip_prefix("[target.'cfg("))
                    .and_then(|rest| rest.strip_suffix(")'.dependencies]"))
                    .map(|cfg| format!(" ({cfg})"))
            };
            continue;
        }
        let Some(suffix) = &section else { continue };
        if !line.starts_with("dmlcts") {
            continue;
        }
        let key = line.split(['=', '.', ' ']).next().unwrap_or("");
        let key = if key == "dmlcts-cli" { "dmlcts" } else { key };
        out.insert(format!("{key}{suffix}"));
    }
    out
}

#[test]
fn the_crate_arrows_in_architecture_md_are_the_manifests() {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let mut stated = std::collections::BTreeMap::new();
    for line in text.lines() {
        if let Some((name, uses)) = line.split_once(" -> ") {
            let name = name.trim();
            if name.starts_with("dmlcts") || name == "xtask" {
                let uses: BTreeSet<String> =
                    uses.split(", ").map(|u| u.trim().to_string()).collect();
                stated.insert(name.to_string(), uses);
            }
        }
    }
    let mut manifests = vec![
        root().join("xtask/Cargo.toml"),
        root().join("examples/rust-backend/Cargo.toml"),
    ];
    for entry in std::fs::read_dir(root().join("crates")).unwrap().flatten() {
        manifests.push(entry.path().join("Cargo.toml"));
    }
    let mut wrong = Vec::new();
    for manifest in manifests {
        let text = std::fs::read_to_string(&manifest).unwrap();
        let name = text
            .lines()
            .find_map(|l| l.strip_prefix("name = \""))
            .map(|n| n.trim_end_matches('"').to_string())
            .unwrap();
        let actual = own_dependencies(&manifest);
        match stated.get(&name) {
            Some(uses) if *uses == actual => {}
            None if actual.is_empty() => {}
            other => wrong.push(format!(
                "{name}: ARCHITECTURE.md says {other:?}, the manifest {actual:?}"
            )),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
