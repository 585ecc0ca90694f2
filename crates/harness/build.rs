//! Embeds the case corpus (the repository's cases/ folder) in the harness, so a backend
//! author's crate that depends on dmlcts-harness runs the whole suite without the repository.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[path = "src/corpus/sha256.rs"]
#[allow(dead_code)]
mod sha256;

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(path);
        }
    }
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let cases = manifest.join("../../cases");
    println!("cargo:rerun-if-changed={}", cases.display());
    let mut files = Vec::new();
    collect(&cases, &mut files);
    let mut code = String::from("pub static EMBEDDED_CASES: &[(&str, &str)] = &[\n");
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
        let relative = file
            .strip_prefix(&cases)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let absolute = file.canonicalize().unwrap();
        writeln!(
            code,
            "    ({:?}, include_str!({:?})),",
            format!("cases/{relative}"),
            absolute
        )
        .unwrap();
    }
    code.push_str("];\n");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    std::fs::write(out_dir.join("embedded_cases.rs"), code).unwrap();
    // The corpus digest of the embedded files (`dmlcts --version` names it without loading).
    let digests: Vec<[u8; 32]> = files
        .iter()
        .map(|file| sha256::sha256(&std::fs::read(file).unwrap()))
        .collect();
    let digest = format!(
        "pub const EMBEDDED_DIGEST: &str = \"sha256:{}\";\npub const EMBEDDED_FILES: usize = {};\n",
        sha256::corpus_digest(&digests),
        files.len()
    );
    std::fs::write(out_dir.join("embedded_digest.rs"), digest).unwrap();
}
