use super::*;
use crate::tui::fixtures::{incident, row, write, NOW};
use std::time::Duration;
use timeline::Page;

#[test]
fn events_build_the_picture() {
    let model = incident();
    assert_eq!(model.connection, ConnectionState::Live);
    assert_eq!(model.open_overlaps(), 1);
    assert_eq!(model.firing_alerts(), 1);
    assert_eq!(model.total(Outcome::Accepted), 1200);
    assert_eq!(model.rejections.len(), 2);
    assert_eq!(
        model.rejections[0].outcome,
        Outcome::Superseded,
        "newest first"
    );
    assert_eq!(model.last_write_id, Some(8));
    assert_eq!(model.data_age(), Some(2));
    let series = model.series(60);
    assert_eq!(series.accepted.len(), 60);
    assert_eq!((series.total_accepted, series.total_rejected), (6, 2));
    // The writes were 2 s old: two columns from the right edge.
    assert_eq!(series.accepted[57], 6);
    assert_eq!(series.rejection_percent(), Some(25.0));
}

/// A watched database's row has that database's id: it neither counts as a repeat of the
/// daemon's ids nor moves where a reconnect resumes; its overlap and rejection open no
/// timeline (the daemon's audit does not hold them), and its alert keeps apart from the
/// daemon's of the same rule and resource.
#[test]
fn a_watched_databases_rows_stand_apart_from_the_daemons_order() {
    let mut model = incident();
    for msg in crate::tui::fixtures::watched_messages() {
        model.update(msg);
    }
    assert_eq!(model.last_write_id, Some(8), "id 3 of shop is no daemon id");
    assert_eq!(model.rejections[0].source.as_deref(), Some("shop"));
    assert_eq!(model.sources, ["shop"]);
    assert_eq!(
        model.total(Outcome::Accepted),
        1240,
        "the daemon's and shop's"
    );
    assert!(model.shows_sources());
    model.update(Msg::Key(Action::Show(View::Rejections)));
    assert_eq!(model.update(Msg::Key(Action::Open)), None);
    assert_eq!(model.view, View::Rejections);
    model.update(Msg::Key(Action::Show(View::Overlaps)));
    let shop = model
        .visible_overlaps()
        .iter()
        .position(|o| o.overlap.source.is_some())
        .unwrap();
    model.selected = shop;
    assert_eq!(model.update(Msg::Key(Action::Open)), None);
    let mut own = model
        .alerts
        .values()
        .find(|a| a.source.is_some())
        .cloned()
        .unwrap();
    own.source = None;
    model.update(Msg::Event(DaemonEvent::Alert(Arc::new(own))));
    assert_eq!(
        model
            .alerts
            .values()
            .filter(|a| a.resource.as_deref() == Some("orders/eu"))
            .count(),
        2
    );
}

#[test]
fn a_reset_is_neither_a_write_nor_a_rejection() {
    let mut model = incident();
    let before = model.series(60);
    let rejections = model.rejections.len();
    model.update(write(9, "reset", "accounts/totals", 5, 5, "ops"));
    let after = model.series(60);
    assert_eq!(
        (after.total_accepted, after.total_rejected),
        (before.total_accepted, before.total_rejected)
    );
    assert_eq!(model.rejections.len(), rejections);
    assert_eq!(model.last_write_id, Some(9), "seen all the same");
}

#[test]
fn an_overlap_event_replaces_its_earlier_state() {
    let mut model = incident();
    let grown = crate::tui::fixtures::overlap(1, "accounts/totals", 7, 8, 9, "closed");
    model.update(Msg::Event(DaemonEvent::Overlap(Arc::new(grown))));
    assert_eq!(model.overlaps.len(), 2);
    assert_eq!(model.overlaps[&1].overlap.rejected_writes, 9);
    assert_eq!(model.open_overlaps(), 0);
}

#[test]
fn pausing_freezes_the_charts_and_holds_events() {
    let mut model = incident();
    model.update(Msg::Key(Action::Pause));
    let frozen = model.series(60);
    model.update(Msg::Tick { now: NOW + 30 });
    model.update(write(9, "stale", "accounts/totals", 6, 8, "worker-6"));
    assert!(model.paused());
    assert_eq!((model.rejections.len(), model.held.len()), (2, 1));
    assert_eq!(
        model.series(60),
        frozen,
        "the chart does not move while paused"
    );
    model.update(Msg::Key(Action::Pause));
    assert_eq!((model.rejections.len(), model.held.len()), (3, 0));
    // The held write counts at its own second, not at the resume.
    let resumed = model.series(60);
    assert_eq!(resumed.rejected[59], 0);
    assert_eq!(resumed.total_rejected, 3);
}

#[test]
fn a_replayed_stream_draws_the_same_charts_as_the_live_one() {
    let rows: Vec<_> = (1..=50)
        .map(|id| {
            let mut r = (*row(
                id,
                if id % 5 == 0 { "stale" } else { "accepted" },
                "a",
                1,
                2,
                "w",
            ))
            .clone();
            r.at = chrono::DateTime::from_timestamp(NOW - 50 + id, 0).unwrap_or_default();
            Arc::new(r)
        })
        .collect();
    let mut live = Model::new();
    for r in &rows {
        live.update(Msg::Tick {
            now: r.at.timestamp(),
        });
        live.update(Msg::Event(DaemonEvent::Write(r.clone())));
    }
    // Disconnected after 20, reconnected at the end and replayed from the audit.
    let mut replayed = Model::new();
    for r in &rows[..20] {
        replayed.update(Msg::Tick {
            now: r.at.timestamp(),
        });
        replayed.update(Msg::Event(DaemonEvent::Write(r.clone())));
    }
    replayed.update(Msg::Tick { now: NOW });
    replayed.update(Msg::Connected {
        replayed_from: Some(20),
    });
    for r in &rows[15..] {
        replayed.update(Msg::Event(DaemonEvent::Write(r.clone())));
    }
    live.update(Msg::Tick { now: NOW });
    for columns in [30, 78, 156] {
        assert_eq!(live.series(columns), replayed.series(columns));
    }
    assert_eq!(replayed.missed, 30);
    assert_eq!(live.writes_seen, replayed.writes_seen, "overlap skipped");
}

#[test]
fn filters_narrow_by_resource_owner_or_outcome() {
    let mut model = incident();
    model.update(Msg::Key(Action::Filter));
    for c in "billing".chars() {
        model.update(Msg::FilterInput(c));
    }
    assert_eq!(model.visible_rejections().len(), 1);
    assert_eq!(model.visible_overlaps().len(), 1);
    model.update(Msg::Key(Action::Back));
    assert!(!model.editing_filter);
    model.filter = "stale".into();
    assert_eq!(model.visible_rejections().len(), 1);
    model.filter = "worker-7".into();
    assert_eq!(model.visible_rejections()[0].token, Some(7));
    model.update(Msg::Key(Action::Back));
    assert!(model.filter.is_empty());
}

/// Enter keeps the filter on the views it narrows (and says so there), Esc clears it,
/// whether typing or after; where it narrows nothing, `/` says so instead of editing.
#[test]
fn a_filter_is_applied_by_enter_and_cleared_by_esc_where_it_narrows() {
    let mut model = incident();
    model.update(Msg::Key(Action::Show(View::Rejections)));
    model.update(Msg::Key(Action::Filter));
    for c in "bill".chars() {
        model.update(Msg::FilterInput(c));
    }
    model.update(Msg::FilterApply);
    assert!(!model.editing_filter);
    assert_eq!(model.filter, "bill");
    assert!(model.filter_applies());
    assert_eq!(model.visible_rejections().len(), 1);
    model.update(Msg::Key(Action::Show(View::Overview)));
    assert!(model.filter_applies(), "the latest rejections are filtered");
    model.update(Msg::Key(Action::Show(View::Alerts)));
    assert!(!model.filter_applies(), "alerts are not filtered");
    model.update(Msg::Key(Action::Back));
    assert_eq!(
        model.filter, "bill",
        "Esc clears only where the filter is on"
    );
    model.update(Msg::Key(Action::Filter));
    assert!(!model.editing_filter);
    assert_eq!(model.notice(), Some(Notice::NoFilterHere));
    model.update(Msg::Key(Action::Show(View::Overlaps)));
    model.update(Msg::Key(Action::Back));
    assert!(model.filter.is_empty());
    // Typing, Esc cancels: nothing is left filtered.
    model.update(Msg::Key(Action::Filter));
    model.update(Msg::FilterInput('x'));
    model.update(Msg::Key(Action::Back));
    assert!(!model.editing_filter && model.filter.is_empty());
}

/// Zooming says so, and `+` at the closest zoom and `-` at the widest say that they did
/// nothing, for a few seconds; the next key clears the notice.
#[test]
fn zooming_past_either_end_leaves_a_notice() {
    let mut model = incident();
    model.update(Msg::Key(Action::ZoomIn));
    assert_eq!(model.window_seconds(), 30);
    assert_eq!(model.notice(), Some(Notice::Zoomed));
    model.update(Msg::Key(Action::ZoomIn));
    assert_eq!(model.window_seconds(), 30);
    assert_eq!(model.notice(), Some(Notice::ClosestZoom));
    model.update(Msg::Tick {
        now: NOW + NOTICE_SECONDS - 1,
    });
    assert_eq!(model.notice(), Some(Notice::ClosestZoom));
    model.update(Msg::Tick {
        now: NOW + NOTICE_SECONDS,
    });
    assert_eq!(model.notice(), None, "gone after {NOTICE_SECONDS} s");
    for _ in 0..WINDOWS.len() {
        model.update(Msg::Key(Action::ZoomOut));
    }
    assert_eq!(model.window_seconds(), 300);
    assert_eq!(model.notice(), Some(Notice::WidestZoom));
    model.update(Msg::Key(Action::Sort));
    assert_eq!(model.notice(), None, "the next key clears it");
}

/// A rejection's `owner` is its own writer's; the holder of the higher generation comes
/// from the overlap of the same resource and generation, while it names that generation.
#[test]
fn the_holder_of_the_higher_generation_comes_from_the_overlap() {
    let mut model = incident();
    let stale = row(7, "stale", "accounts/totals", 7, 8, "worker-7");
    assert_eq!(stale.owner.as_deref(), Some("worker-7"));
    assert_eq!(model.holder_of(&stale), Some("worker-8"));
    let elsewhere = row(9, "stale", "other", 7, 8, "worker-7");
    assert_eq!(model.holder_of(&elsewhere), None);
    // The overlap moved on to generation 9: it no longer says who held 8.
    let moved = crate::tui::fixtures::overlap(1, "accounts/totals", 7, 9, 5, "open");
    model.update(Msg::Event(DaemonEvent::Overlap(Arc::new(moved))));
    assert_eq!(model.holder_of(&stale), None);
}

/// The charts know how much of their width they have data for: since the dashboard was
/// live, or since the oldest write the snapshot brought if that is older.
#[test]
fn the_charts_know_how_long_their_data_covers() {
    let mut model = Model::new();
    assert_eq!(model.charted_seconds(), None);
    model.update(Msg::Tick { now: NOW - 100 });
    model.update(Msg::Connected {
        replayed_from: None,
    });
    assert_eq!(model.charted_seconds(), None, "live from the next tick");
    model.update(Msg::Tick { now: NOW - 40 });
    model.update(Msg::Tick { now: NOW });
    assert_eq!(model.charted_seconds(), Some(40));
    let mut old = (*row(1, "accepted", "a", 1, 1, "w")).clone();
    old.at = chrono::DateTime::from_timestamp(NOW - 90, 0).unwrap_or_default();
    model.update(Msg::Event(DaemonEvent::Write(Arc::new(old))));
    assert_eq!(model.charted_seconds(), Some(90));
    model.update(Msg::Key(Action::Pause));
    model.update(Msg::Tick { now: NOW + 30 });
    assert_eq!(model.charted_seconds(), Some(90), "as of the pause");
}

#[test]
fn enter_opens_the_overlap_at_its_first_stale_write() {
    let mut model = incident();
    model.update(Msg::Key(Action::Show(View::Overlaps)));
    model.update(Msg::Key(Action::Sort));
    assert_eq!(model.sort, OverlapSort::Count);
    let command = model.update(Msg::Key(Action::Open));
    let Some(Command::FetchTimeline { resource, fetch }) = command else {
        panic!("no fetch: {command:?}")
    };
    assert_eq!(resource, "accounts/totals");
    assert!(matches!(
        fetch,
        Fetch::Around(Anchor::Overlap {
            stale_token: 7,
            superseding_token: 8,
            ..
        })
    ));
    assert_eq!(model.view, View::Timeline);
    let rows: Vec<_> = (1..=30)
        .map(|id| {
            row(
                id,
                if id == 20 { "stale" } else { "accepted" },
                "accounts/totals",
                8,
                8,
                "w",
            )
        })
        .collect();
    model.update(Msg::Timeline {
        resource: "accounts/totals".into(),
        page: Page {
            rows,
            fetch: fetch.clone(),
            at_start: false,
            at_end: true,
            focus: Some(20),
        },
    });
    let timeline = model.timeline.as_ref().unwrap();
    assert_eq!(timeline.selected_row().map(|r| r.id), Some(20));
    // Scrolling past the top asks for the page before; live writes append at the end.
    model.update(Msg::Key(Action::PageUp));
    let command = model.update(Msg::Key(Action::PageUp));
    assert_eq!(
        command,
        Some(Command::FetchTimeline {
            resource: "accounts/totals".into(),
            fetch: Fetch::Before(1)
        })
    );
    model.update(write(31, "accepted", "accounts/totals", 8, 8, "w"));
    model.update(write(32, "accepted", "elsewhere", 8, 8, "w"));
    assert_eq!(model.timeline.as_ref().unwrap().rows.len(), 31);
    model.update(Msg::Key(Action::Back));
    assert_eq!(model.view, View::Overlaps);
    assert!(model.timeline.is_none());
}

#[test]
fn views_cycle_and_the_window_zooms_within_bounds() {
    let mut model = incident();
    for expected in [
        View::Overlaps,
        View::Rejections,
        View::Alerts,
        View::Overview,
    ] {
        model.update(Msg::Key(Action::NextView));
        assert_eq!(model.view, expected);
    }
    model.update(Msg::Key(Action::PreviousView));
    assert_eq!(model.view, View::Alerts);
    for _ in 0..10 {
        model.update(Msg::Key(Action::ZoomOut));
    }
    assert_eq!(model.window_seconds(), 300);
    for _ in 0..10 {
        model.update(Msg::Key(Action::ZoomIn));
    }
    assert_eq!(model.window_seconds(), 30);
    assert_eq!(model.update(Msg::Key(Action::Quit)), Some(Command::Quit));
}

#[test]
fn a_reconnect_shows_the_retry_and_counts_what_was_missed() {
    let mut model = incident();
    model.update(Msg::Disconnected {
        attempt: 3,
        retry_in: Duration::from_secs(2),
        error: "refused".into(),
    });
    assert!(matches!(
        model.connection,
        ConnectionState::Reconnecting { attempt: 3, .. }
    ));
    model.update(Msg::Connected {
        replayed_from: Some(8),
    });
    model.update(write(8, "accepted", "accounts/totals", 8, 8, "worker-8"));
    model.update(write(9, "accepted", "accounts/totals", 8, 8, "worker-8"));
    model.update(write(10, "accepted", "accounts/totals", 8, 8, "worker-8"));
    assert_eq!(
        (model.connection.clone(), model.missed),
        (ConnectionState::Live, 2)
    );
}

/// A firehose leaves the model bounded: the log keeps its newest entries, counts are kept
/// in per-second buckets.
#[test]
fn a_firehose_keeps_memory_bounded() {
    let mut model = incident();
    for id in 100..100_100 {
        let outcome = if id % 4 == 0 { "stale" } else { "accepted" };
        model.update(write(id, outcome, "hot", 1, 2, "w"));
    }
    assert_eq!(model.rejections.len(), REJECTION_LOG);
    assert_eq!(
        model.rejections[0].id, 100_096,
        "the newest rejection first"
    );
    assert_eq!(model.writes_seen, 100_008);
    assert_eq!(model.series(60).total_rejected, 25_002);
}

#[test]
fn the_help_overlay_swallows_other_keys() {
    let mut model = incident();
    model.update(Msg::Key(Action::Help));
    model.update(Msg::Key(Action::NextView));
    assert_eq!(model.view, View::Overview);
    model.update(Msg::Key(Action::Back));
    assert!(!model.help);
}
