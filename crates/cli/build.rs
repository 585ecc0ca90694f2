//! Records the commit this build comes from, for `dmlcts --version` and every report:
//! `DMLCTS_COMMIT` if set (a packager's), else `git rev-parse HEAD` in this checkout, else the
//! `.cargo_vcs_info.json` cargo writes into a published package; absent when none says.

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!text.is_empty()).then_some(text)
}

fn is_commit(text: &str) -> bool {
    (7..=64).contains(&text.len()) && text.chars().all(|c| c.is_ascii_hexdigit())
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    println!("cargo:rerun-if-env-changed=DMLCTS_COMMIT");
    let mut commit = std::env::var("DMLCTS_COMMIT").ok().filter(|c| is_commit(c));
    if commit.is_none() {
        commit = git(&manifest, &["rev-parse", "HEAD"]).filter(|c| is_commit(c));
        if commit.is_some() {
            // Built again when HEAD moves: a checkout (HEAD) or a commit (the branch's ref).
            let mut watched = vec!["HEAD".to_string()];
            if let Some(branch) = git(&manifest, &["symbolic-ref", "-q", "HEAD"]) {
                watched.push(branch);
            }
            watched.push("packed-refs".to_string());
            for name in watched {
                if let Some(path) = git(&manifest, &["rev-parse", "--git-path", &name]) {
                    let path = manifest.join(path);
                    if path.exists() {
                        println!("cargo:rerun-if-changed={}", path.display());
                    }
                }
            }
        }
    }
    if commit.is_none() {
        let info = manifest.join(".cargo_vcs_info.json");
        println!("cargo:rerun-if-changed={}", info.display());
        commit = std::fs::read_to_string(&info).ok().and_then(|text| {
            let at = text.find("\"sha1\"")?;
            let rest = &text[at + 6..];
            let start = rest.find('"')? + 1;
            let end = start + rest[start..].find('"')?;
            Some(rest[start..end].to_string()).filter(|c| is_commit(c))
        });
    }
    if let Some(commit) = commit {
        println!("cargo:rustc-env=DMLCTS_BUILD_COMMIT={commit}");
    }
}
