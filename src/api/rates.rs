//! Writes per second over the stats' windows (`rates` in `/v1/stats` and the `stats` event),
//! keyed by a typed window rather than by its name, so that no reader looks a window up by a
//! string the daemon might spell otherwise.

use super::per_outcome::PerOutcome;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;

/// Writes per second over one window, per outcome and in all.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Rates {
    pub total: f64,
    pub by_outcome: PerOutcome<f64>,
}

/// A window the stats give rates over. Ordered as their names sort (`10s`, `1m`, `5m`), so a
/// map of them goes on the wire in the order it always has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RateWindow {
    TenSeconds,
    OneMinute,
    FiveMinutes,
}

impl RateWindow {
    pub const ALL: [RateWindow; 3] = [
        RateWindow::TenSeconds,
        RateWindow::OneMinute,
        RateWindow::FiveMinutes,
    ];

    /// Its name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            RateWindow::TenSeconds => "10s",
            RateWindow::OneMinute => "1m",
            RateWindow::FiveMinutes => "5m",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|window| window.name() == name)
    }

    pub fn seconds(self) -> usize {
        match self {
            RateWindow::TenSeconds => 10,
            RateWindow::OneMinute => 60,
            RateWindow::FiveMinutes => 300,
        }
    }
}

impl Serialize for RateWindow {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// The rates of each window, in the windows' order.
pub type RatesByWindow = BTreeMap<RateWindow, Rates>;

/// Reads rates by window, leaving out a window this build does not know (a newer daemon's), as
/// a reader of [`PerOutcome`] leaves out an outcome it does not know.
pub(super) fn known_windows<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<RatesByWindow, D::Error> {
    let named = BTreeMap::<String, Rates>::deserialize(deserializer)?;
    Ok(named
        .into_iter()
        .filter_map(|(name, rates)| Some((RateWindow::from_name(&name)?, rates)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_sort_as_their_names_and_read_back_by_name() {
        let mut names: Vec<&str> = RateWindow::ALL.iter().map(|w| w.name()).collect();
        names.sort_unstable();
        let in_order: Vec<&str> = RateWindow::ALL.iter().map(|w| w.name()).collect();
        assert_eq!(in_order, names);
        for window in RateWindow::ALL {
            assert_eq!(RateWindow::from_name(window.name()), Some(window));
        }
        assert_eq!(RateWindow::from_name("1h"), None);
    }

    #[test]
    fn a_reader_skips_windows_it_does_not_know() {
        #[derive(Deserialize)]
        struct Read {
            #[serde(deserialize_with = "known_windows")]
            rates: RatesByWindow,
        }
        let rates = r#"{"total":1.0,"by_outcome":{"accepted":1.0}}"#;
        let json = format!(r#"{{"rates":{{"1h":{rates},"1m":{rates}}}}}"#);
        let read: Read = serde_json::from_str(&json).unwrap();
        let windows: Vec<RateWindow> = read.rates.keys().copied().collect();
        assert_eq!(windows, [RateWindow::OneMinute]);
    }
}
