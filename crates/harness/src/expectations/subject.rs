//! What an expectations entry is matched against (the run's [`Subject`]: the backend's name,
//! its device text and its [`Implementation`] fields), and the part of an entry that says
//! which subjects it is about ([`Key`]), shared by `expected_failures`, `known_differences`
//! and `not_enforced`:
//!
//! ```yaml
//! backend: directml          # the name given to --backend, or "*" for any
//! implementation: directml   # or: what the backend says it runs, however it was reached
//! device: "llvmpipe"         # optional: a substring of the device text
//! versions: "1.9.0-1.12.1"   # optional: the implementation's version (`versions`)
//! adapter:                   # optional, each member optional:
//!   vendor: nvidia           #   the adapter's vendor (nvidia, amd, intel, qualcomm,
//!                            #   microsoft, or a PCI id such as 0x1af4)
//!   name: "RTX 40"           #   a substring of the adapter's name
//!   driver: ">=31.0.15.5000, <32"  # the driver's version, as `versions` are written
//! ```
//!
//! An entry names `backend`, `implementation` or both. `versions` is matched against the
//! version the backend declares as a field, else the `version X.Y.Z` in its device text; an
//! entry with `adapter` applies only to a backend that names its adapter.

use crate::expectations::{Version, VersionSpec, device_version};
use dmlcts_tensor::{Backend, Implementation};
use serde::Deserialize;

/// What expectations entries are matched against: one backend as a run sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Subject {
    /// Its name, as given to `--backend` (a `process:` backend: `process:COMMAND`).
    pub backend: String,
    /// Its device text.
    pub device: String,
    /// What it says it runs.
    pub implementation: Implementation,
}

impl Subject {
    pub fn of<B: Backend + ?Sized>(backend: &B) -> Subject {
        Subject {
            backend: backend.name(),
            device: backend.device(),
            implementation: backend.implementation(),
        }
    }

    /// A subject known by name and device text only (no implementation fields).
    pub fn named(backend: &str, device: &str) -> Subject {
        Subject {
            backend: backend.to_string(),
            device: device.to_string(),
            implementation: Implementation::default(),
        }
    }

    /// The version entries' `versions` match: the implementation's, else the device text's.
    pub fn version(&self) -> Option<Version> {
        match Version::parse(&self.implementation.version) {
            Some(version) => Some(version),
            None => device_version(&self.device),
        }
    }
}

/// An entry's `adapter`: every member given must hold.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdapterMatch {
    #[serde(default)]
    pub vendor: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub driver: Option<VersionSpec>,
}

impl AdapterMatch {
    fn matches(&self, adapter: &dmlcts_tensor::AdapterInfo) -> bool {
        self.vendor.as_deref().is_none_or(|v| {
            !adapter.vendor.is_empty() && vendor_named(v).eq_ignore_ascii_case(&adapter.vendor)
        }) && (self.name.as_deref()).is_none_or(|n| {
            !adapter.name.is_empty() && adapter.name.to_lowercase().contains(&n.to_lowercase())
        }) && (self.driver.as_ref()).is_none_or(|d| {
            Version::parse(&adapter.driver).is_some_and(|driver| d.matches(&driver))
        })
    }
}

/// A vendor as a backend reports it: a PCI vendor id (`0x10de`) by its name (`nvidia`,
/// `dmlcts_tensor::vendor_name`), a name as written.
fn vendor_named(vendor: &str) -> String {
    (vendor
        .strip_prefix("0x")
        .or_else(|| vendor.strip_prefix("0X")))
    .and_then(|hex| u32::from_str_radix(hex, 16).ok())
    .map_or_else(|| vendor.to_string(), dmlcts_tensor::vendor_name)
}

/// The fields of an entry that say which subjects it is about.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Key<'a> {
    pub(crate) backend: Option<&'a str>,
    pub(crate) implementation: Option<&'a str>,
    pub(crate) device: Option<&'a str>,
    pub(crate) versions: Option<&'a VersionSpec>,
    pub(crate) adapter: Option<&'a AdapterMatch>,
}

impl Key<'_> {
    pub(crate) fn applies(&self, subject: &Subject) -> bool {
        (self.backend).is_none_or(|b| b == "*" || b == subject.backend)
            && (self.implementation).is_none_or(|i| {
                !subject.implementation.name.is_empty()
                    && i.eq_ignore_ascii_case(&subject.implementation.name)
            })
            && (self.device).is_none_or(|d| subject.device.contains(d))
            && (self.versions).is_none_or(|v| subject.version().is_some_and(|s| v.matches(&s)))
            && (self.adapter).is_none_or(|a| a.matches(&subject.implementation.adapter))
    }

    /// The key's own problems, as `field: what` lines (checked on load).
    pub(crate) fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.backend.is_none() && self.implementation.is_none() {
            problems.push(
                "needs a `backend` (a --backend name, or \"*\") or an `implementation` \
                 (directml, ...)"
                    .to_string(),
            );
        }
        if let Some(adapter) = self.adapter
            && adapter.vendor.is_none()
            && adapter.name.is_none()
            && adapter.driver.is_none()
        {
            problems.push("adapter: give a `vendor`, a `name` or a `driver`".to_string());
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dmlcts_tensor::AdapterInfo;

    fn directml(version: &str, vendor: &str, driver: &str) -> Subject {
        Subject {
            backend: "process:dmlcts-directml-server.exe".to_string(),
            device: "a device text that names no version".to_string(),
            implementation: Implementation {
                name: "directml".to_string(),
                version: version.to_string(),
                adapter: AdapterInfo {
                    name: "NVIDIA GeForce RTX 4090".to_string(),
                    vendor: vendor.to_string(),
                    driver: driver.to_string(),
                },
            },
        }
    }

    fn key(
        yaml: &str,
    ) -> (
        Option<String>,
        Option<String>,
        Option<VersionSpec>,
        Option<AdapterMatch>,
    ) {
        #[derive(Deserialize)]
        struct Entry {
            backend: Option<String>,
            implementation: Option<String>,
            versions: Option<VersionSpec>,
            adapter: Option<AdapterMatch>,
        }
        let e: Entry = serde_yaml::from_str(yaml).unwrap();
        (e.backend, e.implementation, e.versions, e.adapter)
    }

    fn applies(yaml: &str, subject: &Subject) -> bool {
        let (backend, implementation, versions, adapter) = key(yaml);
        Key {
            backend: backend.as_deref(),
            implementation: implementation.as_deref(),
            device: None,
            versions: versions.as_ref(),
            adapter: adapter.as_ref(),
        }
        .applies(subject)
    }

    #[test]
    fn an_implementation_entry_applies_to_every_name_the_implementation_is_reached_by() {
        let entry = "implementation: directml\nversions: \"1.9.0-1.12.1\"";
        for name in [
            "directml",
            "process:dmlcts-directml-server.exe",
            "process:C:\\x.exe",
        ] {
            let mut subject = directml("1.12.1.0", "nvidia", "32.0.15.6094");
            subject.backend = name.to_string();
            assert!(applies(entry, &subject), "{name}");
        }
        assert!(applies(entry, &directml("1.9.0.0", "amd", "1.0")));
        assert!(!applies(entry, &directml("1.12.1.1", "nvidia", "1.0")));
        assert!(!applies(entry, &directml("1.13.1.0", "nvidia", "1.0")));
        assert!(!applies(entry, &directml("1.8.9", "nvidia", "1.0")));
        // A backend that does not say what it is: only its name can match.
        let mut silent = Subject::named("directml", "DirectML.dll version 1.9.0.0 on X");
        assert!(!applies(entry, &silent));
        assert!(applies(
            "backend: directml\nversions: \"1.9.0-1.12.1\"",
            &silent
        ));
        // Named in any case, with no version field: the device text's 1.9.0 is the version.
        silent.implementation.name = "DirectML".to_string();
        assert!(applies(entry, &silent));
        silent.implementation.name = "directml-fork".to_string();
        assert!(!applies(entry, &silent));
    }

    #[test]
    fn an_adapter_entry_matches_vendor_name_and_driver_range_exactly() {
        let entry = "implementation: directml\nadapter: {vendor: NVIDIA, driver: \"31.0.15.5000-31.0.15.5999\"}";
        assert!(applies(
            entry,
            &directml("1.15.4.0", "nvidia", "31.0.15.5000")
        ));
        assert!(applies(
            entry,
            &directml("1.15.4.0", "nvidia", "31.0.15.5999")
        ));
        assert!(!applies(
            entry,
            &directml("1.15.4.0", "nvidia", "31.0.15.4999")
        ));
        assert!(!applies(
            entry,
            &directml("1.15.4.0", "nvidia", "31.0.15.6000")
        ));
        assert!(!applies(
            entry,
            &directml("1.15.4.0", "amd", "31.0.15.5222")
        ));
        assert!(!applies(entry, &directml("1.15.4.0", "", "31.0.15.5222")));
        assert!(!applies(entry, &directml("1.15.4.0", "nvidia", "")));
        let by_name = "implementation: directml\nadapter: {name: rtx 40}";
        assert!(applies(by_name, &directml("1.15.4.0", "nvidia", "1")));
        let mut other = directml("1.15.4.0", "nvidia", "1");
        other.implementation.adapter.name = "NVIDIA GeForce GTX 470".to_string();
        assert!(!applies(by_name, &other));
        // An id for vendors without a name.
        assert!(applies(
            "implementation: directml\nadapter: {vendor: \"0x1af4\"}",
            &directml("1.15.4.0", "0x1af4", "1")
        ));
        // A known vendor's id is its name, as the backend reports it.
        assert!(applies(
            "implementation: directml\nadapter: {vendor: \"0x10DE\"}",
            &directml("1.15.4.0", "nvidia", "1")
        ));
        assert!(!applies(
            "implementation: directml\nadapter: {vendor: \"0x10de\"}",
            &directml("1.15.4.0", "amd", "1")
        ));
    }

    #[test]
    fn versions_match_the_version_field_before_the_device_text() {
        let mut subject = directml("1.15.4.0", "nvidia", "1");
        subject.device = "DirectML.dll version 1.9.0.0 on X".to_string();
        assert!(applies("backend: \"*\"\nversions: \"1.15.4\"", &subject));
        assert!(!applies("backend: \"*\"\nversions: \"1.9.0\"", &subject));
        subject.implementation.version.clear();
        assert!(applies("backend: \"*\"\nversions: \"1.9.0\"", &subject));
    }

    #[test]
    fn a_key_needs_a_backend_or_an_implementation_and_an_adapter_needs_a_member() {
        let empty = AdapterMatch::default();
        let key = |backend, implementation, adapter| Key {
            backend,
            implementation,
            device: None,
            versions: None,
            adapter,
        };
        assert_eq!(
            key(None, None, None).problems(),
            [
                "needs a `backend` (a --backend name, or \"*\") or an `implementation` (directml, ...)"
            ]
        );
        assert!(key(Some("x"), None, None).problems().is_empty());
        assert!(key(None, Some("directml"), None).problems().is_empty());
        assert_eq!(
            key(None, Some("directml"), Some(&empty)).problems(),
            ["adapter: give a `vendor`, a `name` or a `driver`"]
        );
    }
}
