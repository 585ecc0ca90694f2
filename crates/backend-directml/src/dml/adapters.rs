//! The D3D12 adapters of the machine (DXGI's list, in its order, then WARP), the one
//! `--adapter INDEX|TEXT|warp` picks, and what `dmlcts adapters` lists for each: its name,
//! vendor, driver version, dedicated memory, whether it is a software adapter, and DirectML's
//! highest feature level on it.

use super::capabilities::max_feature_level;
use super::device::{DirectMlDll, create_dml_device};
use super::hresult_text;
use crate::{AdapterChoice, AdapterListing};
use dmlcts_tensor::vendor_name;
use windows::Win32::Graphics::Direct3D::D3D_FEATURE_LEVEL_11_0;
use windows::Win32::Graphics::Direct3D12::{D3D12CreateDevice, ID3D12Device};
use windows::Win32::Graphics::Dxgi::{
    CreateDXGIFactory1, DXGI_ADAPTER_FLAG_SOFTWARE, IDXGIAdapter1, IDXGIDevice, IDXGIFactory4,
};
use windows::core::{IUnknown, Interface};

/// One adapter as DXGI describes it.
pub(super) struct Adapter {
    pub(super) adapter: IDXGIAdapter1,
    pub(super) index: Option<u32>,
    pub(super) name: String,
    pub(super) vendor: String,
    pub(super) driver: String,
    pub(super) dedicated_memory: u64,
    pub(super) software: bool,
}

/// The UMD driver version DXGI reports for an adapter, `a.b.c.d`; empty when it reports none.
fn driver_version(adapter: &IDXGIAdapter1) -> String {
    // SAFETY: CheckInterfaceSupport with the IID of IDXGIDevice (the documented query for the
    // user-mode driver version); the GUID lives across the call.
    match unsafe { adapter.CheckInterfaceSupport(&IDXGIDevice::IID) } {
        Ok(version) => {
            let v = version as u64;
            format!(
                "{}.{}.{}.{}",
                v >> 48,
                (v >> 32) & 0xFFFF,
                (v >> 16) & 0xFFFF,
                v & 0xFFFF
            )
        }
        Err(_) => String::new(),
    }
}

fn describe(adapter: IDXGIAdapter1, index: Option<u32>) -> Result<Adapter, String> {
    // SAFETY: GetDesc1 fills a local struct.
    let desc = unsafe { adapter.GetDesc1() }.map_err(|e| hresult_text(&e))?;
    let end = (desc.Description.iter())
        .position(|&c| c == 0)
        .unwrap_or(desc.Description.len());
    Ok(Adapter {
        name: String::from_utf16_lossy(&desc.Description[..end]),
        vendor: vendor_name(desc.VendorId),
        driver: driver_version(&adapter),
        dedicated_memory: desc.DedicatedVideoMemory as u64,
        software: desc.Flags & (DXGI_ADAPTER_FLAG_SOFTWARE.0 as u32) != 0,
        adapter,
        index,
    })
}

/// Every adapter DXGI lists, in its order (index 0 is the system's default), then WARP when
/// DXGI offers it apart (index None).
pub(super) fn all() -> Result<Vec<Adapter>, String> {
    // SAFETY: plain COM calls with valid arguments; out parameters are local.
    let factory: IDXGIFactory4 = unsafe { CreateDXGIFactory1() }
        .map_err(|e| format!("CreateDXGIFactory1: {}", hresult_text(&e)))?;
    let mut adapters = Vec::new();
    for index in 0..64 {
        // SAFETY: as above; DXGI_ERROR_NOT_FOUND ends the list.
        let Ok(adapter) = (unsafe { factory.EnumAdapters1(index) }) else {
            break;
        };
        adapters.push(describe(adapter, Some(index))?);
    }
    // SAFETY: as above.
    if let Ok(warp) = unsafe { factory.EnumWarpAdapter::<IDXGIAdapter1>() } {
        let warp = describe(warp, None)?;
        // Windows lists WARP among the adapters too (the Basic Render Driver): once is enough.
        if !adapters.iter().any(|a| a.software && a.name == warp.name) {
            adapters.push(warp);
        }
    }
    Ok(adapters)
}

/// The adapter a choice names: an index into `all()`, `warp` (the software adapter), or the
/// first whose name or vendor contains the text (any case).
pub(super) fn choose(choice: &AdapterChoice) -> Result<Adapter, String> {
    let adapters = all()?;
    let names = || {
        adapters
            .iter()
            .map(|a| match a.index {
                Some(i) => format!("{i}: {}", a.name),
                None => format!("warp: {}", a.name),
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    let position = match choice {
        AdapterChoice::Default => adapters.iter().position(|a| a.index == Some(0)),
        AdapterChoice::Index(i) => adapters.iter().position(|a| a.index == Some(*i)),
        AdapterChoice::Warp => adapters.iter().position(|a| a.software),
        AdapterChoice::Text(text) => {
            let text = text.to_lowercase();
            adapters.iter().position(|a| {
                a.name.to_lowercase().contains(&text) || a.vendor.to_lowercase() == text
            })
        }
    };
    match position {
        Some(p) => Ok(adapters.into_iter().nth(p).expect("a position in the list")),
        None => Err(format!(
            "no D3D12 adapter {choice} here (the adapters: {})",
            match names() {
                n if n.is_empty() => "none".to_string(),
                n => n,
            }
        )),
    }
}

/// The D3D12 device on an adapter, at feature level 11_0.
pub(super) fn d3d_device(adapter: &Adapter) -> Result<ID3D12Device, String> {
    let unknown: IUnknown = adapter.adapter.cast().map_err(|e| hresult_text(&e))?;
    let mut d3d: Option<ID3D12Device> = None;
    // SAFETY: a live adapter; the out parameter is local.
    unsafe { D3D12CreateDevice(&unknown, D3D_FEATURE_LEVEL_11_0, &mut d3d) }.map_err(|e| {
        format!(
            "D3D12CreateDevice on {}: {}",
            adapter.name,
            hresult_text(&e)
        )
    })?;
    d3d.ok_or_else(|| "D3D12CreateDevice returned nothing".to_string())
}

/// Every adapter with DirectML's highest feature level on it (or why there is none).
pub(super) fn listing(dll: &DirectMlDll) -> Result<Vec<AdapterListing>, String> {
    Ok(all()?
        .into_iter()
        .map(|a| {
            let level = d3d_device(&a)
                .and_then(|d3d| create_dml_device(dll, &d3d))
                .map(|dml| max_feature_level(&dml));
            AdapterListing {
                index: a.index,
                name: a.name,
                vendor: a.vendor,
                driver: a.driver,
                dedicated_memory: a.dedicated_memory,
                software: a.software,
                directml_level: level,
            }
        })
        .collect())
}
