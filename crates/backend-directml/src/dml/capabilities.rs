//! What the loaded DirectML.dll is and supports: its file version (from the DLL that really
//! loaded), the highest DML feature level it reports, and the tensor data types it accepts.

use dmlcts_tensor::{DataType, FeatureLevel};
use std::ffi::c_void;
use windows::Win32::AI::MachineLearning::DirectML::*;
use windows::Win32::Foundation::HMODULE;
use windows::Win32::Storage::FileSystem::{
    GetFileVersionInfoSizeW, GetFileVersionInfoW, VS_FIXEDFILEINFO, VerQueryValueW,
};
use windows::Win32::System::LibraryLoader::GetModuleFileNameW;
use windows::core::PCWSTR;

use super::hresult_text;

/// The file version in the version resource of a loaded module (DirectML.dll), as
/// `major.minor.build.revision`, with the file's path: the DLL that really loaded, whatever was
/// asked for.
pub(super) fn file_version(module: HMODULE) -> Result<(String, String), String> {
    let mut path = vec![0u16; 32 * 1024];
    // SAFETY: `path` is a writable buffer of the length passed; `module` is a loaded module.
    let length = unsafe { GetModuleFileNameW(Some(module), &mut path) } as usize;
    if length == 0 || length >= path.len() {
        return Err("GetModuleFileNameW(DirectML.dll) failed".to_string());
    }
    path.truncate(length);
    let name = String::from_utf16_lossy(&path);
    path.push(0);
    let file = PCWSTR(path.as_ptr());
    // SAFETY: `file` is a NUL-terminated path that lives across the call.
    let size = unsafe { GetFileVersionInfoSizeW(file, None) };
    if size == 0 {
        return Err(format!("{name} has no version resource"));
    }
    let mut block = vec![0u8; size as usize];
    // SAFETY: `block` is writable and `size` bytes long, as GetFileVersionInfoSizeW asked.
    unsafe { GetFileVersionInfoW(file, None, size, block.as_mut_ptr().cast()) }
        .map_err(|e| format!("GetFileVersionInfoW({name}): {}", hresult_text(&e)))?;
    let mut info: *mut c_void = std::ptr::null_mut();
    let mut info_length = 0u32;
    // SAFETY: `block` holds the version resource just read and outlives `info`, which
    // VerQueryValueW points into it; the root query `\` names VS_FIXEDFILEINFO.
    let found = unsafe {
        VerQueryValueW(
            block.as_ptr().cast(),
            windows::core::w!("\\"),
            &mut info,
            &mut info_length,
        )
    };
    if !found.as_bool() || info.is_null() || (info_length as usize) < size_of::<VS_FIXEDFILEINFO>()
    {
        return Err(format!(
            "{name}: the version resource has no VS_FIXEDFILEINFO"
        ));
    }
    // SAFETY: VerQueryValueW returned a pointer into `block` to at least
    // size_of::<VS_FIXEDFILEINFO>() bytes; read_unaligned makes no alignment assumption.
    let fixed = unsafe { std::ptr::read_unaligned(info as *const VS_FIXEDFILEINFO) };
    if fixed.dwSignature != 0xFEEF_04BD {
        return Err(format!("{name}: VS_FIXEDFILEINFO has a bad signature"));
    }
    let version = format!(
        "{}.{}.{}.{}",
        fixed.dwFileVersionMS >> 16,
        fixed.dwFileVersionMS & 0xFFFF,
        fixed.dwFileVersionLS >> 16,
        fixed.dwFileVersionLS & 0xFFFF
    );
    Ok((name, version))
}

/// IDMLDevice::CheckFeatureSupport for one query struct and its answer struct.
fn check_feature<Q, D: Default>(dml: &IDMLDevice, feature: DML_FEATURE, query: &Q) -> Option<D> {
    let mut data = D::default();
    // SAFETY: Q and D are the documented query and data structs for `feature`; both live
    // across the call, and the sizes passed are theirs.
    let result = unsafe {
        dml.CheckFeatureSupport(
            feature,
            size_of::<Q>() as u32,
            Some(query as *const Q as *const c_void),
            size_of::<D>() as u32,
            &mut data as *mut D as *mut c_void,
        )
    };
    result.ok().map(|()| data)
}

pub(super) fn max_feature_level(dml: &IDMLDevice) -> FeatureLevel {
    let levels: Vec<DML_FEATURE_LEVEL> = FeatureLevel::ALL
        .iter()
        .map(|l| DML_FEATURE_LEVEL(i32::from(l.value())))
        .collect();
    let query = DML_FEATURE_QUERY_FEATURE_LEVELS {
        RequestedFeatureLevelCount: levels.len() as u32,
        RequestedFeatureLevels: levels.as_ptr(),
    };
    check_feature::<_, DML_FEATURE_DATA_FEATURE_LEVELS>(dml, DML_FEATURE_FEATURE_LEVELS, &query)
        .and_then(|data| FeatureLevel::from_value(data.MaxSupportedFeatureLevel.0 as u16))
        .unwrap_or(FeatureLevel::L1_0)
}

pub(super) fn supports(dml: &IDMLDevice, data_type: DataType) -> bool {
    let query = DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT {
        DataType: DML_TENSOR_DATA_TYPE(data_type as i32),
    };
    check_feature::<_, DML_FEATURE_DATA_TENSOR_DATA_TYPE_SUPPORT>(
        dml,
        DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT,
        &query,
    )
    .is_some_and(|data| data.IsSupported.as_bool())
}
