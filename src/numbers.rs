//! Numbers as people read them (`1,235`, `45.7`, `23.5 GiB`, `1 h 12 min`) and the median:
//! one place for every room that prints or measures.

/// 1234.5 → "1,235"; 45.67 → "45.7"; 7.512 → "7.51".
pub fn format_number(value: f64) -> String {
    if value >= 100.0 {
        format_count(value.round() as u64)
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

/// 17998 → "17,998"; 7 → "7".
pub fn format_count(count: u64) -> String {
    let digits = count.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `12.3 MiB`, `23.5 GiB`, `4.7 TiB`.
pub fn human_bytes(bytes: u64) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    let mib = bytes as f64 / MIB;
    match mib {
        m if m >= 1024.0 * 1024.0 => format!("{:.1} TiB", m / (1024.0 * 1024.0)),
        m if m >= 1024.0 => format!("{:.1} GiB", m / 1024.0),
        m => format!("{m:.1} MiB"),
    }
}

/// The median of `sorted` values (sorted ascending, at least one): the middle one, or the
/// mean of the middle two.
pub fn median(sorted: &[f64]) -> f64 {
    let middle = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[middle]
    } else {
        (sorted[middle - 1] + sorted[middle]) / 2.0
    }
}

/// "45 s", "12 min", "1 h 12 min", "3 days 4 h": two units at most, as people say it. Under
/// an hour the minutes are rounded (a run of 1 min 54 s called "1 min" was nearly twice as
/// long as it said); from an hour on, the smaller unit is cut.
pub fn human_duration(seconds: f64) -> String {
    if !seconds.is_finite() {
        return "forever".to_string();
    }
    if seconds < 0.5 {
        return "under a second".to_string();
    }
    let seconds = seconds.round() as u64;
    if seconds < 60 {
        return format!("{seconds} s");
    }
    if seconds < 3_600 {
        return format!("{} min", ((seconds + 30) / 60).min(59));
    }
    let (days, hours, minutes) = (seconds / 86_400, seconds / 3_600 % 24, seconds / 60 % 60);
    match (days, hours, minutes) {
        (0, h, 0) => format!("{h} h"),
        (0, h, m) => format!("{h} h {m} min"),
        (1, 0, _) => "1 day".to_string(),
        (d, 0, _) => format!("{d} days"),
        (1, h, _) => format!("1 day {h} h"),
        (d, h, _) => format!("{d} days {h} h"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_written_in_the_largest_unit_that_keeps_a_whole_number() {
        assert_eq!(human_bytes(512 << 20), "512.0 MiB");
        assert_eq!(human_bytes(24_105 << 20), "23.5 GiB");
        assert_eq!(human_bytes(4_915_200 << 20), "4.7 TiB");
    }

    #[test]
    fn numbers_keep_three_figures_and_counts_their_commas() {
        assert_eq!(format_number(1234.5), "1,235");
        assert_eq!(format_number(45.67), "45.7");
        assert_eq!(format_number(7.512), "7.51");
        assert_eq!(format_count(17_998), "17,998");
        assert_eq!(format_count(7), "7");
    }

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(human_duration(0.3), "under a second");
        assert_eq!(human_duration(44.6), "45 s");
        assert_eq!(human_duration(113.5), "2 min");
        assert_eq!(human_duration(250.0), "4 min");
        assert_eq!(human_duration(12.0 * 60.0 + 20.0), "12 min");
        assert_eq!(human_duration(3_600.0 + 12.0 * 60.0), "1 h 12 min");
        assert_eq!(human_duration(2.0 * 3_600.0), "2 h");
        assert_eq!(human_duration(86_400.0 + 60.0), "1 day");
        assert_eq!(human_duration(3.0 * 86_400.0 + 4.0 * 3_600.0), "3 days 4 h");
        assert_eq!(human_duration(f64::INFINITY), "forever");
    }

    #[test]
    fn the_median_is_the_middle_value_or_the_mean_of_the_middle_two() {
        assert_eq!(median(&[3.0]), 3.0);
        assert_eq!(median(&[1.0, 2.0, 10.0]), 2.0);
        assert_eq!(median(&[1.0, 2.0, 4.0, 10.0]), 3.0);
    }
}
