//! The rendezvous directory: where the graphs of one user and one domain find each other.
//!
//! `$XDG_RUNTIME_DIR/libtracer/domain-<id>` when `XDG_RUNTIME_DIR` is set (it is per-user and
//! private by systemd's design), else `/tmp/libtracer-<uid>/domain-<id>`. Every directory we
//! create is mode 0700; an existing directory is used only if it is a real directory (not a
//! symlink) owned by us with no group or world permission bits, because anyone who can write
//! in it could plant a socket that impersonates a graph.

use std::fs;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use super::LinkError;

/// The default rendezvous directory of `domain_id` for the current user (not created).
pub fn default_rendezvous_dir(domain_id: u32) -> PathBuf {
    let base = match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) if !d.is_empty() && Path::new(&d).is_absolute() => {
            PathBuf::from(d).join("libtracer")
        }
        _ => PathBuf::from(format!(
            "/tmp/libtracer-{}",
            nix::unistd::geteuid().as_raw()
        )),
    };
    rendezvous_dir_in(&base, domain_id)
}

/// The rendezvous directory of `domain_id` under `base` (not created): `<base>/domain-<id>`, the
/// layout of the default, for a caller that moves the base (rmw_tracer's
/// `RMW_TRACER_RENDEZVOUS_DIR`), so that domains stay apart there too.
pub fn rendezvous_dir_in(base: &Path, domain_id: u32) -> PathBuf {
    base.join(format!("domain-{domain_id}"))
}

/// Create `dir` (and, for the default layout, its `libtracer*` parent) mode 0700, then check
/// that it is private to this user.
pub fn prepare_dir(dir: &Path) -> Result<(), LinkError> {
    let insecure = |reason: String| LinkError::InsecureDir {
        path: dir.to_owned(),
        reason,
    };
    if let Some(parent) = dir.parent() {
        let is_ours = parent
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("libtracer"));
        if is_ours {
            create_private(parent)?;
            check_private(parent)?;
        } else if !parent.is_dir() {
            return Err(insecure(format!(
                "parent {} does not exist",
                parent.display()
            )));
        }
    }
    create_private(dir)?;
    check_private(dir)
}

fn create_private(dir: &Path) -> Result<(), LinkError> {
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(LinkError::InsecureDir {
            path: dir.to_owned(),
            reason: format!("cannot create: {e}"),
        }),
    }
}

/// Refuse a directory that another user could write into or read.
pub fn check_private(dir: &Path) -> Result<(), LinkError> {
    let md = fs::symlink_metadata(dir).map_err(|e| LinkError::InsecureDir {
        path: dir.to_owned(),
        reason: format!("cannot stat: {e}"),
    })?;
    check_private_metadata(dir, &md)
}

/// [`check_private`] on metadata already at hand (`dir` names it in the error): a real
/// directory, ours, with no group or world permission bits. Also what the transport checks on
/// the descriptor it binds through when the directory's path is too long for a socket address
/// (`transport/socket.rs`), so that the directory bound in is the one checked.
pub fn check_private_metadata(dir: &Path, md: &fs::Metadata) -> Result<(), LinkError> {
    let insecure = |reason: String| LinkError::InsecureDir {
        path: dir.to_owned(),
        reason,
    };
    if !md.file_type().is_dir() {
        return Err(insecure("not a directory (symlinks are refused)".into()));
    }
    let me = nix::unistd::geteuid().as_raw();
    if md.uid() != me {
        return Err(insecure(format!(
            "owned by uid {}, not by us (uid {me})",
            md.uid()
        )));
    }
    if md.mode() & 0o077 != 0 {
        return Err(insecure(format!(
            "mode {:o} gives access to group or others; want 0700",
            md.mode() & 0o777
        )));
    }
    Ok(())
}
