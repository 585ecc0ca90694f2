//! The matrix as one static HTML page: inline CSS and script, nothing fetched. The table is
//! complete without the script (every cell, title and link is in the markup); the script only
//! adds the row filters, group collapsing, the copy buttons, and a recount of every column's
//! cells against its totals (`data-counted`, which the browser test reads back).

use super::{Matrix, STATUSES, Totals};
use crate::run::Status;
use std::fmt::Write as _;

use crate::text::html as escape;

/// A cell with a status other than passed (an absent cell is no result at all).
fn did_not_pass(cell: &super::Cell) -> bool {
    cell.status.is_some_and(|s| s != Status::Passed)
}

fn words(status: Status) -> &'static str {
    STATUSES
        .iter()
        .find(|(s, _, _)| *s == status)
        .map_or("?", |(_, _, w)| w)
}

fn mark(status: Status) -> &'static str {
    STATUSES
        .iter()
        .find(|(s, _, _)| *s == status)
        .map_or("?", |(_, m, _)| m)
}

/// The count `data-` attribute of a status in the totals row.
fn data_name(status: Status) -> &'static str {
    match status.name() {
        "expected_failure" => "expected-failures",
        other => other,
    }
}

fn count(totals: &Totals, status: Status) -> usize {
    match status {
        Status::Passed => totals.passed,
        Status::Failed => totals.failed,
        Status::ExpectedFailure => totals.expected_failures,
        Status::Informational => totals.informational,
        Status::Skipped => totals.skipped,
    }
}

const STYLE: &str = r#"
:root { --pass: #d7f0d7; --fail: #f5b7b1; --xfail: #fde2b8; --info: #cfe3f7; --skip: #ececec; }
* { box-sizing: border-box; }
body { font: 13px/1.35 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #1b1b1b; }
header { padding: 10px 14px 6px; }
h1 { font-size: 18px; margin: 0 0 4px; }
h2 { font-size: 15px; margin: 18px 14px 8px; }
code, pre { font: 12px/1.4 ui-monospace, "DejaVu Sans Mono", monospace; }
.command { color: #555; }
#controls { display: flex; flex-wrap: wrap; gap: 10px; align-items: center; margin: 6px 0; }
#controls input[type=search] { width: 22em; }
.legend span { display: inline-block; padding: 0 6px; margin-right: 4px; border-radius: 3px; }
#wrap { overflow: auto; max-height: calc(100vh - 110px); border-top: 1px solid #bbb; }
table#matrix { border-collapse: separate; border-spacing: 0; }
#matrix th, #matrix td { border-right: 1px solid #fff; border-bottom: 1px solid #fff; }
#matrix thead { position: sticky; top: 0; z-index: 3; background: #f7f7f7; }
#matrix thead th, #matrix thead td { background: #f7f7f7; vertical-align: bottom; padding: 3px 4px; border-bottom: 1px solid #bbb; }
#matrix thead th.col { min-width: 76px; font-weight: 600; text-align: center; }
#matrix thead th.col small { display: block; font-weight: 400; color: #555; }
#matrix thead th.col.unavailable { color: #999; text-decoration: line-through; }
#matrix thead th.col.problem { color: #b00; }
#matrix th.name { position: sticky; left: 0; z-index: 1; background: #fff; text-align: left; font-weight: 400;
  max-width: 420px; min-width: 260px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; padding: 1px 6px; }
#matrix thead th.name { z-index: 4; background: #f7f7f7; font-weight: 600; }
tr.totals td { font-size: 11px; text-align: right; white-space: nowrap; }
tr.totals td span { display: block; padding: 0 3px; }
tr.totals td span.zero { color: #aaa; background: none; }
tr.totals td.mismatch { outline: 3px solid red; }
td.c { text-align: center; min-width: 76px; padding: 1px 2px; }
td.c a { color: inherit; font-weight: 700; display: block; }
.passed { background: var(--pass); } .failed { background: var(--fail); }
.expected_failure { background: var(--xfail); } .informational { background: var(--info); }
.skipped { background: var(--skip); color: #777; } .absent { background: #fff; }
tbody.group tr.ghead th { position: sticky; left: 0; text-align: left; background: #e8eef6; padding: 4px 6px;
  border-top: 2px solid #9ab; cursor: pointer; font-weight: 600; }
tbody.group tr.ghead .gcount { font-weight: 400; color: #444; }
tbody.group tr.ghead button { font: inherit; width: 1.6em; border: 1px solid #9ab; background: #fff; cursor: pointer; }
tbody.collapsed tr.case { display: none; }
tr.case.hidden { display: none; }
tbody.group.empty { display: none; }
tr.case:hover th.name, tr.case:hover td { filter: brightness(0.93); }
tr.case:target th.name { background: #ffef9f; }
#failures ol { margin: 0 14px; padding-left: 22px; }
li.failure { margin: 0 0 10px; }
li.failure:target { background: #ffef9f; }
li.failure .replay { display: flex; gap: 6px; align-items: center; margin: 3px 0; }
li.failure .replay code { background: #f3f3f3; padding: 2px 5px; border: 1px solid #ddd; user-select: all; }
li.failure pre { background: #fafafa; border: 1px solid #eee; padding: 6px; white-space: pre-wrap; margin: 4px 0; }
table.columns { border-collapse: collapse; margin: 0 14px 20px; }
table.columns th, table.columns td { border: 1px solid #ccc; padding: 3px 6px; text-align: left; vertical-align: top; }
"#;

const SCRIPT: &str = r#"
(function () {
  var table = document.getElementById('matrix');
  var rows = Array.prototype.slice.call(table.querySelectorAll('tr.case'));
  var groups = Array.prototype.slice.call(table.querySelectorAll('tbody.group'));
  var show = document.getElementById('show');
  var find = document.getElementById('find');
  var params = new URLSearchParams(location.search);
  if (params.get('show')) show.value = params.get('show');
  if (params.get('find')) find.value = params.get('find');
  // The recount: every column's cells by status, against the totals row.
  var statuses = ['passed', 'failed', 'expected_failure', 'informational', 'skipped'];
  var totals = table.querySelectorAll('tr.totals td');
  for (var c = 0; c < totals.length; c++) {
    var counts = statuses.map(function () { return 0; });
    rows.forEach(function (row) {
      var cell = row.cells[c + 1];
      for (var s = 0; s < statuses.length; s++) if (cell.classList.contains(statuses[s])) counts[s]++;
    });
    var counted = counts.join(',');
    totals[c].setAttribute('data-counted', counted);
    var stated = statuses.map(function (s) {
      return totals[c].getAttribute('data-' + (s === 'expected_failure' ? 'expected-failures' : s)) || '0';
    }).join(',');
    if (counted !== stated) totals[c].classList.add('mismatch');
  }
  function apply() {
    var mode = show.value, text = find.value.trim().toLowerCase(), visible = 0;
    rows.forEach(function (row) {
      var keep = (mode === 'all' || (mode === 'nonpass' && row.classList.contains('np')) ||
                  (mode === 'differ' && row.classList.contains('nd')) ||
                  (mode === 'failing' && row.classList.contains('nf'))) &&
                 (text === '' || row.getAttribute('data-name').toLowerCase().indexOf(text) >= 0);
      row.classList.toggle('hidden', !keep);
      if (keep) visible++;
    });
    groups.forEach(function (group) {
      group.classList.toggle('empty', !group.querySelector('tr.case:not(.hidden)'));
    });
    table.setAttribute('data-visible-rows', String(visible));
    document.getElementById('shown').textContent = visible + ' of ' + rows.length + ' rows shown';
  }
  show.addEventListener('change', apply);
  find.addEventListener('input', apply);
  groups.forEach(function (group) {
    group.querySelector('tr.ghead').addEventListener('click', function () {
      var collapsed = group.classList.toggle('collapsed');
      this.querySelector('button').setAttribute('aria-expanded', String(!collapsed));
      this.querySelector('button').textContent = collapsed ? '▸' : '▾';
    });
  });
  function all(collapse) {
    groups.forEach(function (group) {
      group.classList.toggle('collapsed', collapse);
      var b = group.querySelector('tr.ghead button');
      b.setAttribute('aria-expanded', String(!collapse));
      b.textContent = collapse ? '▸' : '▾';
    });
  }
  document.getElementById('collapse').addEventListener('click', function () { all(true); });
  document.getElementById('expand').addEventListener('click', function () { all(false); });
  if (params.get('collapse') === 'all') all(true);
  Array.prototype.forEach.call(document.querySelectorAll('button.copy'), function (button) {
    button.addEventListener('click', function () {
      var code = button.parentNode.querySelector('code');
      var done = function () { button.textContent = 'copied'; };
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(code.textContent).then(done, function () { select(code); });
      } else { select(code); }
    });
  });
  function select(node) {
    var range = document.createRange();
    range.selectNodeContents(node);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    try { document.execCommand('copy'); } catch (e) { }
  }
  apply();
  document.body.setAttribute('data-ready', '1');
})();
"#;

pub fn page(matrix: &Matrix) -> String {
    let mut h = String::with_capacity(256 + matrix.rows.len() * matrix.columns.len() * 90);
    let ncols = matrix.columns.len();
    let failing_rows = (matrix.rows.iter())
        .filter(|r| r.cells.iter().any(|c| c.is(Status::Failed)))
        .count();
    let nonpass_rows = (matrix.rows.iter())
        .filter(|r| r.cells.iter().any(did_not_pass))
        .count();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <title>dmlcts results matrix</title><style>{STYLE}</style></head>\n<body>\n<header>\
         <h1>dmlcts results matrix: {} cases × {ncols} backends</h1>\
         <div class=\"command\">made by <code>{}</code> with {}, {}; {failing_rows} rows with a \
         failing cell, {nonpass_rows} with a cell that did not pass</div>\n",
        matrix.rows.len(),
        escape(&matrix.command),
        escape(&matrix.suite.name()),
        escape(&matrix.suite.corpus())
    );
    h.push_str(
        "<div id=\"controls\"><label>show <select id=\"show\">\
         <option value=\"all\">every row</option>\
         <option value=\"nonpass\">rows with a cell that did not pass</option>\
         <option value=\"differ\">rows with a failing, expected-failure or informational cell</option>\
         <option value=\"failing\">rows with a failing cell</option></select></label>\
         <input type=\"search\" id=\"find\" placeholder=\"case name contains…\">\
         <button type=\"button\" id=\"collapse\">collapse all groups</button>\
         <button type=\"button\" id=\"expand\">expand all groups</button>\
         <span id=\"shown\"></span><span class=\"legend\">",
    );
    for (status, m, w) in STATUSES {
        let _ = write!(h, "<span class=\"{}\">{m} {w}</span>", status.name());
    }
    h.push_str(
        "</span><a href=\"#failures\">failing cells</a> <a href=\"#columns\">backends</a></div>\
         </header>\n<div id=\"wrap\"><table id=\"matrix\">\n<thead><tr><th class=\"name\">case</th>",
    );
    for column in &matrix.columns {
        let mut title = format!("{} ({})", column.backend, column.device);
        if !column.profile.is_empty() {
            let _ = write!(title, "\nprofile: {}", column.profile);
        }
        if let Some(reason) = &column.unavailable {
            let _ = write!(title, "\nnot available: {reason}");
        }
        for problem in &column.problems {
            let _ = write!(title, "\nerror: {problem}");
        }
        let class = if column.unavailable.is_some() {
            " unavailable"
        } else if !column.problems.is_empty() {
            " problem"
        } else {
            ""
        };
        let below = match &column.unavailable {
            Some(_) => "<small>not available</small>".to_string(),
            None => format!(
                "<small>{}</small><small>{}</small>",
                escape(&column.version().unwrap_or_default()),
                escape(&column.profile)
            ),
        };
        // A long `name@version` may break before its version.
        let name = escape(&column.backend).replace('@', "<wbr>@");
        let _ = write!(
            h,
            "<th class=\"col{class}\" title=\"{}\">{name}{below}</th>",
            escape(&title),
        );
    }
    let _ = write!(
        h,
        "</tr>\n<tr class=\"totals\"><th class=\"name\">totals ({} cases)</th>",
        matrix.rows.len()
    );
    for i in 0..ncols {
        let totals = matrix.totals(i);
        h.push_str("<td");
        for (status, _, _) in STATUSES {
            let _ = write!(
                h,
                " data-{}=\"{}\"",
                data_name(*status),
                count(&totals, *status)
            );
        }
        let _ = write!(
            h,
            " title=\"{}: {}\">",
            escape(&matrix.columns[i].backend),
            totals.line()
        );
        for (status, m, w) in STATUSES {
            let n = count(&totals, *status);
            let zero = if n == 0 { " zero" } else { "" };
            let _ = write!(
                h,
                "<span class=\"{}{zero}\" title=\"{w}\">{n} {m}</span>",
                status.name()
            );
        }
        h.push_str("</td>");
    }
    h.push_str("</tr></thead>\n");

    let mut failures = String::new();
    let mut failure_count = 0usize;
    for (gi, (group, members)) in matrix.groups().into_iter().enumerate() {
        let group_nonpass = (members.iter())
            .filter(|&&r| (matrix.rows[r].cells.iter()).any(did_not_pass))
            .count();
        let group_failing = (members.iter())
            .filter(|&&r| (matrix.rows[r].cells.iter()).any(|c| c.is(Status::Failed)))
            .count();
        let _ = writeln!(
            h,
            "<tbody class=\"group\" id=\"g{gi}\" data-group=\"{}\"><tr class=\"ghead\">\
             <th colspan=\"{}\"><button type=\"button\" aria-expanded=\"true\">▾</button> {} \
             <span class=\"gcount\">({} cases, {group_nonpass} with a cell that did not pass, \
             {group_failing} failing)</span></th></tr>",
            escape(&group),
            ncols + 1,
            escape(&group),
            members.len()
        );
        for r in members {
            let row = &matrix.rows[r];
            // np: a cell did not pass; nd: one failed, failed as expected or was informational
            // (not only skips); nf: one failed. The filters show rows by these.
            let np = row.cells.iter().any(did_not_pass);
            let nd = (row.cells.iter()).any(|c| {
                matches!(
                    c.status,
                    Some(Status::Failed | Status::ExpectedFailure | Status::Informational)
                )
            });
            let nf = row.cells.iter().any(|c| c.is(Status::Failed));
            let class = match (np, nd, nf) {
                (_, _, true) => "case np nd nf",
                (true, true, false) => "case np nd",
                (true, false, false) => "case np",
                (false, _, false) => "case",
            };
            let level = match &row.feature_level {
                Some(level) => format!(", level {level}"),
                None => String::new(),
            };
            let _ = write!(
                h,
                "<tr class=\"{class}\" id=\"r{r}\" data-id=\"{}\" data-name=\"{}\"><th \
                 class=\"name\" title=\"{} ({}:{}{level})\">{}</th>",
                escape(&row.id),
                escape(&row.name),
                escape(&row.name),
                escape(&row.file),
                row.line,
                escape(&row.name)
            );
            for (ci, cell) in row.cells.iter().enumerate() {
                let column = &matrix.columns[ci].backend;
                let Some(status) = cell.status else {
                    let _ = write!(
                        h,
                        "<td class=\"c absent\" title=\"{}: {}\"></td>",
                        escape(column),
                        escape(&cell.reason)
                    );
                    continue;
                };
                let mut title = format!("{column}: {}", words(status));
                if !cell.reason.is_empty() {
                    let _ = write!(title, ": {}", cell.reason);
                }
                for note in &cell.notes {
                    let _ = write!(title, "\n{}", crate::text::line(note));
                }
                let class = status.name();
                if status == Status::Failed {
                    let id = format!("f{failure_count}");
                    failure_count += 1;
                    let _ = write!(
                        h,
                        "<td class=\"c {class}\" title=\"{}\"><a href=\"#{id}\">{}</a></td>",
                        escape(&title),
                        mark(status)
                    );
                    let replay = match &cell.replay {
                        Some(replay) => format!(
                            "<div class=\"replay\"><code>{}</code>\
                             <button type=\"button\" class=\"copy\">copy</button></div>",
                            escape(&crate::text::line(&replay.render()))
                        ),
                        None => "<div class=\"replay\">(no replay command: the case file itself \
                                 did not load, or this is a check on the whole run)</div>"
                            .to_string(),
                    };
                    let _ = writeln!(
                        failures,
                        "<li class=\"failure\" id=\"{id}\"><div><a href=\"#r{r}\">{}</a> \
                         <small>({})</small> on <b>{}</b>: {}</div>{replay}\
                         <details><summary>details</summary><pre>{}</pre></details></li>",
                        escape(&crate::text::line(&row.name)),
                        escape(&row.id),
                        escape(column),
                        escape(&crate::text::line(&cell.reason)),
                        escape(&cell.details)
                    );
                } else {
                    let _ = write!(
                        h,
                        "<td class=\"c {class}\" title=\"{}\">{}</td>",
                        escape(&title),
                        mark(status)
                    );
                }
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</tbody>\n");
    }
    h.push_str("</table></div>\n");
    let _ = writeln!(
        h,
        "<section id=\"failures\"><h2>Failing cells ({failure_count}), each with the command \
         that runs it again</h2>"
    );
    if failure_count == 0 {
        h.push_str("<p style=\"margin:0 14px\">None.</p>\n");
    } else {
        let _ = write!(h, "<ol>\n{failures}</ol>\n");
    }
    h.push_str("</section>\n");
    h.push_str(&coverage_section(matrix));
    h.push_str(
        "<section id=\"columns\"><h2>Backends</h2><table class=\"columns\"><tr>\
         <th>--backend</th><th>implementation</th><th>device</th><th>version</th><th>profile</th>\
         <th>feature level</th><th>expectations</th><th>start-up (s)</th><th>cases (s)</th>\
         <th>totals</th><th>notes</th></tr>\n",
    );
    for (i, column) in matrix.columns.iter().enumerate() {
        let mut notes: Vec<String> = Vec::new();
        if let Some(reason) = &column.unavailable {
            notes.push(format!("not available: {reason}"));
        }
        notes.extend(column.problems.iter().map(|p| format!("error: {p}")));
        notes.extend(column.notes.iter().cloned());
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{:.2}</td><td>{:.2}</td><td>{}</td><td>{}</td></tr>",
            escape(&column.backend),
            escape(&column.implementation),
            escape(&column.device),
            escape(&column.version().unwrap_or_default()),
            escape(&column.profile),
            escape(&column.feature_level),
            escape(column.expectations.as_deref().unwrap_or("")),
            column.startup.as_secs_f64(),
            column.cases_time.as_secs_f64(),
            matrix.totals(i).line(),
            escape(&notes.join("; "))
        );
    }
    let _ = write!(
        h,
        "</table></section>\n<script>{SCRIPT}</script>\n</body></html>\n"
    );
    h
}

/// What each column's green covers: a row per assertion (rule or execution property), a
/// column per backend, each cell the assertion's state in that run; the first row is each
/// run's coverage line.
fn coverage_section(matrix: &Matrix) -> String {
    use crate::report::coverage::{State, all_assertions};
    let mut h = String::from(
        "<section id=\"coverage\"><h2>Coverage: what each backend's run checked</h2>\
         <p style=\"margin:0 14px\">A row per assertion of the pages (a rule of specs/, or an \
         execution property), a column per backend: <em>checked</em> when a case that tests it \
         passed there; otherwise why not (docs/guide/conformance.md, \"What a run covered\").</p>\
         <table class=\"columns\"><tr><th>assertion</th>",
    );
    for column in &matrix.columns {
        let _ = write!(h, "<th>{}</th>", escape(&column.backend));
    }
    h.push_str("</tr>\n<tr><td>summary</td>");
    for column in &matrix.columns {
        let line = column
            .coverage
            .as_ref()
            .map(|c| c.line())
            .unwrap_or_default();
        let _ = write!(h, "<td>{}</td>", escape(&line));
    }
    h.push_str("</tr>\n");
    for assertion in all_assertions() {
        let _ = write!(h, "<tr><td><code>{}</code></td>", escape(&assertion.id));
        for column in &matrix.columns {
            let state = (column.coverage.as_ref()).map(|c| c.state(&assertion.id));
            let class = match state {
                Some(State::Checked) => "passed",
                Some(State::Failed) => "failed",
                Some(State::KnownToDiffer) => "expected_failure",
                Some(State::NotJudged) => "informational",
                _ => "skipped",
            };
            let _ = write!(
                h,
                "<td class=\"{class}\">{}</td>",
                state.map_or("did not run", State::name)
            );
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table></section>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_covers_markup_and_both_quotes() {
        assert_eq!(
            escape(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }
}
