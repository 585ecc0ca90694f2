//! Real Windows links in a case folder: a junction (a folder reparse point, which any user may
//! make) and a file symbolic link (which needs Developer Mode or an administrator, as on
//! GitHub's windows-latest). The folder walk follows neither, and names each as refused. Wine 8
//! has neither kind, so these run only on Windows (docs/guide/windows.md); the same refusal of
//! Unix links is tests/hostile_files.rs.

#![cfg(windows)]

use dmlcts_harness::Corpus;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dmlcts-links-{name}-{}", std::process::id()));
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

/// A junction at `link` to the folder `target` (cmd's mklink /J: no privilege needed).
fn junction(link: &Path, target: &Path) {
    let status = Command::new("cmd")
        .arg("/c")
        .arg("mklink")
        .arg("/J")
        .arg(link)
        .arg(target)
        .status()
        .unwrap();
    assert!(
        status.success(),
        "mklink /J {} {}",
        link.display(),
        target.display()
    );
}

#[test]
fn a_junction_to_a_folder_of_cases_is_not_walked_and_is_named() {
    let outside = fresh_dir("junction-target");
    std::fs::write(outside.join("secret.yaml"), case_text("secret")).unwrap();
    let dir = fresh_dir("junction");
    std::fs::write(dir.join("good.yaml"), case_text("good")).unwrap();
    junction(&dir.join("elsewhere"), &outside);
    let corpus = Corpus::load_path(&dir);
    let names: Vec<&str> = corpus.cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["good"]);
    let skipped: Vec<String> = corpus.skipped.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        skipped,
        [format!(
            "{}: a symbolic link (to a folder): folders are walked without following links; \
             name it with --cases to load it",
            dir.join("elsewhere").display()
        )]
    );
}

#[test]
fn a_file_symbolic_link_named_like_a_case_file_is_not_read() {
    let outside = fresh_dir("symlink-target");
    std::fs::write(outside.join("secret.yaml"), case_text("secret")).unwrap();
    let dir = fresh_dir("symlink");
    std::fs::write(dir.join("good.yaml"), case_text("good")).unwrap();
    match std::os::windows::fs::symlink_file(outside.join("secret.yaml"), dir.join("link.yaml")) {
        Ok(()) => {}
        // Without Developer Mode or an administrator, Windows makes no symbolic link at all:
        // nothing to refuse (the junction test above needs no privilege).
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            eprintln!("no symbolic link made here ({e}); the refusal is checked where one can be");
            return;
        }
        Err(e) => panic!("symlink_file: {e}"),
    }
    let corpus = Corpus::load_path(&dir);
    let names: Vec<&str> = corpus.cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["good"]);
    let skipped: Vec<String> = corpus.skipped.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        skipped,
        [format!(
            "{}: a symbolic link (to a file): folders are walked without following links; \
             name it with --cases to load it",
            dir.join("link.yaml").display()
        )]
    );
}
