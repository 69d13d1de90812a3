//! A signed checkpoint of the audit: where every chain starts and ends, signed so that a copy
//! kept outside the database (the witness file) can later prove what the audit held. One JSON
//! object a line: `{"checkpoint": {…}, "signature": "…"}`, the signature over the checkpoint's
//! own serialization, which is canonical (fields in a fixed order, chains sorted by resource).

use super::keys::{PublicKey, SigningKey};
use super::WitnessError;
use serde::{Deserialize, Serialize};

/// The format a checkpoint names, so that a later encoding cannot be mistaken for this one.
pub const FORMAT: &str = "fencewatch-witness-v1";
/// What a prune signs for each chain start it moves (`start_message`).
const START_FORMAT: &str = "fencewatch-prune-v1";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    pub format: String,
    pub at_us: i64,
    /// The chained rows the audit holds: every chain's head position less its start.
    pub rows: u64,
    pub chains: Vec<ChainMark>,
    /// The signing key's public half, in hex: which key a verifier needs.
    pub key: String,
}

/// One chain: where a prune left it starting (none: from its first row) and its head.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainMark {
    pub resource: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<Link>,
    pub head: Link,
}

/// A position in a chain and the hash there; for a head, the audit row's id when one remains.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    pub seq: i64,
    pub hash: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SignedLine {
    checkpoint: Checkpoint,
    signature: String,
}

impl Checkpoint {
    /// A checkpoint of `chains` (sorted here), to be signed by `key`.
    pub fn new(at_us: i64, mut chains: Vec<ChainMark>, key: &PublicKey) -> Self {
        chains.sort_by(|a, b| a.resource.cmp(&b.resource));
        let rows = chains
            .iter()
            .map(|chain| {
                let start = chain.start.as_ref().map_or(0, |start| start.seq);
                u64::try_from(chain.head.seq.saturating_sub(start)).unwrap_or(0)
            })
            .sum();
        Self {
            format: FORMAT.to_owned(),
            at_us,
            rows,
            chains,
            key: key.to_hex(),
        }
    }

    /// The witness line: this checkpoint and its signature, as one line of JSON (no newline).
    pub fn sign(&self, key: &SigningKey) -> Result<String, WitnessError> {
        let signature = key.sign(&self.canonical()?);
        serde_json::to_string(&SignedLine {
            checkpoint: self.clone(),
            signature,
        })
        .map_err(|e| WitnessError::Malformed(e.to_string()))
    }

    /// A witness line's checkpoint, refused unless `key` signed exactly what it says.
    pub fn read(line: &str, key: &PublicKey) -> Result<Self, WitnessError> {
        let signed: SignedLine = serde_json::from_str(line.trim_end())
            .map_err(|e| WitnessError::Malformed(e.to_string()))?;
        let checkpoint = signed.checkpoint;
        if checkpoint.format != FORMAT {
            return Err(WitnessError::Malformed(format!(
                "format {:?}, not {FORMAT:?}",
                checkpoint.format
            )));
        }
        if checkpoint.key != key.to_hex() {
            return Err(WitnessError::WrongKey {
                signed_by: checkpoint.key,
            });
        }
        if !key.verifies(&checkpoint.canonical()?, &signed.signature) {
            return Err(WitnessError::BadSignature);
        }
        Ok(checkpoint)
    }

    fn canonical(&self) -> Result<Vec<u8>, WitnessError> {
        serde_json::to_vec(self).map_err(|e| WitnessError::Malformed(e.to_string()))
    }
}

/// What a prune signs when it moves a chain's start to (`seq`, `hash`): evidence that the rows
/// before it went by a prune that held the key, not by someone deleting them.
pub fn start_message(resource: &str, seq: i64, hash: &str) -> Vec<u8> {
    // A tuple of strings and an integer always serializes.
    serde_json::to_vec(&(START_FORMAT, resource, seq, hash)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> SigningKey {
        let generated = SigningKey::generate().unwrap();
        SigningKey::from_pem(generated.private_pem.as_bytes()).unwrap()
    }

    fn link(seq: i64, hash: &str) -> Link {
        Link {
            seq,
            hash: hash.into(),
            id: Some(seq * 10),
        }
    }

    fn checkpoint(key: &SigningKey) -> Checkpoint {
        Checkpoint::new(
            1_700_000_000_000_000,
            vec![
                ChainMark {
                    resource: "b".into(),
                    start: Some(link(3, "cc")),
                    head: link(10, "dd"),
                },
                ChainMark {
                    resource: "a".into(),
                    start: None,
                    head: link(5, "aa"),
                },
            ],
            &key.public(),
        )
    }

    #[test]
    fn a_signed_line_reads_back_and_counts_rows() {
        let key = key();
        let line = checkpoint(&key).sign(&key).unwrap();
        assert!(!line.contains('\n'));
        let read = Checkpoint::read(&line, &key.public()).unwrap();
        assert_eq!(read, checkpoint(&key));
        assert_eq!(read.rows, 5 + 7);
        assert_eq!(read.chains[0].resource, "a", "sorted by resource");
    }

    #[test]
    fn an_edited_line_or_another_key_is_refused() {
        let key = key();
        let line = checkpoint(&key).sign(&key).unwrap();
        let edited = line.replace("\"seq\":10", "\"seq\":9");
        assert_ne!(edited, line);
        assert!(matches!(
            Checkpoint::read(&edited, &key.public()),
            Err(WitnessError::BadSignature)
        ));
        let other = self::key();
        assert!(matches!(
            Checkpoint::read(&line, &other.public()),
            Err(WitnessError::WrongKey { .. })
        ));
        // Claiming the other key does not help: its signature does not verify.
        let claimed = line.replace(&key.public().to_hex(), &other.public().to_hex());
        assert!(matches!(
            Checkpoint::read(&claimed, &other.public()),
            Err(WitnessError::BadSignature)
        ));
        assert!(matches!(
            Checkpoint::read("{\"checkpoint\":1}", &key.public()),
            Err(WitnessError::Malformed(_))
        ));
        let extra = line.replacen("{\"checkpoint\":{", "{\"checkpoint\":{\"x\":1,", 1);
        assert!(matches!(
            Checkpoint::read(&extra, &key.public()),
            Err(WitnessError::Malformed(_))
        ));
    }

    #[test]
    fn a_start_signature_covers_resource_position_and_hash() {
        let key = key();
        let signature = key.sign(&start_message("a", 3, "cc"));
        assert!(key
            .public()
            .verifies(&start_message("a", 3, "cc"), &signature));
        assert!(!key
            .public()
            .verifies(&start_message("b", 3, "cc"), &signature));
        assert!(!key
            .public()
            .verifies(&start_message("a", 4, "cc"), &signature));
        assert!(!key
            .public()
            .verifies(&start_message("a", 3, "cd"), &signature));
    }
}
