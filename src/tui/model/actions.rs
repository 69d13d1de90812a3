//! What each action a key maps to does to the model, and the fetch it asks the loop for.

use super::timeline::{Anchor, Fetch, Timeline};
use super::{Action, Command, Model, Notice, View, PAGE_ROWS, WINDOWS};

impl Model {
    pub(super) fn act(&mut self, action: Action) -> Option<Command> {
        if self.help && !matches!(action, Action::Help | Action::Quit | Action::Back) {
            return None;
        }
        // A notice answers the key before it; the next key replaces or clears it.
        self.notice = None;
        match action {
            Action::Quit => return Some(Command::Quit),
            Action::Help => self.help = !self.help,
            Action::Back => {
                if self.help {
                    self.help = false;
                } else if self.editing_filter {
                    // Esc while typing cancels: the filter is cleared, as Esc after Enter does.
                    self.editing_filter = false;
                    self.filter.clear();
                    self.selected = 0;
                } else if self.view == View::Timeline {
                    self.view = self.previous;
                    self.timeline = None;
                    self.selected = 0;
                } else if self.filter_applies() {
                    self.filter.clear();
                    self.selected = 0;
                }
            }
            Action::NextView | Action::PreviousView => {
                let tabs = View::TABS;
                let current = tabs.iter().position(|v| *v == self.view).unwrap_or(0);
                let next = if action == Action::NextView {
                    (current + 1) % tabs.len()
                } else {
                    (current + tabs.len() - 1) % tabs.len()
                };
                self.view = tabs[next];
                self.timeline = None;
                self.selected = 0;
            }
            Action::Show(view) => {
                self.view = view;
                self.timeline = None;
                self.selected = 0;
            }
            Action::Pause => {
                if self.paused() {
                    self.paused_at = None;
                    while let Some(event) = self.held.pop_front() {
                        self.apply(event);
                    }
                } else {
                    self.paused_at = Some(self.now);
                }
            }
            Action::ZoomIn => match self.window_index.checked_sub(1) {
                Some(closer) => {
                    self.window_index = closer;
                    self.notify(Notice::Zoomed);
                }
                None => self.notify(Notice::ClosestZoom),
            },
            Action::ZoomOut => {
                if self.window_index + 1 < WINDOWS.len() {
                    self.window_index += 1;
                    self.notify(Notice::Zoomed);
                } else {
                    self.notify(Notice::WidestZoom);
                }
            }
            Action::Filter => {
                if self.view.filtered() {
                    self.editing_filter = true;
                } else {
                    self.notify(Notice::NoFilterHere);
                }
            }
            Action::Sort => self.sort = self.sort.next(),
            Action::Up => return self.move_by(-1),
            Action::Down => return self.move_by(1),
            Action::PageUp => return self.move_by(-PAGE_ROWS),
            Action::PageDown => return self.move_by(PAGE_ROWS),
            Action::Home => {
                if let Some(timeline) = self.timeline.as_mut() {
                    let fetch = timeline.home();
                    return self.fetch(fetch);
                }
                self.selected = 0;
            }
            Action::End => {
                if let Some(timeline) = self.timeline.as_mut() {
                    let fetch = timeline.end();
                    return self.fetch(fetch);
                }
                self.selected = self.rows().saturating_sub(1);
            }
            Action::Open => return self.open(),
            Action::SaveReport => {
                let report = self.timeline.as_ref()?.report.as_ref()?;
                return Some(Command::SaveReport {
                    path: format!("incident-{}.md", report.incident),
                    text: crate::domain::incident_render::markdown(report),
                });
            }
        }
        None
    }

    fn move_by(&mut self, delta: isize) -> Option<Command> {
        if let Some(timeline) = self.timeline.as_mut() {
            let fetch = timeline.scroll(delta);
            return self.fetch(fetch);
        }
        let last = self.rows().saturating_sub(1);
        self.selected = self.selected.saturating_add_signed(delta).min(last);
        None
    }

    /// Enter: the timeline of the selected overlap (at its first stale write) or rejection. A
    /// watched database's are in that database's audit, not the daemon's: nothing opens
    /// (`fencewatch audit timeline --database URL` reads them there).
    fn open(&mut self) -> Option<Command> {
        let (resource, anchor) = match self.view {
            View::Overlaps => {
                let o = &self.visible_overlaps().get(self.selected)?.overlap;
                if o.source.is_some() {
                    return None;
                }
                (
                    o.resource.clone(),
                    Anchor::Overlap {
                        id: o.id,
                        first_seen: o.first_seen,
                        stale_token: o.stale_token,
                        superseding_token: o.superseding_token,
                    },
                )
            }
            View::Rejections => {
                let r = self.visible_rejections().get(self.selected).copied()?;
                if r.source.is_some() {
                    return None;
                }
                (r.resource.clone(), Anchor::Write { id: r.id })
            }
            _ => return None,
        };
        self.previous = self.view;
        self.view = View::Timeline;
        self.timeline = Some(Timeline::new(resource.clone(), Some(anchor.clone())));
        Some(Command::FetchTimeline {
            resource,
            fetch: Fetch::Around(anchor),
        })
    }

    fn rows(&self) -> usize {
        match self.view {
            View::Overlaps => self.visible_overlaps().len(),
            View::Rejections => self.visible_rejections().len(),
            View::Alerts => self.alerts.len(),
            View::Timeline => self.timeline.as_ref().map_or(0, |t| t.rows.len()),
            View::Overview => 0,
        }
    }
}
