//! Whether files holding machine code scanrt runs may be trusted: the kernel cache must be
//! the user's alone; a kernel pack (often installed by root) and every directory on its
//! path must be writable by nobody but its owner, the user or root, as ssh checks its
//! keys. Otherwise another user could substitute the code a process of this user runs.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Whether `meta` belongs to this user and no one else may write it.
pub(crate) fn private(meta: &std::fs::Metadata) -> Result<(), String> {
    let me = euid();
    if meta.uid() != me {
        return Err(format!(
            "it is owned by uid {}, not by this user (uid {me})",
            meta.uid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!("group or others may write it (mode {:o})", meta.mode() & 0o777));
    }
    Ok(())
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// Whether `path` belongs to this user or root.
fn trusted_owner(path: &Path, meta: &std::fs::Metadata) -> Result<(), String> {
    let owner = meta.uid();
    if owner != euid() && owner != 0 {
        return Err(format!(
            "{} is owned by uid {owner}, neither this user (uid {}) nor root",
            path.display(),
            euid()
        ));
    }
    Ok(())
}

/// Checks one path component: owned by this user or root, and writable by no one else,
/// unless it is a sticky directory (as /tmp), where no one else can replace what the user
/// or root placed in it.
fn component(path: &Path, meta: &std::fs::Metadata) -> Result<(), String> {
    trusted_owner(path, meta)?;
    let sticky_dir = meta.is_dir() && meta.mode() & 0o1000 != 0;
    if meta.mode() & 0o022 != 0 && !sticky_dir {
        return Err(format!(
            "group or others may write {} (mode {:o})",
            path.display(),
            meta.mode() & 0o7777
        ));
    }
    Ok(())
}

/// Whether the file at `path` may be trusted as code: it and every directory above it,
/// both as written (a symbolic link lives in its directory) and as resolved.
pub(crate) fn trusted_file(path: &Path) -> Result<(), String> {
    let absolute = std::path::absolute(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let resolved = std::fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?;
    for p in [&absolute, &resolved] {
        for ancestor in p.ancestors() {
            // A link's mode means nothing: it is judged by its owner (in a sticky
            // directory only its owner can replace it) and its directory, then followed
            // through `resolved`.
            let meta = std::fs::symlink_metadata(ancestor).map_err(|e| format!("{}: {e}", ancestor.display()))?;
            if meta.file_type().is_symlink() {
                trusted_owner(ancestor, &meta)?;
            } else {
                component(ancestor, &meta)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn set_mode(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn writable_files_and_directories_on_the_path_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("share");
        std::fs::create_dir(&dir).unwrap();
        let file = dir.join("scanrt-kernels-sm_90.pack");
        std::fs::write(&file, b"pack").unwrap();
        set_mode(&dir, 0o755);
        set_mode(&file, 0o644);
        trusted_file(&file).unwrap();

        set_mode(&file, 0o664);
        assert!(trusted_file(&file).unwrap_err().contains("group or others may write"));
        set_mode(&file, 0o644);

        set_mode(&dir, 0o777);
        let e = trusted_file(&file).unwrap_err();
        assert!(e.contains("share"), "{e}");
        // A sticky directory (as /tmp) lets no one else replace the file.
        set_mode(&dir, 0o1777);
        trusted_file(&file).unwrap();
        set_mode(&dir, 0o755);

        // A link in a writable directory is refused even when its target is trusted.
        let open = root.path().join("open");
        std::fs::create_dir(&open).unwrap();
        let link = open.join("link.pack");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        trusted_file(&link).unwrap();
        set_mode(&open, 0o777);
        assert!(trusted_file(&link).unwrap_err().contains("open"));
        // A missing file is an error, not a pass.
        assert!(trusted_file(&dir.join("missing.pack")).is_err());

        // A link another user owns in a sticky directory (as /tmp) is refused: that user
        // could point it elsewhere between the check and the open. Only root can make one.
        if euid() == 0 {
            let sticky = root.path().join("sticky");
            std::fs::create_dir(&sticky).unwrap();
            set_mode(&sticky, 0o1777);
            let planted = sticky.join("scanrt-kernels-sm_90.pack");
            std::os::unix::fs::symlink(&file, &planted).unwrap();
            trusted_file(&planted).unwrap();
            std::os::unix::fs::lchown(&planted, Some(54321), None).unwrap();
            assert!(trusted_file(&planted).unwrap_err().contains("uid 54321"));
        }
    }
}
