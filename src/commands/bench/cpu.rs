//! CPU time and peak memory of the daemon and of the load generator, from `/proc` (Linux).

use procfs::process::{Process, Stat};
use serde::Serialize;
use std::time::Duration;

/// Where the HTTP run's CPU went, per write, and the throughput it bounds.
#[derive(Debug, Clone, Serialize)]
pub struct CpuPerWrite {
    pub daemon_us: Option<f64>,
    pub load_generator_us: f64,
    pub cores: usize,
    /// Writes per second were both processes to use every core and nothing else: the ceiling
    /// the CPU sets, whatever the latency. Only with the daemon's CPU known.
    pub ceiling_per_second: Option<f64>,
}

/// Peak resident memory (VmHWM) of a process, in MiB.
pub(super) fn peak_rss_mib(pid: u32) -> Option<f64> {
    let kib = process(Some(pid))?.status().ok()?.vmhwm?;
    Some(kib as f64 / 1024.0)
}

/// Process `pid`, or this one.
fn process(pid: Option<u32>) -> Option<Process> {
    match pid {
        Some(pid) => Process::new(i32::try_from(pid).ok()?).ok(),
        None => Process::myself().ok(),
    }
}

/// CPU time used so far (user and system) by process `pid`, or by this one.
fn cpu_time(pid: Option<u32>) -> Option<Duration> {
    Some(cpu_time_in(&process(pid)?.stat().ok()?))
}

/// utime and stime, counted in clock ticks.
fn cpu_time_in(stat: &Stat) -> Duration {
    let ticks = stat.utime + stat.stime;
    Duration::from_millis(ticks * 1000 / procfs::ticks_per_second().max(1))
}

/// Both processes' CPU time at one moment, to divide by the writes done between two of them.
pub(super) struct CpuMark {
    daemon: Option<Duration>,
    load_generator: Option<Duration>,
}

impl CpuMark {
    pub(super) fn now(daemon_pid: Option<u32>) -> Self {
        Self {
            daemon: daemon_pid.and_then(|pid| cpu_time(Some(pid))),
            load_generator: cpu_time(None),
        }
    }

    pub(super) fn per_write_since(&self, start: &CpuMark, writes: u64) -> Option<CpuPerWrite> {
        if writes == 0 {
            return None;
        }
        let per_write = |until: Duration, from: Duration| {
            until.saturating_sub(from).as_secs_f64() * 1e6 / writes as f64
        };
        let load_generator_us = per_write(self.load_generator?, start.load_generator?);
        let daemon_us = self
            .daemon
            .zip(start.daemon)
            .map(|(until, from)| per_write(until, from));
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let ceiling_per_second = daemon_us
            .map(|daemon| daemon + load_generator_us)
            .filter(|total| *total > 0.0)
            .map(|total| cores as f64 * 1e6 / total);
        Some(CpuPerWrite {
            daemon_us,
            load_generator_us,
            cores,
            ceiling_per_second,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use procfs::FromRead;
    use std::time::Instant;

    #[test]
    fn cpu_time_is_read_after_the_command_name() {
        // A command name with spaces and a parenthesis of its own; utime 250, stime 130 ticks.
        let stat = "4242 (fence (watch) x) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 130 0 0 \
                    20 0 9 0 12345 1000000 2000 18446744073709551615 1 1 1 0 0 0 0 0 0 0 0 0 \
                    17 0 0 0 0 0 0 1 1 1 1 1 1 1 0";
        let parsed = Stat::from_read(stat.as_bytes()).unwrap();
        assert_eq!(
            cpu_time_in(&parsed),
            Duration::from_millis(380 * 1000 / procfs::ticks_per_second())
        );
        assert!(Stat::from_read("4242 (cut short) S 1 2".as_bytes()).is_err());
        assert!(Stat::from_read("no name at all".as_bytes()).is_err());
        // This process's own stat parses, and its count moves with the work it does: spinning
        // for 30 ms of CPU ends well within its deadline.
        let before = cpu_time(None).expect("/proc/self/stat");
        let deadline = Instant::now() + Duration::from_secs(20);
        while cpu_time(None).expect("/proc/self/stat") < before + Duration::from_millis(30) {
            assert!(Instant::now() < deadline, "CPU time did not advance");
        }
        assert!(peak_rss_mib(std::process::id()).is_some_and(|mib| mib > 0.0));
    }

    #[test]
    fn cpu_per_write_and_the_ceiling_it_sets() {
        let start = CpuMark {
            daemon: Some(Duration::from_millis(1_000)),
            load_generator: Some(Duration::from_millis(500)),
        };
        let end = CpuMark {
            daemon: Some(Duration::from_millis(2_000)),
            load_generator: Some(Duration::from_millis(750)),
        };
        let cpu = end.per_write_since(&start, 10_000).unwrap();
        assert_eq!(cpu.daemon_us, Some(100.0));
        assert_eq!(cpu.load_generator_us, 25.0);
        assert_eq!(cpu.ceiling_per_second, Some(cpu.cores as f64 * 1e6 / 125.0));
        // A daemon at --url: its CPU is unknown, and so is the ceiling.
        let remote = CpuMark {
            daemon: None,
            ..end
        };
        let cpu = remote.per_write_since(&start, 10_000).unwrap();
        assert_eq!((cpu.daemon_us, cpu.ceiling_per_second), (None, None));
        assert!(remote.per_write_since(&start, 0).is_none());
    }
}
