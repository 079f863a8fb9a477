//! What the process costs: resident memory, open file descriptors, the open-file limit, latency percentiles.

use std::io;
use std::time::Duration;

/// Resident memory of this process, from `/proc/self/status`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Resident {
    /// `VmRSS`: resident now, in bytes.
    pub rss: u64,
    /// `VmHWM`: the peak resident size so far, in bytes.
    pub peak: u64,
}

impl Resident {
    /// Reads this process's figures (zero where `/proc` does not have them).
    pub fn now() -> Self {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        parse_status(&status)
    }
}

/// Picks `VmRSS` and `VmHWM` (given in kB) out of a `/proc/<pid>/status` text.
pub fn parse_status(status: &str) -> Resident {
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kib| kib * 1024)
    };
    Resident { rss: field("VmRSS:"), peak: field("VmHWM:") }
}

/// How many file descriptors this process has open (entries of `/proc/self/fd`).
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, Iterator::count)
}

/// Raises the soft open-file limit to the hard limit; returns the limit now in force. Both ends of a loopback
/// connection count against it when they live in one process, which is why the emulator runs in a child.
#[allow(unsafe_code)]
pub fn raise_fd_limit() -> io::Result<u64> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `getrlimit` writes one `rlimit` through a pointer to a live, properly aligned value.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if limit.rlim_cur < limit.rlim_max {
        limit.rlim_cur = limit.rlim_max;
        // SAFETY: `setrlimit` reads one `rlimit` through a pointer to a live value.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(limit.rlim_cur)
}

/// The local port range connections to one address:port draw from (`ip_local_port_range`), as `(low, high)`.
pub fn ephemeral_ports() -> Option<(u32, u32)> {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut bounds = range.split_whitespace().map(str::parse::<u32>);
    Some((bounds.next()?.ok()?, bounds.next()?.ok()?))
}

/// The most file descriptors seen open, sampled every 250 ms by a task until dropped.
#[derive(Debug)]
pub struct FdWatch {
    peak: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl FdWatch {
    /// Starts sampling.
    pub fn start() -> Self {
        let peak = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(open_fds()));
        let seen = std::sync::Arc::clone(&peak);
        let task = tokio::spawn(async move {
            let mut ticks = tokio::time::interval(Duration::from_millis(250));
            loop {
                ticks.tick().await;
                seen.fetch_max(open_fds(), std::sync::atomic::Ordering::Relaxed);
            }
        });
        Self { peak, task }
    }

    /// The most seen so far (a sample taken now included).
    pub fn peak(&self) -> usize {
        let now = open_fds();
        self.peak.fetch_max(now, std::sync::atomic::Ordering::Relaxed).max(now)
    }
}

impl Drop for FdWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Latency samples, summarised as percentiles.
#[derive(Debug, Clone, Default)]
pub struct Samples(Vec<Duration>);

impl Samples {
    /// An empty set with room for `capacity` samples (allocated up front, so recording does not allocate).
    pub fn with_capacity(capacity: usize) -> Self {
        Self(Vec::with_capacity(capacity))
    }

    /// Adds one sample.
    pub fn push(&mut self, sample: Duration) {
        self.0.push(sample);
    }

    /// How many samples there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The `p`-th percentile (`p` in 0..=100, nearest rank), or zero without samples.
    pub fn percentile(&self, p: f64) -> Duration {
        if self.0.is_empty() {
            return Duration::ZERO;
        }
        let mut sorted = self.0.clone();
        sorted.sort_unstable();
        let rank = ((p.clamp(0.0, 100.0) / 100.0) * sorted.len() as f64).ceil() as usize;
        sorted[rank.saturating_sub(1).min(sorted.len() - 1)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields_are_read_in_kib() {
        let status = "Name:\tload\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\nThreads:\t3\n";
        assert_eq!(parse_status(status), Resident { rss: 1024 * 1024, peak: 2048 * 1024 });
        assert_eq!(parse_status("garbage"), Resident::default());
    }

    #[test]
    fn percentiles_take_the_nearest_rank() {
        let mut samples = Samples::default();
        assert_eq!(samples.percentile(50.0), Duration::ZERO);
        for micros in (1..=100).rev() {
            samples.push(Duration::from_micros(micros));
        }
        assert_eq!(samples.percentile(50.0), Duration::from_micros(50));
        assert_eq!(samples.percentile(99.0), Duration::from_micros(99));
        assert_eq!(samples.percentile(100.0), Duration::from_micros(100));
    }

    #[test]
    fn this_process_has_resident_memory_and_descriptors() {
        let resident = Resident::now();
        assert!(resident.rss > 0 && resident.peak >= resident.rss);
        assert!(open_fds() >= 3, "stdin, stdout and stderr at least");
    }
}
