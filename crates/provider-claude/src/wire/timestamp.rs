//! RFC 3339 timestamps as the API writes them (`created_at` …), parsed to microseconds so they compare as times
//! rather than as strings (`…00Z` sorts after `…00.5Z` as text).

/// (year, month, day) → days since 1970-01-01.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year - era * 400;
    let doy = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468
}

/// Parses an RFC 3339 timestamp (`T` or a space between date and time, optional fraction, `Z` or an offset).
pub(crate) fn parse_rfc3339(text: &str) -> Option<i64> {
    let text = text.trim();
    let number = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = text.get(range)?;
        part.bytes().all(|b| b.is_ascii_digit()).then(|| part.parse().ok())?
    };
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    let separators = [(4, b'-'), (7, b'-'), (13, b':'), (16, b':')];
    if separators.iter().any(|(at, byte)| text.as_bytes().get(*at) != Some(byte))
        || !matches!(text.as_bytes().get(10), Some(b'T' | b't' | b' '))
        || !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = text.get(19..)?;
    let mut fraction = 0;
    if let Some(digits) = rest.strip_prefix('.') {
        let length = digits.bytes().take_while(u8::is_ascii_digit).count();
        if length == 0 {
            return None;
        }
        let padded: String = digits[..length].chars().chain(std::iter::repeat('0')).take(6).collect();
        fraction = padded.parse::<i64>().ok()?;
        rest = &digits[length..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let (hours, minutes) = rest.get(1..)?.split_once(':')?;
            let (hours, minutes): (i64, i64) = (hours.parse().ok()?, minutes.parse().ok()?);
            // A real offset is under a day: anything else (a huge number in a query) is not a timestamp.
            if !(0..24).contains(&hours) || !(0..60).contains(&minutes) {
                return None;
            }
            sign * (hours * 3600 + minutes * 60)
        }
    };
    let seconds = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset;
    Some(seconds * 1_000_000 + fraction)
}
