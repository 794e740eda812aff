//! Kernel packs: kernels compiled ahead of time for one GPU architecture, in one file
//! installed beside the library (`scanrt-pack build`). With a pack for its device, a
//! context loads the kernels it needs from the pack on first use and never runs NVRTC.
//!
//! - A pack entry is found by the SHA-256 of its source (text and headers), the target
//!   architecture and the scanrt version. There is no NVRTC version in the key: the pack
//!   is the same for every machine.
//! - Each image is zstd-compressed on its own against a dictionary trained on the pack's
//!   images (kernel sets of one architecture share most of their code), so a first call
//!   reads and decompresses only the kernel set it needs: half the bytes of deflate
//!   without a dictionary (the sm_90 sets CI compiles: 22.8 against 45.7 MB). Its SHA-256
//!   is checked after decompressing.
//! - The packs are looked for in `$SCANRT_KERNEL_PACK_DIR` (empty: no packs), else in the
//!   directories the application added ([`add_directory`]: Python adds those of the
//!   installed `scanrt-kernels-sm*` wheels), then in `share/scanrt/kernels` beside the
//!   `lib/` or `bin/` directory that holds the scanrt library or executable, then in that
//!   directory itself.
//! - A pack is trusted as the kernel cache is (`runtime::trust`): it and every directory
//!   on its path must be owned by the user or root and writable by no one else (sticky
//!   directories aside); otherwise it is refused with a log line and NVRTC compiles.
//!
//! File layout, little-endian: the magic, the format version (u32), the architecture
//! (u32), the entry count (u64), the dictionary's offset and length (u64 each; length 0:
//! none, for packs of too few images to train one). Then per entry: the key (32 bytes),
//! the offset and length of its compressed image (u64 each), the image's length (u64) and
//! SHA-256 (32 bytes). Then the dictionary and the compressed images.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use once_cell::sync::Lazy;
use parking_lot::Mutex;
use sha2::{Digest, Sha256};

use crate::error::{bail, Error, Result};
use crate::runtime::kernel_cache::Key;
use crate::runtime::nvrtc::KernelSource;

const MAGIC: &[u8; 8] = b"SCANRTPK";
const FORMAT: u32 = 2;
const HEADER_BYTES: u64 = 8 + 4 + 4 + 8 + 8 + 8;
const ENTRY_BYTES: u64 = 32 + 8 + 8 + 8 + 32;
/// No kernel image comes near this (they are 50-500 KB).
const MAX_IMAGE_BYTES: u64 = 64 << 20;
/// The dictionary's largest size (zstd's trainer, on the sm_90 sets, gains little past
/// 2 MiB); smaller packs train one of a 64th of their images' bytes.
const DICTIONARY_BYTES: usize = 2 << 20;
/// zstd's level for the images: its strongest regular level (packs are written once).
const LEVEL: i32 = 19;

/// The pack key of `source` built for `sm_<arch>`.
pub(crate) fn key(source: &KernelSource, arch: i32) -> Key {
    source.key(&[format!("sm_{arch}").as_bytes()])
}

/// The file name of the pack for `sm_<arch>`.
pub fn file_name(arch: i32) -> String {
    format!("scanrt-kernels-sm_{arch}.pack")
}

struct Entry {
    offset: u64,
    compressed: u64,
    length: u64,
    sha256: [u8; 32],
}

/// An opened pack: its index and dictionary in memory, its images read on demand.
pub(crate) struct Pack {
    pub arch: i32,
    path: PathBuf,
    file: File,
    entries: HashMap<Key, Entry>,
    dictionary: zstd::dict::DecoderDictionary<'static>,
}

fn bad(path: &Path, what: &str) -> Error {
    Error::new(
        crate::tables::ScanrtStatus::InvalidArgument,
        format!("kernel pack {}: {what}", path.display()),
    )
}

impl Pack {
    /// Opens the pack at `path` and reads its index.
    pub fn open(path: &Path) -> Result<Pack> {
        let mut file = File::open(path).map_err(|e| bad(path, &e.to_string()))?;
        let mut header = [0u8; HEADER_BYTES as usize];
        file.read_exact(&mut header)
            .map_err(|_| bad(path, "shorter than its header"))?;
        let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
        let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
        if &header[..8] != MAGIC || u32_at(&header, 8) != FORMAT {
            return Err(bad(path, "not a scanrt kernel pack of this format"));
        }
        let arch = u32_at(&header, 12) as i32;
        let count = u64_at(&header, 16);
        let (dictionary_at, dictionary_len) = (u64_at(&header, 24), u64_at(&header, 32));
        let size = file.metadata().map_err(|e| bad(path, &e.to_string()))?.len();
        if dictionary_at.checked_add(dictionary_len).is_none_or(|end| end > size)
            || dictionary_len > DICTIONARY_BYTES as u64
        {
            return Err(bad(path, "a damaged dictionary"));
        }
        if count > size / ENTRY_BYTES {
            return Err(bad(path, "index longer than the file"));
        }
        let mut index = vec![0u8; (count * ENTRY_BYTES) as usize];
        file.read_exact(&mut index).map_err(|_| bad(path, "truncated index"))?;
        let mut entries = HashMap::with_capacity(count as usize);
        for e in index.chunks_exact(ENTRY_BYTES as usize) {
            let entry = Entry {
                offset: u64_at(e, 32),
                compressed: u64_at(e, 40),
                length: u64_at(e, 48),
                sha256: e[56..88].try_into().unwrap(),
            };
            if entry.offset.checked_add(entry.compressed).is_none_or(|end| end > size) {
                return Err(bad(path, "an image lies outside the file"));
            }
            if entry.length > MAX_IMAGE_BYTES {
                return Err(bad(path, "an image claims an impossible length"));
            }
            entries.insert(e[..32].try_into().unwrap(), entry);
        }
        let mut dictionary = vec![0u8; dictionary_len as usize];
        file.read_exact_at(&mut dictionary, dictionary_at)
            .map_err(|_| bad(path, "truncated dictionary"))?;
        Ok(Pack {
            arch,
            path: path.to_owned(),
            file,
            entries,
            dictionary: zstd::dict::DecoderDictionary::copy(&dictionary),
        })
    }

    /// How many images the pack holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The image of `key`, decompressed and checked; None when the pack has no such entry.
    pub fn image(&self, key: &Key) -> Result<Option<Vec<u8>>> {
        let Some(entry) = self.entries.get(key) else {
            return Ok(None);
        };
        let mut compressed = vec![0u8; entry.compressed as usize];
        self.file
            .read_exact_at(&mut compressed, entry.offset)
            .map_err(|e| bad(&self.path, &e.to_string()))?;
        let image = zstd::bulk::Decompressor::with_prepared_dictionary(&self.dictionary)
            .and_then(|mut z| z.decompress(&compressed, entry.length as usize))
            .map_err(|e| bad(&self.path, &e.to_string()))?;
        if image.len() as u64 != entry.length || Sha256::digest(&image)[..] != entry.sha256[..] {
            return Err(bad(&self.path, "an image does not match its checksum"));
        }
        Ok(Some(image))
    }
}

/// Writes a pack of `images` (key, image) for `sm_<arch>` to `path`, through a temporary
/// file renamed into place: the dictionary trained on the images, each image compressed
/// against it on every core.
pub(crate) fn write(path: &Path, arch: i32, images: &[(Key, Vec<u8>)]) -> Result<()> {
    use rayon::prelude::*;
    let io = |e: std::io::Error| bad(path, &e.to_string());
    let samples: Vec<&[u8]> = images.iter().map(|(_, image)| &image[..]).collect();
    let total: usize = samples.iter().map(|s| s.len()).sum();
    // Too few or too small images train no dictionary (zstd refuses): none is then used.
    let dictionary = zstd::dict::from_samples(&samples, (total / 64).min(DICTIONARY_BYTES)).unwrap_or_default();
    let prepared = zstd::dict::EncoderDictionary::copy(&dictionary, LEVEL);
    let compressed: Vec<Vec<u8>> = images
        .par_iter()
        .map(|(_, image)| zstd::bulk::Compressor::with_prepared_dictionary(&prepared)?.compress(image))
        .collect::<std::io::Result<_>>()
        .map_err(io)?;
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT.to_le_bytes());
    out.extend_from_slice(&(arch as u32).to_le_bytes());
    out.extend_from_slice(&(images.len() as u64).to_le_bytes());
    let dictionary_at = HEADER_BYTES + images.len() as u64 * ENTRY_BYTES;
    out.extend_from_slice(&dictionary_at.to_le_bytes());
    out.extend_from_slice(&(dictionary.len() as u64).to_le_bytes());
    let mut offset = dictionary_at + dictionary.len() as u64;
    for ((key, image), z) in images.iter().zip(&compressed) {
        out.extend_from_slice(key);
        out.extend_from_slice(&offset.to_le_bytes());
        out.extend_from_slice(&(z.len() as u64).to_le_bytes());
        out.extend_from_slice(&(image.len() as u64).to_le_bytes());
        out.extend_from_slice(&Sha256::digest(image));
        offset += z.len() as u64;
    }
    out.extend_from_slice(&dictionary);
    for z in &compressed {
        out.extend_from_slice(z);
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
    tmp.write_all(&out).map_err(io)?;
    // A pack is installed data that every user reads (a temporary file is the owner's only).
    use std::os::unix::fs::PermissionsExt;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o644))
        .map_err(io)?;
    tmp.persist(path).map_err(|e| io(e.error))?;
    Ok(())
}

/// The directories added with [`add_directory`], in order.
static ADDED_DIRS: Lazy<Mutex<Vec<PathBuf>>> = Lazy::new(Default::default);

/// Looks for kernel packs in `dir` too, before the places beside the library (not where
/// `$SCANRT_KERNEL_PACK_DIR` names the one directory). An architecture no pack served so
/// far is looked for again; a pack already opened stays in use.
pub fn add_directory(dir: &Path) {
    let mut dirs = ADDED_DIRS.lock();
    if !dirs.iter().any(|d| d == dir) {
        dirs.push(dir.to_owned());
        PACKS.lock().retain(|_, pack| pack.is_some());
    }
}

/// Where packs are looked for (None: packs are turned off).
fn pack_dirs() -> Vec<PathBuf> {
    if let Some(dir) = std::env::var_os("SCANRT_KERNEL_PACK_DIR") {
        return if dir.is_empty() {
            vec![]
        } else {
            vec![PathBuf::from(dir)]
        };
    }
    let mut dirs = ADDED_DIRS.lock().clone();
    let Some(object_dir) = containing_object().and_then(|p| p.parent().map(Path::to_owned)) else {
        return dirs;
    };
    if let Some(prefix) = object_dir.parent() {
        dirs.push(prefix.join("share/scanrt/kernels"));
    }
    dirs.push(object_dir);
    dirs
}

/// The file of the shared library or executable this code was loaded from.
fn containing_object() -> Option<PathBuf> {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the address (of a function in this object) and fills
    // `info`; `dli_fname` then points at a NUL-terminated path owned by the loader.
    let found = unsafe { libc::dladdr(containing_object as *const libc::c_void, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: as above.
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    let path = Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(
        name.to_bytes(),
    ));
    // For the main program the loader reports argv[0], which may be a bare name found on
    // PATH or relative to another directory: ask the kernel instead.
    if path.is_relative() {
        return std::env::current_exe().ok();
    }
    std::fs::canonicalize(path).ok()
}

/// The packs found so far, by architecture (None: looked for, not there).
static PACKS: Lazy<Mutex<HashMap<i32, Option<std::sync::Arc<Pack>>>>> = Lazy::new(Default::default);

/// The pack for `sm_<arch>`, opened once; None where there is none. Looked for with no lock
/// held and logged after: the application's log callback may take locks of its own, or
/// call scanrt (two threads looking at once keep the first one's answer).
pub(crate) fn for_arch(arch: i32) -> Option<std::sync::Arc<Pack>> {
    if let Some(known) = PACKS.lock().get(&arch) {
        return known.clone();
    }
    let mut lines: Vec<(log::Level, String)> = Vec::new();
    let found = pack_dirs().into_iter().find_map(|dir| {
        let path = dir.join(file_name(arch));
        if !path.is_file() {
            return None;
        }
        // A pack is code this process runs: refused where others could replace it.
        if let Err(why) = super::trust::trusted_file(&path) {
            lines.push((
                log::Level::Warn,
                format!("kernel pack {} refused: {why}", path.display()),
            ));
            return None;
        }
        match Pack::open(&path) {
            Ok(pack) if pack.arch == arch => {
                lines.push((
                    log::Level::Info,
                    format!("kernel pack {} ({} kernel sets)", path.display(), pack.len()),
                ));
                Some(std::sync::Arc::new(pack))
            }
            Ok(_) => {
                lines.push((
                    log::Level::Warn,
                    format!("kernel pack {} is for another architecture", path.display()),
                ));
                None
            }
            Err(e) => {
                lines.push((log::Level::Warn, e.message));
                None
            }
        }
    });
    let pack = PACKS.lock().entry(arch).or_insert(found).clone();
    for (level, line) in lines {
        log::log!(level, "{line}");
    }
    pack
}

/// The image of `source` for a device of `sm_<arch>` from a pack: its own architecture's,
/// else that of an older one of the same major version (whose CUBIN it runs).
pub(crate) fn image(source: &KernelSource, device_arch: i32) -> Option<Vec<u8>> {
    let major = device_arch / 10;
    (major * 10..=device_arch).rev().find_map(|arch| {
        let pack = for_arch(arch)?;
        match pack.image(&key(source, arch)) {
            Ok(image) => image,
            Err(e) => {
                log::warn!("{}", e.message);
                None
            }
        }
    })
}

/// Whether any pack serves a device of `sm_<arch>`.
pub(crate) fn serves(device_arch: i32) -> bool {
    let major = device_arch / 10;
    (major * 10..=device_arch).any(|arch| for_arch(arch).is_some())
}

/// Fails unless `path` names a pack file scanrt can read (for `scanrt-pack check`).
pub fn check(path: &Path) -> Result<usize> {
    let pack = Pack::open(path)?;
    let keys: Vec<Key> = pack.entries.keys().copied().collect();
    for key in &keys {
        if pack.image(key)?.is_none() {
            bail!(
                InvalidArgument,
                "kernel pack {}: an indexed image is missing",
                path.display()
            );
        }
    }
    Ok(keys.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(text: &str) -> KernelSource {
        KernelSource {
            name: "test".into(),
            text: text.into(),
            headers: &[("a.cuh", "// a")],
        }
    }

    /// Images alike enough to train a dictionary on: pseudo-random words with shared
    /// runs, as kernel sets share code.
    fn kernel_like_images(count: u64) -> Vec<(Key, Vec<u8>)> {
        (0..count)
            .map(|i| {
                let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ i;
                let image: Vec<u8> = (0..3000 + i * 13)
                    .flat_map(|w| {
                        state = state
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        // A word in four comes from a shared table, the rest from the stream.
                        let word = if w % 4 == 0 {
                            (w % 97) * 0x0101_0101
                        } else {
                            state >> 40
                        };
                        (word as u32).to_le_bytes()
                    })
                    .collect();
                (key(&source(&format!("set {i}")), 90), image)
            })
            .collect()
    }

    #[test]
    fn packs_with_a_trained_dictionary_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(file_name(90));
        let images = kernel_like_images(300);
        write(&path, 90, &images).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644, "every user reads a pack; only its owner writes it");
        let header = std::fs::read(&path).unwrap();
        let dictionary_len = u64::from_le_bytes(header[32..40].try_into().unwrap());
        assert!(dictionary_len > 0, "300 kernel-like images train a dictionary");
        let pack = Pack::open(&path).unwrap();
        for (key, image) in &images {
            assert_eq!(pack.image(key).unwrap().as_ref(), Some(image));
        }
        assert_eq!(check(&path).unwrap(), 300);
    }

    #[test]
    fn packs_are_found_in_added_directories() {
        // An architecture no real pack has, so that no other test's lookup interferes.
        const ARCH: i32 = 1;
        let dir = tempfile::tempdir().unwrap();
        let images = vec![(key(&source("kernel"), ARCH), b"an image".to_vec())];
        assert!(for_arch(ARCH).is_none(), "no pack yet");
        write(&dir.path().join(file_name(ARCH)), ARCH, &images).unwrap();
        assert!(
            for_arch(ARCH).is_none(),
            "the answer is kept until a directory is added"
        );
        add_directory(dir.path());
        let pack = for_arch(ARCH).expect("the pack in the added directory");
        assert_eq!(pack.image(&images[0].0).unwrap().as_deref(), Some(&images[0].1[..]));
        add_directory(dir.path());
        assert!(
            std::sync::Arc::ptr_eq(&pack, &for_arch(ARCH).unwrap()),
            "an opened pack stays"
        );
    }

    #[test]
    fn packs_round_trip_and_refuse_damage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(file_name(90));
        let images: Vec<(Key, Vec<u8>)> = (0..5u8)
            .map(|i| {
                (
                    key(&source(&format!("kernel {i}")), 90),
                    vec![i; 1000 + i as usize * 37],
                )
            })
            .collect();
        write(&path, 90, &images).unwrap();
        let pack = Pack::open(&path).unwrap();
        assert_eq!((pack.arch, pack.len()), (90, 5));
        for (key, image) in &images {
            assert_eq!(pack.image(key).unwrap().as_ref(), Some(image));
        }
        assert_eq!(check(&path).unwrap(), 5);
        // Another architecture or source is another key.
        assert_ne!(key(&source("kernel 0"), 80), images[0].0);
        assert!(pack.image(&key(&source("kernel 9"), 90)).unwrap().is_none());

        // A flipped byte in an image fails its checksum (or its inflation).
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 3;
        bytes[last] ^= 0x55;
        std::fs::write(&path, &bytes).unwrap();
        assert!(check(&path).is_err());
        // A truncated file, or one of another kind, is refused when opened.
        std::fs::write(&path, &bytes[..40]).unwrap();
        assert!(Pack::open(&path).is_err());
        std::fs::write(&path, b"SCANRT02 not a pack at all").unwrap();
        assert!(Pack::open(&path).is_err());
    }
}
