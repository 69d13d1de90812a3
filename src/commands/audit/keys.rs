//! The witness's key files: made by `audit keygen`, read by `serve --audit-signing-key`,
//! `audit witness`, `audit prune --key` and `audit verify --public-key`.

use crate::domain::witness::{PublicKey, SigningKey};
use anyhow::Context;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes a new key pair to `out` (private, readable by its owner only) and `out.pub`; refuses
/// to replace either, since a replaced key orphans every checkpoint it signed.
pub fn generate(out: &Path) -> anyhow::Result<PathBuf> {
    let public_path = public_path(out);
    for path in [out, public_path.as_path()] {
        if path.exists() {
            anyhow::bail!("{} exists: not replacing a key", path.display());
        }
    }
    let generated = SigningKey::generate()?;
    write_new(out, generated.private_pem.as_bytes(), 0o600)?;
    write_new(&public_path, generated.public_pem.as_bytes(), 0o644)?;
    Ok(public_path)
}

fn public_path(private: &Path) -> PathBuf {
    let mut name = private.as_os_str().to_owned();
    name.push(".pub");
    PathBuf::from(name)
}

fn write_new(path: &Path, contents: &[u8], mode: u32) -> anyhow::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    file.write_all(contents)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("cannot write {}", path.display()))
}

/// The signing key in `path` (PEM PKCS#8, as `audit keygen` writes it).
pub fn signing_key(path: &Path) -> anyhow::Result<SigningKey> {
    let text =
        std::fs::read(path).with_context(|| format!("cannot read the key {}", path.display()))?;
    SigningKey::from_pem(&text).with_context(|| format!("{} is not a signing key", path.display()))
}

/// The public key in `path` (PEM, as `audit keygen` writes FILE.pub).
pub fn public_key(path: &Path) -> anyhow::Result<PublicKey> {
    let text = std::fs::read(path)
        .with_context(|| format!("cannot read the public key {}", path.display()))?;
    PublicKey::from_pem(&text)
        .with_context(|| format!("{} is not an Ed25519 public key", path.display()))
}
