//! Run-time compilation of CUDA C++ with NVRTC, to CUBIN for the exact device
//! architecture (PTX where NVRTC does not know the device), through the on-disk cache
//! (`runtime::kernel_cache`). Knows nothing of what the source computes.

use std::ffi::{CStr, CString};

use cudarc::nvrtc::sys as nvrtc;

use crate::error::{bail, Error, Result};
use crate::runtime::kernel_cache;

/// A translation unit to compile: its text, the headers it may include (by include
/// name), and a name for messages.
#[derive(Debug, Clone)]
pub(crate) struct KernelSource {
    pub name: String,
    pub text: String,
    pub headers: &'static [(&'static str, &'static str)],
}

impl KernelSource {
    /// The SHA-256 of the source (its text and the headers it includes), then `build`
    /// (what else decides the image: options, target, compiler), then the scanrt
    /// version. Headers the unit never includes stay out, so that editing one kernel
    /// family's header leaves the other families' cache entries and pack images valid.
    pub fn key(&self, build: &[&[u8]]) -> kernel_cache::Key {
        let parts = self
            .included_headers()
            .into_iter()
            .flat_map(|(name, body)| [name.as_bytes(), body.as_bytes()])
            .chain([self.text.as_bytes()])
            .chain(build.iter().copied())
            .chain([env!("CARGO_PKG_VERSION").as_bytes()]);
        kernel_cache::key(parts)
    }

    /// The headers the text includes, directly or through one another, in the order of
    /// `headers`. Every `#include "name"` line counts, conditional or not, so the set can
    /// only hold more than the preprocessor reads, never less.
    fn included_headers(&self) -> Vec<&'static (&'static str, &'static str)> {
        let mut included = vec![false; self.headers.len()];
        let mut pending = vec![self.text.as_str()];
        while let Some(text) = pending.pop() {
            for name in quoted_includes(text) {
                if let Some(i) = self.headers.iter().position(|(header, _)| *header == name) {
                    if !std::mem::replace(&mut included[i], true) {
                        pending.push(self.headers[i].1);
                    }
                }
            }
        }
        self.headers
            .iter()
            .zip(included)
            .filter(|(_, inc)| *inc)
            .map(|(h, _)| h)
            .collect()
    }
}

/// The names of a text's `#include "name"` lines.
fn quoted_includes(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter_map(|line| {
        let directive = line.trim_start().strip_prefix('#')?.trim_start();
        let quoted = directive.strip_prefix("include")?.trim_start().strip_prefix('"')?;
        quoted.split('"').next()
    })
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
        // SAFETY: probing only tries to dlopen the candidate library names. (Linked
        // rather than loaded, the library is there or the program would not have started.)
        #[cfg(feature = "dynamic-loading")]
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

    /// Compiles `source` for `target`. Returns the CUBIN (or PTX, NUL-terminated) image.
    pub fn compile(&self, source: &KernelSource, target: Target) -> Result<Vec<u8>> {
        let text = CString::new(source.text.as_str()).map_err(|_| {
            Error::new(
                crate::error::ScanrtStatus::InvalidArgument,
                "kernel source holds a NUL byte",
            )
        })?;
        let names: Vec<CString> = source.headers.iter().map(|(n, _)| CString::new(*n).unwrap()).collect();
        let bodies: Vec<CString> = source.headers.iter().map(|(_, s)| CString::new(*s).unwrap()).collect();
        let name_ptrs: Vec<_> = names.iter().map(|c| c.as_ptr()).collect();
        let body_ptrs: Vec<_> = bodies.iter().map(|c| c.as_ptr()).collect();
        let options: Vec<CString> = compile_options(target)
            .into_iter()
            .chain(speed_options(self.version))
            .map(|o| CString::new(o).unwrap())
            .collect();
        let option_ptrs: Vec<_> = options.iter().map(|c| c.as_ptr()).collect();
        let prog_name = CString::new(format!("{}.cu", source.name)).unwrap_or_default();

        let mut prog: nvrtc::nvrtcProgram = std::ptr::null_mut();
        // SAFETY: every pointer refers to a live NUL-terminated CString held above for the
        // whole call; header and name arrays have the same length as passed.
        unsafe {
            nvrtc_check(
                nvrtc::nvrtcCreateProgram(
                    &mut prog,
                    text.as_ptr(),
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
                format!("NVRTC failed to compile {} for sm_{}:\n{log}", source.name, target.arch),
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
    pub fn compile_cached(&self, source: &KernelSource, target: Target) -> Result<Vec<u8>> {
        let key = self.cache_key(source, target);
        let extension = if target.cubin { "cubin" } else { "ptx" };
        let dir = kernel_cache::directory()
            .map_err(|why| log::warn!("kernel cache not used: {why}"))
            .ok();
        if let Some(image) = dir.as_ref().and_then(|d| kernel_cache::read(d, &key, extension)) {
            log::debug!("kernel cache hit: {} for sm_{}", source.name, target.arch);
            return Ok(image);
        }
        let started = std::time::Instant::now();
        let image = self.compile(source, target)?;
        log::info!(
            "compiled {} for sm_{} in {} ms",
            source.name,
            target.arch,
            started.elapsed().as_millis()
        );
        if let Some(dir) = dir {
            if let Err(e) = kernel_cache::write(&dir, &key, extension, &image) {
                log::warn!("kernel cache entry not written in {}: {e}", dir.display());
                // only costs time
            }
        }
        Ok(image)
    }

    /// The key of a compiled image: a hash of everything that decides its bytes (the
    /// source and its headers, the options, the NVRTC and scanrt versions).
    fn cache_key(&self, source: &KernelSource, target: Target) -> kernel_cache::Key {
        let options = compile_options(target).join(" ");
        let nvrtc = format!("nvrtc {}.{}", self.version.0, self.version.1);
        source.key(&[options.as_bytes(), nvrtc.as_bytes()])
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

/// Options that change how fast NVRTC compiles, never what: outside the cache key. NVRTC
/// 12.4+ optimises and assembles a program's kernels on parallel threads: this serves
/// programs of several kernels (a built-in kernel set that no pack holds, an operator's
/// matrix-scan set); an operator's single-pass kernels are programs of their own.
fn speed_options(version: (i32, i32)) -> Vec<String> {
    if version < (12, 4) {
        return Vec::new();
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
    vec![format!("--split-compile={threads}")]
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

#[cfg(test)]
mod tests {
    use super::KernelSource;

    static HEADERS: &[(&str, &str)] = &[
        ("a.cuh", "#pragma once\n  #  include \"b.cuh\"\n"),
        ("b.cuh", "#pragma once\n#include \"a.cuh\"\nint b;"),
        ("c.cuh", "int c;"),
        ("d.cuh", "#include <cuda_fp16.h>\nint d;"),
    ];

    fn unit(text: &str, headers: &'static [(&'static str, &'static str)]) -> KernelSource {
        KernelSource {
            name: "unit".into(),
            text: text.into(),
            headers,
        }
    }

    #[test]
    fn the_key_covers_the_headers_included_through_others_and_no_more() {
        let source = unit("#include \"a.cuh\"\n#if 0\n#include \"d.cuh\"\n#endif\n", HEADERS);
        let names: Vec<_> = source.included_headers().iter().map(|(name, _)| *name).collect();
        assert_eq!(names, ["a.cuh", "b.cuh", "d.cuh"]);
        // Another text of c.cuh, which the unit never includes: the same key.
        static OTHER_C: &[(&str, &str)] = &[HEADERS[0], HEADERS[1], ("c.cuh", "int c2;"), HEADERS[3]];
        let key = source.key(&[b"sm_90"]);
        assert_eq!(key, unit(&source.text, OTHER_C).key(&[b"sm_90"]));
        // Another text of b.cuh, included through a.cuh: another key.
        static OTHER_B: &[(&str, &str)] = &[
            HEADERS[0],
            ("b.cuh", "#include \"a.cuh\"\nint b2;"),
            HEADERS[2],
            HEADERS[3],
        ];
        assert_ne!(key, unit(&source.text, OTHER_B).key(&[b"sm_90"]));
        assert_ne!(key, source.key(&[b"sm_80"]));
    }
}
