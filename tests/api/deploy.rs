//! What a user deploys from `assets/`: the systemd unit passes systemd's own checker.

use std::process::Command;

#[cfg_attr(
    not(fencewatch_systemd_analyze),
    ignore = "needs systemd-analyze on the PATH"
)]
#[test]
fn the_systemd_unit_passes_systemd_analyze_verify() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let unit = std::fs::read_to_string(root.join("assets/fencewatch.service")).unwrap();
    assert!(unit.contains("ExecStart=/usr/local/bin/fencewatch serve"));
    // The checker insists that the command exists: point it at the binary under test.
    let unit = unit.replace(
        "/usr/local/bin/fencewatch",
        env!("CARGO_BIN_EXE_fencewatch"),
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fencewatch.service");
    std::fs::write(&path, unit).unwrap();
    let output = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    // It only warns about directives it cannot parse: any warning is a defect of the unit.
    assert!(stderr.trim().is_empty(), "{stderr}");
}
