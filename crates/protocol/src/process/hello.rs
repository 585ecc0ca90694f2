//! The server's `hello`: who it is, its levels, data types and validation profile. Every
//! text in it is kept only up to `MAX_TEXT_BYTES`.

use crate::PROTOCOL_VERSION;
use crate::bounds::{MAX_TEXT_BYTES, bounded, bounded_json};
use crate::frame::Frame;
use dmlcts_tensor::{AdapterInfo, DataType, FeatureLevel, Implementation, ValidationProfile};
use serde_json::Value;

/// What the server said about itself.
#[derive(Clone, Debug)]
pub(super) struct Hello {
    pub(super) name: String,
    pub(super) feature_level: FeatureLevel,
    /// The levels a `compile` may ask for (`feature_levels`); empty: the claimed one only.
    pub(super) feature_levels: Vec<FeatureLevel>,
    pub(super) data_types: Vec<DataType>,
    pub(super) device: String,
    /// `profile` and `not_enforced`: the DirectML rules it enforces (absent: all).
    pub(super) profile: ValidationProfile,
    /// `implementation` (optional): what it runs, as fields expectations match.
    pub(super) implementation: Implementation,
}
/// A hello member listing names (`what` names one: "data type", "level"), each parsed by
/// `parse`; None when it is absent or null.
fn name_list<T>(
    frame: &Frame,
    key: &str,
    what: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<Option<Vec<T>>, String> {
    match frame.header.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(names)) => names
            .iter()
            .map(|v| {
                v.as_str()
                    .and_then(&parse)
                    .ok_or_else(|| format!("unknown {what} {} in \"{key}\"", bounded_json(v)))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(other) => Err(format!(
            "\"{key}\" must be an array of names, found {}",
            bounded_json(other)
        )),
    }
}

pub(super) fn parse_hello(frame: &Frame) -> Result<Hello, String> {
    if frame.kind() != "hello" {
        return Err(format!(
            "expected a hello, got {}",
            bounded_json(&frame.header)
        ));
    }
    let protocol = frame.header.get("protocol").and_then(Value::as_u64);
    if protocol != Some(PROTOCOL_VERSION) {
        return Err(format!(
            "protocol {protocol:?}; this harness speaks {PROTOCOL_VERSION}"
        ));
    }
    let text = |key: &str| match frame.header.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(text)) => Ok(bounded(text, MAX_TEXT_BYTES)),
        Some(other) => Err(format!(
            "\"{key}\" must be a string, found {}",
            bounded_json(other)
        )),
    };
    let level = text("feature_level")?;
    let feature_level =
        FeatureLevel::parse(&level).ok_or_else(|| format!("bad feature_level {level:?}"))?;
    let data_types = name_list(frame, "data_types", "data type", DataType::from_name)?
        .ok_or("hello needs \"data_types\"")?;
    let feature_levels =
        name_list(frame, "feature_levels", "level", FeatureLevel::parse)?.unwrap_or_default();
    let profile = parse_profile(frame)?;
    let implementation = parse_implementation(frame.header.get("implementation"))?;
    Ok(Hello {
        name: text("name")?,
        feature_level,
        feature_levels,
        data_types,
        device: text("device")?,
        profile,
        implementation,
    })
}

/// The hello's `implementation`: `{"name": "directml", "version": "1.15.4.0", "adapter":
/// {"name": ..., "vendor": "nvidia", "driver": "31.0.15.5222"}}`, every member an optional
/// string (kept up to `MAX_TEXT_BYTES`; names and vendors lower-cased); other members are
/// ignored, for servers newer than this harness.
fn parse_implementation(value: Option<&Value>) -> Result<Implementation, String> {
    let object = |value: Option<&Value>, key: &str| match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) => Ok(Some(map.clone())),
        Some(other) => Err(format!(
            "\"{key}\" must be an object, found {}",
            bounded_json(other)
        )),
    };
    let Some(map) = object(value, "implementation")? else {
        return Ok(Implementation::default());
    };
    let text = |map: &serde_json::Map<String, Value>, path: &str, key: &str| match map.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(text)) => Ok(bounded(text, MAX_TEXT_BYTES)),
        Some(other) => Err(format!(
            "\"{path}{key}\" must be a string, found {}",
            bounded_json(other)
        )),
    };
    let adapter = object(map.get("adapter"), "implementation.adapter")?.unwrap_or_default();
    Ok(Implementation {
        name: text(&map, "implementation.", "name")?.to_lowercase(),
        version: text(&map, "implementation.", "version")?,
        adapter: AdapterInfo {
            name: text(&adapter, "implementation.adapter.", "name")?,
            vendor: text(&adapter, "implementation.adapter.", "vendor")?.to_lowercase(),
            driver: text(&adapter, "implementation.adapter.", "driver")?,
        },
    })
}

/// `implementation` as a hello writes it (`serve`): the members that are not empty.
pub(crate) fn implementation_json(implementation: &Implementation) -> Value {
    let mut adapter = serde_json::Map::new();
    let a = &implementation.adapter;
    for (key, value) in [
        ("name", &a.name),
        ("vendor", &a.vendor),
        ("driver", &a.driver),
    ] {
        if !value.is_empty() {
            adapter.insert(key.to_string(), Value::String(value.clone()));
        }
    }
    let mut object = serde_json::Map::new();
    for (key, value) in [
        ("name", &implementation.name),
        ("version", &implementation.version),
    ] {
        if !value.is_empty() {
            object.insert(key.to_string(), Value::String(value.clone()));
        }
    }
    if !adapter.is_empty() {
        object.insert("adapter".to_string(), Value::Object(adapter));
    }
    Value::Object(object)
}

/// The hello's `profile` (`"strict"`, `"values-only"`; absent: strict) and `not_enforced`
/// (rule ids from specs/).
fn parse_profile(frame: &Frame) -> Result<ValidationProfile, String> {
    let values_only = match frame.header.get("profile") {
        None | Some(Value::Null) => false,
        Some(Value::String(name)) if name == "strict" => false,
        Some(Value::String(name)) if name == "values-only" => true,
        Some(other) => {
            return Err(format!(
                "unknown \"profile\" {}; the profiles are \"strict\" and \"values-only\"",
                bounded_json(other)
            ));
        }
    };
    let mut not_enforced = name_list(frame, "not_enforced", "rule id", |rule| {
        dmlcts_oracle::spec::constraint(rule).map(|_| rule.to_string())
    })?
    .unwrap_or_default();
    // Each rule once: a profile is cloned for every case.
    not_enforced.sort();
    not_enforced.dedup();
    Ok(if values_only {
        ValidationProfile::ValuesOnly
    } else if not_enforced.is_empty() {
        ValidationProfile::Strict
    } else {
        ValidationProfile::NotEnforced(not_enforced)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hello(extra: Value) -> Result<Hello, String> {
        let mut header = json!({"type": "hello", "protocol": PROTOCOL_VERSION, "name": "x",
                                "feature_level": "4_1", "data_types": ["FLOAT32"]});
        for (key, value) in extra.as_object().expect("an object") {
            header[key] = value.clone();
        }
        parse_hello(&Frame::new(header))
    }

    #[test]
    fn feature_levels_are_optional_and_each_must_be_a_level() {
        assert_eq!(hello(json!({})).expect("a hello").feature_levels, []);
        assert_eq!(
            hello(json!({"feature_levels": ["1_0", "4_1"]}))
                .expect("a hello")
                .feature_levels,
            [FeatureLevel::L1_0, FeatureLevel::L4_1]
        );
        assert_eq!(
            hello(json!({"feature_levels": ["1_0", "9_9"]})).err(),
            Some("unknown level \"9_9\" in \"feature_levels\"".to_string())
        );
        assert_eq!(
            hello(json!({"feature_levels": "4_1"})).err(),
            Some("\"feature_levels\" must be an array of names, found \"4_1\"".to_string())
        );
    }

    #[test]
    fn a_profile_is_strict_values_only_or_rules_not_enforced_and_each_rule_must_exist() {
        let profile = |extra: Value| hello(extra).map(|h| h.profile);
        assert_eq!(profile(json!({})), Ok(ValidationProfile::Strict));
        assert_eq!(
            profile(json!({"profile": "strict"})),
            Ok(ValidationProfile::Strict)
        );
        assert_eq!(
            profile(json!({"profile": "values-only"})),
            Ok(ValidationProfile::ValuesOnly)
        );
        assert_eq!(
            profile(json!({"not_enforced": ["slice1.window_inside_input"]})),
            Ok(ValidationProfile::NotEnforced(vec![
                "slice1.window_inside_input".to_string()
            ]))
        );
        assert_eq!(
            profile(json!({"profile": "lenient"})),
            Err(
                "unknown \"profile\" \"lenient\"; the profiles are \"strict\" and \"values-only\""
                    .to_string()
            )
        );
        assert_eq!(
            profile(json!({"not_enforced": ["slice1.window_inside"]})),
            Err("unknown rule id \"slice1.window_inside\" in \"not_enforced\"".to_string())
        );
        assert_eq!(
            profile(json!({"not_enforced": "slice1.window_inside_input"})),
            Err(
                "\"not_enforced\" must be an array of names, found \"slice1.window_inside_input\""
                    .to_string()
            )
        );
    }

    #[test]
    fn an_implementation_is_optional_its_members_strings_and_it_round_trips() {
        assert_eq!(
            hello(json!({})).expect("a hello").implementation,
            Implementation::default()
        );
        let written = Implementation {
            name: "directml".to_string(),
            version: "1.15.4.0".to_string(),
            adapter: AdapterInfo {
                name: "NVIDIA GeForce RTX 4090".to_string(),
                vendor: "nvidia".to_string(),
                driver: "32.0.15.6094".to_string(),
            },
        };
        let read = hello(json!({"implementation": implementation_json(&written)}))
            .expect("a hello")
            .implementation;
        assert_eq!(read, written);
        // Names and vendors are lower-cased; unknown members are ignored; absent ones empty.
        let read = hello(json!({"implementation": {"name": "DirectML", "adapter":
                                {"vendor": "NVIDIA"}, "build": 7}}))
        .expect("a hello")
        .implementation;
        assert_eq!(read.name, "directml");
        assert_eq!(read.adapter.vendor, "nvidia");
        assert_eq!(read.version, "");
        assert_eq!(
            hello(json!({"implementation": "directml"})).err(),
            Some("\"implementation\" must be an object, found \"directml\"".to_string())
        );
        assert_eq!(
            hello(json!({"implementation": {"adapter": {"driver": 31}}})).err(),
            Some("\"implementation.adapter.driver\" must be a string, found 31".to_string())
        );
    }

    #[test]
    fn every_text_of_a_hello_is_bounded() {
        let huge = "d".repeat(15 << 20);
        let rules = vec!["tensor.sizes_nonzero"; 1000];
        let parsed = hello(json!({"name": huge, "device": huge, "not_enforced": rules,
                                  "implementation": {"version": huge, "adapter": {"name": huge}}}))
        .expect("a hello");
        let cut = format!(
            "{} [... {} more bytes not kept]",
            "d".repeat(MAX_TEXT_BYTES),
            (15 << 20) - MAX_TEXT_BYTES
        );
        assert_eq!(parsed.name, cut);
        assert_eq!(parsed.device, cut);
        assert_eq!(parsed.implementation.version, cut);
        assert_eq!(parsed.implementation.adapter.name, cut);
        assert_eq!(
            parsed.profile,
            ValidationProfile::NotEnforced(vec!["tensor.sizes_nonzero".to_string()])
        );
        let error = hello(json!({"data_types": [huge]})).expect_err("unknown");
        assert!(error.len() < 2 * MAX_TEXT_BYTES, "{} bytes", error.len());
        assert!(
            error.ends_with(" more bytes not kept] in \"data_types\""),
            "{}",
            &error[error.len() - 80..]
        );
    }
}
