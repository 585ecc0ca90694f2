//! The `[profile]` settings README.md tells an author to copy are the ones this workspace
//! uses: every `[profile.dev.package.dmlcts-*]` section of the root Cargo.toml, word for word.

fn sections(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.starts_with("[profile.dev.package.dmlcts-") {
            let mut section = vec![line.trim().to_string()];
            while let Some(next) = lines
                .peek()
                .filter(|l| !l.trim().is_empty() && !l.starts_with('['))
            {
                if !next.starts_with('#') && !next.starts_with("```") {
                    section.push(next.trim().to_string());
                }
                lines.next();
            }
            found.push(section.join("\n"));
        }
    }
    found
}

#[test]
fn the_readme_profile_settings_are_the_workspaces() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = std::fs::read_to_string(dir.join("../../Cargo.toml")).unwrap();
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let start = readme
        .find("<!-- profile settings: start")
        .expect("the start marker");
    let end = readme
        .find("<!-- profile settings: end")
        .expect("the end marker");
    let expected = sections(&workspace);
    assert_eq!(expected.len(), 4, "{expected:?}");
    assert_eq!(sections(&readme[start..end]), expected);
}
