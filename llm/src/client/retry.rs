//! How long to wait before the next try: exponential backoff, and the
//! `Retry-After` a server may send.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::config::Config;

/// The wait before retry `n` (0 for the first): `first * 2^n`, at most
/// [`Config::MAX_BACKOFF`].
pub(super) fn backoff(first: Duration, n: u32) -> Duration {
    let factor = 1u32.checked_shl(n).unwrap_or(u32::MAX);
    first.saturating_mul(factor).min(Config::MAX_BACKOFF)
}

/// A `Retry-After` value (seconds, or an HTTP date, `now` being the time
/// to count from) as a wait; `None` when it reads as neither.
pub(super) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = http_date(value)?;
    let now = now.duration_since(UNIX_EPOCH).ok()?.as_secs();
    Some(Duration::from_secs(at.saturating_sub(now)))
}

/// Seconds since the epoch of an HTTP date in any of its three forms
/// (`Sun, 06 Nov 1994 08:49:37 GMT`, `Sunday, 06-Nov-94 08:49:37 GMT`,
/// `Sun Nov  6 08:49:37 1994`).
fn http_date(s: &str) -> Option<u64> {
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let mut month = None;
    let mut time = None;
    let mut numbers = Vec::new();
    for token in s.split([' ', ',', '-', '\t']).filter(|t| !t.is_empty()) {
        if token.contains(':') {
            time = Some(token);
        } else if token.bytes().all(|b| b.is_ascii_digit()) {
            numbers.push(token);
        } else if let Some(i) = MONTHS.iter().position(|m| token.eq_ignore_ascii_case(m)) {
            month = Some(i as i64 + 1);
        }
    }
    let (day, year) = match numbers.as_slice() {
        [a, b] if a.len() == 4 => (*b, *a),
        [a, b] => (*a, *b),
        _ => return None,
    };
    let day: i64 = day.parse().ok().filter(|d| (1..=31).contains(d))?;
    let mut year: i64 = year.parse().ok().filter(|y| *y <= 9999)?;
    if year < 100 {
        year += if year >= 70 { 1900 } else { 2000 };
    }
    let mut hms = time?.split(':').map(|p| p.parse::<i64>().ok());
    let (h, m, sec) = (hms.next()??, hms.next()??, hms.next()??);
    if hms.next().is_some()
        || !(0..24).contains(&h)
        || !(0..60).contains(&m)
        || !(0..=60).contains(&sec)
    {
        return None;
    }
    let days = days_from_civil(year, month?, day);
    u64::try_from(days * 86_400 + h * 3600 + m * 60 + sec).ok()
}

/// Days from 1970-01-01 to the given date of the proleptic Gregorian calendar.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}
