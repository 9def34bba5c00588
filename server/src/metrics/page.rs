//! The whole `/metrics` page: the counters report (`Shared::counters`, prefixed `ardacat_`),
//! the request and stage histograms, and the process metrics — each family once, in the
//! Prometheus text format. Served by `crate::http` on the HTTP port or the metrics listener.

use super::expo::{Sample, write_samples};
use super::{Metrics, process};

/// The exposition of `counters` and `metrics`, then the process families.
pub fn render(counters: &[Sample], metrics: &Metrics) -> String {
    let mut out = String::with_capacity(16 << 10);
    write_samples(&mut out, "ardacat_", counters);
    metrics.render(&mut out);
    process::render(&mut out);
    out
}
