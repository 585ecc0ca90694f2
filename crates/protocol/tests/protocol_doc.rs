//! docs/backend-protocol.md stays complete as the specs grow: it names every rule id in
//! specs/ (the must-reject list a backend author works from) and every feature level.

use dmlcts_tensor::FeatureLevel;

const DOC: &str = include_str!("../../../docs/backend-protocol.md");

#[test]
fn the_protocol_doc_names_every_rule_id_of_the_specs() {
    let missing: Vec<&str> = dmlcts_oracle::spec::all_constraints()
        .iter()
        .map(|c| c.id.as_str())
        .filter(|id| !DOC.contains(&format!("`{id}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "not in docs/backend-protocol.md: {missing:?}"
    );
}

#[test]
fn the_protocol_doc_lists_every_feature_level() {
    for level in FeatureLevel::ALL {
        assert!(DOC.contains(&format!("`{level}`")), "{level}");
    }
}
