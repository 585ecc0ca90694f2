//! Writing a file the suite saves (JSON and JUnit reports, the matrix, a fuzz campaign's
//! cases): into a new temporary file in the same folder, created exclusively (so it is never
//! a link or a FIFO someone put there), then renamed over the name. Whatever was at the name,
//! a link, a FIFO, a hard link to another file, is replaced, never written through; a run
//! killed part-way leaves the old file or the new one whole, never a truncated one. And the
//! checks a command makes before it starts a run, so that it never ends in "cannot write".
//!
//! A path the user names for a report (`--json`, `--junit`, `fuzz merge --json`, the matrix's
//! files) goes through `write_report`: what is at the name decides how it is written. A
//! character device or a FIFO, directly or through links (`/dev/null`, `/dev/stdout` on a
//! terminal or a pipe), is written into, never replaced; so is the open file behind a
//! descriptor link (`/dev/stdout`, `/proc/self/fd/N`, `/dev/fd/N` where stdout is a file: it is
//! appended to, as `>>` would). A block device, a socket, or a FIFO nobody reads is refused.
//! Anything else (a regular file, a link to one, nothing) gets the rename above.

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

/// How a report reaches the name it was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Destination {
    /// A new file renamed over the name (`write_atomically`).
    Replace,
    /// Opened for writing and written into: a character device.
    Device,
    /// Opened for writing once a reader is known to be there: a FIFO.
    #[cfg_attr(not(unix), allow(dead_code))]
    Fifo,
    /// The open file behind a descriptor link, appended to.
    Descriptor,
}

/// Whether a link's text names an open descriptor: `/proc/self/fd/N`, `/proc/PID/fd/N`,
/// `/proc/thread-self/fd/N`, `/dev/fd/N`, `/dev/stdout`, `/dev/stderr`.
fn is_descriptor_link(text: &Path) -> bool {
    let Some(text) = text.to_str() else {
        return false;
    };
    if matches!(text, "/dev/stdout" | "/dev/stderr") {
        return true;
    }
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let fd = |rest: &str| rest.strip_prefix("fd/").is_some_and(digits);
    if let Some(rest) = text.strip_prefix("/dev/") {
        return fd(rest);
    }
    let Some(rest) = text.strip_prefix("/proc/") else {
        return false;
    };
    let Some((process, rest)) = rest.split_once('/') else {
        return false;
    };
    (matches!(process, "self" | "thread-self") || digits(process)) && fd(rest)
}

/// Whether `path` names one of Windows' devices: `\\.\NAME`, or a last part whose stem is
/// CON, PRN, AUX, NUL, COM0-9 or LPT0-9 (any case, any extension), which Windows opens as
/// the device wherever the folder is. Written into, never replaced.
fn is_windows_device(path: &Path) -> bool {
    let Some(text) = path.to_str() else {
        return false;
    };
    if text.starts_with(r"\\.\") || text.starts_with("//./") {
        return true;
    }
    let last = text.rsplit(['/', '\\']).next().unwrap_or(text);
    let stem = last
        .split('.')
        .next()
        .unwrap_or("")
        .trim_end()
        .to_ascii_uppercase();
    matches!(stem.as_str(), "CON" | "PRN" | "AUX" | "NUL")
        || ((stem.starts_with("COM") || stem.starts_with("LPT"))
            && stem.len() == 4
            && stem.as_bytes()[3].is_ascii_digit())
}

/// Whether `path` or a link on its way names an open descriptor (at most 40 links followed).
fn through_descriptor_link(path: &Path) -> bool {
    let mut current = path.to_path_buf();
    for _ in 0..40 {
        if is_descriptor_link(&current) {
            return true;
        }
        match std::fs::read_link(&current) {
            Ok(text) => current = folder_of(&current).join(text),
            Err(_) => return false,
        }
    }
    false
}

/// The type of what `file_type` describes, when it is a kind that is written into or
/// refused: `Ok(Some(..))` to write into, `Err` to refuse, `Ok(None)` for the rest.
fn special(file_type: &std::fs::FileType) -> Result<Option<Destination>, &'static str> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_char_device() {
            return Ok(Some(Destination::Device));
        }
        if file_type.is_fifo() {
            return Ok(Some(Destination::Fifo));
        }
        if file_type.is_block_device() {
            return Err("it is a block device (a report is never written over a disk)");
        }
        if file_type.is_socket() {
            return Err("it is a socket");
        }
    }
    if file_type.is_dir() {
        return Err("it is a folder");
    }
    let _ = file_type;
    Ok(None)
}

/// How a report goes to `path`, from what is there now; an error for what is refused.
fn destination(path: &Path) -> Result<Destination, String> {
    if cfg!(windows) && is_windows_device(path) {
        return Ok(Destination::Device);
    }
    let Ok(here) = std::fs::symlink_metadata(path) else {
        return Ok(Destination::Replace);
    };
    if !here.file_type().is_symlink() {
        let kind = special(&here.file_type()).map_err(str::to_string)?;
        return Ok(kind.unwrap_or(Destination::Replace));
    }
    // A link: what it ends at decides. One that ends nowhere is replaced, as before.
    let Ok(target) = std::fs::metadata(path) else {
        return Ok(Destination::Replace);
    };
    match special(&target.file_type()) {
        Ok(Some(kind)) => Ok(kind),
        Err(e) => Err(format!(
            "it is a link to something refused: {}",
            &e["it is ".len()..]
        )),
        Ok(None) if through_descriptor_link(path) => Ok(Destination::Descriptor),
        Ok(None) => Ok(Destination::Replace),
    }
}

/// Whether a report to `path` is written into what is there (a device, a FIFO, a descriptor's
/// file) rather than replacing it: two reports may share such a path (`/dev/null`).
pub fn written_into(path: &Path) -> bool {
    matches!(
        destination(path),
        Ok(Destination::Device | Destination::Fifo | Destination::Descriptor)
    )
}

/// Writes a report to the path the user named, as the module's documentation says: into a
/// device, a FIFO with a reader or a descriptor's file; a new file renamed over anything else.
pub fn write_report(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let refused = |e: String| std::io::Error::other(e);
    match destination(path).map_err(refused)? {
        Destination::Replace => write_atomically(path, bytes),
        Destination::Device => std::fs::OpenOptions::new()
            .write(true)
            .open(path)?
            .write_all(bytes),
        Destination::Descriptor => std::fs::OpenOptions::new()
            .append(true)
            .open(path)?
            .write_all(bytes),
        Destination::Fifo => {
            // Opened without waiting first: with no reader, this fails (ENXIO) at once
            // instead of waiting forever. Held open while the blocking open below is made, so
            // that one finds the reader too.
            #[cfg(unix)]
            let _probe = {
                use std::os::unix::fs::OpenOptionsExt;
                std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(path)
                    .map_err(|e| {
                        if e.raw_os_error() == Some(libc::ENXIO) {
                            refused("it is a FIFO that nothing reads".to_string())
                        } else {
                            e
                        }
                    })?
            };
            std::fs::OpenOptions::new()
                .write(true)
                .open(path)?
                .write_all(bytes)
        }
    }
}

/// Whether `write_report(path, ..)` can succeed: what `destination` refuses is an error; a
/// device, a FIFO or a descriptor's file is fine (a FIFO's reader may come later); for the
/// rest, `check_file_writable`.
pub fn check_report_writable(path: &Path) -> Result<(), String> {
    match destination(path) {
        Err(_) if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) => {
            check_file_writable(path)
        }
        Err(e) => Err(format!("{}: {e}", path.display())),
        Ok(Destination::Replace) => check_file_writable(path),
        Ok(_) => Ok(()),
    }
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
pub(crate) fn check_file_writable(path: &Path) -> Result<(), String> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
        return Err(format!("{} is a folder", path.display()));
    }
    check_folder_writable(folder_of(path))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn windows_device_names_are_recognised_in_any_folder_case_and_extension() {
        for device in [
            "NUL",
            "nul.json",
            r"C:\reports\con.xml",
            "COM1",
            "lpt9.txt",
            r"\\.\pipe\x",
        ] {
            assert!(is_windows_device(Path::new(device)), "{device}");
        }
        for file in [
            "null.json",
            "console.xml",
            "COM10",
            "COMX",
            "report.json",
            "nul-report",
        ] {
            assert!(!is_windows_device(Path::new(file)), "{file}");
        }
    }

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

    fn mknod_null(path: &Path) {
        // A character device like /dev/null (1:3), made here so the machine's is never used.
        let status = std::process::Command::new("mknod")
            .arg(path)
            .args(["c", "1", "3"])
            .status()
            .expect("mknod (coreutils)");
        assert!(status.success(), "mknod needs root");
    }

    fn is_char_device(path: &Path) -> bool {
        use std::os::unix::fs::FileTypeExt;
        std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_char_device())
    }

    // On main (aa4714d), `--json /dev/null` as root replaced the device with a regular file
    // holding the report, and a link to it (`/dev/stdout`) with a file.
    #[test]
    fn a_report_path_that_is_a_device_or_a_link_to_one_is_written_into_never_replaced() {
        let dir = fresh_dir("device");
        let null = dir.join("null");
        mknod_null(&null);
        write_report(&null, b"{\"report\": 1}").unwrap();
        assert!(is_char_device(&null), "the device was replaced");
        let link = dir.join("stdout");
        std::os::unix::fs::symlink(&null, &link).unwrap();
        write_report(&link, b"<testsuites/>").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        assert!(is_char_device(&null));
        assert_eq!(check_report_writable(&null), Ok(()));
        assert_eq!(check_report_writable(&link), Ok(()));
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(names.len(), 2, "no temporary file left");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_report_path_that_is_a_fifo_is_written_into_when_read_and_refused_when_not() {
        let dir = fresh_dir("fifo-report");
        let fifo = dir.join("report.json");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let error = write_report(&fifo, b"lost").unwrap_err();
        assert_eq!(error.to_string(), "it is a FIFO that nothing reads");
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(&fifo).unwrap())
        };
        // The reader's open may come after the first try: try until it is there.
        let mut tries = 0;
        while let Err(e) = write_report(&fifo, b"{\"report\": 2}") {
            assert_eq!(e.to_string(), "it is a FIFO that nothing reads");
            tries += 1;
            assert!(tries < 100_000, "the reader never came");
            std::thread::yield_now();
        }
        assert_eq!(reader.join().unwrap(), b"{\"report\": 2}");
        use std::os::unix::fs::FileTypeExt;
        assert!(
            std::fs::symlink_metadata(&fifo)
                .unwrap()
                .file_type()
                .is_fifo()
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_descriptor_link_is_appended_to_and_a_block_device_or_socket_refused() {
        let dir = fresh_dir("descriptor");
        let file = dir.join("stdout.txt");
        std::fs::write(&file, "before\n").unwrap();
        let open = std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .unwrap();
        use std::os::fd::AsRawFd;
        let link = PathBuf::from(format!("/proc/self/fd/{}", open.as_raw_fd()));
        write_report(&link, b"report\n").unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "before\nreport\n");
        assert!(is_descriptor_link(Path::new("/dev/stdout")));
        assert!(is_descriptor_link(Path::new("/proc/123/fd/4")));
        assert!(!is_descriptor_link(Path::new("/proc/sys/vm/drop_caches")));
        assert!(!is_descriptor_link(Path::new("/dev/fd/x")));

        let block = dir.join("disk");
        let status = std::process::Command::new("mknod")
            .arg(&block)
            .args(["b", "7", "200"])
            .status()
            .unwrap();
        assert!(status.success());
        let error = write_report(&block, b"report").unwrap_err();
        assert_eq!(
            error.to_string(),
            "it is a block device (a report is never written over a disk)"
        );
        assert_eq!(
            check_report_writable(&block),
            Err(format!(
                "{}: it is a block device (a report is never written over a disk)",
                block.display()
            ))
        );
        let socket = dir.join("socket");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        assert_eq!(
            write_report(&socket, b"report").unwrap_err().to_string(),
            "it is a socket"
        );
        drop(open);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
