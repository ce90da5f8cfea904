//! `ecs-bench report`: runs every scenario and writes an HTML page with SVG
//! charts of time per frame against the share of entities changed, ours
//! against each peer, next to the raw JSON lines the charts are drawn from.
//!
//! The page opens with a summary of every goal of [`SCENARIOS`]
//! ([`crate::scenarios::Goal`]): its figure from the rows of this run, met
//! or not met. Then, per scenario, the charts and a table of the rows. The
//! page says plainly when the rows hold no peer (a build without feature
//! `peers`): the charts then show ours alone.
//!
//! Everything is drawn from the rows alone ([`Row`], read back with
//! [`read_rows`]), so a report can be re-drawn from a saved `results.jsonl`
//! (`ecs-bench report --from FILE`) without measuring again.
//!
//! A case name carries its share of changed entities as one `_`-separated
//! token: `5pct` is 5 %, `static` and `nothing` are 0 % (so is the skip
//! scenario's `changed_0`), and a final `all` is 100 %; the other tokens name
//! the chart (`wide_5pct` is the 5 % point of chart `wide`). A chart with
//! only a 0 % point (`changed_0`) is the shared baseline of the scenario's
//! other charts. A peer's `<chart>_build` case (spatial: kiddo and rstar
//! rebuild every frame) is drawn as that peer's cost at every share of the
//! chart. Rows with a `kbps` figure and a `loss_N` token in their case
//! (replication's cube scene) make a second kind of chart: bandwidth per
//! client against packet loss, with the `at_rest` case beside it. The
//! `game` scenario's chart is the whole frame against the share of rigs and
//! boids active (the 100k-entity cases), ours and bevy.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use plotters::prelude::*;

use crate::row::{Impl, Row, ScenarioId};
use crate::scenarios::{SCENARIOS, all_goals};

/// Splits a case name into its chart name and share of changed entities in
/// percent, by the rule in the module docs; `None` when the name carries no
/// share.
pub fn split_share(case: &str) -> Option<(String, f64)> {
    let tokens: Vec<&str> = case.split('_').collect();
    let last = tokens.len() - 1;
    let (at, share) = tokens.iter().enumerate().find_map(|(i, t)| {
        let share = match *t {
            "static" | "nothing" => Some(0.0),
            "0" if tokens == ["changed", "0"] => Some(0.0),
            "all" if i == last && i > 0 => Some(100.0),
            t => t.strip_suffix("pct").and_then(|n| n.parse::<f64>().ok()).filter(|p| (0.0..=100.0).contains(p)),
        };
        share.map(|s| (i, s))
    })?;
    let chart: Vec<&str> = tokens.iter().enumerate().filter(|&(i, _)| i != at).map(|(_, t)| *t).collect();
    Some((chart.join("_"), share))
}

/// One line of a chart: an implementation's time at each share.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Implementation name, with ` (rebuild)` for a peer's per-frame rebuild.
    pub name: String,
    /// (share in percent, median microseconds), sorted by share.
    pub points: Vec<(f64, f64)>,
}

/// One chart: time per frame against the share of entities changed.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// Scenario name.
    pub scenario: String,
    /// Chart name inside the scenario (`clustered`, `wide`, ...).
    pub name: String,
    /// What the x axis shows (the series' first coordinates are percent).
    pub x_desc: &'static str,
    /// What the y axis shows (drawn on a log scale).
    pub y_desc: &'static str,
    /// One series per implementation.
    pub series: Vec<Series>,
}

impl Chart {
    /// File-name stem: `scenario-name`.
    pub fn stem(&self) -> String {
        let clean = |s: &str| s.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect::<String>();
        format!("{}-{}", clean(&self.scenario), clean(&self.name))
    }

    /// Every share drawn on the chart, ascending.
    pub fn shares(&self) -> Vec<f64> {
        let mut shares: Vec<f64> = self.series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).collect();
        shares.sort_by(f64::total_cmp);
        shares.dedup();
        shares
    }
}

/// The scenarios of `rows`, in order of first appearance.
fn scenarios_of(rows: &[Row]) -> Vec<ScenarioId> {
    let mut scenarios: Vec<ScenarioId> = Vec::new();
    for r in rows {
        if !scenarios.contains(&r.scenario) {
            scenarios.push(r.scenario);
        }
    }
    scenarios
}

/// An implementation's name and its (share, time) points, while charts are assembled.
type Line = (String, Vec<(f64, f64)>);

/// Builds the charts of `records`, in scenario order of first appearance.
pub fn charts(records: &[Row]) -> Vec<Chart> {
    let scenarios = scenarios_of(records);
    let mut out = Vec::new();
    for id in scenarios {
        if id == ScenarioId::Game {
            out.extend(game_chart(records));
            continue;
        }
        let scenario = id.name();
        // chart -> implementation -> points, in first-appearance order.
        let mut table: Vec<(String, Vec<Line>)> = Vec::new();
        for r in records.iter().filter(|r| r.scenario == id) {
            let Some((chart, share)) = split_share(&r.case) else { continue };
            let (imp, us) = (r.imp.name(), r.measurement.median_us);
            let ci = match table.iter().position(|(c, _)| *c == chart) {
                Some(i) => i,
                None => {
                    table.push((chart, Vec::new()));
                    table.len() - 1
                }
            };
            let series = &mut table[ci].1;
            match series.iter_mut().find(|(name, _)| name == imp) {
                Some((_, points)) => points.push((share, us)),
                None => series.push((imp.to_owned(), vec![(share, us)])),
            }
        }
        // A chart whose every point is at 0 % is the baseline of the others.
        let baseline_only = |s: &[Line]| s.iter().all(|(_, p)| p.iter().all(|q| q.0 == 0.0));
        if table.len() > 1 {
            let (base, rest): (Vec<_>, Vec<_>) = table.into_iter().partition(|(_, s)| baseline_only(s));
            table = rest;
            for (_, base_series) in base {
                for (_, series) in &mut table {
                    for (imp, points) in &base_series {
                        match series.iter_mut().find(|(i, _)| i == imp) {
                            Some((_, p)) => p.extend_from_slice(points),
                            None => series.push((imp.clone(), points.clone())),
                        }
                    }
                }
            }
        }
        // Per-frame rebuilds (`<chart>_build`) cost the same at every share.
        for (chart, series) in &mut table {
            let mut shares: Vec<f64> = series.iter().flat_map(|(_, p)| p.iter().map(|q| q.0)).collect();
            shares.sort_by(f64::total_cmp);
            shares.dedup();
            let build = format!("{chart}_build");
            for r in records.iter().filter(|r| r.scenario == id && r.case == build && r.imp != Impl::Ours) {
                let points = shares.iter().map(|&s| (s, r.measurement.median_us)).collect();
                series.push((format!("{} (rebuild)", r.imp.name()), points));
            }
        }
        for (chart, series) in table {
            let series = series
                .into_iter()
                .map(|(name, mut points)| {
                    points.sort_by(|a, b| a.0.total_cmp(&b.0));
                    Series { name, points }
                })
                .collect();
            out.push(Chart {
                scenario: scenario.to_owned(),
                name: chart,
                x_desc: SHARE_AXIS,
                y_desc: TIME_AXIS,
                series,
            });
        }
        if let Some(chart) = bandwidth_chart(id, records) {
            out.push(chart);
        }
    }
    out
}

/// x axis of the time charts.
pub const SHARE_AXIS: &str = "share of entities changed";
/// y axis of the time charts.
pub const TIME_AXIS: &str = "median us per frame (log)";

/// The bandwidth chart of `scenario`: `kbps` of the `..._loss_N_...` cases
/// against N, and of the `..._at_rest` cases at 0 % loss.
fn bandwidth_chart(scenario: ScenarioId, records: &[Row]) -> Option<Chart> {
    let mut moving = Vec::new();
    let mut rest = Vec::new();
    for r in records.iter().filter(|r| r.scenario == scenario) {
        let Some(kbps) = r.kbps else { continue };
        let tokens: Vec<&str> = r.case.split('_').collect();
        if let Some(i) = tokens.iter().position(|&t| t == "loss")
            && let Some(loss) = tokens.get(i + 1).and_then(|t| t.parse::<f64>().ok())
        {
            moving.push((loss, kbps));
        } else if r.case.ends_with("at_rest") {
            rest.push((0.0, kbps));
        }
    }
    if moving.is_empty() && rest.is_empty() {
        return None;
    }
    moving.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut series = Vec::new();
    if !moving.is_empty() {
        series.push(Series { name: "moving scene".into(), points: moving });
    }
    if !rest.is_empty() {
        series.push(Series { name: "all at rest".into(), points: rest });
    }
    Some(Chart {
        scenario: scenario.name().to_owned(),
        name: "bandwidth".into(),
        x_desc: "packet loss",
        y_desc: "kbps per client (log)",
        series,
    })
}

/// x axis of the game chart.
pub const ACTIVE_AXIS: &str = "share of rigs and boids active";

/// The `game` chart: the whole frame against the share of rigs and boids
/// active, one series per implementation, from the cases of the most
/// common entity count (the 100k cases; the 1M case has one share only).
fn game_chart(records: &[Row]) -> Option<Chart> {
    use crate::scenes::game::GAME_CASES;
    let game: Vec<(&Row, &crate::scenes::game::GameCase)> = records
        .iter()
        .filter(|r| r.scenario == ScenarioId::Game)
        .filter_map(|r| GAME_CASES.iter().find(|c| c.name == r.case).map(|c| (r, c)))
        .collect();
    let entities =
        GAME_CASES.iter().map(|c| c.entities).max_by_key(|&n| GAME_CASES.iter().filter(|c| c.entities == n).count())?;
    let mut series: Vec<Series> = Vec::new();
    for (r, case) in game.into_iter().filter(|(_, c)| c.entities == entities) {
        let point = (case.active * 100.0, r.measurement.median_us);
        match series.iter_mut().find(|s| s.name == r.imp.name()) {
            Some(s) => s.points.push(point),
            None => series.push(Series { name: r.imp.name().to_owned(), points: vec![point] }),
        }
    }
    if series.is_empty() {
        return None;
    }
    for s in &mut series {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    Some(Chart {
        scenario: ScenarioId::Game.name().to_owned(),
        name: format!("whole frame, {}k entities", entities / 1000),
        x_desc: ACTIVE_AXIS,
        y_desc: "median us per whole frame (log)",
        series,
    })
}

fn color_of(index: usize) -> RGBColor {
    const PALETTE: [RGBColor; 6] = [
        RGBColor(0x1f, 0x77, 0xb4),
        RGBColor(0xd6, 0x27, 0x28),
        RGBColor(0x2c, 0xa0, 0x2c),
        RGBColor(0xff, 0x7f, 0x0e),
        RGBColor(0x94, 0x67, 0xbd),
        RGBColor(0x8c, 0x56, 0x4b),
    ];
    PALETTE[index % PALETTE.len()]
}

fn share_label(share: f64) -> String {
    if share.fract() == 0.0 { format!("{share:.0} %") } else { format!("{share} %") }
}

/// Draws `chart` as an SVG document: shares evenly spaced on the x axis
/// (they span 0 to 100 % with most points below 10 %), time on a log axis.
///
/// # Errors
///
/// A message when the chart has no points or plotters fails to draw.
pub fn render_svg(chart: &Chart) -> Result<String, String> {
    let shares = chart.shares();
    let times: Vec<f64> = chart.series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).collect();
    if shares.is_empty() || times.is_empty() {
        return Err(format!("chart {} has no points", chart.stem()));
    }
    let lo = times.iter().copied().fold(f64::INFINITY, f64::min).max(0.01) / 2.0;
    let hi = times.iter().copied().fold(0.0, f64::max).max(lo * 4.0) * 2.0;
    let at = |share: f64| shares.iter().position(|&s| s == share).unwrap_or(0) as f64;
    let span = (shares.len() as f64 - 1.0).max(1.0);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (560, 360)).into_drawing_area();
        let err = |e: DrawingAreaErrorKind<_>| format!("drawing {}: {e}", chart.stem());
        root.fill(&WHITE).map_err(err)?;
        let mut ctx = ChartBuilder::on(&root)
            .caption(format!("{}: {}", chart.scenario, chart.name), ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(60)
            .build_cartesian_2d(-0.3f64..span + 0.3, (lo..hi).log_scale())
            .map_err(err)?;
        ctx.configure_mesh()
            .x_desc(chart.x_desc)
            .y_desc(chart.y_desc)
            .x_labels(shares.len() * 2 + 1)
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < shares.len() {
                    share_label(shares[i as usize])
                } else {
                    String::new()
                }
            })
            .draw()
            .map_err(err)?;
        for (i, series) in chart.series.iter().enumerate() {
            let color = color_of(i);
            let points: Vec<(f64, f64)> = series.points.iter().map(|&(s, t)| (at(s), t.max(lo))).collect();
            ctx.draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
                .map_err(err)?
                .label(series.name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
            ctx.draw_series(points.into_iter().map(|p| Circle::new(p, 3, color.filled()))).map_err(err)?;
        }
        ctx.configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Whether `rows` hold a peer's row (the build had feature `peers`).
pub fn has_peers(rows: &[Row]) -> bool {
    rows.iter().any(|r| r.imp != Impl::Ours)
}

/// The summary table: every goal of every scenario, its figure in `rows`,
/// met or not met (or no figure: its scenario, case or peer is not in the
/// rows).
pub fn summary_html(rows: &[Row]) -> String {
    let mut html = String::from(
        "<h2 id=\"goals\">Goals</h2>\n<table class=\"goals\"><tr><th>scenario</th><th>case</th><th>goal</th>\
<th>figure</th><th>result</th><th>from</th></tr>\n",
    );
    let (mut met, mut missed, mut absent) = (0, 0, 0);
    for (id, goal) in all_goals() {
        let (figure, result) = match goal.figure(id, rows) {
            Some(f) if f.met => {
                met += 1;
                (format_figure(f.value), "<td class=\"met\">met</td>")
            }
            Some(f) => {
                missed += 1;
                (format_figure(f.value), "<td class=\"missed\">not met</td>")
            }
            None => {
                absent += 1;
                ("-".to_owned(), "<td>no figure</td>")
            }
        };
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{figure}</td>{result}<td>{}</td></tr>",
            id.name(),
            escape(goal.case),
            escape(&goal.text()),
            escape(goal.source)
        );
    }
    let _ = writeln!(
        html,
        "</table>\n<p>{met} goals met, {missed} not met, {absent} without a figure in these rows \
(a scenario not run, or a peer not built in).</p>"
    );
    html
}

fn format_figure(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// A row's figures besides the time, as text.
fn other_figures(r: &Row) -> String {
    let mut out = Vec::new();
    if let Some(c) = r.chunks {
        out.push(format!("chunks skipped {}/{}", c.skipped, c.total));
    }
    if let Some(n) = r.rows {
        out.push(format!("rows {n}"));
    }
    if let Some(n) = r.count {
        out.push(format!("count {n}"));
    }
    if let Some(k) = r.kbps {
        out.push(format!("kbps {k:.1}"));
    }
    if !r.systems.is_empty() {
        out.push(format!("{} systems", r.systems.len()));
    }
    out.join(", ")
}

/// The HTML page: the goals' summary ([`summary_html`]), a plain note when
/// the rows hold no peer, then for each scenario its charts (inline SVG)
/// and a table of every row with the ratio ours / that implementation;
/// `about` is a line describing the run.
pub fn render_html(records: &[Row], charts: &[(Chart, String)], about: &str) -> String {
    let mut html = String::new();
    let _ = writeln!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>ecs-bench report</title>\n<style>\
body{{font-family:sans-serif;margin:2em;max-width:1200px}}table{{border-collapse:collapse;margin:1em 0}}\
td,th{{border:1px solid #ccc;padding:2px 8px;text-align:right}}td:first-child,th:first-child{{text-align:left}}\
.goals td{{text-align:left}}.met{{background:#dfd}}.missed{{background:#fdd}}.nopeers{{border:2px solid #c00;padding:8px}}\
.charts{{display:flex;flex-wrap:wrap;gap:8px}}</style></head><body>\n<h1>ecs-bench report</h1>\n<p>{}</p>\n\
<p>Median microseconds per frame; ratio = ours / that implementation, measured in the same process run \
(&lt; 1 means ours is faster). Raw rows: <a href=\"results.jsonl\">results.jsonl</a>.</p>",
        escape(about)
    );
    if !has_peers(records) {
        html.push_str(
            "<p class=\"nopeers\"><strong>No peers in this run.</strong> These rows hold ours only (a build \
without <code>--features peers</code>): the charts show no peer, and the goals against a peer have no figure.</p>\n",
        );
    }
    html.push_str(&summary_html(records));
    for scenario in scenarios_of(records) {
        let about = SCENARIOS.iter().find(|s| s.id == scenario).map_or("", |s| s.about);
        let _ = writeln!(html, "<h2>{}</h2>\n<p>{}</p>\n<div class=\"charts\">", scenario.name(), escape(about));
        for (chart, svg) in charts.iter().filter(|(c, _)| c.scenario == scenario.name()) {
            let _ = writeln!(html, "<figure id=\"{}\">{svg}</figure>", chart.stem());
        }
        let _ = writeln!(
            html,
            "</div>\n<table><tr><th>case</th><th>impl</th><th>median us</th><th>ours / impl</th><th>other figures</th></tr>"
        );
        for r in records.iter().filter(|r| r.scenario == scenario) {
            let ours = records.iter().find(|o| o.scenario == r.scenario && o.case == r.case && o.imp == Impl::Ours);
            let ratio = match ours {
                Some(o) if r.imp != Impl::Ours && r.measurement.median_us > 0.0 => {
                    format!("{:.2}x", o.measurement.median_us / r.measurement.median_us)
                }
                _ => String::new(),
            };
            let _ = writeln!(
                html,
                "<tr><td>{}</td><td>{}</td><td>{:.3}</td><td>{ratio}</td><td>{}</td></tr>",
                escape(&r.case),
                r.imp.name(),
                r.measurement.median_us,
                escape(&other_figures(r))
            );
        }
        let _ = writeln!(html, "</table>");
    }
    html.push_str("</body></html>\n");
    html
}

/// The most bytes [`read_lines`] reads (a full run's `results.jsonl` is a few
/// hundred lines of a few hundred bytes).
pub const MAX_INPUT_BYTES: u64 = 16 << 20;
/// The longest line [`read_lines`] accepts, in bytes.
pub const MAX_LINE_BYTES: usize = 64 << 10;
/// The most lines [`read_lines`] accepts, blank ones included.
pub const MAX_LINES: usize = 100_000;

/// Reads the JSON lines of a saved `results.jsonl` (`ecs-bench report
/// --from FILE`) from `reader`, bounded: it never holds more than
/// [`MAX_INPUT_BYTES`] nor reads more than one byte past them, so an endless
/// input such as `/dev/zero` or the output of `yes` is an error, not a read
/// until memory runs out.
///
/// # Errors
///
/// A message naming the line when the input is longer than
/// [`MAX_INPUT_BYTES`], a line is longer than [`MAX_LINE_BYTES`], there are
/// more than [`MAX_LINES`] lines, a line is not UTF-8, or reading fails.
pub fn read_lines(reader: impl std::io::Read) -> Result<Vec<String>, String> {
    use std::io::{BufRead as _, Read as _};
    let mut input = std::io::BufReader::new(reader.take(MAX_INPUT_BYTES + 1));
    let mut lines = Vec::new();
    let mut total: u64 = 0;
    let mut buf = Vec::new();
    loop {
        let number = lines.len() + 1;
        buf.clear();
        // At most one byte past the limit: enough to tell that it is exceeded.
        let n = (&mut input)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| format!("line {number}: {e}"))?;
        if n == 0 {
            return Ok(lines);
        }
        total += n as u64;
        if total > MAX_INPUT_BYTES {
            return Err(format!("input longer than {MAX_INPUT_BYTES} bytes (at line {number}): not a saved report"));
        }
        if buf.last() == Some(&b'\n') {
            buf.pop();
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
        }
        if buf.len() > MAX_LINE_BYTES {
            return Err(format!("line {number} is longer than {MAX_LINE_BYTES} bytes: not a saved report"));
        }
        if number > MAX_LINES {
            return Err(format!("more than {MAX_LINES} lines: not a saved report"));
        }
        let line = std::str::from_utf8(&buf).map_err(|e| format!("line {number} is not UTF-8: {e}"))?;
        lines.push(line.to_owned());
    }
}

/// Reads the rows of a saved `results.jsonl` (`ecs-bench report --from
/// FILE`) from `reader`: [`read_lines`], then [`Row::from_json`] for each
/// line that is not blank.
///
/// # Errors
///
/// [`read_lines`]' errors, or the first line that is not a row, with its
/// number.
pub fn read_rows(reader: impl std::io::Read) -> Result<Vec<Row>, String> {
    let lines = read_lines(reader)?;
    lines
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| Row::from_json(l).map_err(|e| format!("line {}: {e}", i + 1)))
        .collect()
}

/// Writes `results.jsonl` (one [`Row::to_json`] line per row), one SVG per
/// chart and `index.html` into `dir` (created if missing); returns the
/// page's path.
///
/// # Errors
///
/// A message when there is no row, a chart fails to draw, or a file cannot
/// be written; nothing is written then.
pub fn write_report(dir: &Path, rows: &[Row], about: &str) -> Result<PathBuf, String> {
    if rows.is_empty() {
        return Err("no rows: nothing to report".to_owned());
    }
    let drawn = charts(rows);
    let svgs = drawn.into_iter().map(|c| render_svg(&c).map(|svg| (c, svg))).collect::<Result<Vec<_>, _>>()?;
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display())).map(|()| path)
    };
    let mut jsonl: String = rows.iter().map(|r| r.to_json() + "\n").collect();
    if jsonl.is_empty() {
        jsonl.push('\n');
    }
    write("results.jsonl", &jsonl)?;
    for (chart, svg) in &svgs {
        write(&format!("{}.svg", chart.stem()), svg)?;
    }
    write("index.html", &render_html(rows, &svgs, about))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(scenario: &str, case: &'static str, imp: &str, us: f64) -> Row {
        let id = SCENARIOS.iter().map(|s| s.id).find(|id| id.name() == scenario).unwrap();
        let imp = [Impl::Ours, Impl::Bevy, Impl::Hecs, Impl::Kiddo, Impl::Rstar]
            .into_iter()
            .find(|i| i.name() == imp)
            .unwrap();
        let m = crate::measure::Measurement { median_us: us, min_us: us, max_us: us, samples: 5, iters_per_sample: 1 };
        Row::new(id, case, imp, m)
    }

    #[test]
    fn shares_come_from_case_names() {
        assert_eq!(split_share("clustered_5pct"), Some(("clustered".into(), 5.0)));
        assert_eq!(split_share("changed_0"), Some(("changed".into(), 0.0)));
        assert_eq!(split_share("cubes_loss_0"), None);
        assert_eq!(split_share("cubes_at_rest"), None);
        assert_eq!(split_share("encode_100k_10pct"), Some(("encode_100k".into(), 10.0)));
        assert_eq!(split_share("wide_static"), Some(("wide".into(), 0.0)));
        assert_eq!(split_share("humanoids_all"), Some(("humanoids".into(), 100.0)));
        assert_eq!(split_share("uniform_ecs_10pct_moved"), Some(("uniform_ecs_moved".into(), 10.0)));
        assert_eq!(split_share("uniform_all_queries"), None);
        assert_eq!(split_share("all"), None);
        assert_eq!(split_share("x_200pct"), None);
        assert_eq!(split_share("simple_iter"), None);
    }

    #[test]
    fn baseline_and_rebuild_series_are_spread_over_the_chart() {
        let records = vec![
            rec("skip", "changed_0", "ours", 0.4),
            rec("skip", "changed_0", "bevy", 68.0),
            rec("skip", "clustered_5pct", "ours", 17.0),
            rec("skip", "clustered_5pct", "bevy", 87.0),
            rec("skip", "scattered_5pct", "ours", 137.0),
            rec("suite", "simple_iter", "ours", 12.0),
            rec("spatial", "uniform_5pct", "ours", 900.0),
            rec("spatial", "uniform_nothing", "ours", 9.0),
            rec("spatial", "uniform_build", "ours", 4000.0),
            rec("spatial", "uniform_build", "kiddo", 7000.0),
        ];
        let charts = charts(&records);
        let names: Vec<(&str, &str)> = charts.iter().map(|c| (c.scenario.as_str(), c.name.as_str())).collect();
        assert_eq!(names, [("skip", "clustered"), ("skip", "scattered"), ("spatial", "uniform")]);
        let clustered = &charts[0];
        assert_eq!(clustered.series[0], Series { name: "ours".into(), points: vec![(0.0, 0.4), (5.0, 17.0)] });
        assert_eq!(clustered.series[1], Series { name: "bevy".into(), points: vec![(0.0, 68.0), (5.0, 87.0)] });
        // The scattered chart had no bevy point of its own: it gets the baseline.
        assert_eq!(charts[1].series[1], Series { name: "bevy".into(), points: vec![(0.0, 68.0)] });
        let spatial = &charts[2];
        assert_eq!(spatial.series[0], Series { name: "ours".into(), points: vec![(0.0, 9.0), (5.0, 900.0)] });
        assert_eq!(
            spatial.series[1],
            Series { name: "kiddo (rebuild)".into(), points: vec![(0.0, 7000.0), (5.0, 7000.0)] }
        );
        assert_eq!(spatial.shares(), [0.0, 5.0]);
    }

    #[test]
    fn bandwidth_is_charted_against_loss() {
        let mut records = Vec::new();
        for (case, kbps) in
            [("cubes_loss_0", 150.0), ("cubes_loss_20", 300.0), ("cubes_loss_5", 180.0), ("cubes_at_rest", 9.0)]
        {
            let mut r = rec("replication", case, "ours", 40.0);
            r.kbps = Some(kbps);
            records.push(r);
        }
        records.push(rec("replication", "encode_100k_1pct", "ours", 30.0));
        let charts = charts(&records);
        assert_eq!(charts.len(), 2);
        assert_eq!((charts[0].name.as_str(), charts[0].x_desc), ("encode_100k", SHARE_AXIS));
        let bw = &charts[1];
        assert_eq!((bw.name.as_str(), bw.x_desc), ("bandwidth", "packet loss"));
        assert_eq!(bw.series[0].points, [(0.0, 150.0), (5.0, 180.0), (20.0, 300.0)]);
        assert_eq!(bw.series[1], Series { name: "all at rest".into(), points: vec![(0.0, 9.0)] });
        assert!(render_svg(bw).unwrap().contains("kbps per client"));
    }

    #[test]
    fn svg_and_page_name_every_series() {
        let records = vec![
            rec("transform", "wide_static", "ours", 3.0),
            rec("transform", "wide_5pct", "ours", 200.0),
            rec("transform", "wide_all", "ours", 2000.0),
            rec("transform", "wide_static", "bevy", 345.0),
            rec("transform", "wide_5pct", "bevy", 400.0),
            rec("transform", "wide_all", "bevy", 1500.0),
        ];
        let chart = charts(&records).remove(0);
        let svg = render_svg(&chart).unwrap();
        assert!(svg.starts_with("<svg"));
        for text in ["ours", "bevy", "0 %", "5 %", "100 %", "transform: wide"] {
            assert!(svg.contains(text), "svg lacks {text}");
        }
        let html = render_html(&records, &[(chart, svg)], "test run");
        assert!(html.contains("<figure id=\"transform-wide\"><svg"));
        // Ratio ours / bevy of the static case: 3 / 345.
        assert!(html.contains("<td>0.01x</td>"));
        assert!(html.contains("test run"));
        let empty = Chart { scenario: "x".into(), name: "y".into(), x_desc: "", y_desc: "", series: vec![] };
        assert!(render_svg(&empty).is_err());
    }

    #[test]
    fn reading_lines_is_bounded() {
        // An endless input without a newline (`/dev/zero`): an error after
        // one line's worth of bytes, not a hang.
        let e = read_lines(std::io::repeat(0)).unwrap_err();
        assert!(e.contains("line 1 is longer than"), "{e}");
        // Endless lines: an error at the line limit.
        let e = read_lines(std::io::repeat(b'\n')).unwrap_err();
        assert!(e.contains("more than"), "{e}");
        // Endless long lines: an error at the byte limit.
        let line = vec![b'x'; MAX_LINE_BYTES - 1];
        let endless = Endless { line: [line, b"\n".to_vec()].concat(), at: 0 };
        let e = read_lines(endless).unwrap_err();
        assert!(e.contains("input longer than"), "{e}");
        // A real file's lines, with CRLF and a missing final newline.
        let lines = read_lines(&b"{\"a\":1}\r\n\n{\"b\":2}"[..]).unwrap();
        assert_eq!(lines, vec!["{\"a\":1}".to_owned(), String::new(), "{\"b\":2}".to_owned()]);
        assert!(read_lines(&b"ok\n\xff\n"[..]).unwrap_err().contains("line 2 is not UTF-8"));
        // The longest accepted line.
        let longest = vec![b'y'; MAX_LINE_BYTES];
        assert_eq!(read_lines(&longest[..]).unwrap()[0].len(), MAX_LINE_BYTES);
    }

    /// A reader that repeats `line` forever.
    struct Endless {
        line: Vec<u8>,
        at: usize,
    }

    impl std::io::Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let rest = &self.line[self.at..];
            let n = rest.len().min(buf.len());
            buf[..n].copy_from_slice(&rest[..n]);
            self.at = (self.at + n) % self.line.len();
            Ok(n)
        }
    }

    #[test]
    fn the_game_chart_is_frame_time_against_active_share() {
        let records = vec![
            rec("game", "active_0pct", "ours", 500.0),
            rec("game", "active_0pct", "bevy", 2000.0),
            rec("game", "active_5pct", "ours", 1000.0),
            rec("game", "active_5pct", "bevy", 4000.0),
            rec("game", "active_100pct", "ours", 9000.0),
            rec("game", "active_5pct_1m", "ours", 20000.0),
        ];
        let charts = charts(&records);
        assert_eq!(charts.len(), 1);
        let game = &charts[0];
        assert_eq!(
            (game.scenario.as_str(), game.name.as_str(), game.x_desc),
            ("game", "whole frame, 100k entities", ACTIVE_AXIS)
        );
        assert_eq!(
            game.series[0],
            Series { name: "ours".into(), points: vec![(0.0, 500.0), (5.0, 1000.0), (100.0, 9000.0)] }
        );
        assert_eq!(game.series[1], Series { name: "bevy".into(), points: vec![(0.0, 2000.0), (5.0, 4000.0)] });
        assert!(render_svg(game).unwrap().contains("rigs and boids active"));
    }

    #[test]
    fn the_page_opens_with_the_goals() {
        let records = vec![
            rec("game", "active_5pct", "ours", 1000.0),
            rec("game", "active_5pct", "bevy", 4000.0),
            rec("game", "active_1pct", "ours", 1000.0),
            rec("game", "active_1pct", "bevy", 2000.0),
        ];
        let html = render_html(&records, &[], "run");
        let goals = html.find("<h2 id=\"goals\">").unwrap();
        assert!(goals < html.find("<h2>game</h2>").unwrap());
        // 0.25 <= 0.5: met; 0.5 > 0.25: not met; 100 % has no row.
        assert!(
            html.contains("<td>active_5pct</td><td>&lt;= 0.5x bevy</td><td>0.250</td><td class=\"met\">met</td>"),
            "{html}"
        );
        assert!(
            html.contains(
                "<td>active_1pct</td><td>&lt;= 0.25x bevy</td><td>0.500</td><td class=\"missed\">not met</td>"
            ),
            "{html}"
        );
        assert!(html.contains("<td>active_100pct</td><td>&lt;= 1x bevy</td><td>-</td><td>no figure</td>"), "{html}");
        assert!(!html.contains("No peers in this run"));
        let ours_only = render_html(&records[..1], &[], "run");
        assert!(ours_only.contains("No peers in this run"));
    }

    #[test]
    fn writes_the_page_the_svgs_and_the_rows() {
        let dir = std::env::temp_dir().join(format!("ecs-report-test-{}", std::process::id()));
        let rows = vec![rec("skip", "changed_0", "ours", 0.4), rec("skip", "clustered_1pct", "ours", 4.1)];
        let page = write_report(&dir, &rows, "about").unwrap();
        assert_eq!(page, dir.join("index.html"));
        assert!(std::fs::read_to_string(&page).unwrap().contains("skip: clustered"));
        assert!(std::fs::read_to_string(dir.join("skip-clustered.svg")).unwrap().starts_with("<svg"));
        let saved = std::fs::read_to_string(dir.join("results.jsonl")).unwrap();
        assert_eq!(read_rows(saved.as_bytes()).unwrap(), rows);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(write_report(&dir, &[], "about").is_err());
        assert!(!dir.exists(), "a failed report writes nothing");
        let e = read_rows(&b"{\"scenario\":\"skip\",\"case\":\"a\",\"impl\":\"ours\",\"median_us\":1}\n\n{}\n"[..])
            .unwrap_err();
        assert!(e.starts_with("line 3:"), "{e}");
    }
}
