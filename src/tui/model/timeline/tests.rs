use super::*;
use crate::tui::fixtures::{at, row};

fn page(rows: Vec<Arc<WriteEvent>>, at_end: bool, focus: Option<i64>) -> Page {
    Page {
        rows,
        fetch: Fetch::Around(Anchor::Write { id: 2 }),
        at_start: true,
        at_end,
        focus,
    }
}

fn leased(id: i64, token: i64, lease: Option<&str>) -> Arc<WriteEvent> {
    let mut r = (*row(id, "accepted", "jobs", token, token, "w")).clone();
    r.lease = lease.map(str::to_owned);
    r.at = at(10 - id);
    Arc::new(r)
}

#[test]
fn the_lease_the_writes_name_is_asked_for_once_up_to_the_last_row() {
    let mut timeline = Timeline::new("jobs".into(), None);
    timeline.apply(page(
        vec![
            leased(1, 1, None),
            leased(2, 1, Some("jobs-lease")),
            leased(3, 2, None),
        ],
        false,
        Some(2),
    ));
    let fetch = timeline.lease_request().unwrap();
    assert_eq!(fetch.lease, "jobs-lease");
    // Not at the live end: read back from the last row's time.
    assert_eq!(fetch.until, Some(at(7)));
    assert_eq!(timeline.lease_request(), None, "asked once");
    // A history for another question is not taken.
    let other = LeaseFetch {
        lease: "other".into(),
        until: None,
    };
    timeline.apply_lease(other, Vec::new());
    assert!(timeline.lease.is_none());
    timeline.apply_lease(fetch, Vec::new());
    assert!(timeline.lease.is_some());
}

#[test]
fn runs_of_renewals_are_one_line_each_and_the_cursor_follows_the_selected_row() {
    use crate::domain::lease_history::LeaseChange::*;
    let event = |id, seconds, event, token, until| LeaseEvent {
        id,
        at: at(seconds),
        event,
        holder: format!("w{token}"),
        token,
        expires_at: at(until),
    };
    let trail = LeaseTrail {
        fetch: LeaseFetch {
            lease: "jobs".into(),
            until: None,
        },
        events: vec![
            event(1, 20, Acquired, 1, 19),
            event(2, 19, Renewed, 1, 18),
            event(3, 18, Renewed, 1, 17),
            event(4, 17, Renewed, 1, 16),
            event(5, 14, Expired, 1, 16),
            event(6, 14, Acquired, 2, 13),
            event(7, 13, Renewed, 2, 12),
        ],
    };
    let lines = trail.lines();
    let summary: Vec<_> = lines.iter().map(|l| (l.change, l.token, l.count)).collect();
    assert_eq!(
        summary,
        [
            (Acquired, 1, 1),
            (Renewed, 1, 3),
            (Expired, 1, 1),
            (Acquired, 2, 1),
            (Renewed, 2, 1)
        ]
    );
    // The run's line starts at its first renewal and ends where its last one left the grant.
    assert_eq!((lines[1].at, lines[1].expires_at), (at(19), at(16)));

    let mut timeline = Timeline::new("jobs".into(), None);
    timeline.apply(page(vec![leased(5, 1, Some("jobs"))], true, Some(5)));
    // Row 5 is at 5 s before now: past everything, so the last line.
    assert_eq!(timeline.lease_cursor(&lines), Some(4));
    let mut early = (*leased(5, 1, Some("jobs"))).clone();
    early.at = at(16);
    timeline.rows = vec![Arc::new(early)];
    assert_eq!(timeline.lease_cursor(&lines), Some(1));
}

#[test]
fn a_live_write_of_a_generation_the_history_lacks_asks_for_it_again() {
    use crate::domain::lease_history::LeaseChange::Acquired;
    let mut timeline = Timeline::new("jobs".into(), None);
    timeline.apply(page(vec![leased(1, 1, Some("jobs"))], true, Some(1)));
    let fetch = timeline.lease_request().unwrap();
    assert_eq!(fetch.until, None, "at the live end: the newest history");
    let granted = LeaseEvent {
        id: 1,
        at: at(20),
        event: Acquired,
        holder: "w1".into(),
        token: 1,
        expires_at: at(0),
    };
    timeline.apply_lease(fetch, vec![granted]);
    timeline.append_live(&leased(2, 1, Some("jobs")));
    assert_eq!(timeline.lease_request(), None, "generation 1 is known");
    timeline.append_live(&leased(3, 2, Some("jobs")));
    assert!(timeline.lease_request().is_some(), "generation 2 is new");
}

#[test]
fn an_etcd_locked_writes_holder_is_the_one_seen_holding() {
    use crate::domain::lease_history::{LeaseChange::Observed, Standing};
    let mut timeline = Timeline::new("jobs".into(), None);
    // Row 5 (at 5 s before now) by generation 20 of the lock.
    timeline.apply(page(vec![leased(5, 20, Some("etcd:jobs"))], true, Some(5)));
    let fetch = timeline.lease_request().unwrap();
    assert_eq!(fetch.lease, "etcd:jobs");
    let seen = |id, token: i64, first, last| LeaseEvent {
        id,
        at: at(first),
        event: Observed,
        holder: format!("jobs/{token:x}"),
        token,
        expires_at: at(last),
    };
    timeline.apply_lease(fetch, vec![seen(2, 20, 6, 1), seen(1, 10, 9, 7)]);
    let tenure = timeline.tenure().unwrap();
    assert_eq!(tenure.holder, "jobs/14");
    assert_eq!(tenure.standing, Standing::Seen { until: at(1) });
    let lines = timeline.lease.as_ref().unwrap().lines();
    assert_eq!(lines.len(), 2, "one line per holder seen");
    assert_eq!(timeline.lease_cursor(&lines), Some(1));
}

#[test]
fn writes_naming_no_lease_ask_for_none() {
    let mut timeline = Timeline::new("jobs".into(), None);
    timeline.apply(page(
        vec![leased(1, 1, None), leased(2, 1, None)],
        true,
        None,
    ));
    assert_eq!(timeline.lease_request(), None);
    assert_eq!(timeline.tenure(), None);
}
