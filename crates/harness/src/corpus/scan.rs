//! One cheap pass over a YAML file's text before the YAML parser sees it (case files,
//! expectations and backends files alike). It finds what the parser does not report or
//! reports too slowly: nesting too deep to parse quickly, more nodes than the file's kind may
//! have, the line where each case's mapping starts (block style, flow style and JSON alike),
//! YAML tags the case format does not know, and the first alias. It reads YAML as far as those
//! need: quoted scalars, comments, flow collections, block scalars and block sequence items.

/// Deepest nesting a case file may have: open brackets plus the column of a line's first
/// character (an upper bound on its block nesting). The corpus needs about 20; the YAML
/// parser takes time roughly quadratic in the depth, so 100,000 levels would take seconds.
pub const MAX_NESTING: usize = 64;

/// Tags of YAML's core schema, which change nothing in a case file.
const CORE_TAGS: [&str; 7] = [
    "!!str", "!!int", "!!float", "!!bool", "!!null", "!!seq", "!!map",
];

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Scan {
    /// The line (1-based) where each item of the top-level `cases` sequence starts.
    pub case_lines: Vec<usize>,
    /// The line of the `cases` key, when found.
    pub cases_key_line: Option<usize>,
    /// The first tag outside the core schema, and its line.
    pub unknown_tag: Option<(usize, String)>,
    /// The line of the first alias (`*name`).
    pub first_alias: Option<usize>,
    /// The nodes written in the text (scalars, aliases, flow collections, block entries),
    /// before any alias is expanded: an upper bound on what the parser makes of a file
    /// without aliases.
    pub nodes: usize,
}

/// Why the scan stopped: the first line where the nesting passes `MAX_NESTING`, or where the
/// nodes pass the budget it was given.
#[derive(Debug, PartialEq, Eq)]
pub enum ScanError {
    TooDeep {
        line: usize,
    },
    TooManyNodes {
        line: usize,
    },
    /// A `%TAG` directive: it renames tags (`!!str` made to mean any tag), so the scan's
    /// word on tags would not hold.
    TagDirective {
        line: usize,
    },
}

/// Where the `cases` sequence is, once its key has been seen.
#[derive(Clone, Copy, Debug, PartialEq)]
enum CasesValue {
    NotYet,
    /// After `cases:`, waiting for `[` or a block sequence.
    Expected {
        key_flow_depth: usize,
    },
    /// Items are the values that start at this flow depth after `[` or `,`.
    Flow {
        item_depth: usize,
    },
    /// Items are the lines whose `-` is at this column.
    Block {
        column: usize,
    },
    Done,
}

/// Scans `text`, stopping at once where it nests too deep or writes more than `max_nodes`
/// nodes.
pub fn scan(text: &str, max_nodes: usize) -> Result<Scan, ScanError> {
    let mut scan = Scan::default();
    let bytes = text.as_bytes();
    let mut cases = CasesValue::NotYet;
    // Open flow brackets, innermost last.
    let mut flow: Vec<u8> = Vec::new();
    // Inside a block scalar: lines indented more than this belong to it.
    let mut block_scalar_indent: Option<usize> = None;
    let mut line = 1;
    let mut i = 0;
    // Whether the next token starts a value (so `[`, `!`, `*`, `|` are indicators).
    let mut value_start = true;
    // After `[` or `,` in the cases sequence: the next token starts an item.
    let mut item_next = false;
    let mut at_line_start = true;
    // The block nesting bound of the line where the current flow collection started.
    let mut block_depth = 0;
    while i < bytes.len() {
        if at_line_start {
            at_line_start = false;
            let indent = bytes[i..].iter().take_while(|&&b| b == b' ').count();
            let rest = &bytes[i + indent..];
            let blank = rest
                .first()
                .is_none_or(|&b| b == b'\n' || b == b'\r' || b == b'#');
            if let Some(parent) = block_scalar_indent {
                if blank || indent > parent {
                    i = skip_line(bytes, i);
                    line += 1;
                    at_line_start = true;
                    continue;
                }
                block_scalar_indent = None;
            }
            if flow.is_empty() && indent == 0 && rest.starts_with(b"%TAG") {
                return Err(ScanError::TagDirective { line });
            }
            if flow.is_empty() && !blank {
                // The column of the first content after indentation and `- `/`? ` indicators
                // bounds the line's block nesting.
                let (indicators, entries) = leading_indicators(rest);
                block_depth = indent + indicators;
                count_nodes(&mut scan, entries, max_nodes, line)?;
                if block_depth > MAX_NESTING {
                    return Err(ScanError::TooDeep { line });
                }
                value_start = true;
                let dash = is_indicator(rest, 0, b'-');
                match cases {
                    CasesValue::Expected { key_flow_depth: 0 } if dash => {
                        cases = CasesValue::Block { column: indent };
                        scan.case_lines.push(line);
                    }
                    CasesValue::Block { column } if dash && indent == column => {
                        scan.case_lines.push(line);
                    }
                    CasesValue::Block { column } if indent <= column => {
                        cases = CasesValue::Done;
                    }
                    CasesValue::Expected { .. } if rest.first() != Some(&b'[') => {
                        cases = CasesValue::Done;
                    }
                    _ => {}
                }
            }
            i += indent;
            continue;
        }
        let b = bytes[i];
        match b {
            b'\n' => {
                line += 1;
                i += 1;
                at_line_start = true;
                continue;
            }
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            b'#' if i == 0 || matches!(bytes[i - 1], b' ' | b'\t' | b'\n') => {
                i = skip_to_newline(bytes, i);
                continue;
            }
            _ => {}
        }
        if item_next {
            if let CasesValue::Flow { item_depth } = cases
                && flow.len() == item_depth
                && !matches!(b, b']' | b',')
            {
                scan.case_lines.push(line);
            }
            item_next = false;
        }
        match b {
            b'\'' | b'"' => {
                let (end, newlines) = skip_quoted(bytes, i);
                // Without the closing quote (an unterminated scalar runs to the end).
                let inner_end = if end > i + 1 && bytes[end - 1] == b {
                    end - 1
                } else {
                    end
                };
                let scalar = &text[i + 1..inner_end];
                count_nodes(&mut scan, 1, max_nodes, line)?;
                line += newlines;
                i = end;
                check_cases_key(scalar, bytes, i, &flow, &mut cases, &mut scan, line);
                value_start = false;
            }
            b'[' | b'{' if value_start || !flow.is_empty() => {
                flow.push(b);
                count_nodes(&mut scan, 1, max_nodes, line)?;
                if block_depth + flow.len() > MAX_NESTING {
                    return Err(ScanError::TooDeep { line });
                }
                if let CasesValue::Expected { key_flow_depth } = cases
                    && b == b'['
                    && flow.len() == key_flow_depth + 1
                {
                    cases = CasesValue::Flow {
                        item_depth: flow.len(),
                    };
                }
                if matches!(cases, CasesValue::Flow { item_depth } if item_depth == flow.len()) {
                    item_next = true;
                }
                value_start = true;
                i += 1;
            }
            b']' | b'}' if !flow.is_empty() => {
                if matches!(cases, CasesValue::Flow { item_depth } if item_depth == flow.len()) {
                    cases = CasesValue::Done;
                }
                flow.pop();
                value_start = false;
                i += 1;
            }
            b',' if !flow.is_empty() => {
                if matches!(cases, CasesValue::Flow { item_depth } if item_depth == flow.len()) {
                    item_next = true;
                }
                value_start = true;
                i += 1;
            }
            b'-' | b'?' | b':' if is_indicator(bytes, i, b) || (b == b':' && !flow.is_empty()) => {
                value_start = true;
                i += 1;
            }
            b'|' | b'>' if value_start && flow.is_empty() => {
                count_nodes(&mut scan, 1, max_nodes, line)?;
                block_scalar_indent = Some(line_indent(bytes, i));
                i = skip_to_newline(bytes, i);
            }
            b'!' if value_start => {
                let end = token_end(bytes, i);
                let tag = &text[i..end];
                if scan.unknown_tag.is_none() && !CORE_TAGS.contains(&tag) {
                    scan.unknown_tag = Some((line, tag.to_string()));
                }
                i = end;
            }
            b'*' if value_start => {
                scan.first_alias.get_or_insert(line);
                count_nodes(&mut scan, 1, max_nodes, line)?;
                i = token_end(bytes, i);
                value_start = false;
            }
            b'&' if value_start => {
                i = token_end(bytes, i);
            }
            _ => {
                // A plain scalar: up to `: `, ` #`, the end of the line, or (in flow) a flow
                // indicator.
                let start = i;
                while i < bytes.len() {
                    let c = bytes[i];
                    let next = bytes.get(i + 1).copied();
                    let ends_value =
                        c == b':' && next.is_none_or(|n| matches!(n, b' ' | b'\t' | b'\n' | b'\r'));
                    if c == b'\n'
                        || ends_value
                        || (c == b' ' && next == Some(b'#'))
                        || (!flow.is_empty() && matches!(c, b',' | b'[' | b']' | b'{' | b'}'))
                        || (!flow.is_empty() && c == b':')
                    {
                        break;
                    }
                    i += 1;
                }
                if i == start {
                    // Never stall: step over one character.
                    i += text[i..].chars().next().map_or(1, char::len_utf8);
                }
                let scalar = text[start..i].trim_end();
                count_nodes(&mut scan, 1, max_nodes, line)?;
                check_cases_key(scalar, bytes, i, &flow, &mut cases, &mut scan, line);
                value_start = false;
            }
        }
    }
    Ok(scan)
}

/// Counts `count` more nodes on `line`; past `max_nodes`, the scan stops there.
fn count_nodes(
    scan: &mut Scan,
    count: usize,
    max_nodes: usize,
    line: usize,
) -> Result<(), ScanError> {
    scan.nodes += count;
    if scan.nodes > max_nodes {
        return Err(ScanError::TooManyNodes { line });
    }
    Ok(())
}

/// After a scalar: when it is the top-level key `cases`, its value is the case list.
fn check_cases_key(
    scalar: &str,
    bytes: &[u8],
    after: usize,
    flow: &[u8],
    cases: &mut CasesValue,
    scan: &mut Scan,
    line: usize,
) {
    if *cases != CasesValue::NotYet || scalar != "cases" {
        return;
    }
    let top_level = flow.is_empty() || flow == b"{";
    let colon = bytes[after..]
        .iter()
        .find(|&&b| b != b' ' && b != b'\t')
        .is_some_and(|&b| b == b':');
    if top_level && colon {
        scan.cases_key_line = Some(line);
        *cases = CasesValue::Expected {
            key_flow_depth: flow.len(),
        };
    }
}

/// The index just past a quoted scalar starting at `start`, and the newlines inside it.
fn skip_quoted(bytes: &[u8], start: usize) -> (usize, usize) {
    let quote = bytes[start];
    let mut i = start + 1;
    let mut newlines = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if quote == b'"' => i += 1,
            b'\'' if quote == b'\'' && bytes.get(i + 1) == Some(&b'\'') => i += 1,
            c if c == quote => return (i + 1, newlines),
            b'\n' => newlines += 1,
            _ => {}
        }
        i += 1;
    }
    (bytes.len(), newlines)
}

/// Whether `bytes[at]` is the indicator `c` (followed by a space, a tab or the line's end).
fn is_indicator(bytes: &[u8], at: usize, c: u8) -> bool {
    bytes.get(at) == Some(&c)
        && bytes
            .get(at + 1)
            .is_none_or(|&n| matches!(n, b' ' | b'\t' | b'\n' | b'\r'))
}

/// The bytes taken by a run of `- ` and `? ` indicators (and the spaces after them), and how
/// many indicators there are (each a block entry, a node even when empty).
fn leading_indicators(bytes: &[u8]) -> (usize, usize) {
    let mut i = 0;
    let mut count = 0;
    while is_indicator(bytes, i, b'-') || is_indicator(bytes, i, b'?') {
        i += 1;
        count += 1;
        i += bytes[i..].iter().take_while(|&&b| b == b' ').count();
    }
    (i, count)
}

fn token_end(bytes: &[u8], start: usize) -> usize {
    start
        + bytes[start..]
            .iter()
            .take_while(|&&b| {
                !matches!(
                    b,
                    b' ' | b'\t' | b'\n' | b'\r' | b',' | b'[' | b']' | b'{' | b'}'
                )
            })
            .count()
}

fn skip_to_newline(bytes: &[u8], start: usize) -> usize {
    start + bytes[start..].iter().take_while(|&&b| b != b'\n').count()
}

/// The index of the next line's first byte.
fn skip_line(bytes: &[u8], start: usize) -> usize {
    (skip_to_newline(bytes, start) + 1).min(bytes.len())
}

fn line_indent(bytes: &[u8], at: usize) -> usize {
    let line_start = bytes[..at]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    bytes[line_start..]
        .iter()
        .take_while(|&&b| b == b' ')
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_style_items_start_at_their_dash() {
        let text = "# header\ncases:\n  - name: a\n    split: {axis: 0}\n\n  - name: b # note\n    tags: [x, '- y']\n  -\n    name: c\n";
        let scan = scan(text, usize::MAX).unwrap();
        assert_eq!(scan.case_lines, vec![3, 6, 8]);
        assert_eq!(scan.cases_key_line, Some(2));
    }

    #[test]
    fn flow_style_and_json_items_start_at_their_brace() {
        let flow = "cases: [{name: a, split: {axis: 0, outputs: [{sizes: [1]}]}},\n  {name: b},\n\n  {name: c}]\n";
        assert_eq!(scan(flow, usize::MAX).unwrap().case_lines, vec![1, 2, 4]);
        let json = "{\n  \"cases\": [\n    {\n      \"name\": \"a\"\n    },\n    {\"name\": \"b, [\"}\n  ]\n}\n";
        assert_eq!(scan(json, usize::MAX).unwrap().case_lines, vec![3, 6]);
        let block_of_flow = "cases:\n- {name: a,\n   split: {}}\n- {name: b}\n";
        assert_eq!(
            scan(block_of_flow, usize::MAX).unwrap().case_lines,
            vec![2, 4]
        );
    }

    #[test]
    fn nested_lists_and_block_scalars_are_not_items() {
        let text = "cases:\n  - name: a\n    description: |\n      - not an item\n    data:\n      - [1, 2]\n      - [3, 4]\n  - name: b\n";
        assert_eq!(scan(text, usize::MAX).unwrap().case_lines, vec![2, 8]);
    }

    #[test]
    fn nesting_past_the_limit_is_found_at_its_line() {
        let deep = format!(
            "cases:\n  - {}{}\n",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert_eq!(scan(&deep, usize::MAX), Err(ScanError::TooDeep { line: 2 }));
        let ok = format!(
            "cases: {}{}\n",
            "[".repeat(MAX_NESTING),
            "]".repeat(MAX_NESTING)
        );
        assert!(scan(&ok, usize::MAX).is_ok());
        let dashes = format!("cases:\n{}x\n", "- ".repeat(100_000));
        assert_eq!(
            scan(&dashes, usize::MAX),
            Err(ScanError::TooDeep { line: 2 })
        );
    }

    #[test]
    fn tags_outside_the_core_schema_and_aliases_are_found() {
        let text = "cases:\n  - name: a\n    description: wow! *not an alias\n    x: !!str 1\n    split: !weird {axis: 0}\n    y: &anchor [1]\n    z: *anchor\n";
        let scan = scan(text, usize::MAX).unwrap();
        assert_eq!(scan.unknown_tag, Some((5, "!weird".to_string())));
        assert_eq!(scan.first_alias, Some(7));
    }

    #[test]
    fn nodes_past_the_budget_stop_the_scan_at_their_line() {
        let text = "cases:\n  - name: a\n    tags: [x, 'y', \"z\"]\n    data:\n      -\n      - *w\n    d: |\n      text\n";
        let scan = scan(text, usize::MAX).unwrap();
        // cases, -, name, a, tags, [, x, 'y', "z", data, -, -, *w, d, |
        assert_eq!(scan.nodes, 15);
        assert_eq!(
            super::scan(text, 8),
            Err(ScanError::TooManyNodes { line: 3 })
        );
        assert!(super::scan(text, 15).is_ok());
    }

    // On main (aa4714d): `%TAG !! tag:example.com,2000:` passed, and `!!str` then named a
    // tag outside the core schema.
    #[test]
    fn a_tag_directive_stops_the_scan_at_its_line() {
        let text = "%TAG !! tag:example.com,2000:\n---\ncases:\n  - name: !!str a\n";
        assert_eq!(
            scan(text, usize::MAX),
            Err(ScanError::TagDirective { line: 1 })
        );
        let text = "# c\n%YAML 1.2\n%TAG !e! tag:e:\n---\ncases: []\n";
        assert_eq!(
            scan(text, usize::MAX),
            Err(ScanError::TagDirective { line: 3 })
        );
        // In a block scalar or a quoted scalar, it is text.
        let text = "cases:\n  - name: a\n    description: |\n      %TAG x\n    d: \"\n%TAG\"\n";
        assert!(scan(text, usize::MAX).is_ok());
    }
}
