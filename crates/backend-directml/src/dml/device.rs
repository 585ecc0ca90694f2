//! Device and queue set-up: the D3D12 device on the chosen adapter, its queue, command
//! allocator and list, fence and shader-visible descriptor heap, and the DirectML device from
//! the DirectML.dll that loads, all created once; then buffers, binding tables and the
//! submit-and-wait that every case uses.

use super::capabilities::{file_version, max_feature_level, supports};
use super::{DirectMlBackend, hresult_text};
use dmlcts_tensor::DataType;
use std::ffi::c_void;
use std::mem::ManuallyDrop;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use windows::Win32::AI::MachineLearning::DirectML::*;
use windows::Win32::Foundation::HMODULE;
use windows::Win32::Graphics::Direct3D12::*;
use windows::Win32::Graphics::Dxgi::Common::{DXGI_FORMAT_UNKNOWN, DXGI_SAMPLE_DESC};
use windows::Win32::System::LibraryLoader::{GetModuleHandleW, GetProcAddress, LoadLibraryW};
use windows::core::{GUID, HRESULT, Interface, PCSTR, PCWSTR};

/// Descriptors in the one shader-visible heap; every binding table starts at its beginning.
pub(super) const HEAP_DESCRIPTORS: u32 = 1024;
/// Longest wait for the GPU to finish one submission.
const GPU_TIMEOUT: Duration = Duration::from_secs(60);

type DmlCreateDevice1 = unsafe extern "system" fn(
    *mut c_void,
    DML_CREATE_DEVICE_FLAGS,
    DML_FEATURE_LEVEL,
    *const GUID,
    *mut *mut c_void,
) -> HRESULT;

pub(super) struct Device {
    d3d: ID3D12Device,
    queue: ID3D12CommandQueue,
    allocator: ID3D12CommandAllocator,
    pub(super) list: ID3D12GraphicsCommandList,
    fence: ID3D12Fence,
    fence_value: u64,
    pub(super) dml: IDMLDevice,
    pub(super) heap: ID3D12DescriptorHeap,
    pub(super) recorder: IDMLCommandRecorder,
}

// SAFETY: D3D12 devices, queues, fences, heaps and DirectML devices are free-threaded COM
// objects; command allocators and lists are not, and every use of this struct goes through
// the Mutex in DirectMlBackend, one thread at a time.
unsafe impl Send for Device {}

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

impl Device {
    pub(super) fn buffer(
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
    pub(super) fn submit_and_wait(&mut self) -> Result<(), String> {
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

    pub(super) fn binding_table(
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

/// DirectML.dll as loaded: the module and the version resource of the file that loaded.
pub(super) struct DirectMlDll {
    module: HMODULE,
    pub(super) version: String,
    pub(super) path: String,
}

impl DirectMlDll {
    /// Loads DirectML.dll the way applications do: the file `path` names, else by name, which
    /// Windows looks for beside the executable first, then in the system's folders.
    pub(super) fn load(path: Option<&std::path::Path>) -> Result<DirectMlDll, String> {
        let name = path.map_or_else(|| "DirectML.dll".to_string(), |p| p.display().to_string());
        let wide: Vec<u16> = name.encode_utf16().chain([0]).collect();
        // SAFETY: a NUL-terminated wide string that lives across the call.
        let module = unsafe { LoadLibraryW(PCWSTR(wide.as_ptr())) }
            .map_err(|e| format!("LoadLibraryW({name}): {}", hresult_text(&e)))?;
        let (path, version) = file_version(module)?;
        Ok(DirectMlDll {
            module,
            version,
            path,
        })
    }
}

/// The DirectML device on `d3d`, from the loaded DLL's DMLCreateDevice1.
pub(super) fn create_dml_device(
    dll: &DirectMlDll,
    d3d: &ID3D12Device,
) -> Result<IDMLDevice, String> {
    // SAFETY: GetProcAddress on a loaded module with a constant NUL-terminated name.
    let create = unsafe { GetProcAddress(dll.module, PCSTR(c"DMLCreateDevice1".as_ptr().cast())) }
        .ok_or_else(|| format!("{} has no DMLCreateDevice1", dll.path))?;
    // SAFETY: DMLCreateDevice1's documented signature, declared above.
    let create: DmlCreateDevice1 = unsafe { std::mem::transmute(create) };
    let mut raw: *mut c_void = std::ptr::null_mut();
    // SAFETY: a live D3D12 device, the IDMLDevice IID and a local out pointer.
    unsafe {
        create(
            d3d.as_raw(),
            DML_CREATE_DEVICE_FLAG_NONE,
            DML_FEATURE_LEVEL_1_0,
            &IDMLDevice::IID,
            &mut raw,
        )
    }
    .ok()
    .map_err(|e| format!("DMLCreateDevice1: {}", hresult_text(&e)))?;
    // SAFETY: DMLCreateDevice1 succeeded, so raw is an owned IDMLDevice reference.
    Ok(unsafe { IDMLDevice::from_raw(raw) })
}

impl DirectMlBackend {
    /// DirectML on the system's default adapter, from the DirectML.dll beside the executable
    /// (or the system's).
    pub fn new() -> Result<DirectMlBackend, String> {
        DirectMlBackend::with_options(&crate::DirectMlOptions::default())
    }

    /// Creates the D3D12 device on the chosen adapter (feature level 11_0), loads DirectML.dll
    /// (`DirectMlDll::load`) and creates the DirectML device.
    pub fn with_options(options: &crate::DirectMlOptions) -> Result<DirectMlBackend, String> {
        let adapter = super::adapters::choose(&options.adapter)?;
        let d3d = super::adapters::d3d_device(&adapter)?;
        // SAFETY: plain COM/Win32 calls with valid arguments; out parameters are local.
        let (queue, allocator, list, fence) = unsafe {
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
            (queue, allocator, list, fence)
        };
        let dll = DirectMlDll::load(options.dll.as_deref())?;
        let dml = create_dml_device(&dll, &d3d)?;

        let level = max_feature_level(&dml);
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
        // SAFETY: plain COM/Win32 calls with valid arguments; out parameters are local.
        let (heap, recorder) = unsafe {
            let heap: ID3D12DescriptorHeap = d3d
                .CreateDescriptorHeap(&heap_desc)
                .map_err(|e| hresult_text(&e))?;
            let recorder: IDMLCommandRecorder =
                dml.CreateCommandRecorder().map_err(|e| hresult_text(&e))?;
            (heap, recorder)
        };
        let driver = match adapter.driver.as_str() {
            "" => String::new(),
            driver => format!(", driver {driver}"),
        };
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
                "DirectML.dll version {} on {} ({}{driver}){}, DML feature level {level}",
                dll.version,
                adapter.name,
                adapter.vendor,
                match wine_version() {
                    Some(wine) => format!(" (the name Wine {wine} gives its Vulkan device)"),
                    None => String::new(),
                }
            ),
            implementation: dmlcts_tensor::Implementation {
                name: "directml".to_string(),
                version: dll.version,
                adapter: dmlcts_tensor::AdapterInfo {
                    name: adapter.name,
                    vendor: adapter.vendor,
                    driver: adapter.driver,
                },
            },
            level,
            data_types,
        })
    }
}
