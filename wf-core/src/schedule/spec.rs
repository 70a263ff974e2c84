//! When a schedule fires: intervals anchored at the Unix epoch and calendar matches in UTC.
//! Pure data and arithmetic.

use serde::{Deserialize, Serialize};
use std::time::Duration;

const MINUTE_MS: i64 = 60_000;
const DAY_MS: i64 = 86_400_000;

/// The longest interval a schedule accepts, in milliseconds: `i64::MAX` (about 292 million
/// years), the range of the engine's clock.
pub const MAX_INTERVAL_MS: u128 = i64::MAX as u128;

/// When a schedule fires: the union of its intervals and calendars.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ScheduleSpec {
    /// Fixed intervals, anchored at the Unix epoch plus an offset.
    pub intervals: Vec<IntervalSpec>,
    /// Calendar matches (UTC).
    pub calendars: Vec<CalendarSpec>,
}

/// Every `every`, at `offset` past each multiple of `every` since the Unix epoch
/// (`every: 1 h, offset: 15 min` fires at :15 each hour).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalSpec {
    /// The period (at least one millisecond).
    pub every: Duration,
    /// Shift of each fire within the period (less than `every`).
    pub offset: Duration,
}

/// A calendar match in UTC; an empty list means "any". `day_of_week` counts from Sunday = 0.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CalendarSpec {
    /// Minutes 0-59.
    pub minute: Vec<u8>,
    /// Hours 0-23.
    pub hour: Vec<u8>,
    /// Days of the month 1-31.
    pub day_of_month: Vec<u8>,
    /// Months 1-12.
    pub month: Vec<u8>,
    /// Days of the week 0-6, Sunday = 0.
    pub day_of_week: Vec<u8>,
}

impl CalendarSpec {
    /// Every day at `hour:minute` UTC.
    pub fn daily_at(hour: u8, minute: u8) -> Self {
        CalendarSpec {
            minute: vec![minute],
            hour: vec![hour],
            ..Default::default()
        }
    }

    fn check(&self) -> Result<(), String> {
        let ranges: [(&str, &[u8], u8, u8); 5] = [
            ("minute", &self.minute, 0, 59),
            ("hour", &self.hour, 0, 23),
            ("day_of_month", &self.day_of_month, 1, 31),
            ("month", &self.month, 1, 12),
            ("day_of_week", &self.day_of_week, 0, 6),
        ];
        for (field, values, lo, hi) in ranges {
            if let Some(v) = values.iter().find(|v| **v < lo || **v > hi) {
                return Err(format!("calendar {field} {v} is outside {lo}..={hi}"));
            }
        }
        Ok(())
    }

    fn matches(list: &[u8], v: u32) -> bool {
        list.is_empty() || list.iter().any(|x| u32::from(*x) == v)
    }

    /// The first matching minute strictly after `after_ms`, within five years.
    fn next_after(&self, after_ms: i64) -> Option<i64> {
        let start = after_ms
            .div_euclid(MINUTE_MS)
            .checked_add(1)?
            .checked_mul(MINUTE_MS)?;
        let mut day = start.div_euclid(DAY_MS);
        for _ in 0..(366 * 5) {
            let (_, month, dom) = civil_from_days(day);
            let dow = (day + 4).rem_euclid(7) as u32; // 1970-01-01 was a Thursday
            if Self::matches(&self.month, month)
                && Self::matches(&self.day_of_month, dom)
                && Self::matches(&self.day_of_week, dow)
            {
                for h in 0..24u32 {
                    if !Self::matches(&self.hour, h) {
                        continue;
                    }
                    for m in 0..60u32 {
                        let t = day
                            .checked_mul(DAY_MS)?
                            .checked_add(i64::from(h) * 3_600_000 + i64::from(m) * MINUTE_MS)?;
                        if t >= start && Self::matches(&self.minute, m) {
                            return Some(t);
                        }
                    }
                }
            }
            day += 1;
        }
        None
    }
}

impl ScheduleSpec {
    /// Fires every `every` (at multiples of `every` since the Unix epoch).
    pub fn every(every: Duration) -> Self {
        ScheduleSpec {
            intervals: vec![IntervalSpec {
                every,
                offset: Duration::ZERO,
            }],
            calendars: Vec::new(),
        }
    }

    /// Fires on a calendar match.
    pub fn calendar(calendar: CalendarSpec) -> Self {
        ScheduleSpec {
            intervals: Vec::new(),
            calendars: vec![calendar],
        }
    }

    /// Adds another spec's fire times to this one's.
    pub fn and(mut self, other: ScheduleSpec) -> Self {
        self.intervals.extend(other.intervals);
        self.calendars.extend(other.calendars);
        self
    }

    /// Checks the spec: at least one interval or calendar, intervals of 1 ms to
    /// [`MAX_INTERVAL_MS`] with an offset below the period, calendar fields in range.
    pub fn check(&self) -> Result<(), String> {
        if self.intervals.is_empty() && self.calendars.is_empty() {
            return Err("a schedule spec needs at least one interval or calendar".into());
        }
        for i in &self.intervals {
            if i.every.as_millis() == 0 {
                return Err("an interval must be at least 1 ms".into());
            }
            if i.every.as_millis() > MAX_INTERVAL_MS {
                return Err(format!(
                    "an interval must be at most {MAX_INTERVAL_MS} ms (about 292 million years), \
                     got {:?}",
                    i.every
                ));
            }
            if i.offset >= i.every {
                return Err(format!(
                    "interval offset {:?} must be less than its period {:?}",
                    i.offset, i.every
                ));
            }
        }
        self.calendars.iter().try_for_each(CalendarSpec::check)
    }

    /// The first fire time strictly after `after_ms` (none past the end of representable
    /// time, or for an interval [`check`](Self::check) refuses).
    pub fn next_after(&self, after_ms: i64) -> Option<i64> {
        let intervals = self.intervals.iter().filter_map(|i| {
            // In i128: a period near the limit times a multiple overflows i64 before the
            // result is known not to fit.
            let every = i128::try_from(i.every.as_millis())
                .ok()
                .filter(|e| *e > 0)?;
            let offset = i128::try_from(i.offset.as_millis()).ok()?;
            let next = ((i128::from(after_ms) - offset).div_euclid(every) + 1) * every + offset;
            i64::try_from(next).ok()
        });
        let calendars = self.calendars.iter().filter_map(|c| c.next_after(after_ms));
        intervals.chain(calendars).min()
    }
}

/// Days since 1970-01-01 to (year, month 1-12, day 1-31), proleptic Gregorian.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// `2026-01-01T09:30:00Z` for a time in ms since the Unix epoch.
pub fn format_utc(ms: i64) -> String {
    let (y, m, d) = civil_from_days(ms.div_euclid(DAY_MS));
    let in_day = ms.rem_euclid(DAY_MS) / 1000;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        in_day / 3600,
        in_day / 60 % 60,
        in_day % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fire_time_fits_the_suffix_a_schedule_reserves() {
        for ms in [i64::MIN, -1, 0, 1_767_225_600_000, i64::MAX] {
            let suffix = format!("-{}", format_utc(ms));
            assert!(
                suffix.len() <= super::super::ACTION_ID_SUFFIX_BYTES,
                "{suffix}"
            );
        }
        assert_eq!(format_utc(1_767_225_600_000).len() + 1, 21);
    }

    const T0: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z, a Thursday

    #[test]
    fn intervals_fire_at_offsets_from_the_epoch() {
        let spec = ScheduleSpec {
            intervals: vec![IntervalSpec {
                every: Duration::from_secs(3600),
                offset: Duration::from_secs(900),
            }],
            calendars: vec![],
        };
        assert_eq!(spec.next_after(T0), Some(T0 + 900_000));
        assert_eq!(
            spec.next_after(T0 + 900_000),
            Some(T0 + 3_600_000 + 900_000)
        );
    }

    #[test]
    fn calendars_match_fields_in_utc() {
        assert_eq!(format_utc(T0), "2026-01-01T00:00:00Z");
        let daily = ScheduleSpec::calendar(CalendarSpec::daily_at(9, 30));
        assert_eq!(
            format_utc(daily.next_after(T0).unwrap()),
            "2026-01-01T09:30:00Z"
        );
        assert_eq!(
            format_utc(daily.next_after(T0 + 10 * 3_600_000).unwrap()),
            "2026-01-02T09:30:00Z"
        );
        let mondays = ScheduleSpec::calendar(CalendarSpec {
            day_of_week: vec![1],
            ..CalendarSpec::daily_at(8, 0)
        });
        assert_eq!(
            format_utc(mondays.next_after(T0).unwrap()),
            "2026-01-05T08:00:00Z"
        );
        let leap = ScheduleSpec::calendar(CalendarSpec {
            month: vec![2],
            day_of_month: vec![29],
            ..CalendarSpec::daily_at(0, 0)
        });
        assert_eq!(
            format_utc(leap.next_after(T0).unwrap()),
            "2028-02-29T00:00:00Z"
        );
    }

    #[test]
    fn bad_specs_are_refused() {
        assert!(ScheduleSpec::default().check().is_err());
        assert!(ScheduleSpec::calendar(CalendarSpec::daily_at(24, 0))
            .check()
            .is_err());
        let offset_too_big = ScheduleSpec {
            intervals: vec![IntervalSpec {
                every: Duration::from_secs(1),
                offset: Duration::from_secs(2),
            }],
            calendars: vec![],
        };
        assert!(offset_too_big.check().is_err());
        // 2^64 ms used to pass and truncate to a period of 0 (a panic in next_after).
        let too_long = ScheduleSpec::every(Duration::new(18_446_744_073_709_551, 616_000_000));
        assert!(too_long.check().unwrap_err().contains("at most"));
        assert_eq!(too_long.next_after(0), None);
    }

    #[test]
    fn the_longest_interval_fires_once_within_representable_time() {
        let longest = ScheduleSpec::every(Duration::from_millis(i64::MAX as u64));
        assert!(longest.check().is_ok());
        assert_eq!(longest.next_after(0), Some(i64::MAX));
        assert_eq!(longest.next_after(i64::MAX), None);
    }
}
