//! What every scenario measures: one [`Row`] per (scenario, case,
//! implementation), printed as a table or written as one JSON line with
//! `serde_json`, and read back with the same struct by `ecs-bench report
//! --from FILE`.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::measure::Measurement;
use crate::scenes::{ChunkCounts, SystemReport};

/// The scenarios, as rows and the command line name them (the table of
/// what each one runs is [`crate::scenarios::SCENARIOS`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScenarioId {
    /// The ecs_bench_suite cases.
    Suite,
    /// Chunk skipping under `Changed<Pos>`.
    Skip,
    /// The ecs_bench_suite `schedule` case and the app frames.
    Schedule,
    /// Hierarchy propagation, ours against `bevy_transform`.
    Transform,
    /// Broad phase over 100k points, ours against kiddo and rstar.
    Spatial,
    /// Snapshot replication: bandwidth, encode cost, fan-out, backlog, arena.
    Replication,
    /// The showcase's scene as whole frames, ours against bevy.
    Game,
}

impl ScenarioId {
    /// The name used on the command line and in the output.
    pub fn name(self) -> &'static str {
        match self {
            ScenarioId::Suite => "suite",
            ScenarioId::Skip => "skip",
            ScenarioId::Schedule => "schedule",
            ScenarioId::Transform => "transform",
            ScenarioId::Spatial => "spatial",
            ScenarioId::Replication => "replication",
            ScenarioId::Game => "game",
        }
    }
}

/// An implementation measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Impl {
    /// This workspace's `ecs-core` (and its crates).
    Ours,
    /// `bevy_ecs` 0.20 (with `bevy_transform`, `bevy_app`).
    Bevy,
    /// `hecs` 0.11.
    Hecs,
    /// kiddo 6.3's immutable k-d tree (`spatial` only).
    Kiddo,
    /// rstar 0.14's R*-tree (`spatial` only).
    Rstar,
}

impl Impl {
    /// The name used in the output.
    pub fn name(self) -> &'static str {
        match self {
            Impl::Ours => "ours",
            Impl::Bevy => "bevy",
            Impl::Hecs => "hecs",
            Impl::Kiddo => "kiddo",
            Impl::Rstar => "rstar",
        }
    }

    /// The spatial structures compiled into this build, ours first (peers
    /// need feature `peers`).
    pub fn spatial() -> &'static [Impl] {
        #[cfg(feature = "peers")]
        {
            &[Impl::Ours, Impl::Kiddo, Impl::Rstar]
        }
        #[cfg(not(feature = "peers"))]
        {
            &[Impl::Ours]
        }
    }

    /// The ECS implementations compiled into this build (peers need feature `peers`).
    pub fn compiled() -> &'static [Impl] {
        #[cfg(feature = "peers")]
        {
            &[Impl::Ours, Impl::Bevy, Impl::Hecs]
        }
        #[cfg(not(feature = "peers"))]
        {
            &[Impl::Ours]
        }
    }
}

/// One measured (scenario, case, implementation): a table line, or one JSON
/// line (`{"scenario":"skip","case":"clustered_5pct","impl":"ours","median_us":17.6,...}`;
/// absent figures are left out, times are rounded to the nanosecond).
///
/// ```
/// use ecs_bench::measure::Measurement;
/// use ecs_bench::row::{Impl, Row, ScenarioId};
///
/// let m = Measurement { median_us: 17.6, min_us: 17.0, max_us: 19.25, samples: 60, iters_per_sample: 40 };
/// let row = Row { rows: Some(5000), ..Row::new(ScenarioId::Skip, "clustered_5pct", Impl::Ours, m) };
/// let line = row.to_json();
/// assert!(line.starts_with(r#"{"scenario":"skip","case":"clustered_5pct","impl":"ours","median_us":17.6,"#));
/// assert_eq!(Row::from_json(&line), Ok(row));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The scenario.
    pub scenario: ScenarioId,
    /// Case name.
    pub case: Cow<'static, str>,
    /// Implementation.
    #[serde(rename = "impl")]
    pub imp: Impl,
    /// Timing (only `median_us` is required when a line is read back).
    #[serde(flatten)]
    pub measurement: Measurement,
    /// Chunk counters of the last timed query run (ours only, where
    /// applicable), as `chunks_total` and `chunks_skipped`.
    #[serde(flatten)]
    pub chunks: Option<ChunkCounts>,
    /// Rows the timed work processes per frame (skip: movers; transform:
    /// moving roots; replication: entities changed per tick).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<usize>,
    /// Per-system timing and chunk counters (`schedule`: ours' last timed
    /// run; `game`: medians over the timed frames; empty otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub systems: Vec<SystemReport>,
    /// What the timed work counted, checked outside timing (`spatial`: hits,
    /// pairs or points; `game`: units alive; `replication`: clients or ticks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<usize>,
    /// Snapshot bandwidth per client, kilobits per second (`replication` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kbps: Option<f64>,
}

impl Row {
    /// A row with a timing and no other figure.
    pub fn new(scenario: ScenarioId, case: impl Into<Cow<'static, str>>, imp: Impl, measurement: Measurement) -> Self {
        Row {
            scenario,
            case: case.into(),
            imp,
            measurement,
            chunks: None,
            rows: None,
            systems: Vec::new(),
            count: None,
            kbps: None,
        }
    }

    /// The row as one JSON object (no trailing newline).
    pub fn to_json(&self) -> String {
        // A struct of plain fields and maps with string keys always serialises.
        serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// Parses one line written by [`Row::to_json`] (or by an older
    /// `ecs-bench`, which wrote only `median_us` of the timing).
    ///
    /// # Errors
    ///
    /// A message when the line is not such a JSON object, names an unknown
    /// scenario or implementation, or has no finite, non-negative
    /// `median_us`.
    pub fn from_json(line: &str) -> Result<Row, String> {
        let row: Row = serde_json::from_str(line).map_err(|e| format!("not a row ({e}): {line}"))?;
        let m = row.measurement.median_us;
        if !(m.is_finite() && m >= 0.0) {
            return Err(format!("no non-negative number `median_us` in: {line}"));
        }
        Ok(row)
    }
}

/// Serde of the `f64` figures: rounded to three decimals (nanoseconds of a
/// microsecond figure), `null` for a value that is not finite (JSON has no
/// NaN) and read back as NaN.
pub(crate) mod figure {
    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes `x` rounded to three decimals, or `null`.
    pub(crate) fn serialize<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        if x.is_finite() { s.serialize_f64((x * 1000.0).round() / 1000.0) } else { s.serialize_none() }
    }

    /// Reads a number, or `null` as NaN.
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
    }

    /// The default of a figure an older line lacks.
    pub(crate) fn missing() -> f64 {
        f64::NAN
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(median_us: f64) -> Measurement {
        Measurement { median_us, min_us: 5.0, max_us: 6.0, samples: 3, iters_per_sample: 10 }
    }

    #[test]
    fn json_shape() {
        let row = Row {
            chunks: Some(ChunkCounts { total: 7, skipped: 2 }),
            ..Row::new(ScenarioId::Suite, "simple_iter", Impl::Ours, m(5.1))
        };
        assert_eq!(
            row.to_json(),
            r#"{"scenario":"suite","case":"simple_iter","impl":"ours","median_us":5.1,"min_us":5.0,"max_us":6.0,"samples":3,"iters_per_sample":10,"chunks_total":7,"chunks_skipped":2}"#
        );
        let row = Row { imp: Impl::Bevy, chunks: None, ..row };
        assert_eq!(
            row.to_json(),
            r#"{"scenario":"suite","case":"simple_iter","impl":"bevy","median_us":5.1,"min_us":5.0,"max_us":6.0,"samples":3,"iters_per_sample":10}"#
        );
    }

    #[test]
    fn rows_round_trip() {
        let rows = [
            Row {
                chunks: Some(ChunkCounts { total: 3, skipped: 0 }),
                systems: vec![SystemReport {
                    name: "a\"b".to_owned(),
                    last_run_us: 1.25,
                    chunks: ChunkCounts { total: 3, skipped: 1 },
                }],
                ..Row::new(ScenarioId::Schedule, "schedule", Impl::Ours, m(20.0))
            },
            Row {
                count: Some(737_040),
                rows: Some(5),
                kbps: Some(151.5),
                ..Row::new(ScenarioId::Spatial, "uniform_all_queries", Impl::Kiddo, m(500.0))
            },
            Row::new(ScenarioId::Game, "active_5pct", Impl::Bevy, m(0.0)),
        ];
        for row in rows {
            assert_eq!(Row::from_json(&row.to_json()), Ok(row));
        }
        // Times are rounded to the nanosecond; NaN is written as null.
        let row = Row::new(ScenarioId::Skip, "changed_0", Impl::Ours, Measurement { min_us: f64::NAN, ..m(0.123_456) });
        let line = row.to_json();
        assert!(line.contains(r#""median_us":0.123,"min_us":null"#), "{line}");
        assert!(Row::from_json(&line).unwrap().measurement.min_us.is_nan());
    }

    #[test]
    fn reads_the_older_lines() {
        // `ecs-bench` before the serde rows wrote only the median of the timing.
        let r = Row::from_json(
            r#"{"scenario":"skip","case":"clustered_5pct","impl":"ours","median_us":17.6,"chunks_total":516,"chunks_skipped":489}"#,
        )
        .unwrap();
        assert_eq!((r.scenario, r.case.as_ref(), r.imp), (ScenarioId::Skip, "clustered_5pct", Impl::Ours));
        assert_eq!(r.measurement.median_us, 17.6);
        assert!(r.measurement.min_us.is_nan());
        assert_eq!(r.chunks, Some(ChunkCounts { total: 516, skipped: 489 }));
        let r = Row::from_json(r#"{"scenario":"suite","case":"frag_iter","impl":"hecs","median_us":0.3}"#).unwrap();
        assert_eq!(r.chunks, None);
    }

    #[test]
    fn refuses_bad_lines() {
        for bad in [
            "not json",
            "[1,2]",
            r#"{"scenario":"skip","case":"a","impl":"ours"}"#,
            r#"{"scenario":"skip","case":"a","impl":"ours","median_us":-1}"#,
            r#"{"scenario":"skip","case":"a","impl":"ours","median_us":null}"#,
            r#"{"scenario":"nope","case":"a","impl":"ours","median_us":1}"#,
            r#"{"scenario":"skip","case":"a","impl":"legion","median_us":1}"#,
            r#"{"scenario":"skip","case":7,"impl":"ours","median_us":1}"#,
        ] {
            assert!(Row::from_json(bad).is_err(), "{bad}");
        }
    }
}
