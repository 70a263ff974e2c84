//! A snapshot of metrics as plain data, and its rendering in the Prometheus text exposition
//! format (version 0.0.4, what `GET /metrics` serves).

use std::fmt::Write as _;

/// The metrics of an engine (and of its store) at one moment: families of samples, in a
/// stable order. Render with [`to_prometheus_text`](Self::to_prometheus_text), or read values
/// with [`value`](Self::value) to export them some other way.
///
/// ```
/// # async fn demo() -> Result<(), wf_core::WfError> {
/// let engine = wf_core::Engine::builder().memory().build().await?;
/// let snapshot = engine.metrics();
/// assert_eq!(snapshot.value("wf_cache_runs", &[]), Some(0.0));
/// print!("{}", snapshot.to_prometheus_text());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricsSnapshot {
    /// The metric families, each with its samples.
    pub families: Vec<MetricFamily>,
}

/// One metric: its name, help text and kind, and a sample per label set.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricFamily {
    /// The metric's name (a counter's ends in `_total`).
    pub name: &'static str,
    /// What it measures.
    pub help: &'static str,
    /// Counter, gauge or histogram.
    pub kind: MetricKind,
    /// One sample per label set.
    pub samples: Vec<Sample>,
}

/// The kind of a metric, as Prometheus names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    /// Only goes up (until the process restarts).
    Counter,
    /// Goes up and down.
    Gauge,
    /// Observations counted in fixed buckets, with their count and sum.
    Histogram,
}

/// One sample of a family: its labels and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Label names and values (bounded: workflow types, activity names, outcomes; never ids).
    pub labels: Vec<(&'static str, String)>,
    /// The value.
    pub value: SampleValue,
}

/// The value of a sample.
#[derive(Debug, Clone, PartialEq)]
pub enum SampleValue {
    /// A counter's or a gauge's value.
    Number(f64),
    /// A histogram's state.
    Histogram {
        /// `(upper bound, observations at or below it)`, cumulative; the last bound is
        /// `f64::INFINITY`.
        buckets: Vec<(f64, u64)>,
        /// How many observations.
        count: u64,
        /// Their sum.
        sum: f64,
    },
}

impl MetricsSnapshot {
    /// The family named `name`.
    pub fn family(&self, name: &str) -> Option<&MetricFamily> {
        self.families.iter().find(|f| f.name == name)
    }

    /// The value of the counter or gauge `name` whose labels are exactly `labels` (in any
    /// order); for a histogram, its count of observations.
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let sample = self.family(name)?.samples.iter().find(|s| {
            s.labels.len() == labels.len()
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.iter().any(|(k2, v2)| k2 == k && v2 == v))
        })?;
        Some(match &sample.value {
            SampleValue::Number(v) => *v,
            SampleValue::Histogram { count, .. } => *count as f64,
        })
    }

    /// The Prometheus text exposition format (`text/plain; version=0.0.4`): for each family a
    /// `# HELP` and a `# TYPE` line, then its samples; a histogram as `_bucket{le=..}`, `_sum`
    /// and `_count` lines.
    pub fn to_prometheus_text(&self) -> String {
        let mut out = String::with_capacity(256 * self.families.len());
        for f in &self.families {
            let kind = match f.kind {
                MetricKind::Counter => "counter",
                MetricKind::Gauge => "gauge",
                MetricKind::Histogram => "histogram",
            };
            let _ = writeln!(out, "# HELP {} {}", f.name, escape_help(f.help));
            let _ = writeln!(out, "# TYPE {} {kind}", f.name);
            for s in &f.samples {
                match &s.value {
                    SampleValue::Number(v) => line(&mut out, f.name, "", &s.labels, None, *v),
                    SampleValue::Histogram {
                        buckets,
                        count,
                        sum,
                    } => {
                        for (bound, n) in buckets {
                            let le = number(*bound);
                            line(&mut out, f.name, "_bucket", &s.labels, Some(&le), *n as f64);
                        }
                        line(&mut out, f.name, "_sum", &s.labels, None, *sum);
                        line(&mut out, f.name, "_count", &s.labels, None, *count as f64);
                    }
                }
            }
        }
        out
    }
}

/// One sample line: `name{labels} value`.
fn line(
    out: &mut String,
    name: &str,
    suffix: &str,
    labels: &[(&'static str, String)],
    le: Option<&str>,
    value: f64,
) {
    out.push_str(name);
    out.push_str(suffix);
    if !labels.is_empty() || le.is_some() {
        out.push('{');
        let extra = le.map(|v| ("le", v));
        let all = labels.iter().map(|(k, v)| (*k, v.as_str())).chain(extra);
        for (i, (k, v)) in all.enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "{k}=\"{}\"", escape_label(v));
        }
        out.push('}');
    }
    out.push(' ');
    out.push_str(&number(value));
    out.push('\n');
}

/// A value as Prometheus reads it: integers without a fraction, `+Inf`, `-Inf`, `NaN`.
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

/// A label value: backslash, double quote and line feed escaped.
fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A help text: backslash and line feed escaped.
fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot() -> MetricsSnapshot {
        MetricsSnapshot {
            families: vec![
                MetricFamily {
                    name: "wf_things_total",
                    help: "Things, counted.\nTwo lines \\ one slash.",
                    kind: MetricKind::Counter,
                    samples: vec![
                        Sample {
                            labels: vec![("workflow_type", "a\"b\\c\nd".into())],
                            value: SampleValue::Number(3.0),
                        },
                        Sample {
                            labels: vec![("workflow_type", "plain".into())],
                            value: SampleValue::Number(0.0),
                        },
                    ],
                },
                MetricFamily {
                    name: "wf_depth",
                    help: "A gauge.",
                    kind: MetricKind::Gauge,
                    samples: vec![Sample {
                        labels: vec![],
                        value: SampleValue::Number(-2.0),
                    }],
                },
                MetricFamily {
                    name: "wf_seconds",
                    help: "A histogram.",
                    kind: MetricKind::Histogram,
                    samples: vec![Sample {
                        labels: vec![("store", "sqlite".into())],
                        value: SampleValue::Histogram {
                            buckets: vec![(0.0005, 1), (0.25, 3), (f64::INFINITY, 4)],
                            count: 4,
                            sum: 12.5,
                        },
                    }],
                },
            ],
        }
    }

    #[test]
    fn exposition_is_prometheus_text_with_escapes() {
        let expected = r#"# HELP wf_things_total Things, counted.\nTwo lines \\ one slash.
# TYPE wf_things_total counter
wf_things_total{workflow_type="a\"b\\c\nd"} 3
wf_things_total{workflow_type="plain"} 0
# HELP wf_depth A gauge.
# TYPE wf_depth gauge
wf_depth -2
# HELP wf_seconds A histogram.
# TYPE wf_seconds histogram
wf_seconds_bucket{store="sqlite",le="0.0005"} 1
wf_seconds_bucket{store="sqlite",le="0.25"} 3
wf_seconds_bucket{store="sqlite",le="+Inf"} 4
wf_seconds_sum{store="sqlite"} 12.5
wf_seconds_count{store="sqlite"} 4
"#;
        assert_eq!(snapshot().to_prometheus_text(), expected);
    }

    #[test]
    fn values_are_found_by_name_and_exact_labels() {
        let s = snapshot();
        assert_eq!(
            s.value("wf_things_total", &[("workflow_type", "plain")]),
            Some(0.0)
        );
        assert_eq!(s.value("wf_things_total", &[]), None);
        assert_eq!(s.value("wf_depth", &[]), Some(-2.0));
        assert_eq!(s.value("wf_seconds", &[("store", "sqlite")]), Some(4.0));
        assert_eq!(s.value("wf_missing", &[]), None);
    }

    #[test]
    fn numbers_render_as_prometheus_reads_them() {
        assert_eq!(number(1.0), "1");
        assert_eq!(number(0.00005), "0.00005");
        assert_eq!(number(f64::INFINITY), "+Inf");
        assert_eq!(number(f64::NEG_INFINITY), "-Inf");
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(1e21), "1000000000000000000000");
    }
}
