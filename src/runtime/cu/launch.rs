//! Kernel launches: a grid, or one thread-block cluster, with the parameters in one
//! buffer; cluster sizes a function can form; function attributes.

use std::ffi::c_void;

use cudarc::driver::sys::{self, CUresult, CUstream};

use super::check::check;
use crate::error::Result;

/// Launches `f` with its parameters laid out in `params` (the driver's parameter buffer:
/// each parameter at its natural alignment, as in a `#[repr(C)]` struct of them).
///
/// # Safety
/// `params` must hold the kernel's parameters, and every pointer among them must stay
/// valid until the kernel completes.
pub(crate) unsafe fn launch_with_buffer(
    f: sys::CUfunction,
    grid: u32,
    block: u32,
    shared_bytes: u32,
    stream: CUstream,
    params: &[u8],
) -> Result<()> {
    with_parameter_buffer(params, |extra| {
        check(
            sys::cuLaunchKernel(
                f,
                grid,
                1,
                1,
                block,
                1,
                1,
                shared_bytes,
                stream,
                std::ptr::null_mut(),
                extra,
            ),
            "cuLaunchKernel",
        )
    })
}

/// [`launch_with_buffer`] of a grid of `blocks` blocks that form one thread-block
/// cluster (sm_90+).
///
/// # Safety
/// As [`launch_with_buffer`]; `f` may form clusters of `blocks` blocks
/// ([`max_cluster_blocks`]).
pub(crate) unsafe fn launch_cluster_with_buffer(
    f: sys::CUfunction,
    blocks: u32,
    block: u32,
    shared_bytes: u32,
    stream: CUstream,
    params: &[u8],
) -> Result<()> {
    let mut attribute = cluster_attribute(blocks);
    let config = launch_config(blocks, block, shared_bytes, stream, &mut attribute);
    with_parameter_buffer(params, |extra| {
        check(
            sys::cuLaunchKernelEx(&config, f, std::ptr::null_mut(), extra),
            "cuLaunchKernelEx",
        )
    })
}

/// The most blocks, up to `most`, that `f` (launched with `block` threads and
/// `shared_bytes`) can group in one cluster on the current context's device; 0 where it
/// cannot form clusters (before sm_90).
pub(crate) fn max_cluster_blocks(f: sys::CUfunction, block: u32, shared_bytes: u32, most: u32) -> u32 {
    if most > 8 {
        // SAFETY: a loaded function and a valid attribute; a device that refuses
        // non-portable sizes keeps its limit of 8.
        let allowed = unsafe {
            sys::cuFuncSetAttribute(
                f,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                1,
            )
        };
        if allowed != CUresult::CUDA_SUCCESS {
            return max_cluster_blocks(f, block, shared_bytes, 8);
        }
    }
    (1..=most)
        .rev()
        .find(|&blocks| {
            let mut attribute = cluster_attribute(blocks);
            let config = launch_config(blocks, block, shared_bytes, std::ptr::null_mut(), &mut attribute);
            let mut clusters = 0;
            // SAFETY: out-pointer to a local; the config points at a live attribute.
            let r = unsafe { sys::cuOccupancyMaxActiveClusters(&mut clusters, f, &config) };
            r == CUresult::CUDA_SUCCESS && clusters > 0
        })
        .unwrap_or(0)
}

fn cluster_attribute(blocks: u32) -> sys::CUlaunchAttribute {
    // SAFETY: a plain C struct and union, for which all-zero bytes are valid.
    let mut attribute: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attribute.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attribute.value.clusterDim.x = blocks;
    attribute.value.clusterDim.y = 1;
    attribute.value.clusterDim.z = 1;
    attribute
}

fn launch_config(
    grid: u32,
    block: u32,
    shared_bytes: u32,
    stream: CUstream,
    attribute: &mut sys::CUlaunchAttribute,
) -> sys::CUlaunchConfig {
    sys::CUlaunchConfig {
        gridDimX: grid,
        gridDimY: 1,
        gridDimZ: 1,
        blockDimX: block,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: shared_bytes,
        hStream: stream,
        attrs: attribute,
        numAttrs: 1,
    }
}

/// Runs `launch` with the `extra` argument that passes `params` as one parameter buffer.
fn with_parameter_buffer(params: &[u8], launch: impl FnOnce(*mut *mut c_void) -> Result<()>) -> Result<()> {
    let mut size = params.len();
    let mut extra = [
        sys::CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT as usize as *mut c_void,
        params.as_ptr() as *mut c_void,
        sys::CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT as usize as *mut c_void,
        &mut size as *mut usize as *mut c_void,
        std::ptr::null_mut(), // CU_LAUNCH_PARAM_END
    ];
    launch(extra.as_mut_ptr())
}
