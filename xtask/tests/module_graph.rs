//! The xtask crate's modules form no circle: no module uses one that (through others) uses it
//! back. A module is a file under xtask/src (directml/setup.rs is `directml::setup`) or an
//! inline `mod NAME { .. }`; its edges are the modules its paths name: `use super::X`,
//! `super::X::f()`, `crate::X::Y`, `self::X`, and a child's name (`pins::PINS` in
//! directml.rs); a path to an item names the module that holds it (`super::stack_dir` in
//! directml/pins.rs is an edge to `directml`). `mod X;` declares, it does not use. The crate
//! root (main.rs) is left out: it declares and dispatches to every module, and every module may
//! use its `repository_root()`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Module = Vec<String>;
/// Which modules each module uses.
type Graph = BTreeMap<Module, BTreeSet<Module>>;
/// What `walk` calls: on entering an inline module (`None`), and for each path.
type Visitor<'a> = dyn FnMut(&[String], Option<&[String]>) + 'a;
/// A group of modules that reach each other, with one circle through it.
type Knot = (Vec<Module>, BTreeSet<Module>);

fn name(module: &[String]) -> String {
    if module.is_empty() {
        "crate".to_string()
    } else {
        module.join("::")
    }
}

/// The source with comments, strings and character literals blanked (a space each), so that
/// braces and paths are the code's own.
fn code_only(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
            continue;
        }
        let after_ident = i > 0 && ident(chars[i - 1]);
        // Raw strings: r"..", r#".."#, br#".."#.
        if (c == 'r' || (c == 'b' && next == Some('r'))) && !after_ident {
            let mut j = i + if c == 'b' { 2 } else { 1 };
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) == Some(&'"') {
                j += 1;
                loop {
                    if j >= chars.len() {
                        break;
                    }
                    if chars[j] == '"' && (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')) {
                        j += 1 + hashes;
                        break;
                    }
                    j += 1;
                }
                out.push(' ');
                i = j;
                continue;
            }
        }
        if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push(' ');
            continue;
        }
        if c == '\'' {
            // A character literal ('x', '\n', '\u{1F600}'); otherwise a lifetime or a label.
            if next == Some('\\') {
                let mut j = i + 2;
                while j < chars.len() && chars[j] != '\'' {
                    j += 1;
                }
                i = j + 1;
                out.push(' ');
                continue;
            }
            if chars.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push(' ');
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// Identifiers and punctuation, `::` as one token.
fn tokens(code: &str) -> Vec<String> {
    let chars: Vec<char> = code.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push(chars[start..i].iter().collect());
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            tokens.push("::".to_string());
            i += 2;
        } else {
            tokens.push(c.to_string());
            i += 1;
        }
    }
    tokens
}

/// The paths a path expression or `use` tree starting at `tokens[*at]` spells out (a group
/// `a::{b, c::d}` spells several); leaves `*at` after it.
fn paths_at(tokens: &[String], at: &mut usize) -> Vec<Vec<String>> {
    let mut prefix = Vec::new();
    while let Some(token) = tokens.get(*at) {
        if token == "{" {
            *at += 1;
            let mut found = Vec::new();
            loop {
                match tokens.get(*at).map(String::as_str) {
                    None => break,
                    Some("}") => {
                        *at += 1;
                        break;
                    }
                    Some(",") => *at += 1,
                    Some(_) => {
                        let before = *at;
                        for path in paths_at(tokens, at) {
                            let mut full = prefix.clone();
                            full.extend(path);
                            found.push(full);
                        }
                        if *at == before {
                            *at += 1;
                        }
                    }
                }
            }
            return found;
        }
        if token == "*" {
            *at += 1;
            break;
        }
        if !token.chars().all(|c| c.is_alphanumeric() || c == '_') {
            break;
        }
        if token != "self" || prefix.is_empty() {
            prefix.push(token.clone());
        }
        *at += 1;
        if tokens.get(*at).map(String::as_str) != Some("::") {
            break;
        }
        *at += 1;
    }
    vec![prefix]
}

/// The module a path used in `module` names: the longest known module its resolved path
/// begins with; `None` when the path is not into this crate (std, another crate, a local).
fn target(path: &[String], module: &[String], modules: &BTreeSet<Module>) -> Option<Module> {
    let mut base: Module = module.to_vec();
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &path[1..];
        }
        Some("self") => rest = &path[1..],
        Some("super") => {
            while rest.first().map(String::as_str) == Some("super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        Some(first) => {
            let mut child = base.clone();
            child.push(first.to_string());
            if !modules.contains(&child) {
                return None;
            }
        }
        None => return None,
    }
    let mut full = base;
    full.extend(rest.iter().cloned());
    (0..=full.len())
        .rev()
        .map(|n| full[..n].to_vec())
        .find(|m| modules.contains(m))
}

/// Every module of the sources (module path and text) and the modules each one uses.
fn module_graph(sources: &[(Module, String)]) -> Graph {
    let code: Vec<(Module, Vec<String>)> = sources
        .iter()
        .map(|(m, text)| (m.clone(), tokens(&code_only(text))))
        .collect();
    // The inline modules, found by the same walk as the edges below.
    let mut modules: BTreeSet<Module> = sources.iter().map(|(m, _)| m.clone()).collect();
    for (file_module, tokens) in &code {
        walk(file_module, tokens, &mut |module, _| {
            modules.insert(module.to_vec());
        });
    }
    let mut graph: Graph = modules
        .iter()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    for (file_module, tokens) in &code {
        walk(file_module, tokens, &mut |module, path| {
            if let Some(path) = path
                && let Some(to) = target(path, module, &modules)
                && !to.is_empty()
                && to != module
            {
                graph.get_mut(module).expect("a known module").insert(to);
            }
        });
    }
    graph
}

/// Walks a file's tokens: calls `visit(module, None)` on entering each inline module and
/// `visit(module, Some(path))` for each path, with the module it is written in.
fn walk(file_module: &[String], tokens: &[String], visit: &mut Visitor) {
    let mut module: Module = file_module.to_vec();
    // The inline modules open here: the brace depth each one closes at.
    let mut open: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    let mut at = 0;
    while at < tokens.len() {
        let token = tokens[at].as_str();
        match token {
            "{" => {
                depth += 1;
                at += 1;
            }
            "}" => {
                depth = depth.saturating_sub(1);
                if open.last() == Some(&depth) {
                    open.pop();
                    module.pop();
                }
                at += 1;
            }
            "mod" if tokens.get(at + 2).map(String::as_str) == Some("{") => {
                module.push(tokens[at + 1].clone());
                visit(&module, None);
                open.push(depth);
                depth += 1;
                at += 3;
            }
            "mod" => at += 2,
            _ => {
                let starts_path = tokens.get(at + 1).map(String::as_str) == Some("::")
                    && (at == 0 || tokens[at - 1] != "::")
                    && token.chars().all(|c| c.is_alphanumeric() || c == '_');
                if starts_path {
                    for path in paths_at(tokens, &mut at) {
                        visit(&module, Some(&path));
                    }
                } else {
                    at += 1;
                }
            }
        }
    }
}

/// A circle in the graph, as the modules along it (the first again at the end).
fn a_circle(graph: &Graph) -> Option<Vec<Module>> {
    fn visit(
        node: &Module,
        graph: &Graph,
        done: &mut BTreeSet<Module>,
        stack: &mut Vec<Module>,
    ) -> Option<Vec<Module>> {
        if let Some(start) = stack.iter().position(|m| m == node) {
            let mut circle = stack[start..].to_vec();
            circle.push(node.clone());
            return Some(circle);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.clone());
        for next in &graph[node] {
            if let Some(circle) = visit(next, graph, done, stack) {
                return Some(circle);
            }
        }
        stack.pop();
        done.insert(node.clone());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut done, &mut Vec::new()))
}

/// Every .rs file under `dir`, with its module path (`main.rs` and `lib.rs` are the root,
/// `X/mod.rs` is `X`).
fn sources(dir: &Path, module: &[String], found: &mut Vec<(Module, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        let mut inner = module.to_vec();
        if path.is_dir() {
            inner.push(stem);
            sources(&path, &inner, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let root_file = module.is_empty() && (stem == "main" || stem == "lib");
            if !(root_file || stem == "mod") {
                inner.push(stem);
            }
            found.push((inner, std::fs::read_to_string(&path).unwrap()));
        }
    }
}

fn xtask_graph() -> Graph {
    let mut found = Vec::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &[],
        &mut found,
    );
    module_graph(&found)
}

/// Each group of modules that reach each other (a strongly connected component of more than
/// one module), with one circle through it.
fn every_circle(graph: &Graph) -> Vec<Knot> {
    let reach = |from: &Module| -> BTreeSet<Module> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(m) = todo.pop() {
            for next in &graph[&m] {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&Module, BTreeSet<Module>> =
        graph.keys().map(|m| (m, reach(m))).collect();
    let mut grouped = BTreeSet::new();
    let mut circles = Vec::new();
    for module in graph.keys() {
        if grouped.contains(module) || !reaches[module].contains(module) {
            continue;
        }
        let group: BTreeSet<Module> = reaches[module]
            .iter()
            .filter(|other| reaches[other].contains(module))
            .cloned()
            .collect();
        let within: Graph = group
            .iter()
            .map(|m| (m.clone(), graph[m].intersection(&group).cloned().collect()))
            .collect();
        if let Some(circle) = a_circle(&within) {
            circles.push((circle, group.clone()));
        }
        grouped.extend(group);
    }
    circles
}

#[test]
fn xtask_modules_form_no_circle() {
    let circles: Vec<String> = every_circle(&xtask_graph())
        .iter()
        .map(|(circle, group)| {
            format!(
                "{} (the modules that reach each other: {})",
                circle
                    .iter()
                    .map(|m| name(m))
                    .collect::<Vec<_>>()
                    .join(" -> "),
                group.iter().map(|m| name(m)).collect::<Vec<_>>().join(", ")
            )
        })
        .collect();
    assert!(
        circles.is_empty(),
        "the xtask modules form {} circle(s): {}",
        circles.len(),
        circles.join("; ")
    );
}

/// The layout the directml modules are meant to have: setup on top, shell the leaf.
#[test]
fn the_directml_modules_use_shell_and_shell_uses_none_of_them() {
    let graph = xtask_graph();
    let module = |path: &str| -> Module { path.split("::").map(str::to_string).collect() };
    let uses =
        |from: &str| -> BTreeSet<String> { graph[&module(from)].iter().map(|m| name(m)).collect() };
    assert!(
        uses("directml::shell").is_empty(),
        "{:?}",
        uses("directml::shell")
    );
    for user in ["setup", "cross_build", "pins", "wine", "doctor"] {
        assert!(
            uses(&format!("directml::{user}")).contains("directml::shell"),
            "directml::{user} uses {:?}",
            uses(&format!("directml::{user}"))
        );
    }
    for used in ["cross_build", "pins", "wine", "doctor"] {
        assert!(uses("directml::setup").contains(&format!("directml::{used}")));
    }
}

/// The checker itself, on made-up sources: a circle through a parent's item, one through a
/// `use` group, and none where the edges only go one way.
#[test]
fn circles_in_made_up_sources_are_found() {
    let m = |path: &str| -> Module {
        if path.is_empty() {
            Vec::new()
        } else {
            path.split("::").map(str::to_string).collect()
        }
    };
    let graph = |files: &[(&str, &str)]| {
        module_graph(
            &files
                .iter()
                .map(|(path, text)| (m(path), text.to_string()))
                .collect::<Vec<_>>(),
        )
    };
    let circle_names = |files: &[(&str, &str)]| {
        a_circle(&graph(files)).map(|c| c.iter().map(|m| name(m)).collect::<Vec<_>>().join(" -> "))
    };
    // The old directml layout in small: setup's helpers used back by its users.
    assert_eq!(
        circle_names(&[
            ("", "mod d; fn main() { d::go(); }"),
            ("d", "mod setup; mod pins; pub fn go() { setup::setup(); }"),
            (
                "d::setup",
                "use super::pins::{Pin, dll};\npub fn run() {}\npub fn setup() { dll(); }"
            ),
            (
                "d::pins",
                "use super::{setup::{run, step}};\n// super::nothing::here\nlet s = \"super::x::y\";\npub fn dll() { run(); }"
            ),
        ]),
        Some("d::setup -> d::pins -> d::setup".to_string())
    );
    // A child using its parent's item while the parent uses the child.
    assert_eq!(
        circle_names(&[
            ("b", "mod cpu; pub struct Options; fn f() { cpu::bench(); }"),
            ("b::cpu", "pub fn bench(o: &super::Options) {}"),
        ]),
        Some("b -> b::cpu -> b".to_string())
    );
    // An inline test module's `use super::*` is the test module's, and crate:: items are the
    // root's: no circle.
    assert_eq!(
        circle_names(&[
            ("", "mod a; pub fn root() {} fn main() { a::f(); }"),
            (
                "a",
                "mod leaf; use leaf::g; pub fn f() { crate::root(); g(); }\n#[cfg(test)]\nmod tests { use super::*; fn t<'a>(c: char) { let _ = '{'; f(); } }"
            ),
            ("a::leaf", "pub fn g() { let _ = r#\"super::f()\"#; }"),
        ]),
        None
    );
    let both = graph(&[
        ("a", "mod x; mod y; fn f() { x::f(); y::f(); }"),
        ("a::x", "use super::f;"),
        ("a::y", "mod z; use z::g; pub fn f() {}"),
        ("a::y::z", "pub fn g() { super::f(); }"),
    ]);
    let names: Vec<String> = every_circle(&both)
        .iter()
        .map(|(c, _)| c.iter().map(|m| name(m)).collect::<Vec<_>>().join(" -> "))
        .collect();
    assert_eq!(names, ["a -> a::x -> a", "a::y -> a::y::z -> a::y"]);
    let g = graph(&[
        ("a", "mod leaf; mod tests { use super::*; }"),
        ("a::leaf", ""),
    ]);
    assert_eq!(g[&m("a::tests")], BTreeSet::from([m("a")]));
}
