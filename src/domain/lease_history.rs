//! A lease's history, and the question an incident asks of it: who held generation G at time
//! T, and was that grant still valid then?

use super::audit::{deserialize_rfc3339, serialize_rfc3339_micros};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// What happened to a grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LeaseChange {
    Acquired,
    Renewed,
    Released,
    /// Recorded when the next grant was made (the expiry itself writes nothing); its
    /// `expires_at` is when the grant lapsed.
    Expired,
    /// A holder of an external lock (`etcd:PREFIX`) as writes observed it: `at` is when it was
    /// first seen holding, `expires_at` when last seen. The lock service, not the daemon, made
    /// and ends the grant, so both are sightings, not its bounds.
    Observed,
}

impl LeaseChange {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "acquired" => Some(Self::Acquired),
            "renewed" => Some(Self::Renewed),
            "released" => Some(Self::Released),
            "expired" => Some(Self::Expired),
            "observed" => Some(Self::Observed),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Acquired => "acquired",
            Self::Renewed => "renewed",
            Self::Released => "released",
            Self::Expired => "expired",
            Self::Observed => "observed",
        }
    }

    /// Whether the event starts a generation's history: a grant, or its first sighting.
    pub fn begins_generation(self) -> bool {
        matches!(self, Self::Acquired | Self::Observed)
    }
}

/// One entry of a lease's history: `GET /v1/lease-history/{name}` sends these.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseEvent {
    pub id: i64,
    #[serde(
        serialize_with = "serialize_rfc3339_micros",
        deserialize_with = "deserialize_rfc3339"
    )]
    pub at: DateTime<Utc>,
    pub event: LeaseChange,
    pub holder: String,
    pub token: i64,
    /// When the grant ends as of this event: the new expiry for `acquired` and `renewed`, the
    /// release time for `released`, the lapse for `expired`.
    #[serde(
        serialize_with = "serialize_rfc3339_micros",
        deserialize_with = "deserialize_rfc3339"
    )]
    pub expires_at: DateTime<Utc>,
}

/// Where generation G's grant stood at time T.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// T is before G was granted.
    NotYetGranted,
    /// Valid at T, until `until` (as last renewed before T).
    Held { until: DateTime<Utc> },
    /// The grant had run out at `at`, before T, without being renewed.
    Lapsed { at: DateTime<Utc> },
    /// The holder gave it up at `at`, before T.
    Released { at: DateTime<Utc> },
    /// An external lock's holder (`observed`) seen holding both before and after T, until
    /// `until` at least: one key with one create revision cannot have let go in between.
    Seen { until: DateTime<Utc> },
    /// An external lock's holder last seen holding at `at`, before T: whether it still held
    /// the lock at T is the lock service's to say.
    LastSeen { at: DateTime<Utc> },
    /// T is before the external lock's holder was first seen holding it.
    NotYetSeen,
}

/// The answer to "who held generation G at time T".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenure {
    pub token: i64,
    pub holder: String,
    pub granted_at: DateTime<Utc>,
    pub standing: Standing,
    /// The lease's newest grant at T when it is a later generation than G: who held the lease
    /// instead.
    pub successor: Option<(String, i64)>,
}

/// Who held generation `token` at `at`, from the lease's history (in any order). `None` when
/// the history does not show that generation being granted (another lease's token, or pruned).
pub fn tenure_at(events: &[LeaseEvent], token: i64, at: DateTime<Utc>) -> Option<Tenure> {
    let mut ordered: Vec<&LeaseEvent> = events.iter().collect();
    ordered.sort_by_key(|e| (e.at, e.id));
    let granted = ordered
        .iter()
        .find(|e| e.token == token && e.event.begins_generation())?;
    let successor = ordered
        .iter()
        .rev()
        .find(|e| e.event.begins_generation() && e.at <= at && e.token > token)
        .map(|e| (e.holder.clone(), e.token));
    if granted.event == LeaseChange::Observed {
        return Some(Tenure {
            token,
            holder: granted.holder.clone(),
            granted_at: granted.at,
            standing: sighting(granted, at),
            successor,
        });
    }
    if at < granted.at {
        return Some(Tenure {
            token,
            holder: granted.holder.clone(),
            granted_at: granted.at,
            standing: Standing::NotYetGranted,
            successor,
        });
    }
    // The grant's end as known at T: the last acquire or renewal before T set it, a release
    // before T cut it short. An `expired` row is written later, at the next grant, so it says
    // nothing the renewals did not.
    let mut until = granted.expires_at;
    let mut released = None;
    for event in ordered.iter().filter(|e| e.token == token && e.at <= at) {
        match event.event {
            LeaseChange::Acquired | LeaseChange::Renewed => until = event.expires_at,
            LeaseChange::Released => released = Some(event.expires_at),
            LeaseChange::Expired | LeaseChange::Observed => {}
        }
    }
    let standing = match released {
        Some(released) => Standing::Released { at: released },
        None if until <= at => Standing::Lapsed { at: until },
        None => Standing::Held { until },
    };
    Some(Tenure {
        token,
        holder: granted.holder.clone(),
        granted_at: granted.at,
        standing,
        successor,
    })
}

/// Where an observed holder stood at `at`, by its sightings alone.
fn sighting(observed: &LeaseEvent, at: DateTime<Utc>) -> Standing {
    if at < observed.at {
        Standing::NotYetSeen
    } else if at <= observed.expires_at {
        Standing::Seen {
            until: observed.expires_at,
        }
    } else {
        Standing::LastSeen {
            at: observed.expires_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_764_000_000 + seconds, 0).unwrap()
    }

    fn event(
        id: i64,
        at: i64,
        change: LeaseChange,
        holder: &str,
        token: i64,
        ends: i64,
    ) -> LeaseEvent {
        LeaseEvent {
            id,
            at: t(at),
            event: change,
            holder: holder.to_owned(),
            token,
            expires_at: t(ends),
        }
    }

    /// worker-a holds generation 1 from 0 s, renews at 2 s to 7 s, then pauses; worker-b
    /// acquires generation 2 at 9 s (the `expired` row of 1 written then), releases it at 12 s.
    fn history() -> Vec<LeaseEvent> {
        use LeaseChange::*;
        vec![
            event(5, 12, Released, "worker-b", 2, 12),
            event(4, 9, Acquired, "worker-b", 2, 14),
            event(3, 9, Expired, "worker-a", 1, 7),
            event(2, 2, Renewed, "worker-a", 1, 7),
            event(1, 0, Acquired, "worker-a", 1, 5),
        ]
    }

    #[test]
    fn a_generation_is_held_between_its_grant_and_its_last_renewals_expiry() {
        let tenure = tenure_at(&history(), 1, t(6)).unwrap();
        assert_eq!(tenure.holder, "worker-a");
        assert_eq!(tenure.granted_at, t(0));
        // The renewal at 2 s carried it past the first expiry at 5 s.
        assert_eq!(tenure.standing, Standing::Held { until: t(7) });
        assert_eq!(tenure.successor, None);
        assert_eq!(
            tenure_at(&history(), 1, t(3)).unwrap().standing,
            Standing::Held { until: t(7) }
        );
    }

    #[test]
    fn a_zombie_writing_after_its_grant_ran_out_is_told_it_lapsed_and_who_took_over() {
        let before_successor = tenure_at(&history(), 1, t(8)).unwrap();
        assert_eq!(before_successor.standing, Standing::Lapsed { at: t(7) });
        assert_eq!(before_successor.successor, None);
        let after = tenure_at(&history(), 1, t(10)).unwrap();
        assert_eq!(after.standing, Standing::Lapsed { at: t(7) });
        assert_eq!(after.successor, Some(("worker-b".to_owned(), 2)));
    }

    #[test]
    fn a_released_grant_and_one_not_yet_made() {
        let released = tenure_at(&history(), 2, t(13)).unwrap();
        assert_eq!(released.holder, "worker-b");
        assert_eq!(released.standing, Standing::Released { at: t(12) });
        assert_eq!(
            tenure_at(&history(), 2, t(11)).unwrap().standing,
            Standing::Held { until: t(14) }
        );
        let early = tenure_at(&history(), 2, t(4)).unwrap();
        assert_eq!(early.standing, Standing::NotYetGranted);
        assert_eq!(early.granted_at, t(9));
    }

    /// etcd's holders as sighted: key a (generation 10) seen from 0 s to 4 s, key b
    /// (generation 20) from 6 s to 8 s.
    #[test]
    fn an_observed_holder_is_held_between_its_sightings_and_unknown_after() {
        use LeaseChange::Observed;
        let events = vec![
            event(2, 6, Observed, "jobs/b", 20, 8),
            event(1, 0, Observed, "jobs/a", 10, 4),
        ];
        let at = |token, seconds| tenure_at(&events, token, t(seconds)).unwrap();
        assert_eq!(at(10, 2).holder, "jobs/a");
        assert_eq!(at(10, 2).standing, Standing::Seen { until: t(4) });
        assert_eq!(at(10, 5).standing, Standing::LastSeen { at: t(4) });
        assert_eq!(at(10, 5).successor, None);
        assert_eq!(at(10, 7).successor, Some(("jobs/b".to_owned(), 20)));
        assert_eq!(at(20, 3).standing, Standing::NotYetSeen);
        assert_eq!(at(20, 8).standing, Standing::Seen { until: t(8) });
    }

    #[test]
    fn a_generation_the_history_never_granted_has_no_answer() {
        assert_eq!(tenure_at(&history(), 3, t(10)), None);
        assert_eq!(tenure_at(&[], 1, t(10)), None);
    }

    #[test]
    fn changes_read_back_what_they_write() {
        use LeaseChange::*;
        for change in [Acquired, Renewed, Released, Expired, Observed] {
            assert_eq!(LeaseChange::parse(change.as_str()), Some(change));
            let json = serde_json::to_string(&change).unwrap();
            assert_eq!(json, format!("\"{}\"", change.as_str()));
        }
        assert_eq!(LeaseChange::parse("stolen"), None);
    }
}
