//! Key bindings, declared once: the event loop, the footer and the help overlay all read this
//! table, so they cannot drift apart.

use super::model::{Action, View};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

pub struct Binding {
    pub keys: &'static [KeyCode],
    /// How the key is written in the footer and help.
    pub label: &'static str,
    pub description: &'static str,
    pub action: Action,
    /// Shown in the footer (the rest only in help).
    pub footer: bool,
}

pub const BINDINGS: &[Binding] = &[
    Binding {
        keys: &[KeyCode::Char('q')],
        label: "q",
        description: "quit",
        action: Action::Quit,
        footer: true,
    },
    Binding {
        keys: &[KeyCode::Char('?')],
        label: "?",
        description: "help",
        action: Action::Help,
        footer: true,
    },
    Binding {
        keys: &[KeyCode::Tab],
        label: "Tab",
        description: "view",
        action: Action::NextView,
        footer: true,
    },
    Binding {
        keys: &[KeyCode::BackTab],
        label: "S-Tab",
        description: "previous view",
        action: Action::PreviousView,
        footer: false,
    },
    Binding {
        keys: &[KeyCode::Char('1')],
        label: "1",
        description: "overview",
        action: Action::Show(View::Overview),
        footer: false,
    },
    Binding {
        keys: &[KeyCode::Char('2')],
        label: "2",
        description: "overlaps",
        action: Action::Show(View::Overlaps),
        footer: false,
    },
    Binding {
        keys: &[KeyCode::Char('3')],
        label: "3",
        description: "rejections",
        action: Action::Show(View::Rejections),
        footer: false,
    },
    Binding {
        keys: &[KeyCode::Char('4')],
        label: "4",
        description: "alerts",
        action: Action::Show(View::Alerts),
        footer: false,
    },
    Binding {
        keys: &[KeyCode::Enter],
        label: "Enter",
        description: "open",
        action: Action::Open,
        footer: true,
    },
    Binding {
        keys: &[KeyCode::Esc],
        label: "Esc",
        description: "back",
        action: Action::Back,
        footer: true,
    },
    Binding {
        keys: &[KeyCode::Char('w')],
        label: "w",
        description: "write report",
        action: Action::SaveReport,
        footer: false,
    },
    Binding {
        keys: &[KeyCode::Char('/')],
        label: "/",
        description: "filter",
        action: Action::Filter,
        footer: true,
    },
    Binding {
        keys: &[KeyCode::Char('s')],
        label: "s",
        description: "sort",
        action: Action::Sort,
        footer: true,
    },
    Binding {
        keys: &[KeyCode::Char('p')],
        label: "p",
        description: "pause",
        action: Action::Pause,
        footer: true,
    },
    Binding {
        keys: &[KeyCode::Char('+'), KeyCode::Char('=')],
        label: "+",
        description: "zoom in",
        action: Action::ZoomIn,
        footer: false,
    },
    Binding {
        keys: &[KeyCode::Char('-')],
        label: "-",
        description: "zoom out",
        action: Action::ZoomOut,
        footer: false,
    },
    Binding {
        keys: &[KeyCode::Up, KeyCode::Char('k')],
        label: "↑/k",
        description: "up",
        action: Action::Up,
        footer: false,
    },
    Binding {
        keys: &[KeyCode::Down, KeyCode::Char('j')],
        label: "↓/j",
        description: "down",
        action: Action::Down,
        footer: false,
    },
    Binding {
        keys: &[KeyCode::PageUp],
        label: "PgUp",
        description: "page up (older)",
        action: Action::PageUp,
        footer: false,
    },
    Binding {
        keys: &[KeyCode::PageDown],
        label: "PgDn",
        description: "page down (newer)",
        action: Action::PageDown,
        footer: false,
    },
    Binding {
        keys: &[KeyCode::Home, KeyCode::Char('g')],
        label: "Home/g",
        description: "first row (oldest)",
        action: Action::Home,
        footer: false,
    },
    Binding {
        keys: &[KeyCode::End, KeyCode::Char('G')],
        label: "End/G",
        description: "last row (newest, live)",
        action: Action::End,
        footer: false,
    },
];

/// The action bound to a key press, if any. Ctrl-C always quits.
pub fn action_for(key: KeyEvent) -> Option<Action> {
    if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
        return Some(Action::Quit);
    }
    BINDINGS
        .iter()
        .find(|binding| binding.keys.contains(&key.code))
        .map(|binding| binding.action)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_key_is_bound_twice_and_every_action_has_a_key() {
        let mut seen = Vec::new();
        for binding in BINDINGS {
            for key in binding.keys {
                assert!(!seen.contains(key), "{key:?} is bound twice");
                seen.push(*key);
            }
        }
        assert_eq!(
            action_for(KeyEvent::from(KeyCode::Char('q'))),
            Some(Action::Quit)
        );
        assert_eq!(
            action_for(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Action::Quit)
        );
        assert_eq!(action_for(KeyEvent::from(KeyCode::Char('x'))), None);
    }
}
