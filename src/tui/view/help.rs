//! The help overlay: every key binding, in one or two columns as the height allows.

use super::Theme;
use crate::tui::keys::{Binding, BINDINGS};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};
use ratatui::Frame;

pub fn render(frame: &mut Frame, area: Rect, theme: Theme) {
    // Two columns of keys when one does not fit the height.
    let halves = if BINDINGS.len() as u16 + 2 > area.height {
        2
    } else {
        1
    };
    let per_column = BINDINGS.len().div_ceil(halves);
    let width = (40 * halves as u16).min(area.width);
    let height = (per_column as u16 + 2).min(area.height);
    let popup = Rect {
        x: area.x + (area.width.saturating_sub(width)) / 2,
        y: area.y + (area.height.saturating_sub(height)) / 2,
        width,
        height,
    };
    let entry = |b: &Binding| {
        vec![
            Span::styled(format!("{:>7}  ", b.label), theme.bold()),
            Span::raw(format!("{:<29}", b.description)),
        ]
    };
    let lines: Vec<Line> = (0..per_column)
        .map(|i| {
            let mut spans = Vec::new();
            for column in 0..halves {
                if let Some(binding) = BINDINGS.get(column * per_column + i) {
                    spans.extend(entry(binding));
                }
            }
            Line::from(spans)
        })
        .collect();
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(Block::bordered().title(" Keys (? or Esc to close) ")),
        popup,
    );
}
