//! Dates, for questions that ask when: the day a message was said, the days
//! it speaks of relative to that day ("yesterday", "last week", "two years
//! ago", "last Friday"), and the days a gold answer names ("7 May 2023",
//! "May 2023", "2022", "the week before 27 June 2023"). A message that speaks
//! of the day the answer names is likely what the answer was read from.

use serde_json::Value;

use super::model::TraceModel;
use super::text::{tokens, MONTHS};

/// A span of days, both ends included, counted from 1970-01-01.
pub type Span = (i64, i64);

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// (year, month) of a day.
fn year_month(days: i64) -> (i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month)
}

/// Monday 0 to Sunday 6.
fn weekday(days: i64) -> i64 {
    (days + 3).rem_euclid(7)
}

fn month_span(year: i64, month: i64) -> Span {
    let (ny, nm) = if month == 12 {
        (year + 1, 1)
    } else {
        (year, month + 1)
    };
    (
        days_from_civil(year, month, 1),
        days_from_civil(ny, nm, 1) - 1,
    )
}

fn year_span(year: i64) -> Span {
    (days_from_civil(year, 1, 1), days_from_civil(year, 12, 31))
}

/// A date token of [`tokens`] (`20230507`) as a day.
fn date_token(t: &str) -> Option<i64> {
    if t.len() != 8 || !t.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let y: i64 = t[..4].parse().ok()?;
    let m: i64 = t[4..6].parse().ok()?;
    let d: i64 = t[6..].parse().ok()?;
    ((1..=12).contains(&m) && (1..=31).contains(&d)).then(|| days_from_civil(y, m, d))
}

fn year_token(t: &str) -> Option<i64> {
    (t.len() == 4 && t.bytes().all(|b| b.is_ascii_digit()))
        .then(|| t.parse().ok())
        .flatten()
        .filter(|y| (1900..=2200).contains(y))
}

/// The days of the week, Monday first.
pub(crate) const WEEKDAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

fn month_of(t: &str) -> Option<i64> {
    MONTHS
        .iter()
        .position(|m| *m == t || (t.len() == 3 && m.starts_with(t)))
        .map(|i| i as i64 + 1)
}

/// A count word or number (`a`, `two`, `3`, `few`).
fn count_of(t: &str) -> Option<i64> {
    match t {
        "a" | "an" | "one" => Some(1),
        "couple" => Some(2),
        "few" | "several" => Some(3),
        _ => t.parse().ok().filter(|n| (1..=100).contains(n)),
    }
}

/// The day a message was said: the first metadata value, or the first
/// `Key: value` line of its text, that reads as a date.
pub fn said_on(model: &TraceModel, var: usize) -> Option<i64> {
    let from_text = |s: &str| -> Option<i64> {
        // An ISO date or date-time reads as its date.
        let head: String = s.trim().chars().take(10).collect();
        tokens(&head).first().and_then(|t| date_token(t))
    };
    if let Value::Object(m) = &model.vars[var].metadata {
        for v in m.values() {
            if let Some(d) = v.as_str().and_then(from_text) {
                return Some(d);
            }
        }
    }
    model
        .value(var)
        .lines()
        .filter_map(|line| line.split_once(": ").map(|x| x.1))
        .find_map(from_text)
}

/// The days a text speaks of, read relative to `day`, the day it was said.
pub fn spoken_of(text: &str, day: i64) -> Vec<Span> {
    let t = tokens(text);
    let mut out = Vec::new();
    let (year, month) = year_month(day);
    let at = |i: usize| t.get(i).map(String::as_str).unwrap_or("");
    for (i, token) in t.iter().enumerate() {
        let w = token.as_str();
        match w {
            "yesterday" => out.push((day - 1, day - 1)),
            "today" | "tonight" => out.push((day, day)),
            "ago" if i >= 2 => {
                let Some(n) = count_of(at(i - 2)) else {
                    continue;
                };
                match at(i - 1).trim_end_matches('s') {
                    "day" => out.push((day - n - 1, day - n + 1)),
                    "week" => out.push((day - 7 * n - 4, day - 7 * n + 4)),
                    "month" => {
                        let m = year * 12 + month - 1 - n;
                        out.push(month_span(m.div_euclid(12), m.rem_euclid(12) + 1));
                    }
                    "year" => out.push(year_span(year - n)),
                    _ => {}
                }
            }
            "last" | "past" | "next" => {
                let sign = if w == "next" { 1 } else { -1 };
                let unit = at(i + 1);
                match unit {
                    "night" => out.push((day - 1, day)),
                    "week" => out.push((day + 7 * sign - 4, day + 7 * sign + 4)),
                    "weekend" => {
                        // The Saturday and Sunday before (or after) the day.
                        let back = (weekday(day) + 2).rem_euclid(7);
                        let sat = if sign < 0 {
                            day - if back == 0 { 7 } else { back }
                        } else {
                            day + (5 - weekday(day)).rem_euclid(7)
                        };
                        out.push((sat, sat + 1));
                    }
                    "month" => {
                        let m = year * 12 + month - 1 + sign;
                        out.push(month_span(m.div_euclid(12), m.rem_euclid(12) + 1));
                    }
                    "year" => out.push(year_span(year + sign)),
                    u => {
                        if let Some(wd) = WEEKDAYS.iter().position(|x| *x == u) {
                            let wd = wd as i64;
                            let d = if sign < 0 {
                                let back = (weekday(day) - wd).rem_euclid(7);
                                day - if back == 0 { 7 } else { back }
                            } else {
                                let fwd = (wd - weekday(day)).rem_euclid(7);
                                day + if fwd == 0 { 7 } else { fwd }
                            };
                            out.push((d, d));
                        }
                    }
                }
            }
            _ => {
                if let Some(d) = date_token(w) {
                    out.push((d, d));
                } else if let Some(y) = year_token(w) {
                    out.push(match month_of(at(i.wrapping_sub(1))) {
                        Some(m) if i > 0 => month_span(y, m),
                        _ => year_span(y),
                    });
                }
            }
        }
    }
    out
}

/// The days an answer names: dates, months of a year, years, and a span
/// before a date (`the week before 27 June 2023`, `the day before ...`,
/// `the Sunday before ...`).
pub fn named(answer: &str) -> Vec<Span> {
    let t = tokens(answer);
    let mut out = Vec::new();
    let at = |i: usize| t.get(i).map(String::as_str).unwrap_or("");
    for (i, token) in t.iter().enumerate() {
        let w = token.as_str();
        if let Some(d) = date_token(w) {
            let before = (at(i.wrapping_sub(1)) == "before" && i >= 2).then(|| at(i - 2));
            out.push(match before {
                Some("day") => (d - 1, d - 1),
                Some("week") => (d - 10, d - 4),
                Some("weekend") => (d - 8, d - 1),
                Some("month") => {
                    let (y, m) = year_month(d);
                    let prev = y * 12 + m - 2;
                    month_span(prev.div_euclid(12), prev.rem_euclid(12) + 1)
                }
                Some(u) => match WEEKDAYS.iter().position(|x| *x == u) {
                    Some(wd) => {
                        let back = (weekday(d) - wd as i64).rem_euclid(7);
                        let x = d - if back == 0 { 7 } else { back };
                        (x, x)
                    }
                    None => (d, d),
                },
                None => (d, d),
            });
        } else if let Some(y) = year_token(w) {
            out.push(match month_of(at(i.wrapping_sub(1))) {
                Some(m) if i > 0 => month_span(y, m),
                _ => year_span(y),
            });
        }
    }
    out
}

/// Whether two lists of spans meet; two single days may be a day apart
/// (an evening event told as "yesterday" the next morning).
pub fn meet(a: &[Span], b: &[Span]) -> bool {
    a.iter().any(|x| {
        b.iter().any(|y| {
            let slack = i64::from(x.1 == x.0 && y.1 == y.0);
            x.0 - slack <= y.1 && y.0 - slack <= x.1
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(y: i64, m: i64, d: i64) -> i64 {
        days_from_civil(y, m, d)
    }

    #[test]
    fn days_and_weekdays_are_counted_from_the_epoch() {
        assert_eq!(day(1970, 1, 1), 0);
        assert_eq!(year_month(day(2024, 2, 29)), (2024, 2));
        assert_eq!(year_month(day(2023, 12, 31)), (2023, 12));
        // 2023-05-08 was a Monday.
        assert_eq!(weekday(day(2023, 5, 8)), 0);
    }

    #[test]
    fn relative_words_are_read_from_the_day_they_were_said() {
        let said = day(2023, 5, 8);
        let spans = |t: &str| spoken_of(t, said);
        assert_eq!(spans("I went there yesterday"), [(said - 1, said - 1)]);
        assert!(meet(
            &spans("I painted that lake sunrise last year!"),
            &named("2022")
        ));
        assert!(!meet(
            &spans("I painted that lake sunrise last year!"),
            &named("2023")
        ));
        assert!(meet(
            &spans("we went camping two weeks ago"),
            &named("24 April 2023")
        ));
        assert!(meet(
            &spans("A friend made it ten years ago"),
            &named("2013")
        ));
        // The Friday before Monday 8 May 2023 is 5 May.
        assert_eq!(
            spans("last Friday I went"),
            [(day(2023, 5, 5), day(2023, 5, 5))]
        );
        assert!(meet(&spans("last weekend"), &named("6 May 2023")));
        assert!(meet(&spans("last month"), &named("April 2023")));
        assert!(spans("I like painting sunrises").is_empty());
    }

    #[test]
    fn answers_name_days_months_years_and_spans_before_a_date() {
        assert_eq!(named("7 May 2023"), [(day(2023, 5, 7), day(2023, 5, 7))]);
        assert_eq!(named("2023-05-07"), [(day(2023, 5, 7), day(2023, 5, 7))]);
        assert_eq!(named("May 2023"), [(day(2023, 5, 1), day(2023, 5, 31))]);
        assert_eq!(named("2022"), [(day(2022, 1, 1), day(2022, 12, 31))]);
        let week = named("The week before 27 June 2023");
        assert!(meet(&week, &[(day(2023, 6, 20), day(2023, 6, 20))]));
        assert!(!meet(&week, &[(day(2023, 6, 27), day(2023, 6, 27))]));
        // 25 May 2023 was a Thursday; the Sunday before it the 21st.
        assert_eq!(
            named("The sunday before 25 May 2023"),
            [(day(2023, 5, 21), day(2023, 5, 21))]
        );
        assert!(named("a blue Volvo").is_empty());
    }
}
