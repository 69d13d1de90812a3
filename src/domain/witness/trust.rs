//! What a set of verified checkpoints vouches for, chain by chain: the furthest head any of
//! them saw (the audit must still hold it) and the furthest start (a prune behind it must be
//! signed). Each checkpoint's signer checked that the audit still held the one before it
//! (`app::witness`), so the furthest head carries every earlier one with it: the chain's
//! hashes bind each row to all before it.

use super::checkpoint::{Checkpoint, Link};
use std::collections::BTreeMap;

/// What the checkpoints say about one chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Witnessed {
    pub head: Link,
    pub start: Option<Link>,
    /// When the checkpoint that saw `head` was signed.
    pub at_us: i64,
}

/// Everything the checkpoints read so far vouch for.
#[derive(Debug, Clone, Default)]
pub struct WitnessedAudit {
    pub chains: BTreeMap<String, Witnessed>,
    /// Checkpoints read.
    pub checkpoints: u64,
    /// The latest checkpoint's time and row count.
    pub latest: Option<(i64, u64)>,
    /// Two checkpoints that give one position of a chain different hashes: two histories were
    /// signed, so one of them was rewritten (resource, position).
    pub conflicts: Vec<(String, i64)>,
    /// The checkpoints already read (the witness file's and the database's copies of one are
    /// the same checkpoint), by signing time and key.
    seen: std::collections::HashSet<(i64, String)>,
}

impl WitnessedAudit {
    pub fn absorb(&mut self, checkpoint: &Checkpoint) {
        if !self.seen.insert((checkpoint.at_us, checkpoint.key.clone())) {
            return;
        }
        self.checkpoints += 1;
        if self
            .latest
            .is_none_or(|(at_us, _)| checkpoint.at_us >= at_us)
        {
            self.latest = Some((checkpoint.at_us, checkpoint.rows));
        }
        for mark in &checkpoint.chains {
            let Some(known) = self.chains.get_mut(&mark.resource) else {
                self.chains.insert(
                    mark.resource.clone(),
                    Witnessed {
                        head: mark.head.clone(),
                        start: mark.start.clone(),
                        at_us: checkpoint.at_us,
                    },
                );
                continue;
            };
            if mark.head.seq == known.head.seq && mark.head.hash != known.head.hash {
                self.conflicts.push((mark.resource.clone(), mark.head.seq));
            }
            if mark.head.seq > known.head.seq {
                known.head = mark.head.clone();
                known.at_us = checkpoint.at_us;
            }
            if let Some(start) = &mark.start {
                if known.start.as_ref().is_none_or(|s| start.seq > s.seq) {
                    known.start = Some(start.clone());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::witness::checkpoint::ChainMark;
    use crate::domain::witness::keys::SigningKey;

    fn link(seq: i64, hash: &str) -> Link {
        Link {
            seq,
            hash: hash.into(),
            id: None,
        }
    }

    fn checkpoint(at_us: i64, chains: Vec<(&str, Option<Link>, Link)>) -> Checkpoint {
        let generated = SigningKey::generate().unwrap();
        let key = SigningKey::from_pem(generated.private_pem.as_bytes()).unwrap();
        Checkpoint::new(
            at_us,
            chains
                .into_iter()
                .map(|(resource, start, head)| ChainMark {
                    resource: resource.into(),
                    start,
                    head,
                })
                .collect(),
            &key.public(),
        )
    }

    #[test]
    fn the_furthest_head_and_start_win_and_disagreements_are_kept() {
        let mut audit = WitnessedAudit::default();
        audit.absorb(&checkpoint(
            2,
            vec![("a", None, link(5, "a5")), ("b", None, link(1, "b1"))],
        ));
        audit.absorb(&checkpoint(1, vec![("a", None, link(3, "a3"))]));
        audit.absorb(&checkpoint(
            3,
            vec![("a", Some(link(2, "a2")), link(5, "a5"))],
        ));
        let a = &audit.chains["a"];
        assert_eq!(
            (a.head.seq, a.at_us),
            (5, 2),
            "the first checkpoint to see the head"
        );
        assert_eq!(a.start.as_ref().map(|s| s.seq), Some(2));
        assert_eq!(audit.checkpoints, 3);
        assert_eq!(audit.latest, Some((3, 3)));
        assert!(audit.conflicts.is_empty());
        audit.absorb(&checkpoint(4, vec![("b", None, link(1, "forged"))]));
        assert_eq!(audit.conflicts, vec![("b".to_owned(), 1)]);
    }
}
