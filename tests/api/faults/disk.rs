//! A small disk that fills.

/// A small tmpfs mounted for the test's SQLite file; unmounted when dropped. `None` where this
/// process may not mount (not root, no privilege): the test then says so and skips.
pub(super) struct SmallDisk {
    pub(super) dir: tempfile::TempDir,
}

impl SmallDisk {
    pub(super) fn mount(size: &str) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().ok()?;
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        mounted.then_some(SmallDisk { dir })
    }

    pub(super) fn path(&self) -> &std::path::Path {
        self.dir.path()
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.dir.path())
            .status();
    }
}
