//! Every relative link and `#anchor` in every Markdown file of the repository resolves, offline:
//! a link to a missing file or folder, one that leads outside the repository, or an anchor that
//! no heading of its target makes (GitHub's slugs) fails, naming the file, the line and the link.
//! Links with a scheme (https:, mailto:) are not fetched: nothing reaches the network in a test.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

/// Folders that are not the repository's documentation: build outputs, reports, Python caches
/// and environments, hidden folders (.git, .venv).
fn skipped(dir: &Path) -> bool {
    let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.starts_with('.')
        || matches!(name, "target" | "reports" | "__pycache__" | "node_modules")
        || dir.join("pyvenv.cfg").exists()
}

fn markdown_files(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            if !skipped(&path) {
                markdown_files(&path, found);
            }
        } else if path.extension().is_some_and(|e| e == "md") {
            found.push(path);
        }
    }
}

/// The text with fenced code blocks and inline code spans blanked (newlines kept, so offsets
/// keep their line numbers): nothing in code is a link.
fn without_code(text: &str) -> String {
    blank_code_spans(&without_fences(text))
}

/// The text with fenced code blocks blanked, newlines kept: nothing in a fence is a heading.
fn without_fences(text: &str) -> String {
    let blank = |line: &str| -> String {
        line.chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect()
    };
    let mut out = String::with_capacity(text.len());
    let mut fence: Option<(char, usize)> = None;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let marker = trimmed.chars().next().filter(|c| *c == '`' || *c == '~');
        let run = marker.map_or(0, |m| trimmed.chars().take_while(|c| *c == m).count());
        match (fence, marker) {
            (Some((m, n)), Some(found))
                if found == m && run >= n && trimmed[run..].trim().is_empty() =>
            {
                fence = None;
                out.push_str(&blank(line));
            }
            (Some(_), _) => out.push_str(&blank(line)),
            (None, Some(found)) if run >= 3 => {
                fence = Some((found, run));
                out.push_str(&blank(line));
            }
            (None, _) => out.push_str(line),
        }
    }
    out
}

/// Whether the line after the newline at `at` is blank (or the text ends): a paragraph's end.
fn paragraph_ends_at(chars: &[char], at: usize) -> bool {
    chars[at + 1..]
        .iter()
        .take_while(|c| **c != '\n')
        .all(|c| c.is_whitespace())
}

/// Blanks inline code: a run of N backticks up to the next run of exactly N, within a
/// paragraph (an unclosed run is literal text).
fn blank_code_spans(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = chars.clone();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            i += 1;
            continue;
        }
        let open = chars[i..].iter().take_while(|c| **c == '`').count();
        let mut j = i + open;
        let mut close = None;
        while j < chars.len() {
            if chars[j] == '\n' && paragraph_ends_at(&chars, j) {
                break;
            }
            if chars[j] == '`' {
                let run = chars[j..].iter().take_while(|c| **c == '`').count();
                if run == open {
                    close = Some(j + run);
                    break;
                }
                j += run;
            } else {
                j += 1;
            }
        }
        match close {
            Some(end) => {
                for c in &mut out[i..end] {
                    if *c != '\n' {
                        *c = ' ';
                    }
                }
                i = end;
            }
            None => i += open,
        }
    }
    out.into_iter().collect()
}

/// GitHub's anchor for a heading's text: lower case, inline markup and punctuation dropped
/// (letters, digits, `-` and `_` kept), each space a `-`.
fn slug(heading: &str) -> String {
    let text = strip_inline_markup(heading);
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .collect()
}

/// A heading's text as rendered: `[text](target)` becomes text, code backticks and emphasis
/// markers go.
fn strip_inline_markup(heading: &str) -> String {
    let mut out = String::new();
    let mut rest = heading;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find("](").map(|c| open + c) else {
            break;
        };
        let Some(end) = rest[close..].find(')').map(|e| close + e) else {
            break;
        };
        out.push_str(&rest[..open]);
        out.push_str(&rest[open + 1..close]);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out.chars().filter(|c| !matches!(c, '`' | '*')).collect()
}

/// The anchors a Markdown file defines: its headings' slugs, a repeated one numbered `-1`,
/// `-2`, ... as GitHub numbers them.
fn anchors(text: &str) -> BTreeSet<String> {
    let text = without_fences(text);
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut anchors = BTreeSet::new();
    let mut previous = "";
    for line in text.lines() {
        let trimmed = line.trim_start();
        let heading = if line.len() - trimmed.len() < 4 && trimmed.starts_with('#') {
            let hashes = trimmed.chars().take_while(|c| *c == '#').count();
            let after = &trimmed[hashes..];
            (hashes <= 6 && (after.is_empty() || after.starts_with(' ')))
                .then(|| after.trim().trim_end_matches('#').trim().to_string())
        } else if !previous.trim().is_empty()
            && !line.trim().is_empty()
            && (line.trim().chars().all(|c| c == '=') || line.trim().chars().all(|c| c == '-'))
            && !previous.trim_start().starts_with(['|', '-', '*', '#', '>'])
        {
            Some(previous.trim().to_string())
        } else {
            None
        };
        if let Some(heading) = heading {
            let base = slug(&heading);
            let count = seen.entry(base.clone()).or_insert(0);
            anchors.insert(if *count == 0 {
                base.clone()
            } else {
                format!("{base}-{count}")
            });
            *count += 1;
        }
        previous = line;
    }
    anchors
}

struct Link {
    line: usize,
    target: String,
}

/// Inline links and images (`[text](target "title")`, `<target>` too) and reference
/// definitions (`[label]: target`), outside code.
fn links(text: &str) -> Vec<Link> {
    let text = without_code(text);
    let line_of = |offset: usize| text[..offset].matches('\n').count() + 1;
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find("](").map(|a| from + a) {
        let start = at + 2;
        let mut depth = 0usize;
        let mut end = None;
        for (i, c) in text[start..].char_indices() {
            match c {
                '(' => depth += 1,
                ')' if depth == 0 => {
                    end = Some(start + i);
                    break;
                }
                ')' => depth -= 1,
                '\n' => break,
                _ => {}
            }
        }
        if let Some(end) = end {
            let inner = text[start..end].trim();
            let target = if let Some(rest) = inner.strip_prefix('<') {
                rest.split('>').next().unwrap_or("")
            } else {
                inner.split_whitespace().next().unwrap_or("")
            };
            found.push(Link {
                line: line_of(at),
                target: target.to_string(),
            });
            from = end;
        } else {
            from = start;
        }
    }
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with('[')
            && !trimmed.starts_with("[^")
            && let Some(close) = trimmed.find("]:")
        {
            let target = trimmed[close + 2..].split_whitespace().next().unwrap_or("");
            let target = target.trim_start_matches('<').trim_end_matches('>');
            if !target.is_empty() {
                found.push(Link {
                    line: line_of(offset),
                    target: target.to_string(),
                });
            }
        }
        offset += line.len();
    }
    found
}

fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(byte) = text
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `a/./b/../c` as `a/c`, or None when `..` climbs above the start.
fn normalized(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(p) => out.push(p),
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

/// Every broken link under `root`, as `file:line: (link): why` (the line of the link's
/// target).
fn broken_links(root: &Path) -> Vec<String> {
    checked_links(root).1
}

/// How many relative links there are under `root`, and the broken ones.
fn checked_links(root: &Path) -> (usize, Vec<String>) {
    let mut files = Vec::new();
    markdown_files(root, &mut files);
    let mut anchors_of: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let relative_file = file.strip_prefix(root).unwrap().to_path_buf();
        let dir = relative_file
            .parent()
            .unwrap_or(Path::new(""))
            .to_path_buf();
        for link in links(&text) {
            let target = link.target.as_str();
            let has_scheme = target.split_once(':').is_some_and(|(scheme, _)| {
                !scheme.is_empty()
                    && scheme
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
            });
            if target.is_empty() || has_scheme || target.starts_with("//") {
                continue;
            }
            checked += 1;
            let (path_part, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target, None),
            };
            let path_part = percent_decoded(path_part);
            let report = |why: String| {
                format!(
                    "{}:{}: ({target}): {why}",
                    relative_file.display(),
                    link.line
                )
            };
            let joined = if let Some(from_root) = path_part.strip_prefix('/') {
                PathBuf::from(from_root)
            } else {
                dir.join(&path_part)
            };
            let Some(resolved) = normalized(&joined) else {
                broken.push(report("leads outside the repository".into()));
                continue;
            };
            let on_disk = root.join(&resolved);
            if !on_disk.exists() {
                broken.push(report(format!("{} does not exist", resolved.display())));
                continue;
            }
            let Some(anchor) = anchor else { continue };
            let anchor_file = if path_part.is_empty() {
                relative_file.clone()
            } else {
                resolved
            };
            if anchor_file.extension().is_none_or(|e| e != "md") {
                continue; // anchors of other files (source lines) are the host's business
            }
            let known = anchors_of.entry(anchor_file.clone()).or_insert_with(|| {
                anchors(&std::fs::read_to_string(root.join(&anchor_file)).unwrap_or_default())
            });
            let anchor = percent_decoded(anchor).to_lowercase();
            if !known.contains(&anchor) {
                broken.push(report(format!(
                    "{} has no heading whose anchor is #{anchor}",
                    anchor_file.display()
                )));
            }
        }
    }
    (checked, broken)
}

#[test]
fn every_relative_link_and_anchor_in_the_repository_resolves() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut files = Vec::new();
    markdown_files(root, &mut files);
    assert!(
        files.iter().any(|f| f.ends_with("README.md")) && files.len() >= 10,
        "found only {files:?}"
    );
    let (checked, broken) = checked_links(root);
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    // The README and the guide link each other and the protocol: a checker that found no
    // links would pass anything.
    assert!(checked >= 50, "only {checked} relative links found");
    eprintln!(
        "{checked} relative links in {} Markdown files resolve",
        files.len()
    );
}

/// A scratch repository of Markdown files, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str, files: &[(&str, &str)]) -> Self {
        let dir =
            std::env::temp_dir().join(format!("dmlcts-doc-links-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (path, text) in files {
            let path = dir.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_missing_file_a_missing_anchor_and_a_way_out_are_each_reported_with_file_and_line() {
    let repo = Scratch::new(
        "broken",
        &[
            (
                "README.md",
                "# Top\n\nSee [the guide](docs/guide/README.md) and [gone](docs/gone.md).\n\
                 A [wrong anchor](docs/guide/README.md#no-such-part), [out](../../etc/passwd),\n\
                 [here](#top) and [not here](#bottom).\n",
            ),
            ("docs/guide/README.md", "# Guide\n\n## A part\n"),
        ],
    );
    assert_eq!(
        broken_links(&repo.0),
        [
            "README.md:3: (docs/gone.md): docs/gone.md does not exist",
            "README.md:4: (docs/guide/README.md#no-such-part): docs/guide/README.md has no heading \
             whose anchor is #no-such-part",
            "README.md:4: (../../etc/passwd): leads outside the repository",
            "README.md:5: (#bottom): README.md has no heading whose anchor is #bottom",
        ]
    );
}

#[test]
fn links_in_code_and_external_links_are_not_checked() {
    let repo = Scratch::new(
        "code",
        &[(
            "README.md",
            "# Top\n\n```md\n[in a fence](missing.md)\n```\n\nInline `[code](missing.md)`, \
             [web](https://example.invalid/x.md) and [mail](mailto:a@example.invalid).\n",
        )],
    );
    assert!(broken_links(&repo.0).is_empty());
}

#[test]
fn a_link_split_over_two_lines_and_a_reference_definition_are_checked() {
    let repo = Scratch::new(
        "multiline",
        &[(
            "README.md",
            "# Top\n\nA [link split\nover lines](gone.md) here.\n\n[label]: also-gone.md\n",
        )],
    );
    assert_eq!(
        broken_links(&repo.0),
        [
            "README.md:4: (gone.md): gone.md does not exist",
            "README.md:6: (also-gone.md): also-gone.md does not exist",
        ]
    );
}

#[test]
fn anchors_are_githubs_slugs_with_repeats_numbered() {
    let text = "# The `dmlcts` command\n## Validation profiles: implementations that validate\n\
                ## Frameworks: ONNX Runtime and XLA (JAX)\n## Notes\n## Notes\n\
                ```\n# not a heading\n```\n## snake_case and [a link](x.md)\n";
    assert_eq!(
        anchors(text).into_iter().collect::<Vec<_>>(),
        [
            "frameworks-onnx-runtime-and-xla-jax",
            "notes",
            "notes-1",
            "snake_case-and-a-link",
            "the-dmlcts-command",
            "validation-profiles-implementations-that-validate",
        ]
    );
}
