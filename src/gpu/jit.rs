//! Run-time compilation of the CUDA kernels in `kernels/` with NVRTC, to CUBIN for the
//! exact device architecture, with a thread-safe in-memory cache (in `gpu::device`) and
//! an on-disk cache (here).
//!
//! The disk cache (where it lives, what it trusts) is `gpu::kernel_cache`.

use std::ffi::{CStr, CString};

use cudarc::nvrtc::sys as nvrtc;

use crate::error::{bail, Error, Result};
use crate::gpu::kernel_cache;
use crate::gpu::tuning::{small_scan_shape, takes_small_shape, tile_shape, TileShape};
use crate::types::{DType, Direction, Op, ScanDesc, Segments};

/// The kernel sources, by include name. Order does not matter.
pub(crate) const KERNEL_SOURCES: &[(&str, &str)] = &[
    ("util/types.cuh", include_str!("../../kernels/util/types.cuh")),
    (
        "thread/thread_scan.cuh",
        include_str!("../../kernels/thread/thread_scan.cuh"),
    ),
    ("warp/warp_scan.cuh", include_str!("../../kernels/warp/warp_scan.cuh")),
    ("block/tile_io.cuh", include_str!("../../kernels/block/tile_io.cuh")),
    (
        "block/block_scan.cuh",
        include_str!("../../kernels/block/block_scan.cuh"),
    ),
    (
        "block/tile_heads.cuh",
        include_str!("../../kernels/block/tile_heads.cuh"),
    ),
    (
        "device/scan_params.cuh",
        include_str!("../../kernels/device/scan_params.cuh"),
    ),
    (
        "device/matrix_scan.cuh",
        include_str!("../../kernels/device/matrix_scan.cuh"),
    ),
    (
        "device/single_pass_scan.cuh",
        include_str!("../../kernels/device/single_pass_scan.cuh"),
    ),
    ("util/bulk_copy.cuh", include_str!("../../kernels/util/bulk_copy.cuh")),
    (
        "device/single_pass_bulk.cuh",
        include_str!("../../kernels/device/single_pass_bulk.cuh"),
    ),
    (
        "block/striped_tile.cuh",
        include_str!("../../kernels/block/striped_tile.cuh"),
    ),
    (
        "device/single_pass_wave.cuh",
        include_str!("../../kernels/device/single_pass_wave.cuh"),
    ),
];

/// Entry points of every compiled module (see `Specialization::source`).
pub(crate) const SINGLE_PASS: &str = "scanrt_single_pass";
/// Only in modules where `Specialization::has_bulk_kernel`; same parameters as SINGLE_PASS.
pub(crate) const SINGLE_PASS_BULK: &str = "scanrt_single_pass_bulk";
/// Only in modules where `Specialization::has_wave_kernel`; same parameters as SINGLE_PASS.
pub(crate) const SINGLE_PASS_WAVE: &str = "scanrt_single_pass_wave";
pub(crate) const MATRIX_REDUCE: &str = "scanrt_matrix_reduce";
pub(crate) const MATRIX_SCAN_SUMS: &str = "scanrt_matrix_scan_sums";
pub(crate) const MATRIX_SCAN_TILES: &str = "scanrt_matrix_scan_tiles";

/// One compiled module: all kernels for an (input type, output type, operator,
/// direction, segmented or not, tile shape). Everything else (inclusive, initial value,
/// alignment, determinism, the kind of segment data) is a launch flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Specialization {
    pub input: DType,
    pub output: DType,
    pub op: Op,
    pub direction: Direction,
    pub segmented: bool,
    pub shape: TileShape,
}

impl Specialization {
    /// The module a scan of `n` elements runs on a device of compute capability `arch`.
    pub fn for_scan(arch: i32, input: DType, output: DType, desc: &ScanDesc, n: u64) -> Specialization {
        let (regular, small) = Self::all_for(arch, input, output, desc);
        match small {
            Some(small) if takes_small_shape(&regular.shape, &small.shape, n) => small,
            _ => regular,
        }
    }

    /// Every module scans of this kind may run: the regular tile shape and, where there is
    /// one, the small-scan shape (tuning.rs).
    pub fn all_for(
        arch: i32,
        input: DType,
        output: DType,
        desc: &ScanDesc,
    ) -> (Specialization, Option<Specialization>) {
        let segmented = desc.segments != Segments::None;
        let regular = tile_shape(arch, input, output, segmented);
        let spec = |shape| Specialization {
            input,
            output,
            op: desc.op,
            direction: desc.direction,
            segmented,
            shape,
        };
        (spec(regular), small_scan_shape(&regular, input, segmented).map(spec))
    }

    /// Whether the module also holds the bulk-copy single pass (a bulk copy moves bits, so
    /// the input must already be the output type).
    pub fn has_bulk_kernel(&self) -> bool {
        self.shape.bulk_buffers > 0 && self.input == self.output
    }

    /// Whether the module also holds the one-wave single pass (tuning gives it to plain
    /// scans only).
    pub fn has_wave_kernel(&self) -> bool {
        self.shape.wave_threads > 0
    }

    /// The translation unit NVRTC compiles: the layered headers instantiated with
    /// extern "C" entry points, so names need no mangling lookup.
    pub fn source(&self) -> String {
        let TileShape {
            threads,
            items,
            lookback_slots_per_lane,
            spin_before_sleep,
            sleep_ns,
            min_blocks_per_sm,
            skip_lookback,
            bulk_buffers,
            bulk_items,
            bulk_min_blocks_per_sm,
            wave_threads,
            wave_lookback_slots_per_lane,
            wave_min_blocks_per_sm,
            ..
        } = self.shape;
        let skip_lookback = if skip_lookback {
            "#define SCANRT_DEBUG_SKIP_LOOKBACK 1\n"
        } else {
            ""
        };
        let (i, o, op) = (self.input.cuda_name(), self.output.cuda_name(), self.op as i32);
        let reverse = self.direction == Direction::Backward;
        let segmented = self.segmented;
        // Tile sums are scanned in rows short enough for 16-byte segment pairs to fit in
        // static shared memory.
        let sum_items = if segmented { 4 } else { items };
        let bulk = if self.has_bulk_kernel() {
            format!(
                r#"extern "C" __global__ void __launch_bounds__({threads} + 32, {bulk_min_blocks_per_sm}) {SINGLE_PASS_BULK}(const In* in, Acc* out, long long n, unsigned long long init_bits, unsigned flags, const void* heads, void* workspace, long long status_capacity, FaultReport* report) {{
    single_pass_scan_bulk<Op, In, {threads}, {bulk_items}, {bulk_buffers}, {lookback_slots_per_lane}, {spin_before_sleep}, {sleep_ns}, {reverse}, {segmented}>(in, out, n, init_bits, flags, heads, workspace, status_capacity, report);
}}
"#
            )
        } else {
            String::new()
        };
        let wave = if self.has_wave_kernel() {
            format!(
                r#"extern "C" __global__ void __launch_bounds__({wave_threads}, {wave_min_blocks_per_sm}) {SINGLE_PASS_WAVE}(const In* in, Acc* out, long long n, unsigned long long init_bits, unsigned flags, const void*, void* workspace, long long status_capacity, FaultReport* report) {{
    single_pass_scan_wave<Op, In, {wave_threads}, {items}, {wave_lookback_slots_per_lane}, {spin_before_sleep}, {sleep_ns}, {reverse}>(in, out, n, init_bits, flags, workspace, status_capacity, report);
}}
"#
            )
        } else {
            String::new()
        };
        format!(
            r#"{skip_lookback}#include "device/single_pass_scan.cuh"
#include "device/single_pass_bulk.cuh"
#include "device/single_pass_wave.cuh"
#include "device/matrix_scan.cuh"
typedef ScanOp<{op}, {o}> Op;
typedef Op::T Acc;
typedef {i} In;
typedef CarryOf<Op, {segmented}>::Op_::T Carry;
extern "C" __global__ void __launch_bounds__({threads} + 32, {min_blocks_per_sm}) {SINGLE_PASS}(const In* in, Acc* out, long long n, unsigned long long init_bits, unsigned flags, const void* heads, void* workspace, long long status_capacity, FaultReport* report) {{
    single_pass_scan<Op, In, {threads}, {items}, {lookback_slots_per_lane}, {spin_before_sleep}, {sleep_ns}, {reverse}, {segmented}>(in, out, n, init_bits, flags, heads, workspace, status_capacity, report);
}}
extern "C" __global__ void __launch_bounds__({threads}) {MATRIX_REDUCE}(const In* in, long long n, Carry* tile_sums, unsigned long long init_bits, unsigned flags, const void* heads) {{
    matrix_reduce<Op, In, {threads}, {items}, {reverse}, {segmented}>(in, n, tile_sums, init_bits, flags, heads);
}}
extern "C" __global__ void __launch_bounds__({threads}) {MATRIX_SCAN_SUMS}(Carry* tile_sums, long long num_tiles, unsigned long long init_bits, unsigned flags) {{
    matrix_scan_sums<Op, {threads}, {sum_items}, {segmented}>(tile_sums, num_tiles, init_bits, flags);
}}
extern "C" __global__ void __launch_bounds__({threads}) {MATRIX_SCAN_TILES}(const In* in, Acc* out, long long n, Carry* tile_prefix, unsigned long long init_bits, unsigned flags, const void* heads) {{
    matrix_scan_tiles<Op, In, {threads}, {items}, {reverse}, {segmented}>(in, out, n, tile_prefix, init_bits, flags, heads);
}}
{bulk}{wave}"#
        )
    }
}

/// Where NVRTC is and what it can target.
#[derive(Debug, Clone)]
pub(crate) struct Nvrtc {
    pub version: (i32, i32),
    pub supported_archs: Vec<i32>,
}

fn nvrtc_check(r: nvrtc::nvrtcResult, what: &str) -> Result<()> {
    if r == nvrtc::nvrtcResult::NVRTC_SUCCESS {
        return Ok(());
    }
    // SAFETY: nvrtcGetErrorString returns a static NUL-terminated string for any code.
    let msg = unsafe { CStr::from_ptr(nvrtc::nvrtcGetErrorString(r)) }.to_string_lossy();
    bail!(CompileError, "{what} failed: {msg}")
}

impl Nvrtc {
    /// Loads libnvrtc (without panicking when it is absent) and queries it.
    pub fn load() -> Result<Nvrtc> {
        // SAFETY: probing only tries to dlopen the candidate library names.
        if !unsafe { nvrtc::is_culib_present() } {
            bail!(CompileError, "the NVRTC library (libnvrtc.so) could not be loaded; install the CUDA toolkit or the nvidia-cuda-nvrtc wheel and put it on the library path");
        }
        let (mut major, mut minor, mut count) = (0, 0, 0);
        // SAFETY: the library is present; out-pointers are valid locals.
        unsafe {
            nvrtc_check(nvrtc::nvrtcVersion(&mut major, &mut minor), "nvrtcVersion")?;
            nvrtc_check(
                nvrtc::nvrtcGetNumSupportedArchs(&mut count),
                "nvrtcGetNumSupportedArchs",
            )?;
        }
        let mut supported_archs = vec![0i32; count.max(0) as usize];
        // SAFETY: the vector holds exactly `count` ints, as the API requires.
        unsafe {
            nvrtc_check(
                nvrtc::nvrtcGetSupportedArchs(supported_archs.as_mut_ptr()),
                "nvrtcGetSupportedArchs",
            )?
        };
        Ok(Nvrtc {
            version: (major, minor),
            supported_archs,
        })
    }

    /// The real architecture to build for: the device's own when NVRTC knows it, else
    /// the newest one NVRTC supports below it (CUBIN for an older sm runs on newer chips
    /// of the same major version only, so that case compiles to PTX instead).
    pub fn target_for(&self, device_arch: i32) -> Result<Target> {
        if self.supported_archs.contains(&device_arch) {
            return Ok(Target {
                arch: device_arch,
                cubin: true,
            });
        }
        match self.supported_archs.iter().copied().filter(|&a| a <= device_arch).max() {
            Some(arch) => Ok(Target { arch, cubin: false }),
            None => bail!(
                CompileError,
                "NVRTC {}.{} supports no architecture at or below sm_{device_arch}",
                self.version.0,
                self.version.1
            ),
        }
    }

    /// Compiles `spec` for `target`. Returns the CUBIN (or PTX, NUL-terminated) image.
    pub fn compile(&self, spec: &Specialization, target: Target) -> Result<Vec<u8>> {
        let source = CString::new(spec.source()).expect("generated source has no NUL");
        let names: Vec<CString> = KERNEL_SOURCES.iter().map(|(n, _)| CString::new(*n).unwrap()).collect();
        let bodies: Vec<CString> = KERNEL_SOURCES.iter().map(|(_, s)| CString::new(*s).unwrap()).collect();
        let name_ptrs: Vec<_> = names.iter().map(|c| c.as_ptr()).collect();
        let body_ptrs: Vec<_> = bodies.iter().map(|c| c.as_ptr()).collect();
        let options: Vec<CString> = compile_options(target)
            .into_iter()
            .map(|o| CString::new(o).unwrap())
            .collect();
        let option_ptrs: Vec<_> = options.iter().map(|c| c.as_ptr()).collect();
        let prog_name = CString::new("scanrt_specialization.cu").unwrap();

        let mut prog: nvrtc::nvrtcProgram = std::ptr::null_mut();
        // SAFETY: every pointer refers to a live NUL-terminated CString held above for the
        // whole call; header and name arrays have the same length as passed.
        unsafe {
            nvrtc_check(
                nvrtc::nvrtcCreateProgram(
                    &mut prog,
                    source.as_ptr(),
                    prog_name.as_ptr(),
                    bodies.len() as i32,
                    body_ptrs.as_ptr(),
                    name_ptrs.as_ptr(),
                ),
                "nvrtcCreateProgram",
            )?;
        }
        let _destroy = ProgramGuard(prog);
        // SAFETY: `prog` is a valid program; options point at live CStrings.
        let compiled = unsafe { nvrtc::nvrtcCompileProgram(prog, option_ptrs.len() as i32, option_ptrs.as_ptr()) };
        if compiled != nvrtc::nvrtcResult::NVRTC_SUCCESS {
            let log = program_log(prog);
            return Err(Error::new(
                crate::error::ScanrtStatus::CompileError,
                format!("NVRTC failed to compile {:?} for sm_{}:\n{log}", spec, target.arch),
            ));
        }
        let mut size = 0usize;
        // SAFETY: the program compiled; the buffer is sized as NVRTC reports.
        unsafe {
            if target.cubin {
                nvrtc_check(nvrtc::nvrtcGetCUBINSize(prog, &mut size), "nvrtcGetCUBINSize")?;
                let mut image = vec![0u8; size];
                nvrtc_check(
                    nvrtc::nvrtcGetCUBIN(prog, image.as_mut_ptr() as *mut _),
                    "nvrtcGetCUBIN",
                )?;
                Ok(image)
            } else {
                nvrtc_check(nvrtc::nvrtcGetPTXSize(prog, &mut size), "nvrtcGetPTXSize")?;
                let mut image = vec![0u8; size];
                nvrtc_check(nvrtc::nvrtcGetPTX(prog, image.as_mut_ptr() as *mut _), "nvrtcGetPTX")?;
                Ok(image)
            }
        }
    }

    /// Disk-cached compile: the cached image when the cache directory is trusted and the
    /// entry intact, else a fresh compile (stored for next time).
    pub fn compile_cached(&self, spec: &Specialization, target: Target) -> Result<Vec<u8>> {
        let key = self.cache_key(spec, target);
        let extension = if target.cubin { "cubin" } else { "ptx" };
        let dir = kernel_cache::directory().ok();
        if let Some(image) = dir.as_ref().and_then(|d| kernel_cache::read(d, &key, extension)) {
            return Ok(image);
        }
        let image = self.compile(spec, target)?;
        if let Some(dir) = dir {
            let _ = kernel_cache::write(&dir, &key, extension, &image); // best effort: only costs time
        }
        Ok(image)
    }

    fn cache_key(&self, spec: &Specialization, target: Target) -> kernel_cache::Key {
        let source = spec.source();
        let options = compile_options(target).join(" ");
        let nvrtc = format!("nvrtc {}.{}", self.version.0, self.version.1);
        let parts = KERNEL_SOURCES
            .iter()
            .flat_map(|(name, body)| [name.as_bytes(), body.as_bytes()])
            .chain([
                source.as_bytes(),
                options.as_bytes(),
                nvrtc.as_bytes(),
                env!("CARGO_PKG_VERSION").as_bytes(),
            ]);
        kernel_cache::key(parts)
    }
}

/// The architecture a module is built for, and whether as CUBIN (else PTX).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Target {
    pub arch: i32,
    pub cubin: bool,
}

fn compile_options(target: Target) -> Vec<String> {
    let arch = if target.cubin {
        format!("--gpu-architecture=sm_{}", target.arch)
    } else {
        format!("--gpu-architecture=compute_{}", target.arch)
    };
    // No FMA contraction: scan operators never multiply-add, and this keeps float
    // results independent of compiler heuristics.
    let mut options = vec![
        arch,
        "--std=c++17".into(),
        "--fmad=false".into(),
        "-default-device".into(),
    ];
    // For compute-sanitizer and profiler reports with source lines.
    if std::env::var_os("SCANRT_NVRTC_LINEINFO").is_some_and(|v| v == "1") {
        options.push("--generate-line-info".into());
    }
    options
}

struct ProgramGuard(nvrtc::nvrtcProgram);
impl Drop for ProgramGuard {
    fn drop(&mut self) {
        // SAFETY: the program was created by nvrtcCreateProgram and is destroyed once.
        unsafe { nvrtc::nvrtcDestroyProgram(&mut self.0) };
    }
}

fn program_log(prog: nvrtc::nvrtcProgram) -> String {
    let mut size = 0usize;
    // SAFETY: `prog` is valid; the buffer has the size NVRTC reports.
    unsafe {
        if nvrtc::nvrtcGetProgramLogSize(prog, &mut size) != nvrtc::nvrtcResult::NVRTC_SUCCESS {
            return String::from("(no log)");
        }
        let mut log = vec![0u8; size];
        nvrtc::nvrtcGetProgramLog(prog, log.as_mut_ptr() as *mut _);
        String::from_utf8_lossy(&log).trim_end_matches('\0').to_string()
    }
}
