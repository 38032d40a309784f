//! Timestamp validation for `created_at` ("YYYY-MM-DD HH:MM:SS.sss", also
//! with a `T` separator, without fraction, or with a UTC offset, as Python's
//! `datetime.fromisoformat` reads them), and the ISO-8601 form of the times
//! the database itself records.

/// Milliseconds since the Unix epoch as an ISO-8601 UTC time,
/// `YYYY-MM-DDTHH:MM:SS.sssZ`.
pub fn iso_utc(ms: u64) -> String {
    let ms = i64::try_from(ms).unwrap_or(i64::MAX);
    let day = ms.div_euclid(86_400_000);
    let rest = ms.rem_euclid(86_400_000);
    format!(
        "{}T{:02}:{:02}:{:02}.{:03}Z",
        civil_from_days(day),
        rest / 3_600_000,
        rest / 60_000 % 60,
        rest / 1000 % 60,
        rest % 1000
    )
}

/// The civil date (proleptic Gregorian, `YYYY-MM-DD`) of a day counted
/// from 1970-01-01.
pub fn civil_from_days(z: i64) -> String {
    let z = z + 719468;
    let era = if z >= 0 { z } else { z - 146096 } / 146097;
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!("{y:04}-{m:02}-{d:02}")
}

/// Now, in milliseconds since the Unix epoch (0 if the clock is before it).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Checks that `s` is a valid timestamp; returns why not.
pub fn check(s: &str) -> Result<(), String> {
    let b = s.as_bytes();
    let bad = || format!("{s:?} is not a timestamp (expected YYYY-MM-DD HH:MM:SS[.fff])");
    let num = |from: usize, len: usize| -> Option<u32> {
        let part = b.get(from..from + len)?;
        if part.iter().all(u8::is_ascii_digit) {
            std::str::from_utf8(part).ok()?.parse().ok()
        } else {
            None
        }
    };
    let (year, month, day) = match (num(0, 4), b.get(4), num(5, 2), b.get(7), num(8, 2)) {
        (Some(y), Some(b'-'), Some(m), Some(b'-'), Some(d)) => (y, m, d),
        _ => return Err(bad()),
    };
    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) || year == 0 {
        return Err(format!("{s:?} is not a valid date"));
    }
    if b.len() == 10 {
        return Ok(());
    }
    if !matches!(b.get(10), Some(b' ') | Some(b'T')) {
        return Err(bad());
    }
    let (h, mi, se) = match (num(11, 2), b.get(13), num(14, 2), b.get(16), num(17, 2)) {
        (Some(h), Some(b':'), Some(mi), Some(b':'), Some(se)) => (h, mi, se),
        _ => return Err(bad()),
    };
    if h > 23 || mi > 59 || se > 59 {
        return Err(format!("{s:?} is not a valid time of day"));
    }
    let mut i = 19;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start || i - start > 9 {
            return Err(bad());
        }
    }
    match &b[i..] {
        [] | [b'Z'] => Ok(()),
        [b'+' | b'-', rest @ ..] if rest.len() == 5 && rest[2] == b':' => {
            match (num(i + 1, 2), num(i + 4, 2)) {
                (Some(oh), Some(om)) if oh < 24 && om < 60 => Ok(()),
                _ => Err(bad()),
            }
        }
        _ => Err(bad()),
    }
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::{check, iso_utc};

    #[test]
    fn recorded_times_read_as_iso_8601_utc() {
        assert_eq!(iso_utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_utc(86_400_000 + 3_723_004), "1970-01-02T01:02:03.004Z");
        assert_eq!(iso_utc(1_704_067_199_999), "2023-12-31T23:59:59.999Z");
        assert!(check(&iso_utc(1_763_774_499_972)).is_ok());
    }

    #[test]
    fn smartcomment_and_iso_forms_pass() {
        for ok in [
            "2026-11-22 01:21:39.972",
            "2026-11-22 01:21:39",
            "2026-11-22T01:21:39.123456",
            "2024-02-29 00:00:00",
            "2026-11-22",
            "2026-11-22T01:21:39+01:00",
            "2026-11-22T01:21:39Z",
        ] {
            assert!(check(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn bad_forms_fail() {
        for bad in [
            "",
            "yesterday",
            "2026-13-01 00:00:00",
            "2023-02-29 00:00:00",
            "2026-11-22 24:00:00",
            "2026-11-22 01:61:00",
            "2026-11-22 01:21:39.",
            "2026-11-22 01:21:39 extra",
            "2026/11/22 01:21:39",
            "0000-01-01",
        ] {
            assert!(check(bad).is_err(), "{bad}");
        }
    }
}
