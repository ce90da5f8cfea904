//! The text tables of `suite`, `skip`, `schedule`, `transform` and
//! `spatial`: median microseconds per implementation, the ratio ours /
//! peer, and ours' chunk counters (and per-system figures where a row has
//! them). `replication` and `game` print their own tables.

use std::fmt::Write as _;

use crate::row::{Impl, Row, ScenarioId};

/// The `suite` table.
pub fn suite(rows: &[Row]) -> String {
    table(ScenarioId::Suite, rows)
}

/// The `skip` table.
pub fn skip(rows: &[Row]) -> String {
    table(ScenarioId::Skip, rows)
}

/// The `schedule` table.
pub fn schedule(rows: &[Row]) -> String {
    table(ScenarioId::Schedule, rows)
}

/// The `transform` table.
pub fn transform(rows: &[Row]) -> String {
    table(ScenarioId::Transform, rows)
}

/// The `spatial` table.
pub fn spatial(rows: &[Row]) -> String {
    table(ScenarioId::Spatial, rows)
}

fn fmt_us(x: Option<f64>) -> String {
    match x {
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) if v >= 10.0 => format!("{v:.1}"),
        Some(v) if v >= 1.0 => format!("{v:.2}"),
        Some(v) => format!("{v:.3}"),
        None => "-".to_owned(),
    }
}

fn fmt_ratio(ours: Option<f64>, peer: Option<f64>) -> String {
    match (ours, peer) {
        (Some(o), Some(p)) if p > 0.0 => format!("{:.2}x", o / p),
        _ => "-".to_owned(),
    }
}

/// Formats the rows of one scenario as a table: median microseconds per
/// implementation, the ratio ours / peer, and ours' chunk counters; for
/// `schedule`, also ours' per-system figures of the last timed run.
fn table(scenario: ScenarioId, rows: &[Row]) -> String {
    let mut cases: Vec<&str> = Vec::new();
    for r in rows.iter().filter(|r| r.scenario == scenario) {
        if !cases.contains(&r.case.as_ref()) {
            cases.push(&r.case);
        }
    }
    let get = |case: &str, imp: Impl| rows.iter().find(|r| r.scenario == scenario && r.case == case && r.imp == imp);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "scenario {}: median us per {} (ratio = ours / peer; < 1 is faster)",
        scenario.name(),
        match scenario {
            ScenarioId::Suite => "frame",
            ScenarioId::Skip => "frame of the Changed<Pos> consumer",
            ScenarioId::Schedule => "schedule run or app frame",
            ScenarioId::Transform => "propagation run (movers untimed)",
            ScenarioId::Spatial => "build or pass over all 100k points, one thread",
            ScenarioId::Replication => "server tick",
            ScenarioId::Game => "whole frame",
        }
    );
    match scenario {
        ScenarioId::Suite => {
            let _ = write!(
                out,
                "{:<18} {:>10} {:>10} {:>10} {:>10} {:>10}",
                "case", "ours", "bevy", "hecs", "ours/bevy", "ours/hecs"
            );
        }
        // hecs has no change detection: no hecs columns here.
        ScenarioId::Skip => {
            let _ = write!(out, "{:<18} {:>10} {:>10} {:>10} {:>8}", "case", "ours", "bevy", "ours/bevy", "rows");
        }
        // hecs has no schedule: no hecs columns here.
        ScenarioId::Schedule => {
            let _ = write!(out, "{:<26} {:>10} {:>10} {:>10}", "case", "ours", "bevy", "ours/bevy");
        }
        ScenarioId::Transform => {
            let _ = write!(
                out,
                "{:<18} {:>10} {:>10} {:>10} {:>8} {:>8}",
                "case", "ours", "bevy", "ours/bevy", "movers", "skip %"
            );
        }
        ScenarioId::Spatial => {
            let _ = write!(
                out,
                "{:<26} {:>10} {:>10} {:>10} {:>11} {:>11} {:>10}",
                "case", "ours", "kiddo", "rstar", "ours/kiddo", "ours/rstar", "count"
            );
        }
        ScenarioId::Replication | ScenarioId::Game => {}
    }
    if scenario == ScenarioId::Spatial {
        out.push('\n');
    } else {
        let _ = writeln!(out, " {:>16}", "chunks skip/all");
    }
    for &case in &cases {
        let us = |imp| get(case, imp).map(|r| r.measurement.median_us);
        let (o, b, h) = (us(Impl::Ours), us(Impl::Bevy), us(Impl::Hecs));
        match scenario {
            ScenarioId::Suite => {
                let _ = write!(
                    out,
                    "{:<18} {:>10} {:>10} {:>10} {:>10} {:>10}",
                    case,
                    fmt_us(o),
                    fmt_us(b),
                    fmt_us(h),
                    fmt_ratio(o, b),
                    fmt_ratio(o, h)
                );
            }
            ScenarioId::Skip => {
                let n = get(case, Impl::Ours).or_else(|| get(case, Impl::Bevy)).and_then(|r| r.rows);
                let _ = write!(
                    out,
                    "{:<18} {:>10} {:>10} {:>10} {:>8}",
                    case,
                    fmt_us(o),
                    fmt_us(b),
                    fmt_ratio(o, b),
                    n.map_or("-".to_owned(), |n| n.to_string())
                );
            }
            ScenarioId::Schedule => {
                let _ = write!(out, "{:<26} {:>10} {:>10} {:>10}", case, fmt_us(o), fmt_us(b), fmt_ratio(o, b));
            }
            ScenarioId::Transform => {
                let ours = get(case, Impl::Ours);
                let movers = ours.or_else(|| get(case, Impl::Bevy)).and_then(|r| r.rows);
                let skip = ours
                    .and_then(|r| r.chunks)
                    .map(|c| if c.total == 0 { 100.0 } else { 100.0 * c.skipped as f64 / c.total as f64 });
                let _ = write!(
                    out,
                    "{:<18} {:>10} {:>10} {:>10} {:>8} {:>8}",
                    case,
                    fmt_us(o),
                    fmt_us(b),
                    fmt_ratio(o, b),
                    movers.map_or("-".to_owned(), |n| n.to_string()),
                    skip.map_or("-".to_owned(), |p| format!("{p:.1}"))
                );
            }
            ScenarioId::Spatial => {
                let (k, r) = (us(Impl::Kiddo), us(Impl::Rstar));
                let count = [Impl::Ours, Impl::Kiddo, Impl::Rstar].into_iter().find_map(|imp| get(case, imp)?.count);
                let _ = writeln!(
                    out,
                    "{:<26} {:>10} {:>10} {:>10} {:>11} {:>11} {:>10}",
                    case,
                    fmt_us(o),
                    fmt_us(k),
                    fmt_us(r),
                    fmt_ratio(o, k),
                    fmt_ratio(o, r),
                    count.map_or("-".to_owned(), |n| n.to_string())
                );
                continue;
            }
            ScenarioId::Replication | ScenarioId::Game => continue,
        }
        let chunks = get(case, Impl::Ours)
            .and_then(|r| r.chunks)
            .map_or("-".to_owned(), |c| format!("{}/{}", c.skipped, c.total));
        let _ = writeln!(out, " {chunks:>16}");
    }
    for &case in &cases {
        let Some(row) = get(case, Impl::Ours).filter(|r| !r.systems.is_empty()) else {
            continue;
        };
        let _ = writeln!(out, "ours, per system (last timed run of {case}):");
        let _ = writeln!(out, "  {:<40} {:>10} {:>16}", "system", "last us", "chunks skip/all");
        for sys in &row.systems {
            let last = if sys.last_run_us.is_finite() { Some(sys.last_run_us) } else { None };
            let _ = writeln!(
                out,
                "  {:<40} {:>10} {:>16}",
                sys.name,
                fmt_us(last),
                format!("{}/{}", sys.chunks.skipped, sys.chunks.total)
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::Measurement;
    use crate::scenes::{ChunkCounts, SystemReport};

    fn m(median_us: f64) -> Measurement {
        Measurement { median_us, min_us: median_us, max_us: median_us, samples: 3, iters_per_sample: 1 }
    }

    #[test]
    fn spatial_rows_show_ratios_and_count() {
        let row =
            Row { count: Some(737_040), ..Row::new(ScenarioId::Spatial, "uniform_all_queries", Impl::Ours, m(500.0)) };
        let kiddo = Row { imp: Impl::Kiddo, measurement: m(5000.0), ..row.clone() };
        let t = spatial(&[row, kiddo]);
        assert!(t.contains("ours/kiddo") && t.contains("ours/rstar"), "{t}");
        assert!(t.contains("0.10x") && t.contains("737040"), "{t}");
    }

    #[test]
    fn schedule_rows_show_their_systems() {
        let row = Row {
            chunks: Some(ChunkCounts { total: 3, skipped: 0 }),
            systems: vec![SystemReport {
                name: "a\"b".to_owned(),
                last_run_us: 1.25,
                chunks: ChunkCounts { total: 3, skipped: 0 },
            }],
            ..Row::new(ScenarioId::Schedule, "schedule", Impl::Ours, m(20.0))
        };
        let t = schedule(std::slice::from_ref(&row));
        assert!(t.contains("per system") && t.contains("a\"b") && t.contains("1.25") && t.contains("0/3"), "{t}");
        // Rows of another scenario are not shown.
        assert!(!suite(&[row]).contains("a\"b"));
    }

    #[test]
    fn suite_table_has_both_peers() {
        let rows = [
            Row::new(ScenarioId::Suite, "simple_iter", Impl::Ours, m(5.0)),
            Row::new(ScenarioId::Suite, "simple_iter", Impl::Hecs, m(10.0)),
        ];
        let t = suite(&rows);
        assert!(t.contains("ours/bevy") && t.contains("ours/hecs"), "{t}");
        assert!(t.contains("simple_iter") && t.contains("0.50x"), "{t}");
    }
}
