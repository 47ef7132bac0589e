//! `strftime_now(format)`: the local time formatted as Python's `datetime.now().strftime`
//! does in the C locale (Python never sets LC_TIME itself). Directives beyond the common
//! ones decline.

use super::value::{decline, Res};

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// The local broken-down time now (`localtime_r`).
fn local_now() -> Res<libc::tm> {
    // SAFETY: time(NULL) has no preconditions; localtime_r writes only into `tm`, a
    // zeroed plain-old-data struct owned here, and is thread-safe.
    unsafe {
        let now = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&now, &mut tm).is_null() {
            return decline("no local time");
        }
        Ok(tm)
    }
}

pub fn strftime_now(format: &str) -> Res<String> {
    format_tm(format, &local_now()?)
}

pub fn format_tm(format: &str, tm: &libc::tm) -> Res<String> {
    let month = usize::try_from(tm.tm_mon).ok().filter(|m| *m < 12);
    let day = usize::try_from(tm.tm_wday).ok().filter(|d| *d < 7);
    let (Some(month), Some(day)) = (month, day) else {
        return decline("a broken local time");
    };
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let hour12 = if tm.tm_hour % 12 == 0 {
            12
        } else {
            tm.tm_hour % 12
        };
        match chars.next() {
            Some('Y') => out.push_str(&tm.tm_year.saturating_add(1900).to_string()),
            Some('y') => out.push_str(&format!("{:02}", (tm.tm_year + 1900).rem_euclid(100))),
            Some('m') => out.push_str(&format!("{:02}", month + 1)),
            Some('d') => out.push_str(&format!("{:02}", tm.tm_mday)),
            Some('e') => out.push_str(&format!("{:>2}", tm.tm_mday)),
            Some('j') => out.push_str(&format!("{:03}", tm.tm_yday + 1)),
            Some('H') => out.push_str(&format!("{:02}", tm.tm_hour)),
            Some('I') => out.push_str(&format!("{hour12:02}")),
            Some('M') => out.push_str(&format!("{:02}", tm.tm_min)),
            Some('S') => out.push_str(&format!("{:02}", tm.tm_sec)),
            Some('p') => out.push_str(if tm.tm_hour < 12 { "AM" } else { "PM" }),
            Some('B') => out.push_str(MONTHS[month]),
            Some('b') | Some('h') => out.push_str(&MONTHS[month][..3]),
            Some('A') => out.push_str(DAYS[day]),
            Some('a') => out.push_str(&DAYS[day][..3]),
            Some('%') => out.push('%'),
            _ => return decline("a strftime directive this engine does not model"),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_c_locale_strftime() {
        // SAFETY: a zeroed libc::tm is a valid value of this plain struct.
        let mut tm: libc::tm = unsafe { std::mem::zeroed() };
        (tm.tm_year, tm.tm_mon, tm.tm_mday, tm.tm_wday, tm.tm_yday) = (124, 6, 26, 5, 207);
        (tm.tm_hour, tm.tm_min, tm.tm_sec) = (0, 5, 9);
        assert_eq!(format_tm("%d %b %Y", &tm).unwrap(), "26 Jul 2024");
        assert_eq!(
            format_tm("%A %B %e %j %I:%M:%S %p %y %%", &tm).unwrap(),
            "Friday July 26 208 12:05:09 AM 24 %"
        );
        assert!(format_tm("%Z", &tm).is_err());
    }
}
