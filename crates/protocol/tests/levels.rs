//! A server with devices at several levels: `hello` announces them, a `compile` that names a
//! level gets that device's verdict, one that names none the default device's, and one that
//! names a level not offered an error.

use dmlcts_oracle::OracleBackend;
use dmlcts_protocol::Server;
use dmlcts_protocol::frame::Frame;
use dmlcts_tensor::{Backend, FeatureLevel};
use serde_json::{Value, json};

/// A Split of a 5-dimensional tensor: valid from 3_0 (1 to 8 dimensions), not at 2_1 (4 only).
fn five_dimensional_split() -> Value {
    let tensor = json!({"data_type": "FLOAT32", "sizes": [1, 1, 1, 1, 2], "strides": null,
                        "total_tensor_size_in_bytes": 8});
    json!({"split": {"axis": 0, "input": tensor, "outputs": [tensor]}})
}

fn compile(server: &mut Server<'_>, id: u64, level: Option<&str>) -> Value {
    let mut header = json!({"type": "compile", "id": id, "operator": five_dimensional_split()});
    if let Some(level) = level {
        header["feature_level"] = json!(level);
    }
    server.handle(&Frame::new(header)).expect("a reply").header
}

#[test]
fn each_compile_is_judged_at_the_level_it_names() {
    let default = OracleBackend::new(FeatureLevel::L4_1);
    let devices = [
        OracleBackend::new(FeatureLevel::L2_1),
        OracleBackend::new(FeatureLevel::L4_1),
    ];
    let at_levels: Vec<&dyn Backend> = devices.iter().map(|d| d as &dyn Backend).collect();
    let mut server = Server::with_levels(&default, at_levels);
    let hello = server
        .handle(&Frame::new(json!({"type": "hello", "protocol": 1})))
        .expect("a hello");
    assert_eq!(hello.header["feature_level"], json!("4_1"));
    assert_eq!(hello.header["feature_levels"], json!(["2_1", "4_1"]));

    assert_eq!(
        compile(&mut server, 1, Some("2_1"))["rule"],
        json!("split.dimension_count_supported")
    );
    assert_eq!(
        compile(&mut server, 2, Some("4_1"))["type"],
        json!("accepted")
    );
    assert_eq!(compile(&mut server, 3, None)["type"], json!("accepted"));
    assert_eq!(
        compile(&mut server, 4, Some("3_0")),
        json!({"type": "error", "id": 4,
               "message": "compile asks for feature level 3_0; this server offers 2_1, 4_1"})
    );
}

#[test]
fn a_one_level_server_announces_no_levels_and_refuses_a_level() {
    let backend = OracleBackend::new(FeatureLevel::L4_1);
    let mut server = Server::new(&backend);
    let hello = server
        .handle(&Frame::new(json!({"type": "hello", "protocol": 1})))
        .expect("a hello");
    assert_eq!(hello.header.get("feature_levels"), None);
    assert_eq!(compile(&mut server, 1, None)["type"], json!("accepted"));
    assert_eq!(
        compile(&mut server, 2, Some("4_1"))["message"],
        json!("compile asks for feature level 4_1; this server offers no choice of level")
    );
}
