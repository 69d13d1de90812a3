//! The file `audit verify --checkpoint` keeps: every chain's verified end, so that the next run
//! reads only the rows after it. The audit commands open the database read-only, and the
//! record is the auditor's anyway: a file beside them rather than a table the audited write.

use crate::store::VerifiedPositions;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

const FORMAT: &str = "fencewatch-verified-v1";

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("cannot read the checkpoint file {0}: {1}")]
    Read(PathBuf, #[source] std::io::Error),
    #[error("the checkpoint file {0} is not one `audit verify` wrote: {1}")]
    Malformed(PathBuf, String),
    #[error("cannot write the checkpoint file {0}: {1}")]
    Write(PathBuf, #[source] std::io::Error),
}

#[derive(Debug, Serialize, Deserialize)]
struct Record {
    format: String,
    /// When the run that wrote it ended (RFC 3339), for the auditor.
    verified_at: String,
    chains: VerifiedPositions,
}

/// The positions in `path`, or none when there is no such file yet.
pub fn read(path: &Path) -> Result<Option<VerifiedPositions>, RecordError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(RecordError::Read(path.to_owned(), error)),
    };
    let record: Record = serde_json::from_str(&text)
        .map_err(|e| RecordError::Malformed(path.to_owned(), e.to_string()))?;
    if record.format != FORMAT {
        return Err(RecordError::Malformed(
            path.to_owned(),
            format!("format {:?} where {FORMAT:?} was expected", record.format),
        ));
    }
    Ok(Some(record.chains))
}

/// Replaces `path` with `chains`: written beside it and renamed over it, so that a crash leaves
/// the old record or the new one, never half of one.
pub fn write(
    path: &Path,
    chains: VerifiedPositions,
    verified_at: String,
) -> Result<(), RecordError> {
    let error = |e| RecordError::Write(path.to_owned(), e);
    let record = Record {
        format: FORMAT.to_owned(),
        verified_at,
        chains,
    };
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    let temporary = PathBuf::from(temporary);
    let mut file = std::io::BufWriter::new(std::fs::File::create(&temporary).map_err(error)?);
    serde_json::to_writer(&mut file, &record).map_err(|e| error(e.into()))?;
    file.write_all(b"\n").map_err(error)?;
    let file = file.into_inner().map_err(|e| error(e.into_error()))?;
    file.sync_all().map_err(error)?;
    std::fs::rename(&temporary, path).map_err(error)
}
