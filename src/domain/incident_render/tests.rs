use super::*;
use crate::domain::incident::{EntryKind, IncidentReport, TimelineEntry};

fn t(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(1_764_000_000_000 + ms).unwrap()
}

fn entry(at: i64, kind: EntryKind, event: &str, g: i64, owner: &str, count: u64) -> TimelineEntry {
    TimelineEntry {
        at: t(at),
        last_at: (count > 1).then(|| t(at + 500)),
        kind,
        event: event.to_owned(),
        generation: Some(g),
        owner: Some(owner.to_owned()),
        count,
        id: at,
    }
}

pub(crate) fn sample() -> IncidentReport {
    IncidentReport {
        incident: 7,
        resource: "totals|<x>".to_owned(),
        source: None,
        stale_generation: 1,
        stale_owner: Some("worker-a".to_owned()),
        superseding_generation: 2,
        superseding_owner: Some("worker-b".to_owned()),
        stale_last_active_at: Some(t(2_000)),
        stale_grant_lapsed_at: Some(t(7_000)),
        superseding_acquired_at: Some(t(9_000)),
        superseding_first_write_at: Some(t(10_000)),
        first_refused_at: Some(t(12_500)),
        last_refused_at: Some(t(15_000)),
        refused: 3,
        pause_ms: Some(10_500),
        zombie_lifetime_ms: Some(2_500),
        accepted_after_lapse: Some(0),
        timeline: vec![
            entry(1_000, EntryKind::Lease, "renewed", 1, "worker-a", 97),
            entry(9_000, EntryKind::Lease, "acquired", 2, "worker-b", 1),
            entry(10_000, EntryKind::Write, "accepted", 2, "worker-b", 1),
            entry(12_500, EntryKind::Write, "stale", 1, "worker-a", 3),
        ],
    }
}

#[test]
fn the_text_says_the_figures_and_folds_renewals() {
    let text = text(&sample());
    assert!(
        text.contains("Pause:                    10.500 s"),
        "{text}"
    );
    assert!(text.contains("LEASE renewed ×97"), "{text}");
    assert!(text.contains("Zombie lifetime:          2.500 s"), "{text}");
}

#[test]
fn the_markdown_is_two_tables_whose_cells_cannot_break_a_row() {
    let md = markdown(&sample());
    let rows: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
    // Header and rule, twelve facts; header and rule, four timeline lines.
    assert_eq!(rows.len(), 2 + 12 + 2 + 4, "{md}");
    for row in &rows {
        let cells = row.replace("\\|", "").matches('|').count();
        assert!(cells == 3 || cells == 7, "{row}");
    }
    assert!(md.contains("| Pause | 10.500 s |"), "{md}");
    assert!(md.starts_with("## incident 7 on totals\\|<x>"), "{md}");
}

#[test]
fn the_page_escapes_what_it_shows_and_names_nothing_outside() {
    let page = html(&sample());
    assert!(page.contains("totals|&lt;x&gt;"));
    assert!(!page.contains("<x>"));
    for outside in ["src=", "href=", "@import", "url("] {
        assert!(!page.contains(outside), "{outside}");
    }
    assert_eq!(page.matches("class=\"lane\"").count(), 2);
    assert_eq!(page.matches("class=\"uncovered\"").count(), 1);
    assert_eq!(page.matches("class=\"refused\"").count(), 1);
    assert!(page.contains(">lapse<") && page.contains(">takeover<"));
}

#[test]
fn no_uncovered_window_without_a_lapse() {
    let mut report = sample();
    report.stale_grant_lapsed_at = None;
    assert!(!html(&report).contains("class=\"uncovered\""));
}
