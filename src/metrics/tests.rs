use super::*;

#[test]
fn openmetrics_becomes_the_text_format() {
    let openmetrics = concat!(
        "# HELP fencewatch_writes Write attempts decided, by outcome\n",
        "# TYPE fencewatch_writes counter\n",
        "fencewatch_writes_total{outcome=\"stale\"} 3\n",
        "fencewatch_writes_created{outcome=\"stale\"} 1700000000.0\n",
        "# HELP fencewatch_write_duration_seconds Time to decide\n",
        "# TYPE fencewatch_write_duration_seconds histogram\n",
        "# UNIT fencewatch_write_duration_seconds seconds\n",
        "fencewatch_write_duration_seconds_bucket{le=\"+Inf\"} 1 # {trace=\"a\"} 0.5\n",
        "fencewatch_write_duration_seconds_sum 0.5\n",
        "# HELP fencewatch_open_overlaps Ownership overlaps currently open\n",
        "# TYPE fencewatch_open_overlaps gauge\n",
        "fencewatch_open_overlaps 0\n",
        "# HELP odd Odd\n",
        "# TYPE odd unknown\n",
        "odd{path=\"a } # b\\\"\"} 1\n",
        "# EOF\n",
    );
    assert_eq!(
        openmetrics_to_text(openmetrics),
        concat!(
            "# HELP fencewatch_writes_total Write attempts decided, by outcome\n",
            "# TYPE fencewatch_writes_total counter\n",
            "fencewatch_writes_total{outcome=\"stale\"} 3\n",
            "# HELP fencewatch_write_duration_seconds Time to decide\n",
            "# TYPE fencewatch_write_duration_seconds histogram\n",
            "fencewatch_write_duration_seconds_bucket{le=\"+Inf\"} 1\n",
            "fencewatch_write_duration_seconds_sum 0.5\n",
            "# HELP fencewatch_open_overlaps Ownership overlaps currently open\n",
            "# TYPE fencewatch_open_overlaps gauge\n",
            "fencewatch_open_overlaps 0\n",
            "# HELP odd Odd\n",
            "# TYPE odd untyped\n",
            "odd{path=\"a } # b\\\"\"} 1\n",
        )
    );
}

#[test]
fn the_registry_converts_whole() {
    let metrics = Metrics::with_wal_file();
    let text = metrics.render_as(Exposition::Text);
    assert!(
        text.contains("# TYPE fencewatch_writes_total counter\n"),
        "{text}"
    );
    assert!(text.contains("# TYPE fencewatch_write_duration_seconds histogram\n"));
    assert!(
        !text.contains("# EOF") && !text.contains("# UNIT"),
        "{text}"
    );
    assert!(metrics
        .render_as(Exposition::OpenMetrics)
        .ends_with("# EOF\n"));
}

#[test]
fn accept_headers_choose_the_format() {
    use Exposition::{OpenMetrics, Text};
    // What Prometheus 2.x sends.
    let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
                      version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    for (accept, expected) in [
        (None, Text),
        (Some(""), Text),
        (Some("text/plain"), Text),
        (Some("text/plain;version=0.0.4"), Text),
        (Some("*/*"), Text),
        (Some("application/json"), Text),
        (Some(prometheus), OpenMetrics),
        (Some("application/openmetrics-text"), OpenMetrics),
        (
            Some("Application/OpenMetrics-Text; version=1.0.0"),
            OpenMetrics,
        ),
        (
            Some("text/plain;q=0.9, application/openmetrics-text"),
            OpenMetrics,
        ),
        (Some("application/openmetrics-text;q=0.5, text/plain"), Text),
        (Some("application/openmetrics-text;q=0.5, */*"), Text),
        (Some("application/openmetrics-text;q=0"), Text),
        (
            Some("application/openmetrics-text;q=1, text/plain;q=1"),
            Text,
        ),
        (Some("application/openmetrics-text;q=bogus"), Text),
    ] {
        assert_eq!(Exposition::negotiate(accept), expected, "{accept:?}");
    }
}

/// A watched source's series carry its `source` label; the daemon's own stay unlabelled,
/// exactly as before anything was watched.
#[test]
fn watched_series_carry_their_source_and_the_daemons_own_do_not() {
    let metrics = Metrics::new();
    let shop: Arc<str> = Arc::from("shop");
    metrics.watch(&shop);
    metrics.count(Outcome::Stale);
    metrics.count_watched(&shop, Outcome::Stale);
    metrics.count_watched(&shop, Outcome::Stale);
    metrics
        .open_overlaps_by_source
        .get_or_create(&WatchedSource(Some(shop.clone())))
        .set(1);
    metrics.set_watch_up("shop", true);
    let text = metrics.render_as(Exposition::Text);
    for line in [
        "fencewatch_writes_total{outcome=\"stale\"} 1\n",
        "fencewatch_writes_total{outcome=\"stale\",source=\"shop\"} 2\n",
        "fencewatch_writes_total{outcome=\"accepted\",source=\"shop\"} 0\n",
        "fencewatch_open_overlaps 0\n",
        "fencewatch_open_overlaps{source=\"shop\"} 1\n",
        "fencewatch_watch_up{source=\"shop\"} 1\n",
    ] {
        assert!(text.contains(line), "{line:?} not in\n{text}");
    }
}

/// The witness's series exist only once a signer asks for them, its outcomes from zero, so that
/// a daemon without a key shows no checkpoint whose age could page.
#[test]
fn the_witness_series_appear_only_with_a_signer() {
    let metrics = Metrics::new();
    let before = metrics.render_as(Exposition::Text);
    assert!(!before.contains("fencewatch_audit_checkpoint"), "{before}");
    let witness = metrics.witness();
    witness.count(CheckpointRound::Signed);
    witness.count(CheckpointRound::Signed);
    witness.count(CheckpointRound::Refused);
    witness.signed_at(1_700_000_000_250_000);
    let text = metrics.render_as(Exposition::Text);
    for line in [
        "fencewatch_audit_checkpoints_total{outcome=\"signed\"} 2\n",
        "fencewatch_audit_checkpoints_total{outcome=\"unchanged\"} 0\n",
        "fencewatch_audit_checkpoints_total{outcome=\"refused\"} 1\n",
        "fencewatch_audit_checkpoints_total{outcome=\"failed\"} 0\n",
        "fencewatch_audit_checkpoint_last_signed_timestamp_seconds 1700000000.25\n",
    ] {
        assert!(text.contains(line), "{line:?} not in\n{text}");
    }
}
