//! Writing a file the suite saves (JSON and JUnit reports, the matrix, a fuzz campaign's
//! cases): into a new temporary file in the same folder, created exclusively (so it is never
//! a link or a FIFO someone put there), then renamed over the name. Whatever was at the name,
//! a link, a FIFO, a hard link to another file, is replaced, never written through; a run
//! killed part-way leaves the old file or the new one whole, never a truncated one. And the
//! checks a command makes before it starts a run, so that it never ends in "cannot write".

use std::io::Write;
use std::path::{Path, PathBuf};

/// The folder a file at `path` goes in (`.` for a bare name).
fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// A new file in `folder` that nothing else has, open for writing: `.dmlcts-PID-N.tmp`.
fn create_temporary(folder: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    let mut last = None;
    for n in 0..1000 {
        let path = folder.join(format!(".dmlcts-{}-{n}.tmp", std::process::id()));
        // create_new: O_CREAT | O_EXCL, which fails on any existing entry, a link included.
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no temporary name left")))
}

/// Writes `bytes` to `path` as described above, creating its folder if needed.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
        return Err(std::io::Error::other("it is a folder"));
    }
    let folder = folder_of(path);
    std::fs::create_dir_all(folder)?;
    let (temporary, mut file) = create_temporary(folder)?;
    let written = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(&temporary, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

/// Whether a file can be written in `folder` (created if missing): a temporary file is made
/// and removed.
pub fn check_folder_writable(folder: &Path) -> Result<(), String> {
    // The nearest part of the path that exists must be a folder.
    if let Some(existing) = folder
        .ancestors()
        .find(|a| !a.as_os_str().is_empty() && std::fs::metadata(a).is_ok())
        && std::fs::metadata(existing).is_ok_and(|m| !m.is_dir())
    {
        return Err(format!("{} exists and is not a folder", existing.display()));
    }
    std::fs::create_dir_all(folder)
        .map_err(|e| format!("cannot create the folder {}: {e}", folder.display()))?;
    let (temporary, _) = create_temporary(folder)
        .map_err(|e| format!("cannot write in {}: {e}", folder.display()))?;
    let _ = std::fs::remove_file(temporary);
    Ok(())
}

/// Whether `write_atomically(path, ..)` can succeed: the name is not a folder, and its folder
/// can be made and written in. What is at the name now does not matter: it is replaced.
pub fn check_file_writable(path: &Path) -> Result<(), String> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
        return Err(format!("{} is a folder", path.display()));
    }
    check_folder_writable(folder_of(path))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn fresh_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("dmlcts-write-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_link_a_fifo_or_a_hard_link_at_the_name_is_replaced_never_written_through() {
        let dir = fresh_dir("replace");
        let target = dir.join("target");
        std::fs::write(&target, "untouched").unwrap();
        std::os::unix::fs::symlink(&target, dir.join("link.json")).unwrap();
        write_atomically(&dir.join("link.json"), b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched");
        assert_eq!(
            std::fs::read_to_string(dir.join("link.json")).unwrap(),
            "new"
        );
        assert!(
            !std::fs::symlink_metadata(dir.join("link.json"))
                .unwrap()
                .is_symlink()
        );

        std::fs::hard_link(&target, dir.join("hard.json")).unwrap();
        write_atomically(&dir.join("hard.json"), b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched");

        let status = std::process::Command::new("mkfifo")
            .arg(dir.join("fifo.json"))
            .status()
            .unwrap();
        assert!(status.success());
        write_atomically(&dir.join("fifo.json"), b"new").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("fifo.json")).unwrap(),
            "new"
        );

        // Nothing left behind but the files written.
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["fifo.json", "hard.json", "link.json", "target"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_path_that_cannot_be_written_is_found_before_anything_runs() {
        let dir = fresh_dir("check");
        std::fs::write(dir.join("file"), "").unwrap();
        assert_eq!(
            check_file_writable(&dir.join("file/report.json")),
            Err(format!(
                "{} exists and is not a folder",
                dir.join("file").display()
            ))
        );
        assert_eq!(
            check_file_writable(&dir),
            Err(format!("{} is a folder", dir.display()))
        );
        assert_eq!(
            check_file_writable(&dir.join("new/deeper/report.json")),
            Ok(())
        );
        assert!(dir.join("new/deeper").is_dir());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
