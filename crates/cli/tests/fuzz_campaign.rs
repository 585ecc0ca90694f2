//! `dmlcts fuzz` as a user types it: a sharded, two-job campaign with its JSON report, a
//! server that offers every level fuzzed at each (or at the one asked for), data sets per
//! descriptor, and the errors of the new options.

use std::process::{Command, Output};

/// Runs with one `DMLCTS_*` setting of its own and none of the caller's (CI sets some).
fn dmlcts(args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dmlcts"));
    for (name, _) in std::env::vars().filter(|(n, _)| n.starts_with("DMLCTS_")) {
        command.env_remove(name);
    }
    command
        .args(args)
        .current_dir(std::env::temp_dir())
        .env("DMLCTS_EXAMPLE_SETTING", "kept in replays")
        .output()
        .expect("run dmlcts")
}

#[test]
fn a_sharded_two_job_campaign_writes_its_report_with_the_replay_command() {
    let dir = std::env::temp_dir().join(format!("dmlcts-cli-fuzz-{}", std::process::id()));
    let json = dir.join("campaign.json");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dmlcts(&[
        "fuzz",
        "--backend",
        "cpu",
        "--cases",
        "301",
        "--seed",
        "7",
        "--jobs",
        "2",
        "--shard",
        "1/3",
        "--out",
        dir.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("fuzz: 0 new findings"), "{stdout}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // Indices 1, 4, ..., 298 of 0..301.
    assert_eq!(report["cases_run"], 100);
    assert_eq!(report["shard"], "1/3");
    assert_eq!(report["jobs"], 2);
    assert_eq!(report["new_findings"], 0);
    assert_eq!(
        report["replay"],
        "DMLCTS_EXAMPLE_SETTING='kept in replays' dmlcts fuzz --backend cpu --seed 7 --cases 301 --shard 1/3 --jobs 2"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(unix)]
#[test]
fn a_slow_starting_backends_start_up_is_reported_apart_from_the_cases() {
    let dir = std::env::temp_dir().join(format!("dmlcts-cli-slow-{}", std::process::id()));
    let json = dir.join("campaign.json");
    std::fs::create_dir_all(&dir).unwrap();
    let server = format!(
        "process:sleep 1; exec {} serve-cpu",
        env!("CARGO_BIN_EXE_dmlcts")
    );
    let out = dmlcts(&[
        "fuzz",
        "--backend",
        &server,
        "--cases",
        "50",
        "--out",
        dir.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let startup = report["startup_s"].as_f64().unwrap();
    assert!((1.0..10.0).contains(&startup), "{startup}");
    assert!(
        stdout.contains(&format!(
            "fuzz: backend start-up {startup:.3} s; 50 cases (50 descriptors) in "
        )),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_shard_outside_its_count_and_zero_jobs_are_refused() {
    let out = dmlcts(&["fuzz", "--shard", "3/3"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("invalid value '3/3' for '--shard <I/N>': `3/3`: need 0 <= I < N"),
        "{err}"
    );
    let out = dmlcts(&["fuzz", "--jobs", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid value '0' for '--jobs <N>'"));
}

fn report(json: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap()
}

#[test]
fn a_server_that_offers_every_level_is_fuzzed_at_each_or_at_the_one_asked_for() {
    let dir = std::env::temp_dir().join(format!("dmlcts-cli-levels-{}", std::process::id()));
    let json = dir.join("campaign.json");
    std::fs::create_dir_all(&dir).unwrap();
    let json_arg = json.to_str().unwrap();
    // A folder of its own: the tests run side by side, and each campaign locks its --out.
    let saved = dir.join("saved");
    let base = [
        "fuzz",
        "--backend",
        "cpu-process",
        "--cases",
        "300",
        "--seed",
        "5",
        "--json",
        json_arg,
        "--out",
        saved.to_str().unwrap(),
    ];
    let out = dmlcts(&base);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("fuzz: at feature levels 1_0, 2_0, 2_1, 3_0, 3_1, 4_0, 4_1, 5_0,"),
        "{stdout}"
    );
    let levels = report(&json)["feature_levels"].clone();
    let levels = levels.as_object().unwrap();
    assert_eq!(levels.len(), 15, "{levels:?}");
    assert_eq!(
        levels.values().map(|n| n.as_u64().unwrap()).sum::<u64>(),
        300
    );
    assert!(
        levels.values().all(|n| n.as_u64().unwrap() > 0),
        "{levels:?}"
    );

    let out = dmlcts(&[&base[..], &["--feature-level", "2_1", "--data-sets", "4"]].concat());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("fuzz: at feature level 2_1 ("), "{stdout}");
    let report = report(&json);
    assert_eq!(report["feature_levels"], serde_json::json!({"2_1": 300}));
    assert_eq!(report["descriptors_run"], 300);
    assert_eq!(report["data_sets_per_descriptor"], 4);
    let cases = report["cases_run"].as_u64().unwrap();
    assert!(
        (600..=1200).contains(&cases),
        "{cases} cases for 300 descriptors"
    );
    assert!(
        report["replay"]
            .as_str()
            .unwrap()
            .ends_with("--cases 300 --feature-level 2_1 --data-sets 4"),
        "{}",
        report["replay"]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

// tract is a single-level backend; the slim build (`cargo test -p dmlcts`) has no tract.
#[test]
#[cfg_attr(not(feature = "tract"), ignore = "needs the `tract` feature")]
fn a_level_a_backend_does_not_offer_is_refused() {
    // A folder of its own: another campaign in the temporary folder may hold the default's lock.
    let dir = std::env::temp_dir().join(format!("dmlcts-cli-level-{}", std::process::id()));
    let out = dmlcts(&[
        "fuzz",
        "--backend",
        "tract",
        "--feature-level",
        "2_1",
        "--cases",
        "1",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "error: --backend tract: it exists at feature level 4_1 only; --feature-level 2_1 \
             cannot be run"
        ),
        "{err}"
    );
}
