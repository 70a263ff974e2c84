//! What a person reads: aligned tables, ISO-8601 times with their age ("2 min ago"), colour
//! when stdout is a terminal (never when piped or when `NO_COLOR` is set), and the parsing of
//! durations given on the command line.

use std::io::IsTerminal;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How output is styled.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    colour: bool,
}

impl Style {
    /// Colour only when stdout is a terminal and `NO_COLOR` is unset or empty.
    pub fn detect() -> Self {
        let no_colour = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Style {
            colour: std::io::stdout().is_terminal() && !no_colour,
        }
    }

    /// The same rule for stderr (error lines).
    pub fn detect_stderr() -> Self {
        let no_colour = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Style {
            colour: std::io::stderr().is_terminal() && !no_colour,
        }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.colour {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    /// A header or a label.
    pub fn bold(&self, text: &str) -> String {
        self.paint("1", text)
    }

    /// Secondary text (ids, ages).
    pub fn dim(&self, text: &str) -> String {
        self.paint("2", text)
    }

    /// A run status, coloured by what it means.
    pub fn status(&self, status: &str) -> String {
        let code = match status {
            "running" => "33",
            "completed" => "32",
            "failed" | "terminated" | "timed_out" => "31",
            _ => "36",
        };
        self.paint(code, status)
    }

    /// An error line's prefix.
    pub fn error(&self, text: &str) -> String {
        self.paint("31", text)
    }
}

/// Characters as a terminal shows them (escape sequences take no room).
fn width(text: &str) -> usize {
    let mut n = 0;
    let mut escape = false;
    for c in text.chars() {
        match (escape, c) {
            (false, '\x1b') => escape = true,
            (true, 'm') => escape = false,
            (true, _) => {}
            (false, _) => n += 1,
        }
    }
    n
}

/// Rows under a header, each column as wide as its widest cell.
pub fn table(style: &Style, header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(width(cell));
            }
        }
    }
    let line = |cells: Vec<String>| {
        let last = cells.len().saturating_sub(1);
        let mut out = String::new();
        for (i, cell) in cells.into_iter().enumerate() {
            out.push_str(&cell);
            if i < last {
                out.push_str(&" ".repeat(widths[i] - width(&cell) + 2));
            }
        }
        out.trim_end().to_string()
    };
    let mut out = line(header.iter().map(|h| style.bold(h)).collect());
    for row in rows {
        out.push('\n');
        out.push_str(&line(row.clone()));
    }
    out
}

/// `2026-12-01T03:52:26Z` for milliseconds since the Unix epoch (the engine's own UTC
/// formatting, as schedules print their fire times).
pub fn iso8601_ms(ms: i64) -> String {
    wf_core::schedule::format_utc(ms)
}

/// Milliseconds since the Unix epoch of a system time.
pub fn ms_of(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
    }
}

/// "2 min ago", "in 3 h", "just now", relative to `now_ms`.
pub fn age(ms: i64, now_ms: i64) -> String {
    let delta = now_ms.saturating_sub(ms);
    let secs = delta.unsigned_abs() / 1000;
    let amount = match secs {
        0..=4 => return "just now".into(),
        5..=59 => format!("{secs} s"),
        60..=3599 => format!("{} min", secs / 60),
        3600..=86_399 => format!("{} h", secs / 3600),
        _ => format!("{} d", secs / 86_400),
    };
    if delta >= 0 {
        format!("{amount} ago")
    } else {
        format!("in {amount}")
    }
}

/// A time as ISO-8601 with its age: `2026-12-01T03:52:26Z (2 min ago)`.
pub fn when(style: &Style, t: SystemTime) -> String {
    let ms = ms_of(t);
    format!(
        "{} {}",
        iso8601_ms(ms),
        style.dim(&format!("({})", age(ms, ms_of(SystemTime::now()))))
    )
}

/// Parses `500ms`, `30s`, `5m`, `2h`, `1d` (a bare number is seconds).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (try 500ms, 30s, 5m, 2h, 1d)"))?;
    let ms = match unit.trim() {
        "ms" => 1,
        "" | "s" => 1000,
        "m" | "min" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        other => {
            return Err(format!(
                "unknown duration unit {other:?} (use ms, s, m, h or d)"
            ))
        }
    };
    n.checked_mul(ms)
        .map(Duration::from_millis)
        .ok_or_else(|| format!("{text:?} is too long a duration"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_as_iso8601_and_ages() {
        assert_eq!(iso8601_ms(1_764_561_146_120), "2025-12-01T03:52:26Z");
        assert_eq!(age(0, 120_000), "2 min ago");
        assert_eq!(age(0, 1000), "just now");
        assert_eq!(age(7_200_000, 0), "in 2 h");
    }

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("7"), Ok(Duration::from_secs(7)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("3y").is_err());
    }

    #[test]
    fn tables_align_columns_whatever_the_colour() {
        let style = Style { colour: true };
        let rows = vec![
            vec!["a".into(), style.status("running")],
            vec!["long-id".into(), "x".into()],
        ];
        let plain = table(&Style { colour: false }, &["ID", "STATUS"], &rows);
        let lines: Vec<&str> = plain.lines().collect();
        assert_eq!(lines[0], "ID       STATUS");
        assert!(lines[2].starts_with("long-id  x"));
    }
}
