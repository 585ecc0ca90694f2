//! Which versions of a backend an expectations entry is about.
//!
//! A backend says which version it runs in its device text, as `version X.Y.Z` (the DirectML
//! server writes `DirectML.dll version 1.15.4.0 on ...`, read from the DLL it loaded). An
//! entry's `versions` is one requirement or a list of them (any may match); a requirement is
//! a bare version, which matches every version that starts with it (`1.12` is every 1.12.x,
//! `1.12.1` is 1.12.1 and 1.12.1.0), or comparisons joined by commas, all
//! of which must hold (`>=1.12.1, <1.15`), or a range `1.9.0-1.12.1` (both ends included:
//! `>=1.9.0, <=1.12.1`). Missing components count as 0 in comparisons, so `1.15.4.0` equals
//! `1.15.4`. The same requirements match a driver's version (`adapter: {driver: ...}`).

use serde::Deserialize;
use std::cmp::Ordering;
use std::fmt;

/// A dotted version, `1.15.4` or `1.15.4.0`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Version(Vec<u32>);

impl Version {
    pub fn parse(text: &str) -> Option<Version> {
        let parts: Option<Vec<u32>> = text
            .split('.')
            .map(|p| {
                (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
                    .then(|| p.parse().ok())
                    .flatten()
            })
            .collect();
        parts.filter(|p| p.len() <= 4).map(Version)
    }

    fn component(&self, index: usize) -> u32 {
        self.0.get(index).copied().unwrap_or(0)
    }

    /// Numeric comparison, missing components being 0 (`1.9` and `1.9.0.0` are equal).
    pub fn compare(&self, other: &Version) -> Ordering {
        (0..self.0.len().max(other.0.len()))
            .map(|i| self.component(i).cmp(&other.component(i)))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    }

    /// `1.12` is a prefix of `1.12.1`; `1.12.1` is one of `1.12.1.0` (trailing zeros).
    fn is_prefix_of(&self, other: &Version) -> bool {
        self.0
            .iter()
            .enumerate()
            .all(|(i, &part)| part == other.component(i))
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(u32::to_string).collect();
        f.write_str(&parts.join("."))
    }
}

/// The version a device text declares: the dotted number after its first `version `.
pub fn device_version(device: &str) -> Option<Version> {
    let (_, rest) = device.split_once("version ")?;
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    Version::parse(rest[..end].trim_end_matches('.'))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Operator {
    Prefix,
    Equal,
    Less,
    LessOrEqual,
    Greater,
    GreaterOrEqual,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Comparison {
    operator: Operator,
    version: Version,
}

impl Comparison {
    fn parse(text: &str) -> Result<Comparison, String> {
        let text = text.trim();
        let (operator, rest) = [
            (">=", Operator::GreaterOrEqual),
            ("<=", Operator::LessOrEqual),
            (">", Operator::Greater),
            ("<", Operator::Less),
            ("=", Operator::Equal),
        ]
        .into_iter()
        .find_map(|(sign, op)| text.strip_prefix(sign).map(|rest| (op, rest)))
        .unwrap_or((Operator::Prefix, text));
        let version = Version::parse(rest.trim()).ok_or_else(|| {
            format!(
                "`{text}` is not a version requirement (a version like 1.12.1, optionally after \
                 >=, >, <=, < or =)"
            )
        })?;
        Ok(Comparison { operator, version })
    }

    fn matches(&self, version: &Version) -> bool {
        let order = version.compare(&self.version);
        match self.operator {
            Operator::Prefix => self.version.is_prefix_of(version),
            Operator::Equal => order.is_eq(),
            Operator::Less => order.is_lt(),
            Operator::LessOrEqual => order.is_le(),
            Operator::Greater => order.is_gt(),
            Operator::GreaterOrEqual => order.is_ge(),
        }
    }
}

/// Comparisons that must all hold, as written: `>=1.12.1, <1.15`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Requirement {
    text: String,
    all: Vec<Comparison>,
}

impl Requirement {
    fn parse(text: &str) -> Result<Requirement, String> {
        if text.trim().is_empty() {
            return Err("an empty version requirement".to_string());
        }
        let mut all = Vec::new();
        for part in text.split(',') {
            // `A-B`: from A to B, both included.
            let range = part.split_once('-').and_then(|(low, high)| {
                Some((Version::parse(low.trim())?, Version::parse(high.trim())?))
            });
            match range {
                Some((low, high)) => all.extend([
                    Comparison {
                        operator: Operator::GreaterOrEqual,
                        version: low,
                    },
                    Comparison {
                        operator: Operator::LessOrEqual,
                        version: high,
                    },
                ]),
                None => all.push(Comparison::parse(part)?),
            }
        }
        Ok(Requirement {
            text: text.trim().to_string(),
            all,
        })
    }
}

/// An entry's `versions`: one requirement, or a list of which any may match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionSpec {
    any: Vec<Requirement>,
}

impl VersionSpec {
    pub fn parse(texts: &[String]) -> Result<VersionSpec, String> {
        if texts.is_empty() {
            return Err("an empty list of versions".to_string());
        }
        let any = texts
            .iter()
            .map(|t| Requirement::parse(t))
            .collect::<Result<_, _>>()?;
        Ok(VersionSpec { any })
    }

    pub fn matches(&self, version: &Version) -> bool {
        self.any
            .iter()
            .any(|r| r.all.iter().all(|c| c.matches(version)))
    }

    /// Whether the device text's version (if it declares one) matches; no version, no match.
    pub fn matches_device(&self, device: &str) -> bool {
        device_version(device).is_some_and(|v| self.matches(&v))
    }
}

impl fmt::Display for VersionSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let texts: Vec<&str> = self.any.iter().map(|r| r.text.as_str()).collect();
        f.write_str(&texts.join(" | "))
    }
}

impl<'de> Deserialize<'de> for VersionSpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let text = |value: serde_yaml::Value| match value {
            serde_yaml::Value::String(text) => Ok(text),
            serde_yaml::Value::Number(n) => Err(D::Error::custom(format!(
                "versions: write `{n}` in quotes (as a YAML number 1.10 would read as 1.1)"
            ))),
            _ => Err(D::Error::custom(
                "versions: a requirement in quotes, or a list of them",
            )),
        };
        let texts = match serde_yaml::Value::deserialize(deserializer)? {
            serde_yaml::Value::Sequence(items) => {
                items.into_iter().map(text).collect::<Result<_, _>>()?
            }
            value => vec![text(value)?],
        };
        VersionSpec::parse(&texts).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(texts: &[&str]) -> VersionSpec {
        VersionSpec::parse(&texts.iter().map(|t| t.to_string()).collect::<Vec<_>>()).unwrap()
    }

    fn v(text: &str) -> Version {
        Version::parse(text).unwrap()
    }

    #[test]
    fn device_version_is_the_number_after_the_word_version() {
        let device = "directml: DirectML.dll version 1.15.4.0 on llvmpipe (LLVM 15.0.6), DML feature level 6_4";
        assert_eq!(device_version(device), Some(v("1.15.4.0")));
        assert_eq!(device_version("llvmpipe (LLVM 15.0.6, 256 bits)"), None);
        assert_eq!(device_version("version 1.9."), Some(v("1.9")));
        assert_eq!(device_version("version x"), None);
    }

    #[test]
    fn a_bare_version_matches_itself_with_trailing_zeros_and_is_a_prefix() {
        let exact = spec(&["1.12.1"]);
        assert!(exact.matches(&v("1.12.1")));
        assert!(exact.matches(&v("1.12.1.0")));
        assert!(!exact.matches(&v("1.12.10")));
        assert!(exact.matches(&v("1.12.1.1")));
        assert!(!exact.matches(&v("1.13.1")));
        let minor = spec(&["1.12"]);
        assert!(minor.matches(&v("1.12.0")));
        assert!(minor.matches(&v("1.12.7.0")));
        assert!(!minor.matches(&v("1.13.0")));
        assert!(!minor.matches(&v("1.1")));
    }

    #[test]
    fn a_range_needs_every_comparison_and_compares_numerically() {
        let range = spec(&[">=1.12.1, <1.15"]);
        for inside in ["1.12.1", "1.12.1.0", "1.13.1.0", "1.14.99"] {
            assert!(range.matches(&v(inside)), "{inside}");
        }
        for outside in ["1.9.0", "1.10.1", "1.12.0.9", "1.15", "1.15.4.0"] {
            assert!(!range.matches(&v(outside)), "{outside}");
        }
        assert!(spec(&[">1.9"]).matches(&v("1.10.1")));
        assert!(!spec(&[">1.9"]).matches(&v("1.9.0.0")));
        assert!(spec(&["<=1.10.1"]).matches(&v("1.10.1.0")));
        assert!(spec(&["=1.9"]).matches(&v("1.9.0.0")));
        assert!(!spec(&["=1.9"]).matches(&v("1.9.1")));
    }

    #[test]
    fn a_hyphen_range_includes_both_ends_and_nothing_outside() {
        let range = spec(&["1.9.0-1.12.1"]);
        for inside in ["1.9.0", "1.9.0.0", "1.10.1", "1.12.1", "1.12.1.0"] {
            assert!(range.matches(&v(inside)), "{inside}");
        }
        for outside in ["1.8.9", "1.12.1.1", "1.12.2", "1.13.1", "1.15.4.0"] {
            assert!(!range.matches(&v(outside)), "{outside}");
        }
        // A driver's four-part version, with a comparison after it.
        let drivers = spec(&["31.0.15.5000-31.0.15.5999, <31.0.15.5500"]);
        assert!(drivers.matches(&v("31.0.15.5222")));
        assert!(!drivers.matches(&v("31.0.15.5500")));
        assert!(!drivers.matches(&v("31.0.15.4999")));
        for bad in ["1.9-", "-1.9", "1.9-x", "1.9--1.10"] {
            assert!(VersionSpec::parse(&[bad.to_string()]).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_list_matches_when_any_requirement_does() {
        let list = spec(&["1.9.0", ">=1.15"]);
        assert!(list.matches(&v("1.9.0.0")));
        assert!(list.matches(&v("1.15.4.0")));
        assert!(!list.matches(&v("1.12.1.0")));
    }

    #[test]
    fn a_device_without_a_version_matches_no_spec() {
        assert!(!spec(&[">=0"]).matches_device("llvmpipe, Vulkan"));
        assert!(spec(&[">=0"]).matches_device("DirectML.dll version 1.9.0.0 on X"));
    }

    #[test]
    fn bad_requirements_are_named() {
        for bad in ["", "1.x", ">= ", "1..2", "~1.2", "1.2.3.4.5", ">=1.12.1,"] {
            let error = VersionSpec::parse(&[bad.to_string()]).unwrap_err();
            assert!(
                error.contains("version requirement") || error.contains("empty"),
                "{bad}: {error}"
            );
        }
        assert_eq!(
            VersionSpec::parse(&[]).unwrap_err(),
            "an empty list of versions"
        );
    }

    #[test]
    fn yaml_takes_one_requirement_or_a_list() {
        let one: VersionSpec = serde_yaml::from_str("\">=1.12.1, <1.15\"").unwrap();
        assert_eq!(one.to_string(), ">=1.12.1, <1.15");
        let many: VersionSpec = serde_yaml::from_str("[1.9.0, \"1.12\"]").unwrap();
        assert_eq!(many.to_string(), "1.9.0 | 1.12");
        let number = serde_yaml::from_str::<VersionSpec>("1.10").unwrap_err();
        assert!(
            number.to_string().contains("write `1.1` in quotes"),
            "{number}"
        );
    }
}
