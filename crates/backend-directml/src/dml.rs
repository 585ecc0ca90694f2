//! The D3D12 + DirectML side. Everything that touches COM is `unsafe` at the FFI edge, each
//! block with the reason it is sound. One device, queue, allocator, command list, fence and
//! descriptor heap are created once and reused for every case (creating a descriptor heap
//! costs seconds under Wine); each case gets its own buffers.

use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, DataType, FeatureLevel, OperatorDesc, OutputBinding,
    Rejected, TensorDesc,
};
use std::ffi::c_void;
use std::mem::ManuallyDrop;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use windows::Win32::AI::MachineLearning::DirectML::*;
use windows::Win32::Foundation::E_INVALIDARG;
use windows::Win32::Foundation::HMODULE;
use windows::Win32::Graphics::Direct3D::D3D_FEATURE_LEVEL_11_0;
use windows::Win32::Graphics::Direct3D12::*;
use windows::Win32::Graphics::Dxgi::Common::{DXGI_FORMAT_UNKNOWN, DXGI_SAMPLE_DESC};
use windows::Win32::Graphics::Dxgi::{CreateDXGIFactory1, IDXGIFactory4};
use windows::Win32::Storage::FileSystem::{
    GetFileVersionInfoSizeW, GetFileVersionInfoW, VS_FIXEDFILEINFO, VerQueryValueW,
};
use windows::Win32::System::LibraryLoader::{
    GetModuleFileNameW, GetModuleHandleW, GetProcAddress, LoadLibraryW,
};
use windows::core::{GUID, HRESULT, IUnknown, Interface, PCSTR, PCWSTR};

/// Descriptors in the one shader-visible heap; every binding table starts at its beginning.
const HEAP_DESCRIPTORS: u32 = 1024;
/// Longest wait for the GPU to finish one submission.
const GPU_TIMEOUT: Duration = Duration::from_secs(60);

type DmlCreateDevice1 = unsafe extern "system" fn(
    *mut c_void,
    DML_CREATE_DEVICE_FLAGS,
    DML_FEATURE_LEVEL,
    *const GUID,
    *mut *mut c_void,
) -> HRESULT;

struct Device {
    d3d: ID3D12Device,
    queue: ID3D12CommandQueue,
    allocator: ID3D12CommandAllocator,
    list: ID3D12GraphicsCommandList,
    fence: ID3D12Fence,
    fence_value: u64,
    dml: IDMLDevice,
    heap: ID3D12DescriptorHeap,
    recorder: IDMLCommandRecorder,
}

// SAFETY: D3D12 devices, queues, fences, heaps and DirectML devices are free-threaded COM
// objects; command allocators and lists are not, and every use of this struct goes through
// the Mutex in DirectMlBackend, one thread at a time.
unsafe impl Send for Device {}

pub struct DirectMlBackend {
    device: Mutex<Device>,
    description: String,
    level: FeatureLevel,
    data_types: Vec<DataType>,
}

fn hresult_text(e: &windows::core::Error) -> String {
    format!(
        "HRESULT {:#010x} ({})",
        e.code().0 as u32,
        e.message().trim()
    )
}

fn buffer_desc(size: u64, flags: D3D12_RESOURCE_FLAGS) -> D3D12_RESOURCE_DESC {
    D3D12_RESOURCE_DESC {
        Dimension: D3D12_RESOURCE_DIMENSION_BUFFER,
        Alignment: 0,
        Width: size,
        Height: 1,
        DepthOrArraySize: 1,
        MipLevels: 1,
        Format: DXGI_FORMAT_UNKNOWN,
        SampleDesc: DXGI_SAMPLE_DESC {
            Count: 1,
            Quality: 0,
        },
        Layout: D3D12_TEXTURE_LAYOUT_ROW_MAJOR,
        Flags: flags,
    }
}

fn transition(
    resource: &ID3D12Resource,
    before: D3D12_RESOURCE_STATES,
    after: D3D12_RESOURCE_STATES,
) -> D3D12_RESOURCE_BARRIER {
    D3D12_RESOURCE_BARRIER {
        Type: D3D12_RESOURCE_BARRIER_TYPE_TRANSITION,
        Flags: D3D12_RESOURCE_BARRIER_FLAG_NONE,
        Anonymous: D3D12_RESOURCE_BARRIER_0 {
            Transition: ManuallyDrop::new(D3D12_RESOURCE_TRANSITION_BARRIER {
                pResource: ManuallyDrop::new(Some(resource.clone())),
                Subresource: D3D12_RESOURCE_BARRIER_ALL_SUBRESOURCES,
                StateBefore: before,
                StateAfter: after,
            }),
        },
    }
}

fn uav_barrier() -> D3D12_RESOURCE_BARRIER {
    D3D12_RESOURCE_BARRIER {
        Type: D3D12_RESOURCE_BARRIER_TYPE_UAV,
        Flags: D3D12_RESOURCE_BARRIER_FLAG_NONE,
        Anonymous: D3D12_RESOURCE_BARRIER_0 {
            UAV: ManuallyDrop::new(D3D12_RESOURCE_UAV_BARRIER {
                pResource: ManuallyDrop::new(None),
            }),
        },
    }
}

/// Releases the COM references a barrier list holds (ManuallyDrop fields).
fn release_barriers(barriers: Vec<D3D12_RESOURCE_BARRIER>) {
    for mut barrier in barriers {
        if barrier.Type == D3D12_RESOURCE_BARRIER_TYPE_TRANSITION {
            // SAFETY: a transition barrier's union member is Transition, set in `transition`.
            unsafe {
                let mut t = ManuallyDrop::take(&mut barrier.Anonymous.Transition);
                ManuallyDrop::drop(&mut t.pResource);
            }
        }
    }
}

impl Device {
    fn buffer(
        &self,
        heap: D3D12_HEAP_TYPE,
        size: u64,
        flags: D3D12_RESOURCE_FLAGS,
        state: D3D12_RESOURCE_STATES,
    ) -> Result<ID3D12Resource, String> {
        let properties = D3D12_HEAP_PROPERTIES {
            Type: heap,
            ..Default::default()
        };
        let desc = buffer_desc(size.max(256), flags);
        let mut resource: Option<ID3D12Resource> = None;
        // SAFETY: the descriptors live across the call; the out pointer is a valid Option.
        unsafe {
            self.d3d
                .CreateCommittedResource(
                    &properties,
                    D3D12_HEAP_FLAG_NONE,
                    &desc,
                    state,
                    None,
                    &mut resource,
                )
                .map_err(|e| {
                    format!(
                        "CreateCommittedResource({size} bytes): {}",
                        hresult_text(&e)
                    )
                })?;
        }
        resource.ok_or_else(|| "CreateCommittedResource returned nothing".to_string())
    }

    /// Closes, submits and waits for the command list, then resets it for the next use.
    fn submit_and_wait(&mut self) -> Result<(), String> {
        // SAFETY: the list was recorded by this thread under the device lock; the fence and
        // queue belong to the same device.
        unsafe {
            self.list
                .Close()
                .map_err(|e| format!("Close: {}", hresult_text(&e)))?;
            let list: ID3D12CommandList = self.list.cast().map_err(|e| hresult_text(&e))?;
            self.queue.ExecuteCommandLists(&[Some(list)]);
            self.fence_value += 1;
            self.queue
                .Signal(&self.fence, self.fence_value)
                .map_err(|e| format!("Signal: {}", hresult_text(&e)))?;
            let started = Instant::now();
            while self.fence.GetCompletedValue() < self.fence_value {
                if started.elapsed() > GPU_TIMEOUT {
                    return Err(format!(
                        "the GPU did not finish within {} s",
                        GPU_TIMEOUT.as_secs()
                    ));
                }
                std::thread::sleep(Duration::from_micros(200));
            }
            self.d3d
                .GetDeviceRemovedReason()
                .map_err(|e| format!("the device was removed: {}", hresult_text(&e)))?;
            self.allocator
                .Reset()
                .map_err(|e| format!("Allocator::Reset: {}", hresult_text(&e)))?;
            self.list
                .Reset(&self.allocator, None)
                .map_err(|e| format!("List::Reset: {}", hresult_text(&e)))?;
        }
        Ok(())
    }
}

/// Wine's version when this process runs under Wine, where DXGI names the adapter itself
/// (a stand-in such as "NVIDIA GeForce GTX 470" for a Vulkan device it does not know), so
/// that reports say whose name it is. ntdll exports `wine_get_version` under Wine only.
fn wine_version() -> Option<String> {
    // SAFETY: GetModuleHandleW with a constant name (ntdll is loaded in every process and never
    // unloaded); GetProcAddress on that handle; `wine_get_version` takes no arguments and
    // returns a pointer to a static NUL-terminated string (Wine's ABI, cdecl, which is the one
    // x64 calling convention), checked for null before it is read.
    unsafe {
        let ntdll = GetModuleHandleW(windows::core::w!("ntdll.dll")).ok()?;
        let get = GetProcAddress(ntdll, PCSTR(c"wine_get_version".as_ptr().cast()))?;
        let get: extern "C" fn() -> *const std::ffi::c_char = std::mem::transmute(get);
        let text = get();
        if text.is_null() {
            return None;
        }
        Some(
            std::ffi::CStr::from_ptr(text)
                .to_string_lossy()
                .into_owned(),
        )
    }
}

impl DirectMlBackend {
    /// Creates the D3D12 device (the first adapter, feature level 11_0), loads DirectML.dll
    /// from next to the executable (or the search path) and creates the DirectML device.
    pub fn new() -> Result<DirectMlBackend, String> {
        // SAFETY: plain COM/Win32 calls with valid arguments; out parameters are local.
        unsafe {
            let factory: IDXGIFactory4 = CreateDXGIFactory1()
                .map_err(|e| format!("CreateDXGIFactory1: {}", hresult_text(&e)))?;
            let adapter = factory
                .EnumAdapters1(0)
                .map_err(|e| format!("no DXGI adapter: {}", hresult_text(&e)))?;
            let desc = adapter.GetDesc1().map_err(|e| hresult_text(&e))?;
            let end = desc
                .Description
                .iter()
                .position(|&c| c == 0)
                .unwrap_or(desc.Description.len());
            let adapter_name = String::from_utf16_lossy(&desc.Description[..end]);
            let mut d3d: Option<ID3D12Device> = None;
            let unknown: IUnknown = adapter.cast().map_err(|e| hresult_text(&e))?;
            D3D12CreateDevice(&unknown, D3D_FEATURE_LEVEL_11_0, &mut d3d).map_err(|e| {
                format!("D3D12CreateDevice on {adapter_name}: {}", hresult_text(&e))
            })?;
            let d3d = d3d.ok_or("D3D12CreateDevice returned nothing")?;
            let queue_desc = D3D12_COMMAND_QUEUE_DESC {
                Type: D3D12_COMMAND_LIST_TYPE_DIRECT,
                ..Default::default()
            };
            let queue: ID3D12CommandQueue = d3d
                .CreateCommandQueue(&queue_desc)
                .map_err(|e| hresult_text(&e))?;
            let allocator: ID3D12CommandAllocator = d3d
                .CreateCommandAllocator(D3D12_COMMAND_LIST_TYPE_DIRECT)
                .map_err(|e| hresult_text(&e))?;
            let list: ID3D12GraphicsCommandList = d3d
                .CreateCommandList(0, D3D12_COMMAND_LIST_TYPE_DIRECT, &allocator, None)
                .map_err(|e| hresult_text(&e))?;
            let fence: ID3D12Fence = d3d
                .CreateFence(0, D3D12_FENCE_FLAG_NONE)
                .map_err(|e| hresult_text(&e))?;

            let dll: Vec<u16> = "DirectML.dll".encode_utf16().chain([0]).collect();
            let module = LoadLibraryW(PCWSTR(dll.as_ptr()))
                .map_err(|e| format!("LoadLibraryW(DirectML.dll): {}", hresult_text(&e)))?;
            let create = GetProcAddress(module, PCSTR(c"DMLCreateDevice1".as_ptr().cast()))
                .ok_or("DirectML.dll has no DMLCreateDevice1")?;
            // SAFETY: DMLCreateDevice1's documented signature, declared above.
            let create: DmlCreateDevice1 = std::mem::transmute(create);
            let mut raw: *mut c_void = std::ptr::null_mut();
            create(
                d3d.as_raw(),
                DML_CREATE_DEVICE_FLAG_NONE,
                DML_FEATURE_LEVEL_1_0,
                &IDMLDevice::IID,
                &mut raw,
            )
            .ok()
            .map_err(|e| format!("DMLCreateDevice1: {}", hresult_text(&e)))?;
            // SAFETY: DMLCreateDevice1 succeeded, so raw is an owned IDMLDevice reference.
            let dml = IDMLDevice::from_raw(raw);

            let level = max_feature_level(&dml);
            let version = file_version(module)?;
            let data_types = DataType::ALL
                .into_iter()
                .filter(|&dt| supports(&dml, dt))
                .collect();
            let heap_desc = D3D12_DESCRIPTOR_HEAP_DESC {
                Type: D3D12_DESCRIPTOR_HEAP_TYPE_CBV_SRV_UAV,
                NumDescriptors: HEAP_DESCRIPTORS,
                Flags: D3D12_DESCRIPTOR_HEAP_FLAG_SHADER_VISIBLE,
                NodeMask: 0,
            };
            let heap: ID3D12DescriptorHeap = d3d
                .CreateDescriptorHeap(&heap_desc)
                .map_err(|e| hresult_text(&e))?;
            let recorder: IDMLCommandRecorder =
                dml.CreateCommandRecorder().map_err(|e| hresult_text(&e))?;
            Ok(DirectMlBackend {
                device: Mutex::new(Device {
                    d3d,
                    queue,
                    allocator,
                    list,
                    fence,
                    fence_value: 0,
                    dml,
                    heap,
                    recorder,
                }),
                description: format!(
                    "DirectML.dll version {version} on {adapter_name}{}, DML feature level {level}",
                    match wine_version() {
                        Some(wine) => format!(" (the name Wine {wine} gives its Vulkan device)"),
                        None => String::new(),
                    }
                ),
                level,
                data_types,
            })
        }
    }

    pub fn description(&self) -> String {
        self.description.clone()
    }

    /// One known JOIN ({1,2,3,4} and {10,20,30,40} on axis 1): a wrong result means the
    /// stack underneath (D3D12, Vulkan driver) is broken, not DirectML.
    pub fn self_test(&self) -> Result<(), String> {
        let part = TensorDesc::packed(DataType::Float32, &[1, 1, 2, 2]);
        let op = OperatorDesc::Join(dmlcts_tensor::JoinDesc {
            input_tensors: vec![part.clone(), part],
            output_tensor: TensorDesc::packed(DataType::Float32, &[1, 2, 2, 2]),
            axis: 1,
        });
        let a: Vec<u8> = [1f32, 2., 3., 4.]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let b: Vec<u8> = [10f32, 20., 30., 40.]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let compiled = self
            .compile(&op)
            .map_err(|e| format!("the JOIN did not compile: {e}"))?;
        let mut out = vec![0xCDu8; 32];
        let mut binding = [OutputBinding {
            buffer: &mut out,
            offset: 0,
            size: 32,
        }];
        compiled.execute(&[&a, &b], &mut binding)?;
        let expected: Vec<u8> = [1f32, 2., 3., 4., 10., 20., 30., 40.]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        if out != expected {
            let got: Vec<f32> = out
                .chunks(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            return Err(format!(
                "JOIN produced {got:?}, expected [1, 2, 3, 4, 10, 20, 30, 40]. Under Wine this is what \
                 a Vulkan driver without VK_EXT_descriptor_indexing (Debian 12's Mesa 22) does: use \
                 Mesa 25's lavapipe (cargo xtask directml setup)."
            ));
        }
        Ok(())
    }
}

/// The file version in the version resource of a loaded module (DirectML.dll), as
/// `major.minor.build.revision`: the DLL that really loaded, whatever was asked for.
fn file_version(module: HMODULE) -> Result<String, String> {
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
    Ok(format!(
        "{}.{}.{}.{}",
        fixed.dwFileVersionMS >> 16,
        fixed.dwFileVersionMS & 0xFFFF,
        fixed.dwFileVersionLS >> 16,
        fixed.dwFileVersionLS & 0xFFFF
    ))
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

fn max_feature_level(dml: &IDMLDevice) -> FeatureLevel {
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

fn supports(dml: &IDMLDevice, data_type: DataType) -> bool {
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

/// A tensor description with the storage its pointers point into.
struct DmlTensor {
    sizes: Vec<u32>,
    strides: Option<Vec<u32>>,
    buffer: DML_BUFFER_TENSOR_DESC,
}

impl DmlTensor {
    fn new(desc: &TensorDesc) -> Box<DmlTensor> {
        let mut t = Box::new(DmlTensor {
            sizes: desc.sizes.clone(),
            strides: desc.strides.clone(),
            buffer: DML_BUFFER_TENSOR_DESC {
                DataType: DML_TENSOR_DATA_TYPE(desc.data_type as i32),
                Flags: DML_TENSOR_FLAG_NONE,
                DimensionCount: desc.sizes.len() as u32,
                Sizes: std::ptr::null(),
                Strides: std::ptr::null(),
                TotalTensorSizeInBytes: desc.total_tensor_size_in_bytes,
                GuaranteedBaseOffsetAlignment: 0,
            },
        });
        t.buffer.Sizes = t.sizes.as_ptr();
        t.buffer.Strides = t.strides.as_ref().map_or(std::ptr::null(), |s| s.as_ptr());
        t
    }

    /// A DML_TENSOR_DESC pointing at this tensor's buffer description (valid while `self` is).
    fn desc(&self) -> DML_TENSOR_DESC {
        DML_TENSOR_DESC {
            Type: DML_TENSOR_TYPE_BUFFER,
            Desc: &self.buffer as *const _ as *const c_void,
        }
    }
}

/// Descriptors DirectML's C API cannot express: its arrays are DimensionCount long by
/// definition, so arrays of another length cannot be passed without DirectML reading past
/// them. Such cases are reported as unsupported (skipped with this reason), never as a
/// DirectML verdict.
fn inexpressible(op: &OperatorDesc) -> Option<String> {
    let strides_mismatch = op
        .inputs()
        .into_iter()
        .chain(op.outputs())
        .find(|(_, t)| t.strides.as_ref().is_some_and(|s| s.len() != t.sizes.len()));
    if let Some((name, _)) = strides_mismatch {
        return Some(format!(
            "{name}: a Strides array that is not DimensionCount long cannot be expressed in DML_BUFFER_TENSOR_DESC"
        ));
    }
    if let OperatorDesc::Slice1(d) = op {
        let n = d.dimension_count as usize;
        if d.input_window_offsets.len() != n
            || d.input_window_sizes.len() != n
            || d.input_window_strides.len() != n
        {
            return Some(
                "window arrays that are not DimensionCount long cannot be expressed in DML_SLICE1_OPERATOR_DESC"
                    .to_string(),
            );
        }
    }
    None
}

struct CompiledDml<'a> {
    backend: &'a DirectMlBackend,
    compiled: IDMLCompiledOperator,
    persistent: Option<(ID3D12Resource, u64)>,
    descriptors: u32,
    temporary: u64,
}

// SAFETY: see Device; the compiled operator is only used under the backend's device lock.
unsafe impl Send for CompiledDml<'_> {}

fn binding(resource: &ID3D12Resource, offset: u64, size: u64) -> DML_BUFFER_BINDING {
    DML_BUFFER_BINDING {
        Buffer: ManuallyDrop::new(Some(resource.clone())),
        Offset: offset,
        SizeInBytes: size,
    }
}

/// The DML_BINDING_DESC of a buffer binding (valid while the binding is).
fn describe(binding: &DML_BUFFER_BINDING) -> DML_BINDING_DESC {
    DML_BINDING_DESC {
        Type: DML_BINDING_TYPE_BUFFER,
        Desc: binding as *const _ as *const c_void,
    }
}

fn release_bindings(bindings: Vec<DML_BUFFER_BINDING>) {
    for mut b in bindings {
        // SAFETY: each binding was made by `binding`, which cloned a reference into Buffer.
        unsafe { ManuallyDrop::drop(&mut b.Buffer) };
    }
}

fn padded(bytes: u64) -> u64 {
    bytes.div_ceil(16).max(1) * 16
}

impl Device {
    fn binding_table(
        &self,
        dispatchable: &IDMLDispatchable,
        descriptors: u32,
    ) -> Result<IDMLBindingTable, String> {
        let desc = DML_BINDING_TABLE_DESC {
            Dispatchable: ManuallyDrop::new(Some(dispatchable.clone())),
            // SAFETY: the heap is a live shader-visible CBV_SRV_UAV heap of this device.
            CPUDescriptorHandle: unsafe { self.heap.GetCPUDescriptorHandleForHeapStart() },
            // SAFETY: as above.
            GPUDescriptorHandle: unsafe { self.heap.GetGPUDescriptorHandleForHeapStart() },
            SizeInDescriptors: descriptors,
        };
        // SAFETY: desc is valid for the call; it holds one reference, released below.
        let table = unsafe { self.dml.CreateBindingTable(Some(&desc)) };
        let mut desc = desc;
        // SAFETY: the Dispatchable reference was cloned into the ManuallyDrop above.
        unsafe { ManuallyDrop::drop(&mut desc.Dispatchable) };
        table.map_err(|e| format!("CreateBindingTable: {}", hresult_text(&e)))
    }
}

impl CompiledOperator for CompiledDml<'_> {
    fn execute(&self, inputs: &[&[u8]], outputs: &mut [OutputBinding<'_>]) -> Result<(), String> {
        let mut device = self
            .backend
            .device
            .lock()
            .map_err(|_| "the device lock is poisoned".to_string())?;
        let uav = D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS;
        // Inputs and whole guarded output buffers, each in its own resource: nothing aliases.
        let upload_size: u64 = inputs.iter().map(|i| padded(i.len() as u64)).sum::<u64>()
            + outputs
                .iter()
                .map(|o| padded(o.buffer.len() as u64))
                .sum::<u64>();
        let upload = device.buffer(
            D3D12_HEAP_TYPE_UPLOAD,
            upload_size,
            D3D12_RESOURCE_FLAG_NONE,
            D3D12_RESOURCE_STATE_GENERIC_READ,
        )?;
        let readback_size: u64 = outputs.iter().map(|o| padded(o.buffer.len() as u64)).sum();
        let readback = device.buffer(
            D3D12_HEAP_TYPE_READBACK,
            readback_size,
            D3D12_RESOURCE_FLAG_NONE,
            D3D12_RESOURCE_STATE_COPY_DEST,
        )?;
        let mut staged: Vec<(ID3D12Resource, u64, u64)> = Vec::new(); // (resource, upload offset, bytes)
        let mut cursor = 0u64;
        let mut mapped: *mut c_void = std::ptr::null_mut();
        // SAFETY: the upload buffer is CPU-visible and upload_size bytes long; each copy stays
        // inside its padded slot.
        unsafe {
            upload
                .Map(0, None, Some(&mut mapped))
                .map_err(|e| format!("Map(upload): {}", hresult_text(&e)))?;
            for bytes in inputs
                .iter()
                .copied()
                .chain(outputs.iter().map(|o| &*o.buffer))
            {
                std::ptr::copy_nonoverlapping(
                    bytes.as_ptr(),
                    (mapped as *mut u8).add(cursor as usize),
                    bytes.len(),
                );
                let resource = device.buffer(
                    D3D12_HEAP_TYPE_DEFAULT,
                    padded(bytes.len() as u64),
                    uav,
                    D3D12_RESOURCE_STATE_COPY_DEST,
                )?;
                staged.push((resource, cursor, bytes.len() as u64));
                cursor += padded(bytes.len() as u64);
            }
            upload.Unmap(0, None);
        }
        let temporary = if self.temporary > 0 {
            Some(device.buffer(
                D3D12_HEAP_TYPE_DEFAULT,
                self.temporary,
                uav,
                D3D12_RESOURCE_STATE_UNORDERED_ACCESS,
            )?)
        } else {
            None
        };
        let dispatchable: IDMLDispatchable = self.compiled.cast().map_err(|e| hresult_text(&e))?;
        let table = device.binding_table(&dispatchable, self.descriptors)?;
        let input_bindings: Vec<DML_BUFFER_BINDING> = staged[..inputs.len()]
            .iter()
            .map(|(r, _, n)| binding(r, 0, *n))
            .collect();
        let output_bindings: Vec<DML_BUFFER_BINDING> = staged[inputs.len()..]
            .iter()
            .zip(outputs.iter())
            .map(|((r, _, _), o)| binding(r, o.offset as u64, o.size as u64))
            .collect();
        let input_descs: Vec<DML_BINDING_DESC> = input_bindings.iter().map(describe).collect();
        let output_descs: Vec<DML_BINDING_DESC> = output_bindings.iter().map(describe).collect();
        let temporary_binding = temporary.as_ref().map(|t| binding(t, 0, self.temporary));
        let persistent_binding = self.persistent.as_ref().map(|(p, n)| binding(p, 0, *n));
        let mut barriers = Vec::new();
        let mut after = Vec::new();
        // SAFETY: every resource, binding and descriptor referenced below lives until the
        // submission has completed (submit_and_wait returns after the fence).
        let result = unsafe {
            for (resource, offset, bytes) in &staged {
                device
                    .list
                    .CopyBufferRegion(resource, 0, &upload, *offset, *bytes);
                barriers.push(transition(
                    resource,
                    D3D12_RESOURCE_STATE_COPY_DEST,
                    D3D12_RESOURCE_STATE_UNORDERED_ACCESS,
                ));
            }
            device.list.ResourceBarrier(&barriers);
            table.BindInputs(Some(&input_descs));
            table.BindOutputs(Some(&output_descs));
            if let Some(t) = &temporary_binding {
                table.BindTemporaryResource(Some(&describe(t)));
            }
            if let Some(p) = &persistent_binding {
                table.BindPersistentResource(Some(&describe(p)));
            }
            device.list.SetDescriptorHeaps(&[Some(device.heap.clone())]);
            device
                .recorder
                .RecordDispatch(&device.list, &dispatchable, &table);
            device.list.ResourceBarrier(&[uav_barrier()]);
            let mut read_offset = 0u64;
            for (resource, _, _) in &staged[inputs.len()..] {
                after.push(transition(
                    resource,
                    D3D12_RESOURCE_STATE_UNORDERED_ACCESS,
                    D3D12_RESOURCE_STATE_COPY_SOURCE,
                ));
            }
            device.list.ResourceBarrier(&after);
            for (resource, _, bytes) in &staged[inputs.len()..] {
                device
                    .list
                    .CopyBufferRegion(&readback, read_offset, resource, 0, *bytes);
                read_offset += padded(*bytes);
            }
            device.submit_and_wait()
        };
        release_barriers(barriers);
        release_barriers(after);
        release_bindings(input_bindings);
        release_bindings(output_bindings);
        release_bindings(
            temporary_binding
                .into_iter()
                .chain(persistent_binding)
                .collect(),
        );
        result?;
        // SAFETY: the readback buffer holds readback_size bytes written by the copies above,
        // and the GPU is done with it.
        unsafe {
            let mut mapped: *mut c_void = std::ptr::null_mut();
            readback
                .Map(0, None, Some(&mut mapped))
                .map_err(|e| format!("Map(readback): {}", hresult_text(&e)))?;
            let mut read_offset = 0usize;
            for output in outputs.iter_mut() {
                let len = output.buffer.len();
                std::ptr::copy_nonoverlapping(
                    (mapped as *const u8).add(read_offset),
                    output.buffer.as_mut_ptr(),
                    len,
                );
                read_offset += padded(len as u64) as usize;
            }
            readback.Unmap(0, None);
        }
        Ok(())
    }
}

impl Backend for DirectMlBackend {
    fn name(&self) -> String {
        "directml".to_string()
    }

    fn feature_level(&self) -> FeatureLevel {
        self.level
    }

    fn data_types(&self) -> Vec<DataType> {
        self.data_types.clone()
    }

    fn device(&self) -> String {
        self.description.clone()
    }

    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        if let Some(reason) = inexpressible(op) {
            return Err(CompileError::Unsupported(reason));
        }
        let tensors_in: Vec<Box<DmlTensor>> =
            op.inputs().iter().map(|(_, t)| DmlTensor::new(t)).collect();
        let tensors_out: Vec<Box<DmlTensor>> = op
            .outputs()
            .iter()
            .map(|(_, t)| DmlTensor::new(t))
            .collect();
        let descs_in: Vec<DML_TENSOR_DESC> = tensors_in.iter().map(|t| t.desc()).collect();
        let descs_out: Vec<DML_TENSOR_DESC> = tensors_out.iter().map(|t| t.desc()).collect();
        let split;
        let join;
        let slice;
        let desc = match op {
            OperatorDesc::Split(d) => {
                split = DML_SPLIT_OPERATOR_DESC {
                    InputTensor: &descs_in[0],
                    OutputCount: descs_out.len() as u32,
                    OutputTensors: descs_out.as_ptr(),
                    Axis: d.axis,
                };
                DML_OPERATOR_DESC {
                    Type: DML_OPERATOR_SPLIT,
                    Desc: &split as *const _ as *const c_void,
                }
            }
            OperatorDesc::Join(d) => {
                join = DML_JOIN_OPERATOR_DESC {
                    InputCount: descs_in.len() as u32,
                    InputTensors: descs_in.as_ptr(),
                    OutputTensor: &descs_out[0],
                    Axis: d.axis,
                };
                DML_OPERATOR_DESC {
                    Type: DML_OPERATOR_JOIN,
                    Desc: &join as *const _ as *const c_void,
                }
            }
            OperatorDesc::Slice1(d) => {
                slice = DML_SLICE1_OPERATOR_DESC {
                    InputTensor: &descs_in[0],
                    OutputTensor: &descs_out[0],
                    DimensionCount: d.dimension_count,
                    InputWindowOffsets: d.input_window_offsets.as_ptr(),
                    InputWindowSizes: d.input_window_sizes.as_ptr(),
                    InputWindowStrides: d.input_window_strides.as_ptr(),
                };
                DML_OPERATOR_DESC {
                    Type: DML_OPERATOR_SLICE1,
                    Desc: &slice as *const _ as *const c_void,
                }
            }
        };
        let device = self
            .device
            .lock()
            .map_err(|_| CompileError::Failed("the device lock is poisoned".into()))?;
        let verdict = |e: windows::core::Error, what: &str| {
            if e.code() == E_INVALIDARG {
                CompileError::Rejected(Rejected {
                    rule: None,
                    message: format!("{what}: {}", hresult_text(&e)),
                })
            } else {
                CompileError::Failed(format!("{what}: {}", hresult_text(&e)))
            }
        };
        let mut operator: Option<IDMLOperator> = None;
        // SAFETY: desc and everything it points to (tensor descriptions, arrays) live until
        // the end of this function; DirectML copies what it keeps.
        unsafe { device.dml.CreateOperator(&desc, &mut operator) }
            .map_err(|e| verdict(e, "CreateOperator"))?;
        let operator = operator
            .ok_or_else(|| CompileError::Failed("CreateOperator returned nothing".into()))?;
        let mut compiled: Option<IDMLCompiledOperator> = None;
        // SAFETY: operator is a live DirectML operator of this device.
        unsafe {
            device
                .dml
                .CompileOperator(&operator, DML_EXECUTION_FLAG_NONE, &mut compiled)
        }
        .map_err(|e| verdict(e, "CompileOperator"))?;
        let compiled = compiled
            .ok_or_else(|| CompileError::Failed("CompileOperator returned nothing".into()))?;
        drop(device);
        self.initialize(compiled)
            .map_err(CompileError::Failed)
            .map(|c| Box::new(c) as Box<dyn CompiledOperator + '_>)
    }
}

impl DirectMlBackend {
    /// Runs the operator initializer once and keeps what execution needs.
    fn initialize(&self, compiled: IDMLCompiledOperator) -> Result<CompiledDml<'_>, String> {
        let mut device = self
            .device
            .lock()
            .map_err(|_| "the device lock is poisoned".to_string())?;
        // SAFETY: compiled is a live compiled operator of this device.
        let initializer: IDMLOperatorInitializer = unsafe {
            device
                .dml
                .CreateOperatorInitializer(Some(&[Some(compiled.clone())]))
        }
        .map_err(|e| format!("CreateOperatorInitializer: {}", hresult_text(&e)))?;
        // SAFETY: both are live DirectML dispatchables.
        let (init_props, exec_props) = unsafe {
            (
                initializer.GetBindingProperties(),
                compiled.GetBindingProperties(),
            )
        };
        let descriptors = init_props
            .RequiredDescriptorCount
            .max(exec_props.RequiredDescriptorCount)
            .max(1);
        if descriptors > HEAP_DESCRIPTORS {
            return Err(format!(
                "the operator needs {descriptors} descriptors; the heap has {HEAP_DESCRIPTORS}"
            ));
        }
        let uav = D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS;
        let persistent = if exec_props.PersistentResourceSize > 0 {
            Some((
                device.buffer(
                    D3D12_HEAP_TYPE_DEFAULT,
                    exec_props.PersistentResourceSize,
                    uav,
                    D3D12_RESOURCE_STATE_UNORDERED_ACCESS,
                )?,
                exec_props.PersistentResourceSize,
            ))
        } else {
            None
        };
        let temporary_size = init_props.TemporaryResourceSize;
        let temporary = if temporary_size > 0 {
            Some(device.buffer(
                D3D12_HEAP_TYPE_DEFAULT,
                temporary_size,
                uav,
                D3D12_RESOURCE_STATE_UNORDERED_ACCESS,
            )?)
        } else {
            None
        };
        let dispatchable: IDMLDispatchable = initializer.cast().map_err(|e| hresult_text(&e))?;
        let table = device.binding_table(&dispatchable, descriptors)?;
        let temporary_binding = temporary.as_ref().map(|t| binding(t, 0, temporary_size));
        let persistent_binding = persistent.as_ref().map(|(p, n)| binding(p, 0, *n));
        // SAFETY: the bindings and resources live until the submission has completed.
        let result = unsafe {
            if let Some(t) = &temporary_binding {
                table.BindTemporaryResource(Some(&describe(t)));
            }
            if let Some(p) = &persistent_binding {
                table.BindOutputs(Some(&[describe(p)]));
            }
            device.list.SetDescriptorHeaps(&[Some(device.heap.clone())]);
            device
                .recorder
                .RecordDispatch(&device.list, &dispatchable, &table);
            device.submit_and_wait()
        };
        release_bindings(
            temporary_binding
                .into_iter()
                .chain(persistent_binding)
                .collect(),
        );
        result?;
        Ok(CompiledDml {
            backend: self,
            compiled,
            persistent,
            descriptors,
            temporary: exec_props.TemporaryResourceSize,
        })
    }
}
