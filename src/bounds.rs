//! The bounds of every numeric flag and shared limit, checked where clap parses it, so that every
//! command and every benchmark's build options refuse the same value the same way, with the
//! allowed range in the message (`tests/suite/cli_bounds.rs` feeds random argument vectors through
//! the parser and every command's checks). A leaf: every layer may use it, it uses no other.

use clap::builder::TypedValueParser;

/// Sizes of a set or a build (items per type, per set, quotas): enough for any dataset here,
/// and never an allocation that cannot be made.
pub const MAX_SIZE: u64 = 1_000_000;

/// Records recomputed per model (`cache merge --verify-sample`, `cache verify --recompute`,
/// `audit --verify`).
pub const MAX_SAMPLE: u64 = 1_000_000;

/// Perturbed copies of one item.
pub const MAX_COPIES: u64 = 1_000;

/// Parts a set is split into (`--shard I/N`): more than any cluster runs, and one entry each is
/// always allocatable.
pub const MAX_SHARDS: usize = 100_000;

/// Tokens a generation or a benchmark may ask for: far beyond any context these models take.
pub const MAX_TOKENS: u64 = 1 << 20;

/// Requests in flight to a served model: as many as any server batches usefully, with memory per
/// request bounded by the answer size limit (docs/served.md).
pub const MAX_CONCURRENCY: u64 = crate::served::MAX_CONCURRENCY as u64;

/// A served model's timeouts, in seconds: up to a day.
pub const MAX_TIMEOUT_SECS: u64 = 86_400;

/// The largest tolerance of a log-prob difference: beyond it, any two scores would agree.
pub const MAX_TOLERANCE: f32 = 1.0;

/// Repetitions of a measurement.
pub const MAX_REPS: u64 = 1_000;

/// More threads than this per core only adds scheduling overhead; far more would start
/// thousands of OS threads.
pub const THREADS_PER_CORE: usize = 4;

/// The most MiB `--snapshot-budget` takes (1 TiB): above any memory the recurrent snapshots
/// could be given.
pub const MAX_SNAPSHOT_MIB: u64 = 1 << 20;

/// A count in `lo..=hi`; a refusal names the range, whatever was given.
pub fn count(lo: u64, hi: u64) -> impl TypedValueParser<Value = usize> {
    clap::builder::StringValueParser::new().try_map(move |s: String| {
        whole(&s, lo, hi).and_then(|n| usize::try_from(n).map_err(|_| range(&s, lo, hi)))
    })
}

/// A count in `lo..=hi`, as a `u32`.
pub fn count32(lo: u64, hi: u64) -> impl TypedValueParser<Value = u32> {
    clap::builder::StringValueParser::new().try_map(move |s: String| {
        whole(&s, lo, hi).and_then(|n| u32::try_from(n).map_err(|_| range(&s, lo, hi)))
    })
}

fn whole(s: &str, lo: u64, hi: u64) -> Result<u64, String> {
    s.trim()
        .parse::<u64>()
        .ok()
        .filter(|n| (lo..=hi).contains(n))
        .ok_or_else(|| range(s, lo, hi))
}

fn range(s: &str, lo: u64, hi: u64) -> String {
    format!("`{s}`: give a whole number from {lo} to {hi}")
}

/// A tolerance of a log-prob difference: a number from 0 to [`MAX_TOLERANCE`].
pub fn tolerance() -> impl TypedValueParser<Value = f32> {
    clap::builder::StringValueParser::new().try_map(|s: String| {
        s.trim()
            .parse::<f32>()
            .ok()
            .filter(|t| (0.0..=MAX_TOLERANCE).contains(t))
            .ok_or_else(|| format!("`{s}`: give a tolerance from 0 to {MAX_TOLERANCE}"))
    })
}

/// A seed: any whole number from 0 to 2^64 - 1, the message saying so.
pub fn seed() -> impl TypedValueParser<Value = u64> {
    clap::builder::StringValueParser::new().try_map(|s: String| {
        s.trim().parse::<u64>().map_err(|_| {
            format!(
                "`{s}` is not a seed: give a whole number from 0 to {}",
                u64::MAX
            )
        })
    })
}

/// The most threads this machine takes: [`THREADS_PER_CORE`] per available core.
pub fn max_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()) * THREADS_PER_CORE
}

/// `--threads`, the same on every command: at least 1, at most [`max_threads`].
pub fn threads() -> impl TypedValueParser<Value = usize> {
    clap::builder::StringValueParser::new().try_map(|s: String| parse_threads(&s))
}

fn parse_threads(s: &str) -> Result<usize, String> {
    let max = max_threads();
    let cores = max / THREADS_PER_CORE;
    let n: usize = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number of threads: give 1 to {max}"))?;
    if !(1..=max).contains(&n) {
        return Err(format!(
            "{n} threads: give 1 to {max} ({THREADS_PER_CORE} per core on this machine's {cores})"
        ));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_name_their_range() {
        assert_eq!(parse_threads("1"), Ok(1));
        let max = max_threads();
        assert_eq!(parse_threads(&max.to_string()), Ok(max));
        for bad in ["0", "100000", "-1", "x", ""] {
            let e = parse_threads(bad).unwrap_err();
            assert!(e.contains(&format!("1 to {max}")), "{bad}: {e}");
        }
    }
}
