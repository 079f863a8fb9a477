//! Printing what was measured: a Markdown table row for `docs/performance.md` and a JSON line for machines.

use std::time::Duration;

use serde_json::{Value, json};

/// Bytes as KiB with one decimal.
pub fn kib(bytes: f64) -> String {
    format!("{:.1} KiB", bytes / 1024.0)
}

/// Bytes as KiB, or as MiB from 10 MiB on.
pub fn size(bytes: f64) -> String {
    if bytes.abs() >= 10.0 * 1024.0 * 1024.0 { format!("{:.1} MiB", bytes / (1024.0 * 1024.0)) } else { kib(bytes) }
}

/// Bytes as MiB with one decimal.
pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// A duration in the unit that reads best (µs, ms or s).
pub fn duration(duration: Duration) -> String {
    let micros = duration.as_secs_f64() * 1e6;
    if micros < 1_000.0 {
        format!("{micros:.0} µs")
    } else if micros < 10_000_000.0 {
        format!("{:.1} ms", micros / 1e3)
    } else {
        format!("{:.1} s", micros / 1e6)
    }
}

/// A duration in microseconds, for JSON.
pub fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

/// A table: its header and rows, printed as Markdown.
#[derive(Debug, Clone, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column names.
    pub fn new<I: IntoIterator<Item = S>, S: Into<String>>(header: I) -> Self {
        Self { header: header.into_iter().map(Into::into).collect(), rows: Vec::new() }
    }

    /// Adds a row.
    pub fn row<I: IntoIterator<Item = S>, S: Into<String>>(&mut self, cells: I) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// The table as Markdown lines.
    pub fn markdown(&self) -> String {
        let line = |cells: &[String]| format!("| {} |", cells.join(" | "));
        let rule: Vec<String> = self.header.iter().map(|_| "---".to_string()).collect();
        let mut lines = vec![line(&self.header), line(&rule)];
        lines.extend(self.rows.iter().map(|row| line(row)));
        lines.join("\n")
    }
}

/// Prints a table, then one JSON line tagged `mode` (`LOAD_JSON {...}`, easy to grep from a log).
pub fn print(table: &Table, mode: &str, data: Value) {
    println!("{}\n", table.markdown());
    let mut record = json!({"mode": mode});
    if let (Value::Object(record), Value::Object(data)) = (&mut record, data) {
        record.extend(data);
    }
    println!("LOAD_JSON {record}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_print_as_markdown() {
        let mut table = Table::new(["provider", "sessions"]);
        table.row(["claude", "1000"]);
        assert_eq!(table.markdown(), "| provider | sessions |\n| --- | --- |\n| claude | 1000 |");
    }

    #[test]
    fn units_read_well() {
        assert_eq!(duration(Duration::from_micros(12)), "12 µs");
        assert_eq!(duration(Duration::from_micros(12_345)), "12.3 ms");
        assert_eq!(duration(Duration::from_secs(42)), "42.0 s");
        assert_eq!(kib(2048.0), "2.0 KiB");
        assert_eq!(size(2048.0), "2.0 KiB");
        assert_eq!(size(20.0 * 1024.0 * 1024.0), "20.0 MiB");
        assert_eq!(mib(3 * 1024 * 1024), "3.0 MiB");
    }
}
