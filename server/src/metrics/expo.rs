//! The Prometheus text exposition format (version 0.0.4), written by hand: each family once,
//! `# HELP` then `# TYPE` then all of its samples together; label values escaped. It only
//! formats: what is measured and named is decided by `crate::state` (the counters report),
//! `crate::metrics` (request histograms) and `process` (the process collector).

use std::fmt::Write as _;

/// A family's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// One sample of the counters report: a family name (without the `ardacat_` prefix), its type
/// and help, optional labels, the value. Samples of one family may come in any order; the
/// writers group them.
#[derive(Debug, Clone)]
pub struct Sample {
    pub name: &'static str,
    pub kind: Kind,
    pub help: &'static str,
    pub labels: Vec<(&'static str, String)>,
    /// Counts are whole numbers (printed without a fraction); seconds may have one.
    pub value: f64,
}

impl Sample {
    pub fn counter(name: &'static str, help: &'static str, value: u64) -> Sample {
        Sample { name, kind: Kind::Counter, help, labels: Vec::new(), value: value as f64 }
    }

    pub fn gauge(name: &'static str, help: &'static str, value: u64) -> Sample {
        Sample { name, kind: Kind::Gauge, help, labels: Vec::new(), value: value as f64 }
    }

    /// A counter of seconds (a `_seconds_total` family).
    pub fn seconds_counter(name: &'static str, help: &'static str, seconds: f64) -> Sample {
        Sample { name, kind: Kind::Counter, help, labels: Vec::new(), value: seconds }
    }

    pub fn label(mut self, key: &'static str, value: impl Into<String>) -> Sample {
        self.labels.push((key, value.into()));
        self
    }

    /// `name{k="v",…}` (the `stats` command's form, without the `ardacat_` prefix).
    pub fn key(&self) -> String {
        let mut out = self.name.to_string();
        push_labels(&mut out, self.labels.iter().map(|(k, v)| (*k, v.as_str())));
        out
    }
}

/// Appends `{k="v",…}` (nothing for no labels), values escaped as the format requires.
pub fn push_labels<'a>(out: &mut String, labels: impl IntoIterator<Item = (&'a str, &'a str)>) {
    let mut first = true;
    for (k, v) in labels {
        out.push(if first { '{' } else { ',' });
        first = false;
        out.push_str(k);
        out.push_str("=\"");
        for c in v.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '"' => out.push_str("\\\""),
                '\n' => out.push_str("\\n"),
                c => out.push(c),
            }
        }
        out.push('"');
    }
    if !first {
        out.push('}');
    }
}

/// The `# HELP` and `# TYPE` lines of a family.
pub fn header(out: &mut String, name: &str, kind: Kind, help: &str) {
    let help = help.replace('\\', "\\\\").replace('\n', "\\n");
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {}", kind.name());
}

/// Writes samples grouped by family, families in order of first appearance, each name with
/// `prefix` in front.
pub fn write_samples(out: &mut String, prefix: &str, samples: &[Sample]) {
    let mut order: Vec<&'static str> = Vec::new();
    for s in samples {
        if !order.contains(&s.name) {
            order.push(s.name);
        }
    }
    for name in order {
        let mut family = samples.iter().filter(|s| s.name == name).peekable();
        let Some(first) = family.peek() else { continue };
        header(out, &format!("{prefix}{name}"), first.kind, first.help);
        for s in family {
            out.push_str(prefix);
            out.push_str(&s.key());
            let _ = writeln!(out, " {}", s.value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_grouped_and_labels_escaped() {
        let samples = vec![
            Sample::counter("x_total", "X things.", 1).label("reason", "a"),
            Sample::gauge("y", "Y now.", 2),
            Sample::counter("x_total", "X things.", 3).label("reason", "b\"\\\n"),
        ];
        let mut out = String::new();
        write_samples(&mut out, "p_", &samples);
        assert_eq!(
            out,
            "# HELP p_x_total X things.\n# TYPE p_x_total counter\np_x_total{reason=\"a\"} 1\n\
             p_x_total{reason=\"b\\\"\\\\\\n\"} 3\n# HELP p_y Y now.\n# TYPE p_y gauge\np_y 2\n"
        );
    }
}
