//! `audit keygen` and `audit witness`: the witness's key pair, and a checkpoint signed from
//! cron for a daemon that holds no key (docs/guarantees.md).

use super::keys;
use crate::app::witness::{SignOutcome, Signer};
use crate::store::Store;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

pub(super) fn keygen(out: &Path) -> anyhow::Result<ExitCode> {
    let public = keys::generate(out)?;
    println!(
        "wrote {} (the signing key: keep it from the database's administrators) and {} \
         (for audit verify --public-key)",
        out.display(),
        public.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Signs the next checkpoint and prints its line; exit 1 (nothing signed) when the audit no
/// longer holds what the last checkpoint did.
pub(super) async fn sign(store: Store, key: &Path) -> anyhow::Result<ExitCode> {
    let mut signer = Signer::new(store, Arc::new(keys::signing_key(key)?));
    signer.resume(None).await?;
    match signer.checkpoint(false).await? {
        SignOutcome::Signed { line, .. } => {
            writeln!(std::io::stdout().lock(), "{line}")?;
            Ok(ExitCode::SUCCESS)
        }
        SignOutcome::Unchanged => Ok(ExitCode::SUCCESS),
        SignOutcome::Refused(breaches) => {
            let mut err = std::io::stderr().lock();
            writeln!(
                err,
                "not signing: the audit no longer holds what the last checkpoint did"
            )?;
            for breach in &breaches {
                writeln!(err, "{}", super::verify::describe(breach))?;
            }
            Ok(ExitCode::FAILURE)
        }
    }
}
