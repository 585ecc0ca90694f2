//! Real DirectML as a dmlcts backend (Windows only; on Linux it runs under Wine, see
//! `cargo xtask directml setup`). The backend maps each descriptor to DML_BUFFER_TENSOR_DESCs
//! and a DML_SPLIT / DML_JOIN / DML_SLICE1 operator description, lets DirectML accept or
//! reject it (E_INVALIDARG is a rejection), and executes it on a D3D12 device with outputs
//! bound inside the harness's guarded buffers.
//!
//! The options ([`DirectMlOptions`]: which DirectML.dll, which adapter) and the adapter
//! listing ([`AdapterListing`]) are plain data on every system, so a command can parse and
//! print them anywhere; only Windows creates devices.

#[cfg(windows)]
mod dml;

#[cfg(windows)]
pub use dml::{DirectMlBackend, list_adapters};

use std::fmt;
use std::path::PathBuf;

/// Which D3D12 adapter DirectML runs on (`--adapter INDEX|TEXT|warp`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum AdapterChoice {
    /// The system's default: DXGI's adapter 0.
    #[default]
    Default,
    /// DXGI's adapter at this index (`dmlcts adapters` lists them).
    Index(u32),
    /// The software adapter (WARP).
    Warp,
    /// The first adapter whose name contains this text, or whose vendor is it (any case).
    Text(String),
}

impl AdapterChoice {
    /// `3` is an index, `warp` (any case) the software adapter, anything else a text.
    pub fn parse(text: &str) -> AdapterChoice {
        let text = text.trim();
        if text.eq_ignore_ascii_case("warp") {
            AdapterChoice::Warp
        } else if let Ok(index) = text.parse::<u32>() {
            AdapterChoice::Index(index)
        } else if text.is_empty() {
            AdapterChoice::Default
        } else {
            AdapterChoice::Text(text.to_string())
        }
    }

    /// The words of `--adapter` that choose it again (none for the default).
    pub fn to_arg(&self) -> Option<String> {
        match self {
            AdapterChoice::Default => None,
            AdapterChoice::Index(i) => Some(i.to_string()),
            AdapterChoice::Warp => Some("warp".to_string()),
            AdapterChoice::Text(text) => Some(text.clone()),
        }
    }
}

impl fmt::Display for AdapterChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AdapterChoice::Default => f.write_str("0 (the default)"),
            AdapterChoice::Index(i) => write!(f, "{i}"),
            AdapterChoice::Warp => f.write_str("warp (the software adapter)"),
            AdapterChoice::Text(text) => write!(f, "matching `{text}`"),
        }
    }
}

/// How to start DirectML: which DLL, which adapter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DirectMlOptions {
    /// The DirectML.dll to load; None: by name, as applications do (beside the executable,
    /// then the system's).
    pub dll: Option<PathBuf>,
    pub adapter: AdapterChoice,
}

/// One adapter as `dmlcts adapters` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapterListing {
    /// DXGI's index (what `--adapter INDEX` takes); None for WARP listed apart.
    pub index: Option<u32>,
    pub name: String,
    /// `nvidia`, `amd`, ... or the PCI id (`dmlcts_tensor::vendor_name`).
    pub vendor: String,
    /// The driver version DXGI reports; empty when none.
    pub driver: String,
    pub dedicated_memory: u64,
    pub software: bool,
    /// DirectML's highest feature level there, or why DirectML cannot run there.
    pub directml_level: Result<dmlcts_tensor::FeatureLevel, String>,
}

impl AdapterListing {
    /// One line: `0: NAME (vendor nvidia, driver 31.0.15.5222, 8192 MiB dedicated, hardware):
    /// DirectML feature level 6_4`.
    pub fn line(&self) -> String {
        let index = self.index.map_or("warp".to_string(), |i| i.to_string());
        let driver = match self.driver.as_str() {
            "" => "no driver version".to_string(),
            driver => format!("driver {driver}"),
        };
        let kind = if self.software {
            "software"
        } else {
            "hardware"
        };
        let level = match &self.directml_level {
            Ok(level) => format!("DirectML feature level {level}"),
            Err(e) => format!("no DirectML device: {e}"),
        };
        format!(
            "{index}: {} (vendor {}, {driver}, {} MiB dedicated, {kind}): {level}",
            self.name,
            self.vendor,
            self.dedicated_memory >> 20
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_adapter_is_chosen_by_index_by_warp_or_by_text() {
        assert_eq!(AdapterChoice::parse("0"), AdapterChoice::Index(0));
        assert_eq!(AdapterChoice::parse(" 12 "), AdapterChoice::Index(12));
        assert_eq!(AdapterChoice::parse("WARP"), AdapterChoice::Warp);
        assert_eq!(
            AdapterChoice::parse("GeForce"),
            AdapterChoice::Text("GeForce".to_string())
        );
        assert_eq!(
            AdapterChoice::parse("-1"),
            AdapterChoice::Text("-1".to_string())
        );
        assert_eq!(AdapterChoice::parse(""), AdapterChoice::Default);
        for choice in ["3", "warp", "Radeon"] {
            let parsed = AdapterChoice::parse(choice);
            assert_eq!(parsed.to_arg().as_deref(), Some(choice));
        }
        assert_eq!(AdapterChoice::Default.to_arg(), None);
    }

    #[test]
    fn a_listing_line_names_every_field() {
        let mut adapter = AdapterListing {
            index: Some(0),
            name: "NVIDIA GeForce RTX 4090".to_string(),
            vendor: "nvidia".to_string(),
            driver: "32.0.15.6094".to_string(),
            dedicated_memory: 24 << 30,
            software: false,
            directml_level: Ok(dmlcts_tensor::FeatureLevel::L6_4),
        };
        assert_eq!(
            adapter.line(),
            "0: NVIDIA GeForce RTX 4090 (vendor nvidia, driver 32.0.15.6094, 24576 MiB \
             dedicated, hardware): DirectML feature level 6_4"
        );
        adapter.index = None;
        adapter.software = true;
        adapter.driver.clear();
        adapter.directml_level = Err("DMLCreateDevice1: HRESULT 0x887a0004".to_string());
        assert_eq!(
            adapter.line(),
            "warp: NVIDIA GeForce RTX 4090 (vendor nvidia, no driver version, 24576 MiB \
             dedicated, software): no DirectML device: DMLCreateDevice1: HRESULT 0x887a0004"
        );
    }
}
