//! What a batch keeps of an external lock while it decides its writes: the record so far
//! (`authority_locks`, `authority_holders` in the daemon's database) and each write's view of
//! the lock judged against it and advancing it. Pure: the store reads and writes the record.

use super::authority::{self, AuthorityView};

/// A lock as recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordedLock {
    /// 0 when never seen held.
    pub highest: i64,
    pub holder_key: String,
    /// The Fencing-Owner that first presented `highest`.
    pub owner: Option<String>,
    /// The holders the batch's writes saw, recorded with it (`authority_holders`).
    pub observed: Vec<HolderSighting>,
}

/// One holder of a lock, as one write's read of the lock service saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HolderSighting {
    pub holder_key: String,
    pub generation: i64,
    pub at_us: i64,
}

/// What the batch's decision of one write needs from the lock, and what it leaves recorded.
pub struct Judged {
    pub check: super::LeaseCheck,
    pub note: String,
    pub holder: Option<String>,
    pub shared_generation: bool,
}

/// Judges a write's view of its lock against the record so far (`working`), and advances it.
pub fn judge(
    view: &AuthorityView,
    token: i64,
    owner: Option<&str>,
    strict: bool,
    in_scope: bool,
    working: &mut RecordedLock,
) -> Judged {
    let observation = &view.observation;
    let check = authority::lease_check(observation, working.highest, strict, in_scope);
    let name = view.lock.lease_name();
    let counter = view.lock.kind.counter();
    let mut note = match &observation.holder {
        Some(holder) => format!(
            "{name} held by {} (generation {}) at {counter} {}",
            holder.label(),
            holder.generation,
            observation.revision
        ),
        None if working.highest > 0 => format!(
            "{name} lock lapsed: nobody held it at {counter} {}; generation {} was last held by {}",
            observation.revision, working.highest, working.holder_key
        ),
        None => format!(
            "{name} lock lapsed: nobody held it at {counter} {}",
            observation.revision
        ),
    };
    let shared =
        authority::shared_generation(working.owner.as_deref(), working.highest, token, owner);
    if shared {
        note.push_str(&format!(
            "; anomaly: generation {token} was presented before by owner {}",
            working.owner.as_deref().unwrap_or_default()
        ));
    }
    let highest = authority::advanced(observation, working.highest);
    if highest > working.highest {
        if let Some(holder) = &observation.holder {
            working.holder_key = holder.label();
        }
        working.highest = highest;
        working.owner = None;
    }
    // Whatever the write's fate, its read of the lock is a fact about who held it then.
    if let Some(holder) = &observation.holder {
        working.observed.push(HolderSighting {
            holder_key: holder.label(),
            generation: holder.generation,
            at_us: view.observed_at_us,
        });
    }
    // The first owner to present the holder's generation is the one it is recorded for; a
    // write refused as out of scope claims nothing.
    if in_scope && token == working.highest && working.owner.is_none() {
        working.owner = owner.map(str::to_owned);
    }
    Judged {
        check,
        note,
        holder: observation.holder.as_ref().map(|h| h.label()),
        shared_generation: shared,
    }
}
