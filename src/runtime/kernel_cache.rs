//! The on-disk kernel cache: compiled images that scanrt loads and runs on the GPU, so
//! nobody but the user may be able to change them.
//!
//! - The directory is `$SCANRT_CACHE_DIR`, else `$XDG_CACHE_HOME/scanrt`, else
//!   `~/.cache/scanrt` (an empty `SCANRT_CACHE_DIR` turns the cache off). It is created
//!   0700. Like ssh with its keys, scanrt refuses a directory (and then compiles every
//!   kernel) that is a symbolic link, not owned by the user, or writable by group or
//!   others; `kernel_cache_status` says why.
//! - An entry's name is the SHA-256 of everything that determines the image (sources,
//!   options, architecture, NVRTC version, scanrt version). Its file holds a magic, that
//!   key, the SHA-256 of the payload and the payload; a file whose key or hash does not
//!   match, or that is not a regular file of the user's with no group or other write
//!   permission, is ignored and rebuilt.
//! - Entries are written to a fresh file created exclusively (never through a symbolic
//!   link) at an unpredictable name, mode 0600, then renamed into place atomically.

use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::trust::private;

use sha2::{Digest, Sha256};

/// A cache key: the SHA-256 of everything that determines an image.
pub(crate) type Key = [u8; 32];

const MAGIC: &[u8; 8] = b"SCANRT02";
const HEADER_BYTES: usize = 8 + 32 + 32;

/// The key of the parts that determine an image, hashed in order with their lengths.
pub(crate) fn key<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> Key {
    let mut h = Sha256::new();
    for part in parts {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    h.finalize().into()
}

/// The configured directory (None: the cache is turned off).
fn configured_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("SCANRT_CACHE_DIR") {
        return if d.is_empty() { None } else { Some(PathBuf::from(d)) };
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d).join("scanrt"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("scanrt"))
}

/// The cache directory after creating it (0700) and checking it, or why there is none.
pub(crate) fn open_dir(dir: &Path) -> Result<PathBuf, String> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("kernel cache {} could not be created: {e}", dir.display()))?;
    let meta = std::fs::symlink_metadata(dir).map_err(|e| format!("kernel cache {}: {e}", dir.display()))?;
    if !meta.is_dir() {
        return Err(format!(
            "kernel cache {} refused: it is not a directory (a symbolic link?)",
            dir.display()
        ));
    }
    private(&meta).map_err(|why| format!("kernel cache {} refused: {why}", dir.display()))?;
    Ok(dir.to_path_buf())
}

/// The cache directory in use, or why kernels are compiled every time.
pub(crate) fn directory() -> Result<PathBuf, String> {
    match configured_dir() {
        None => Err("kernel cache off (SCANRT_CACHE_DIR is empty, or no HOME)".into()),
        Some(dir) => open_dir(&dir),
    }
}

fn entry_path(dir: &Path, key: &Key, extension: &str) -> PathBuf {
    let name: String = key.iter().map(|b| format!("{b:02x}")).collect();
    dir.join(format!("{name}.{extension}"))
}

/// The cached image for `key`, when its file is the user's own, private, and intact.
pub(crate) fn read(dir: &Path, key: &Key, extension: &str) -> Option<Vec<u8>> {
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(entry_path(dir, key, extension))
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || private(&meta).is_err() {
        return None;
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.read_to_end(&mut bytes).ok()?;
    if bytes.len() < HEADER_BYTES || &bytes[..8] != MAGIC || bytes[8..40] != key[..] {
        return None;
    }
    let payload = &bytes[HEADER_BYTES..];
    let digest: [u8; 32] = Sha256::digest(payload).into();
    (bytes[40..72] == digest).then(|| payload.to_vec())
}

/// Stores `image` under `key`: a new private file at a random name, renamed into place.
/// Best effort: a cache that cannot be written only costs compile time.
pub(crate) fn write(dir: &Path, key: &Key, extension: &str, image: &[u8]) -> std::io::Result<()> {
    let mut file = tempfile::Builder::new()
        .prefix(".scanrt-")
        .suffix(".tmp")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .tempfile_in(dir)?;
    let digest: [u8; 32] = Sha256::digest(image).into();
    file.write_all(MAGIC)?;
    file.write_all(key)?;
    file.write_all(&digest)?;
    file.write_all(image)?;
    file.as_file().sync_data()?;
    file.persist(entry_path(dir, key, extension)).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("scanrt-cache-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn entries_round_trip_with_private_modes() {
        let dir = open_dir(&scratch("modes").join("nested")).unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        let k = key([&b"source"[..], b"options"]);
        write(&dir, &k, "cubin", b"image bytes").unwrap();
        assert_eq!(read(&dir, &k, "cubin").as_deref(), Some(&b"image bytes"[..]));
        let path = entry_path(&dir, &k, "cubin");
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        let _ = std::fs::remove_dir_all(dir.parent().unwrap());
    }

    #[test]
    fn keys_cover_every_part_and_their_boundaries() {
        assert_ne!(key([&b"ab"[..], b"c"]), key([&b"a"[..], b"bc"]));
        assert_ne!(key([&b"sm_90"[..]]), key([&b"sm_80"[..]]));
        assert_eq!(key([&b"x"[..]]), key([&b"x"[..]]), "stable across runs and releases");
    }

    #[test]
    fn insecure_directories_are_refused() {
        let dir = scratch("insecure");
        open_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let why = open_dir(&dir).unwrap_err();
        assert!(why.contains("group or others may write it"), "{why}");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o775)).unwrap();
        assert!(open_dir(&dir).is_err(), "group-writable");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        open_dir(&dir).unwrap();
        // A symbolic link to a private directory is refused too.
        let link = scratch("insecure-link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert!(open_dir(&link).unwrap_err().contains("not a directory"));
        // Owned by someone else (only root can arrange that here).
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            std::os::unix::fs::chown(&dir, Some(65534), None).unwrap();
            assert!(open_dir(&dir).unwrap_err().contains("owned by uid 65534"));
        }
        let _ = std::fs::remove_file(&link);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn forged_truncated_and_foreign_entries_are_rejected() {
        let dir = open_dir(&scratch("forged")).unwrap();
        let k = key([&b"k"[..]]);
        write(&dir, &k, "cubin", b"the real image").unwrap();
        let path = entry_path(&dir, &k, "cubin");
        let original = std::fs::read(&path).unwrap();
        // A payload changed without its hash.
        let mut forged = original.clone();
        *forged.last_mut().unwrap() ^= 1;
        std::fs::write(&path, &forged).unwrap();
        assert_eq!(read(&dir, &k, "cubin"), None, "forged payload");
        // Another key's entry put under this name.
        let other = key([&b"other"[..]]);
        write(&dir, &other, "cubin", b"the real image").unwrap();
        std::fs::copy(entry_path(&dir, &other, "cubin"), &path).unwrap();
        assert_eq!(read(&dir, &k, "cubin"), None, "entry of another key");
        // Truncated.
        std::fs::write(&path, &original[..HEADER_BYTES - 1]).unwrap();
        assert_eq!(read(&dir, &k, "cubin"), None, "truncated");
        // Intact, but writable by others.
        std::fs::write(&path, &original).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert_eq!(read(&dir, &k, "cubin"), None, "world-writable entry");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read(&dir, &k, "cubin").as_deref(), Some(&b"the real image"[..]));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn symbolic_links_are_never_followed() {
        let dir = open_dir(&scratch("symlink")).unwrap();
        let victim = scratch("symlink-victim");
        std::fs::write(&victim, b"precious").unwrap();
        let k = key([&b"s"[..]]);
        let path = entry_path(&dir, &k, "cubin");
        // A link planted at the entry's name: the write replaces the link itself and the
        // file it points to stays untouched; a read does not follow it either.
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        assert_eq!(read(&dir, &k, "cubin"), None);
        write(&dir, &k, "cubin", b"image").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert!(std::fs::symlink_metadata(&path).unwrap().is_file());
        // Links planted at every name a temporary file could take cannot be listed; the
        // temporary file is created with O_EXCL, so an existing name (link or not) is
        // never opened: fill the directory with links and write again.
        for i in 0..64 {
            let _ = std::os::unix::fs::symlink(&victim, dir.join(format!(".scanrt-{i:06}.tmp")));
        }
        write(&dir, &key([&b"t"[..]]), "cubin", b"image").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_file(&victim);
    }

    #[test]
    fn reading_a_missing_entry_is_none() {
        let dir = open_dir(&scratch("missing")).unwrap();
        assert_eq!(read(&dir, &key([&b"absent"[..]]), "cubin"), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
