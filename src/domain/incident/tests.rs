use super::*;
use crate::domain::OverlapState;

/// A whole second, so that the known answers are round.
fn t(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(1_764_000_000_000 + ms).unwrap()
}

fn write(id: i64, at_ms: i64, outcome: Outcome, token: i64, owner: &str) -> AuditEntry {
    AuditEntry {
        id,
        at: t(at_ms),
        resource: "totals".to_owned(),
        outcome,
        token: Some(token),
        highest_token: token,
        revision: id,
        idempotency_key: None,
        expected_revision: None,
        owner: Some(owner.to_owned()),
        lease: None,
        body_sha256: None,
        body_len: None,
        detail: None,
        caller: None,
        source: None,
    }
}

fn lease(
    id: i64,
    at_ms: i64,
    event: LeaseChange,
    holder: &str,
    token: i64,
    ends_ms: i64,
) -> LeaseEvent {
    LeaseEvent {
        id,
        at: t(at_ms),
        event,
        holder: holder.to_owned(),
        token,
        expires_at: t(ends_ms),
    }
}

fn overlap(first_ms: i64, last_ms: i64, rejected: i64) -> Overlap {
    Overlap {
        id: 7,
        resource: "totals".to_owned(),
        source: None,
        stale_token: 1,
        superseding_token: 2,
        stale_owner: Some("worker-a".to_owned()),
        superseding_owner: Some("worker-b".to_owned()),
        first_seen: t(first_ms),
        last_seen: t(last_ms),
        rejected_writes: rejected,
        state: OverlapState::Closed,
        closed_at: None,
    }
}

/// worker-a holds generation 1 from 0 s (5 s TTL), writes, renews at 2 s (to 7 s) and then
/// stalls; worker-b takes over at 9 s and writes at 10 s; worker-a wakes at 12.5 s and is
/// refused until 15 s. With `late_write`, it also writes once at 8 s, after its lapse.
fn history(late_write: bool) -> (Vec<AuditEntry>, Vec<LeaseEvent>) {
    use LeaseChange::*;
    let mut writes = vec![
        write(1, 0, Outcome::Accepted, 1, "worker-a"),
        write(3, 10_000, Outcome::Accepted, 2, "worker-b"),
        write(4, 12_500, Outcome::Stale, 1, "worker-a"),
        write(5, 13_000, Outcome::Stale, 1, "worker-a"),
        write(6, 15_000, Outcome::Stale, 1, "worker-a"),
    ];
    if late_write {
        writes.push(write(2, 8_000, Outcome::Accepted, 1, "worker-a"));
    }
    let leases = vec![
        lease(1, 0, Acquired, "worker-a", 1, 5_000),
        lease(2, 2_000, Renewed, "worker-a", 1, 7_000),
        lease(3, 9_000, Expired, "worker-a", 1, 7_000),
        lease(4, 9_000, Acquired, "worker-b", 2, 14_000),
    ];
    (writes, leases)
}

fn report(late_write: bool) -> IncidentReport {
    let (writes, leases) = history(late_write);
    facts(&Evidence {
        overlap: &overlap(12_500, 15_000, 3),
        writes: &writes,
        history: &leases,
        now: t(60_000),
    })
}

#[test]
fn a_holder_paused_until_after_its_takeover_is_measured_from_its_last_renewal() {
    let r = report(false);
    assert_eq!(r.stale_last_active_at, Some(t(2_000)), "the renewal at 2 s");
    assert_eq!(r.first_refused_at, Some(t(12_500)));
    assert_eq!(r.pause_ms, Some(10_500));
    assert_eq!(r.stale_grant_lapsed_at, Some(t(7_000)));
    assert_eq!(r.superseding_acquired_at, Some(t(9_000)));
    assert_eq!(r.superseding_first_write_at, Some(t(10_000)));
    assert_eq!(r.accepted_after_lapse, Some(0));
    assert_eq!((r.stale_generation, r.superseding_generation), (1, 2));
    assert_eq!(r.stale_owner.as_deref(), Some("worker-a"));
    assert_eq!(r.superseding_owner.as_deref(), Some("worker-b"));
}

#[test]
fn a_write_after_the_lapse_and_before_the_successors_first_is_counted_and_ends_the_pause() {
    let r = report(true);
    assert_eq!(r.accepted_after_lapse, Some(1));
    assert_eq!(r.stale_last_active_at, Some(t(8_000)));
    assert_eq!(r.pause_ms, Some(4_500));
    assert_eq!(r.stale_grant_lapsed_at, Some(t(7_000)));
}

#[test]
fn a_zombie_retrying_is_timed_from_its_first_refusal_to_its_last() {
    let r = report(false);
    assert_eq!(r.refused, 3);
    assert_eq!(r.last_refused_at, Some(t(15_000)));
    assert_eq!(r.zombie_lifetime_ms, Some(2_500));
}

#[test]
fn a_takeover_before_the_expiry_is_the_lapse() {
    use LeaseChange::*;
    let (writes, _) = history(false);
    // worker-b acquired at 6 s, before worker-a's renewal ran out at 7 s (a release
    // elsewhere, say): generation 1 ended then.
    let leases = vec![
        lease(1, 0, Acquired, "worker-a", 1, 5_000),
        lease(2, 2_000, Renewed, "worker-a", 1, 7_000),
        lease(4, 6_000, Acquired, "worker-b", 2, 11_000),
    ];
    let r = facts(&Evidence {
        overlap: &overlap(12_500, 15_000, 3),
        writes: &writes,
        history: &leases,
        now: t(60_000),
    });
    assert_eq!(r.stale_grant_lapsed_at, Some(t(6_000)));
    // A released grant ends at its release.
    let released = vec![
        lease(1, 0, Acquired, "worker-a", 1, 5_000),
        lease(2, 1_000, Released, "worker-a", 1, 1_000),
        lease(4, 6_000, Acquired, "worker-b", 2, 11_000),
    ];
    let r = facts(&Evidence {
        overlap: &overlap(12_500, 15_000, 3),
        writes: &writes,
        history: &released,
        now: t(60_000),
    });
    assert_eq!(r.stale_grant_lapsed_at, Some(t(1_000)));
}

#[test]
fn without_a_lease_the_history_cannot_tell_the_lapse() {
    let (writes, _) = history(true);
    let r = facts(&Evidence {
        overlap: &overlap(12_500, 15_000, 3),
        writes: &writes,
        history: &[],
        now: t(60_000),
    });
    assert_eq!(r.stale_grant_lapsed_at, None);
    assert_eq!(r.superseding_acquired_at, None);
    assert_eq!(r.accepted_after_lapse, None);
    assert_eq!(r.stale_last_active_at, Some(t(8_000)));
    assert_eq!(r.pause_ms, Some(4_500));
    let json = serde_json::to_value(&r).unwrap();
    assert!(json["stale_grant_lapsed_at"].is_null());
    assert!(json["accepted_after_lapse"].is_null());
}

#[test]
fn a_grant_still_running_has_not_lapsed() {
    let (writes, leases) = history(false);
    let r = facts(&Evidence {
        overlap: &overlap(3_000, 3_500, 1),
        writes: &writes[..1],
        history: &leases[..2],
        now: t(4_000),
    });
    assert_eq!(r.stale_grant_lapsed_at, None);
    // The audit's own times count as time passed, whatever the reader's clock says.
    let r = facts(&Evidence {
        overlap: &overlap(12_500, 15_000, 3),
        writes: &writes,
        history: &leases[..2],
        now: t(4_000),
    });
    assert_eq!(r.stale_grant_lapsed_at, Some(t(7_000)));
}

#[test]
fn an_external_locks_holder_lapses_when_its_successor_is_first_seen() {
    use LeaseChange::Observed;
    let (writes, _) = history(false);
    let observed = vec![
        lease(1, 0, Observed, "jobs/a", 1, 3_000),
        lease(2, 9_500, Observed, "jobs/b", 2, 15_000),
    ];
    let r = facts(&Evidence {
        overlap: &overlap(12_500, 15_000, 3),
        writes: &writes,
        history: &observed,
        now: t(60_000),
    });
    assert_eq!(r.stale_grant_lapsed_at, Some(t(9_500)));
    assert_eq!(r.superseding_acquired_at, Some(t(9_500)));
    assert_eq!(
        r.stale_last_active_at,
        Some(t(0)),
        "sightings are not activity"
    );
}

#[test]
fn a_watched_overlap_without_rows_keeps_the_overlaps_own_figures() {
    let r = facts(&Evidence {
        overlap: &overlap(12_500, 15_000, 3),
        writes: &[],
        history: &[],
        now: t(60_000),
    });
    assert_eq!(r.first_refused_at, Some(t(12_500)));
    assert_eq!(r.last_refused_at, Some(t(15_000)));
    assert_eq!(
        (r.refused, r.zombie_lifetime_ms, r.pause_ms),
        (3, Some(2_500), None)
    );
}

#[test]
fn the_window_starts_before_the_last_activity_and_ends_after_the_last_refusal() {
    let r = report(false);
    assert_eq!(window(&r), (t(1_000), t(16_000)));
}

#[test]
fn renewals_fold_into_one_line_and_writes_stay_apart() {
    use LeaseChange::*;
    let mut leases = vec![lease(1, 0, Acquired, "worker-a", 1, 5_000)];
    for i in 0..97 {
        leases.push(lease(2 + i, 100 + i * 10, Renewed, "worker-a", 1, 6_000));
    }
    let writes = vec![
        write(1, 2_000, Outcome::Accepted, 1, "worker-a"),
        write(2, 2_001, Outcome::Accepted, 1, "worker-a"),
    ];
    let lines = condense(&writes, &leases, Folding::Renewals);
    assert_eq!(lines.len(), 4, "{lines:#?}");
    // A write between renewals does not break their run.
    let mut between = writes.clone();
    between.push(write(3, 500, Outcome::Accepted, 1, "worker-a"));
    let lines = condense(&between, &leases, Folding::Renewals);
    assert_eq!(lines.len(), 5, "{lines:#?}");
    assert_eq!((lines[1].event.as_str(), lines[1].count), ("renewed", 97));
    assert_eq!((lines[1].event.as_str(), lines[1].count), ("renewed", 97));
    assert_eq!(lines[1].at, t(100));
    assert_eq!(lines[1].last_at, Some(t(1_060)));
    assert_eq!((lines[2].count, lines[3].count), (1, 1));
    let alike = condense(&writes, &leases, Folding::Alike);
    assert_eq!(alike.len(), 3);
    assert_eq!((alike[2].event.as_str(), alike[2].count), ("accepted", 2));
}

#[test]
fn a_summary_counts_repeat_offenders_and_takes_nearest_rank_percentiles() {
    let mut reports = Vec::new();
    for (i, late) in [false, true, false].into_iter().enumerate() {
        let mut r = report(late);
        r.incident = i as i64;
        reports.push(r);
    }
    reports[2].stale_owner = Some("worker-c".to_owned());
    reports[2].accepted_after_lapse = None;
    let s = summarise(&reports);
    assert_eq!(s.incidents, 3);
    assert_eq!(
        s.by_owner,
        vec![
            Count {
                name: "worker-a".to_owned(),
                incidents: 2
            },
            Count {
                name: "worker-c".to_owned(),
                incidents: 1
            },
        ]
    );
    assert_eq!(s.by_resource[0].incidents, 3);
    // Pauses 10.5 s, 4.5 s, 10.5 s.
    assert_eq!(
        s.pause_ms,
        Percentiles {
            count: 3,
            p50: Some(10_500),
            p90: Some(10_500),
            p99: Some(10_500),
            max: Some(10_500)
        }
    );
    assert_eq!(Percentiles::of(vec![4, 1, 3, 2]).p50, Some(2));
    assert_eq!(Percentiles::of(vec![]).p50, None);
    assert_eq!(s.accepted_after_lapse, 1);
    assert_eq!(s.lapse_unknown, 1);
}
