//! Numbers of seconds from flags are checked where they are parsed: a value that is not a
//! finite, positive number of at most 7 days is refused with the flag named and exit status
//! 2, never a panic or a run whose every case fails.

use std::process::Command;

fn dmlcts(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_dmlcts"))
        .args(args)
        .current_dir(std::env::temp_dir())
        .output()
        .expect("run dmlcts");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_process_timeout_out_of_range_is_refused_before_the_run() {
    let cases = [
        (
            "1e300",
            "is more than the longest allowed, 604800 seconds (7 days)",
        ),
        (
            "1e19",
            "is more than the longest allowed, 604800 seconds (7 days)",
        ),
        ("-1", "is not a positive number of seconds"),
        ("nan", "is not a positive number of seconds"),
        ("inf", "is not a positive number of seconds"),
        ("1e-9", "is less than the shortest allowed, 0.001 seconds"),
    ];
    for (value, why) in cases {
        // An out-of-process backend, which would use the timeout on every case.
        let (code, stderr) = dmlcts(&[
            "conformance",
            "--backend",
            "cpu-process",
            "--filter",
            "doc.",
            &format!("--process-timeout={value}"),
        ]);
        assert_eq!(code, Some(2), "{value}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "invalid value '{value}' for '--process-timeout <SECS>': `{value}` {why}"
            )),
            "{value}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn a_fuzz_time_out_of_range_is_refused_before_the_campaign() {
    for flag in ["--time", "--shrink-time"] {
        let (code, stderr) = dmlcts(&["fuzz", "--cases", "1", flag, "1e300"]);
        assert_eq!(code, Some(2), "{flag}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "invalid value '1e300' for '{flag} <SECS>': `1e300` is more than the longest \
                 allowed, 604800 seconds (7 days)"
            )),
            "{flag}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
