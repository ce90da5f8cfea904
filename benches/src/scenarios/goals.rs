//! The goals of each scenario as data: the case measured, the figure
//! compared (a ratio to a peer or to another case, or an absolute figure)
//! and its bound, from issues #14, #16, #17 and the anchors
//! (`/work/shared/ANCHORS.md`). The report's summary evaluates every one of
//! them against the rows of its run ([`Goal::figure`]).

use crate::row::{Impl, Row, ScenarioId};

/// What a goal compares.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Measure {
    /// Ours / this peer's median, same case.
    Peer(Impl),
    /// Ours / the fastest peer's median, same case.
    BestPeer,
    /// Ours / (`scale` x ours' median of another case of the scenario).
    OwnCase {
        /// The other case.
        case: &'static str,
        /// Its share that the goal's case is held to (`0.05`: 5 % of it).
        scale: f64,
    },
    /// Ours' time per counted item (hit, client) / the same of another case.
    PerCountVs(&'static str),
    /// Ours' median, microseconds.
    Micros,
    /// Ours' median per counted item (per client), microseconds.
    MicrosPerCount,
    /// Ours' bandwidth, kilobits per second per client.
    Kbps,
}

/// One goal: `figure <= bound` is met.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Goal {
    /// The case measured.
    pub case: &'static str,
    /// The figure compared.
    pub measure: Measure,
    /// The largest figure that meets the goal.
    pub bound: f64,
    /// Where the goal comes from (`#16`, `anchors`, ...).
    pub source: &'static str,
}

const fn peer(case: &'static str, imp: Impl, bound: f64, source: &'static str) -> Goal {
    Goal { case, measure: Measure::Peer(imp), bound, source }
}

const fn own(case: &'static str, other: &'static str, scale: f64, bound: f64, source: &'static str) -> Goal {
    Goal { case, measure: Measure::OwnCase { case: other, scale }, bound, source }
}

const fn abs(case: &'static str, measure: Measure, bound: f64, source: &'static str) -> Goal {
    Goal { case, measure, bound, source }
}

/// `suite`.
pub const SUITE: [Goal; 5] = [
    abs("simple_insert", Measure::BestPeer, 0.7, "anchors"),
    abs("simple_iter", Measure::BestPeer, 1.0, "anchors"),
    abs("frag_iter", Measure::BestPeer, 1.0, "anchors"),
    peer("heavy_compute", Impl::Bevy, 0.9, "anchors"),
    peer("add_remove", Impl::Hecs, 0.8, "#16"),
];

/// `skip`.
pub const SKIP: [Goal; 8] = [
    abs("changed_0", Measure::Micros, 1.0, "anchors"),
    peer("clustered_1pct", Impl::Bevy, 0.06, "anchors"),
    own("clustered_5pct", "clustered_100pct", 0.05, 1.2, "anchors"),
    own("clustered_10pct", "clustered_100pct", 0.10, 1.2, "anchors"),
    peer("clustered_100pct", Impl::Bevy, 1.0, "anchors"),
    peer("scattered_1pct", Impl::Bevy, 0.4, "#16"),
    peer("scattered_5pct", Impl::Bevy, 0.6, "#16"),
    peer("scattered_10pct", Impl::Bevy, 0.7, "#16"),
];

/// `schedule`.
pub const SCHEDULE: [Goal; 3] = [
    peer("schedule", Impl::Bevy, 0.8, "anchors"),
    peer("app_frame_50_systems", Impl::Bevy, 0.5, "anchors"),
    peer("app_frame_25_skipped", Impl::Bevy, 0.5, "anchors"),
];

/// `transform`.
pub const TRANSFORM: [Goal; 11] = [
    abs("wide_static", Measure::Micros, 5.0, "anchors"),
    abs("deep_static", Measure::Micros, 5.0, "anchors"),
    abs("flat_static", Measure::Micros, 5.0, "anchors"),
    peer("wide_5pct", Impl::Bevy, 0.5, "anchors"),
    peer("deep_5pct", Impl::Bevy, 0.5, "anchors"),
    peer("flat_5pct", Impl::Bevy, 0.5, "anchors"),
    peer("wide_all", Impl::Bevy, 0.4, "#16"),
    peer("deep_all", Impl::Bevy, 0.5, "anchors"),
    peer("flat_all", Impl::Bevy, 0.5, "anchors"),
    peer("humanoids_all", Impl::Bevy, 0.4, "#16"),
    peer("humanoids_5pct", Impl::Bevy, 0.5, "anchors"),
];

/// `spatial`.
pub const SPATIAL: [Goal; 15] = [
    own("uniform_build", "uniform_std_sort", 1.0, 0.5, "#16"),
    peer("uniform_build", Impl::Kiddo, 0.15, "#16"),
    peer("uniform_all_queries", Impl::Kiddo, 0.15, "#16"),
    own("uniform_all_pairs", "uniform_all_queries", 1.0, 0.5, "#16"),
    abs("uniform_nothing", Measure::Micros, 20.0, "anchors"),
    own("uniform_5pct", "uniform_all", 1.0, 0.15, "#16"),
    peer("sparse_r2_all_queries", Impl::Kiddo, 0.5, "#14"),
    peer("sparse_r4_all_queries", Impl::Kiddo, 0.5, "#14"),
    peer("outliers_r5_all_queries", Impl::Kiddo, 0.5, "#14"),
    peer("outliers_r10_all_queries", Impl::Kiddo, 0.5, "#14"),
    abs("clustered_all_queries", Measure::PerCountVs("uniform_all_queries"), 2.0, "#14"),
    abs("sparse_r2_all_queries", Measure::PerCountVs("uniform_all_queries"), 2.0, "#14"),
    abs("sparse_r4_all_queries", Measure::PerCountVs("uniform_all_queries"), 2.0, "#14"),
    abs("outliers_r5_all_queries", Measure::PerCountVs("uniform_all_queries"), 2.0, "#14"),
    abs("outliers_r10_all_queries", Measure::PerCountVs("uniform_all_queries"), 2.0, "#14"),
];

/// `replication`.
pub const REPLICATION: [Goal; 5] = [
    abs("cubes_loss_5", Measure::Kbps, 256.0, "anchors"),
    abs("fanout_256x10k_1pct_1thread", Measure::MicrosPerCount, 10.0, "anchors"),
    abs("fanout_256x10k_1pct_2threads", Measure::MicrosPerCount, 10.0, "anchors"),
    own("backlog_128x10k_loss50", "backlog_128x10k_steady", 1.0, 2.0, "#14"),
    own("client_tick_predicted", "client_tick_unpredicted", 1.0, 1.05, "anchors"),
];

/// `game`: whole frames against bevy.
pub const GAME: [Goal; 3] = [
    peer("active_1pct", Impl::Bevy, 0.25, "#17"),
    peer("active_5pct", Impl::Bevy, 0.5, "#17"),
    peer("active_100pct", Impl::Bevy, 1.0, "#17"),
];

/// A goal's figure from one run, and whether it is met.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GoalFigure {
    /// The figure (a ratio, microseconds or kbps, as [`Goal::measure`] says).
    pub value: f64,
    /// `value <= bound`.
    pub met: bool,
}

impl Goal {
    /// What the goal says, in words: `<= 0.5x bevy`, `<= 20 us`, ...
    pub fn text(&self) -> String {
        let b = self.bound;
        match self.measure {
            Measure::Peer(imp) => format!("<= {b}x {}", imp.name()),
            Measure::BestPeer => format!("<= {b}x the best peer"),
            Measure::OwnCase { case, scale: 1.0 } => format!("<= {b}x ours' {case}"),
            Measure::OwnCase { case, scale } => format!("<= {b}x ({:.0} % of ours' {case})", scale * 100.0),
            Measure::PerCountVs(case) => format!("per hit <= {b}x ours' {case}"),
            Measure::Micros => format!("<= {b} us"),
            Measure::MicrosPerCount => format!("<= {b} us per client"),
            Measure::Kbps => format!("<= {b} kbps per client"),
        }
    }

    /// The goal's figure in `rows` (those of `scenario`); `None` when a row
    /// it needs is missing (a peer not built in, a case not run).
    pub fn figure(&self, scenario: ScenarioId, rows: &[Row]) -> Option<GoalFigure> {
        let get = |case: &str, imp: Impl| {
            rows.iter()
                .find(|r| r.scenario == scenario && r.case == case && r.imp == imp)
                .filter(|r| r.measurement.median_us.is_finite())
        };
        let ours = get(self.case, Impl::Ours)?;
        let us = ours.measurement.median_us;
        let ratio = |other: f64| (other > 0.0).then(|| us / other);
        let per_count = |r: &Row| r.count.filter(|&n| n > 0).map(|n| r.measurement.median_us / n as f64);
        let value = match self.measure {
            Measure::Peer(imp) => ratio(get(self.case, imp)?.measurement.median_us)?,
            Measure::BestPeer => {
                let best = rows
                    .iter()
                    .filter(|r| r.scenario == scenario && r.case == self.case && r.imp != Impl::Ours)
                    .map(|r| r.measurement.median_us)
                    .filter(|t| t.is_finite())
                    .min_by(f64::total_cmp)?;
                ratio(best)?
            }
            Measure::OwnCase { case, scale } => ratio(scale * get(case, Impl::Ours)?.measurement.median_us)?,
            Measure::PerCountVs(case) => {
                let other = per_count(get(case, Impl::Ours)?)?;
                (other > 0.0).then(|| per_count(ours).map(|p| p / other))??
            }
            Measure::Micros => us,
            Measure::MicrosPerCount => per_count(ours)?,
            Measure::Kbps => ours.kbps?,
        };
        Some(GoalFigure { value, met: value <= self.bound })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::Measurement;

    fn row(scenario: ScenarioId, case: &'static str, imp: Impl, us: f64) -> Row {
        let m = Measurement { median_us: us, min_us: us, max_us: us, samples: 5, iters_per_sample: 1 };
        Row::new(scenario, case, imp, m)
    }

    #[test]
    fn figures_of_each_kind() {
        use ScenarioId::*;
        let mut rows = vec![
            row(Game, "active_5pct", Impl::Ours, 1000.0),
            row(Game, "active_5pct", Impl::Bevy, 4000.0),
            row(Suite, "simple_insert", Impl::Ours, 300.0),
            row(Suite, "simple_insert", Impl::Bevy, 1000.0),
            row(Suite, "simple_insert", Impl::Hecs, 400.0),
            row(Skip, "clustered_5pct", Impl::Ours, 20.0),
            row(Skip, "clustered_100pct", Impl::Ours, 200.0),
            row(Skip, "changed_0", Impl::Ours, 0.5),
        ];
        let fig = |goal: Goal, s, rows: &[Row]| goal.figure(s, rows);
        assert_eq!(fig(GAME[1], Game, &rows), Some(GoalFigure { value: 0.25, met: true }));
        assert_eq!(fig(GAME[0], Game, &rows), None, "no active_1pct row");
        // Best peer: hecs' 400.
        assert_eq!(fig(SUITE[0], Suite, &rows), Some(GoalFigure { value: 0.75, met: false }));
        // 20 / (5 % of 200) = 2.0 > 1.2.
        assert_eq!(fig(SKIP[2], Skip, &rows), Some(GoalFigure { value: 2.0, met: false }));
        assert_eq!(fig(SKIP[0], Skip, &rows), Some(GoalFigure { value: 0.5, met: true }));
        // A row of another scenario does not count.
        assert_eq!(fig(SKIP[0], Suite, &rows), None);
        rows.push(Row { count: Some(256), ..row(Replication, "fanout_256x10k_1pct_1thread", Impl::Ours, 2048.0) });
        rows.push(Row { kbps: Some(300.0), ..row(Replication, "cubes_loss_5", Impl::Ours, 40.0) });
        assert_eq!(fig(REPLICATION[1], Replication, &rows), Some(GoalFigure { value: 8.0, met: true }));
        assert_eq!(fig(REPLICATION[0], Replication, &rows), Some(GoalFigure { value: 300.0, met: false }));
        rows.push(Row { count: Some(1000), ..row(Spatial, "uniform_all_queries", Impl::Ours, 1000.0) });
        rows.push(Row { count: Some(100), ..row(Spatial, "clustered_all_queries", Impl::Ours, 300.0) });
        // 3 us per hit against 1 us per hit.
        assert_eq!(fig(SPATIAL[10], Spatial, &rows), Some(GoalFigure { value: 3.0, met: false }));
    }

    #[test]
    fn goals_read_as_text() {
        assert_eq!(GAME[1].text(), "<= 0.5x bevy");
        assert_eq!(SKIP[2].text(), "<= 1.2x (5 % of ours' clustered_100pct)");
        assert_eq!(SUITE[0].text(), "<= 0.7x the best peer");
        assert_eq!(REPLICATION[0].text(), "<= 256 kbps per client");
    }
}
