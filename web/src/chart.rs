//! The due backlog by priority level as an SVG bar chart, drawn on the server.

use crate::model::Backlog;
use std::fmt::Write as _;

/// Width of the drawing in user units (it scales to its box).
const WIDTH: u32 = 420;
/// Height of one bar's row.
const ROW: u32 = 30;
/// Left column (level labels).
const LABEL: u32 = 88;
/// Right column (counts).
const COUNT: u32 = 60;

/// The label of a level.
pub fn level_label(priority: Option<i16>, by_priority: bool) -> String {
    match (by_priority, priority) {
        (false, _) => "all due".to_owned(),
        (true, None) => "no priority".to_owned(),
        (true, Some(p)) => format!("priority {p}"),
    }
}

/// The chart as an `<svg>` element (only numbers and fixed words go into it).
pub fn backlog_svg(backlog: &Backlog) -> String {
    let rows = backlog.levels.len().max(1) as u32;
    let height = rows * ROW + 8;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="chart" role="img" viewBox="0 0 {WIDTH} {height}" width="100%" xmlns="http://www.w3.org/2000/svg"><title>Due backlog by priority level</title>"#
    );
    if backlog.levels.is_empty() {
        let _ = write!(
            svg,
            r#"<text x="{}" y="{}" class="empty" text-anchor="middle">nothing is due</text></svg>"#,
            WIDTH / 2,
            ROW / 2 + 8
        );
        return svg;
    }
    let max = backlog
        .levels
        .iter()
        .map(|l| l.due)
        .max()
        .unwrap_or(1)
        .max(1);
    let span = WIDTH - LABEL - COUNT;
    for (i, level) in backlog.levels.iter().enumerate() {
        let y = i as u32 * ROW + 4;
        // At least 2 units, so a level with one execution is still visible.
        let w = ((level.due as f64 / max as f64) * f64::from(span))
            .round()
            .max(2.0);
        let label = level_label(level.priority, backlog.by_priority);
        let count = if level.capped {
            format!("≥ {}", level.due)
        } else {
            level.due.to_string()
        };
        let class = if level.capped { "bar capped" } else { "bar" };
        let _ = write!(
            svg,
            r#"<g><title>{label}: {count} due</title><text x="{lx}" y="{ty}" class="label" text-anchor="end">{label}</text><rect x="{LABEL}" y="{ry}" width="{w}" height="{h}" rx="3" class="{class}"/><text x="{cx}" y="{ty}" class="count">{count}</text></g>"#,
            lx = LABEL - 10,
            ty = y + ROW / 2 + 4,
            ry = y + 4,
            h = ROW - 8,
            cx = f64::from(LABEL) + w + 8.0,
        );
    }
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Level;

    #[test]
    fn bars_scale_to_the_largest_level_and_mark_the_capped_one() {
        let backlog = Backlog {
            by_priority: true,
            levels: vec![
                Level {
                    priority: Some(90),
                    due: 10,
                    capped: false,
                },
                Level {
                    priority: Some(10),
                    due: 5,
                    capped: true,
                },
                Level {
                    priority: None,
                    due: 1,
                    capped: false,
                },
            ],
            cap: 16,
            capped: true,
        };
        let svg = backlog_svg(&backlog);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        let span = WIDTH - LABEL - COUNT;
        assert!(svg.contains(&format!(r#"width="{span}""#)), "{svg}");
        assert!(svg.contains(&format!(r#"width="{}""#, span / 2)), "{svg}");
        assert!(svg.contains("priority 90") && svg.contains("no priority"));
        assert!(svg.contains("≥ 5") && svg.contains(r#"class="bar capped""#));
        assert_eq!(svg.matches("<rect").count(), 3);
    }

    #[test]
    fn an_empty_backlog_says_so() {
        let backlog = Backlog {
            by_priority: false,
            levels: Vec::new(),
            cap: 10,
            capped: false,
        };
        let svg = backlog_svg(&backlog);
        assert!(svg.contains("nothing is due"));
        assert!(!svg.contains("<rect"));
    }
}
