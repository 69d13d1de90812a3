//! Alert states and their timing, as Prometheus has them: a condition must hold for `for` before
//! an alert fires; a firing alert keeps firing for `keep_firing_for` after the condition stops
//! holding, then resolves. Pure: the evaluator feeds it the condition and the time.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AlertState {
    Inactive,
    Pending,
    Firing,
}

impl AlertState {
    pub fn as_str(self) -> &'static str {
        match self {
            AlertState::Inactive => "inactive",
            AlertState::Pending => "pending",
            AlertState::Firing => "firing",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "inactive" => Some(AlertState::Inactive),
            "pending" => Some(AlertState::Pending),
            "firing" => Some(AlertState::Firing),
            _ => None,
        }
    }
}

/// One alert instance (a rule, or a rule for one resource). Times in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AlertInstance {
    pub state: AlertState,
    /// When the current state began.
    pub since_us: i64,
    /// When it started firing (the notification's `startsAt`), while firing.
    pub fired_at_us: Option<i64>,
    /// The last evaluation at which the condition held.
    pub last_true_us: Option<i64>,
}

impl AlertInstance {
    pub fn inactive(now_us: i64) -> Self {
        Self {
            state: AlertState::Inactive,
            since_us: now_us,
            fired_at_us: None,
            last_true_us: None,
        }
    }
}

/// What a step changed, for storage and notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    /// Pending started or ended without firing: stored and shown, not notified.
    Quiet,
    /// Started firing: notify `firing`.
    Fired,
    /// Stopped firing: notify `resolved`.
    Resolved,
}

/// Advances an instance by one evaluation. Returns the new instance and what changed, if
/// anything.
pub fn step(
    current: AlertInstance,
    condition: bool,
    now_us: i64,
    for_us: i64,
    keep_firing_for_us: i64,
) -> (AlertInstance, Option<Transition>) {
    use AlertState::*;
    let mut next = current;
    if condition {
        next.last_true_us = Some(now_us);
    }
    let transition = match (current.state, condition) {
        (Inactive, true) if for_us <= 0 => {
            next.state = Firing;
            next.since_us = now_us;
            next.fired_at_us = Some(now_us);
            Some(Transition::Fired)
        }
        (Inactive, true) => {
            next.state = Pending;
            next.since_us = now_us;
            Some(Transition::Quiet)
        }
        (Pending, true) if now_us - current.since_us >= for_us => {
            next.state = Firing;
            next.since_us = now_us;
            next.fired_at_us = Some(now_us);
            Some(Transition::Fired)
        }
        (Pending, false) => {
            next.state = Inactive;
            next.since_us = now_us;
            Some(Transition::Quiet)
        }
        (Firing, false)
            if current
                .last_true_us
                .is_none_or(|last| now_us - last >= keep_firing_for_us) =>
        {
            next.state = Inactive;
            next.since_us = now_us;
            next.fired_at_us = None;
            Some(Transition::Resolved)
        }
        _ => None,
    };
    (next, transition)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000;

    #[test]
    fn pending_for_then_firing_then_kept_then_resolved() {
        let mut alert = AlertInstance::inactive(0);
        let mut log = Vec::new();
        // Condition from t=1 s to t=5 s; `for` 2 s; keep firing 2 s.
        for t in 0..=10 {
            let condition = (1..=5).contains(&t);
            let (next, transition) = step(alert, condition, t * S, 2 * S, 2 * S);
            if let Some(transition) = transition {
                log.push((t, next.state, transition));
            }
            alert = next;
        }
        assert_eq!(
            log,
            [
                (1, AlertState::Pending, Transition::Quiet),
                (3, AlertState::Firing, Transition::Fired),
                (7, AlertState::Inactive, Transition::Resolved),
            ]
        );
    }

    #[test]
    fn a_blip_shorter_than_for_never_fires() {
        let (pending, _) = step(AlertInstance::inactive(0), true, S, 5 * S, 0);
        let (back, transition) = step(pending, false, 2 * S, 5 * S, 0);
        assert_eq!(
            (back.state, transition),
            (AlertState::Inactive, Some(Transition::Quiet))
        );
    }

    #[test]
    fn zero_for_fires_at_once_and_zero_keep_resolves_at_once() {
        let (firing, transition) = step(AlertInstance::inactive(0), true, S, 0, 0);
        assert_eq!(
            (firing.state, transition),
            (AlertState::Firing, Some(Transition::Fired))
        );
        assert_eq!(firing.fired_at_us, Some(S));
        let (still, transition) = step(firing, true, 2 * S, 0, 0);
        assert_eq!((still.state, transition), (AlertState::Firing, None));
        let (done, transition) = step(still, false, 3 * S, 0, 0);
        assert_eq!(
            (done.state, transition),
            (AlertState::Inactive, Some(Transition::Resolved))
        );
    }
}
