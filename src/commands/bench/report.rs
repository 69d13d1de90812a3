//! The bench's report as a table for a person (`--json` prints the report's fields instead).

use super::{BenchReport, CpuPerWrite, DashboardReport, FillReport, PathResult, WitnessPath};

pub fn print(report: &BenchReport) {
    if let Some(fill) = &report.fill {
        print_fill(fill);
    }
    println!(
        "{:<16} {:>7} {:>9} {:>10} {:>8} {:>8} {:>9} {:>9} {:>8} {:>6}",
        "path",
        "clients",
        "requests",
        "per second",
        "p50 ms",
        "p99 ms",
        "p99.9 ms",
        "accepted",
        "rejected",
        "errors"
    );
    for result in report
        .http
        .iter()
        .chain(report.etcd.iter().map(|etcd| &etcd.writes))
        .chain(report.zookeeper.iter().map(|zookeeper| &zookeeper.writes))
        .chain(report.witness.iter().map(|witness| &witness.writes))
        .chain(report.reads.iter())
        .chain(report.group_commit.iter())
        .chain(report.baseline.iter())
        .chain(report.pgbench.iter())
    {
        println!(
            "{:<16} {:>7} {:>9} {:>10.0} {:>8.2} {:>8.2} {:>9.2} {:>9} {:>8} {:>6}",
            result.path,
            result.clients,
            result.requests,
            result.per_second,
            result.p50_ms,
            result.p99_ms,
            result.p999_ms,
            result.accepted,
            result.rejected,
            result.errors
        );
    }
    if let Some(events) = &report.events {
        println!(
            "live streams: {} subscribers received {} events, {:.0}/s each, {} streams failed",
            events.subscribers, events.events, events.per_subscriber_per_second, events.errors
        );
    }
    if let Some(ratio) = report.ratio {
        println!("http / store one transaction per write: {ratio:.2}");
    }
    if let Some(ratio) = report.pgbench_ratio {
        println!("http / pgbench's one-statement fenced write: {ratio:.2}");
    }
    if let Some(peak) = report.daemon_peak_rss_mib {
        println!("daemon peak memory: {peak:.1} MiB");
    }
    if let Some(cpu) = &report.cpu {
        print_cpu("HTTP write", cpu);
    }
    for (service, path) in [("etcd", &report.etcd), ("ZooKeeper", &report.zookeeper)] {
        let Some(path) = path else { continue };
        println!(
            "{service} path: writes named {} held by {} (generation {})",
            path.lease, path.holder_key, path.token
        );
        if let Some(http) = &report.http {
            println!(
                "http {} / http: {:.2} of the plain fence's writes/s",
                path.lease,
                path.writes.per_second / http.per_second.max(f64::EPSILON)
            );
        }
        if let Some(peak) = path.daemon_peak_rss_mib {
            println!("{service} path's daemon peak memory: {peak:.1} MiB");
        }
        if let Some(cpu) = &path.cpu {
            print_cpu(&format!("HTTP write naming the {service} lock"), cpu);
        }
    }
    if let Some(witness) = &report.witness {
        print_witness(witness, report.http.as_ref());
    }
}

fn print_witness(witness: &WitnessPath, http: Option<&PathResult>) {
    println!(
        "witness path: {} checkpoints signed, one each {} ms the audit changed",
        witness.checkpoints, witness.interval_ms
    );
    if let Some(http) = http {
        println!(
            "http witness / http: {:.2} of the plain fence's writes/s",
            witness.writes.per_second / http.per_second.max(f64::EPSILON)
        );
    }
    if let Some(peak) = witness.daemon_peak_rss_mib {
        println!("witness path's daemon peak memory: {peak:.1} MiB");
    }
    if let Some(cpu) = &witness.cpu {
        print_cpu("HTTP write with the witness signing", cpu);
    }
}

fn print_cpu(what: &str, cpu: &CpuPerWrite) {
    let daemon = cpu.daemon_us.map_or_else(
        || "unknown (not started by the bench)".to_owned(),
        |us| format!("{us:.1} µs"),
    );
    println!(
        "CPU per {what}: daemon {daemon}, load generator {:.1} µs",
        cpu.load_generator_us
    );
    if let Some(ceiling) = cpu.ceiling_per_second {
        println!(
            "CPU ceiling on {} cores: {ceiling:.0} writes/s, were both to use every core",
            cpu.cores
        );
    }
}

pub(super) fn print_dashboard(report: &DashboardReport) {
    println!(
        "dashboard event path: {} events in {:.2} s, {:.0} events/s",
        report.events, report.seconds, report.per_second
    );
}

pub(super) fn print_fill(fill: &FillReport) {
    println!(
        "filled {} audit rows ({} stale, {} overlap rows) over {} resources in {:.2} s: {:.0} rows/s",
        fill.rows, fill.stale, fill.overlaps, fill.resources, fill.seconds, fill.rows_per_second
    );
}
